// Writes the seed corpus of the fuzz targets: small real inputs of each, in the formats the
// targets read (see each target's header comment), into <dir>/<target>/<name>.
//   make_corpus tests/fuzz/corpus
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/npy.h"
#include "gemm/v1/gemm_service.pb.h"
#include "tests/fuzz/fuzz_input.h"

namespace gemm::fuzz {
namespace {

std::string g_dir;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string dir = absl::StrCat(g_dir, "/", target);
  mkdir(dir.c_str(), 0755);
  std::ofstream(absl::StrCat(dir, "/", name), std::ios::binary) << bytes;
}

std::string Pattern(size_t bytes) {
  std::string s(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) s[i] = static_cast<char>(0x3f + (i % 3));  // BF16 ~0.5-1
  return s;
}

v1::Problem Inline(int64_t m, int64_t n, int64_t k, int64_t count = 1) {
  v1::Problem p;
  p.set_m(m);
  p.set_n(n);
  p.set_k(k);
  p.set_a(Pattern(count * m * k * 2));
  p.set_b(Pattern(k * n * 2));
  return p;
}

std::vector<std::pair<std::string, v1::GemmRequest>> Requests() {
  std::vector<std::pair<std::string, v1::GemmRequest>> out;
  v1::GemmRequest r;
  r.set_request_id("single");
  *r.mutable_problem() = Inline(2, 3, 4);
  r.mutable_problem()->set_alpha(0.5f);
  out.emplace_back("single_bf16", r);

  r.Clear();
  r.set_request_id("fp32-c");
  *r.mutable_problem() = Inline(3, 2, 5);
  r.mutable_problem()->set_b_layout(v1::B_LAYOUT_NK);
  r.mutable_problem()->set_output_dtype(v1::DTYPE_FP32);
  r.mutable_problem()->set_beta(1.0f);
  r.mutable_problem()->set_c(Pattern(3 * 2 * 4));
  r.set_priority(v1::PRIORITY_HIGH);
  r.set_timeout_us(1000);
  r.set_kernel("cpu_openblas");
  out.emplace_back("single_fp32_nk_c", r);

  r.Clear();
  r.set_request_id("batch");
  r.mutable_batch()->set_count(3);
  *r.mutable_batch()->mutable_problem() = Inline(2, 2, 2, 3);
  out.emplace_back("batch_shared_b", r);

  r.Clear();
  r.set_request_id("group");
  *r.mutable_group()->add_problems() = Inline(1, 4, 2);
  v1::Problem* resident = r.mutable_group()->add_problems();
  resident->set_m(2);
  resident->set_n(5);
  resident->set_k(3);
  resident->set_a(Pattern(2 * 3 * 2));
  resident->set_b_handle("@0");
  out.emplace_back("group_inline_and_resident", r);

  r.Clear();
  r.set_request_id("resident-nk");
  r.mutable_problem()->set_m(4);
  r.mutable_problem()->set_n(2);
  r.mutable_problem()->set_k(7);
  r.mutable_problem()->set_a(Pattern(4 * 7 * 2));
  r.mutable_problem()->set_b_handle("@1");
  r.mutable_problem()->set_b_layout(v1::B_LAYOUT_NK);
  out.emplace_back("resident_nk", r);

  r.Clear();
  r.set_request_id("shm");
  v1::Problem* p = r.mutable_problem();
  p->set_m(2);
  p->set_n(5);
  p->set_k(3);
  p->mutable_a_shm()->set_region("s0");
  p->mutable_a_shm()->set_offset(100);
  p->mutable_a_shm()->set_byte_size(12);
  p->mutable_b_shm()->set_region("s2");
  p->mutable_b_shm()->set_byte_size(30);
  p->mutable_d_shm()->set_region("s1");
  p->mutable_d_shm()->set_offset(4);
  p->mutable_d_shm()->set_byte_size(20);
  out.emplace_back("shared_memory_operands", r);

  r.Clear();
  r.set_request_id("empty");
  out.emplace_back("no_work", r);
  return out;
}

void RequestSeeds() {
  for (const auto& [name, r] : Requests()) {
    Write("request", name, FuzzScript().U8(0).Raw(r.SerializeAsString()).str());
  }
  const v1::GemmRequest first = Requests()[0].second;
  Write("request", "tight_limits", FuzzScript().U8(1).Raw(first.SerializeAsString()).str());
  Write("request", "fuzzed_limits",
        FuzzScript()
            .U8(2)
            .I64(1 << 20)
            .I64(1 << 20)
            .I64(1 << 21)
            .I64(16)
            .Raw(first.SerializeAsString())
            .str());
  Write("request", "largest_max_dim", FuzzScript().U8(3).Raw(first.SerializeAsString()).str());
  v1::GemmRequest huge;
  huge.mutable_problem()->set_m(int64_t{1} << 31);
  huge.mutable_problem()->set_n(int64_t{1} << 31);
  huge.mutable_problem()->set_k(int64_t{1} << 31);
  Write("request", "largest_max_dim_huge_dims",
        FuzzScript().U8(3).Raw(huge.SerializeAsString()).str());
}

void PackedSeeds() {
  v1::GemmRequestPack all;
  for (const auto& [name, r] : Requests()) *all.add_requests() = r;
  Write("packed_stream", "all_kinds", FuzzScript().U8(0).U8(5).Raw(all.SerializeAsString()).str());
  Write("packed_stream", "all_kinds_small_cap",
        FuzzScript().U8(0).U8(2).Raw(all.SerializeAsString()).str());
  v1::GemmRequestPack two;
  *two.add_requests() = Requests()[0].second;
  *two.add_requests() = Requests()[2].second;
  Write("packed_stream", "two_tight", FuzzScript().U8(1).U8(4).Raw(two.SerializeAsString()).str());
  Write("packed_stream", "empty_pack", FuzzScript().U8(0).U8(0).str());
}

void ReceivedMessageSeeds() {
  v1::GemmRequestPack all;
  for (const auto& [name, r] : Requests()) *all.add_requests() = r;
  // A pack whole, and cut at three places; one request cut inside its first field.
  Write("received_message", "pack_whole",
        FuzzScript().U8(0).U8(0).Raw(all.SerializeAsString()).str());
  Write("received_message", "pack_three_cuts",
        FuzzScript().U8(0).U8(3).U16(5).U16(37).U16(200).Raw(all.SerializeAsString()).str());
  Write("received_message", "request_one_cut",
        FuzzScript().U8(1).U8(1).U16(1).Raw(Requests()[0].second.SerializeAsString()).str());
}

void MatrixRegistrySeeds() {
  // Begin 4x8 (64 bytes), two chunks, finish, look up, release.
  Write("matrix_registry", "upload_finish_release",
        FuzzScript()
            .U32(1 << 20)
            .I64(65536)
            .U8(0)
            .I64(4)
            .I64(8)
            .U8(1)
            .U8(0)
            .U8(0)
            .U16(30)
            .U8(1)
            .U8(0)
            .U8(0)
            .U16(34)
            .U8(2)
            .U8(0)
            .U8(5)
            .U8(0)
            .U8(4)
            .U8(0)
            .str());
  // A chunk at a wrong offset, an overrun, an early Finish, then an abandoned upload.
  Write("matrix_registry", "bad_chunks_abandon",
        FuzzScript()
            .U32(1 << 20)
            .I64(65536)
            .U8(0)
            .I64(2)
            .I64(3)
            .U8(1)
            .U8(0)
            .U8(1)
            .I64(5)
            .U16(4)
            .U8(1)
            .U8(0)
            .U8(0)
            .U16(13)
            .U8(2)
            .U8(0)
            .U8(3)
            .U8(0)
            .str());
  // Begin with both dimensions INT64_MIN (refused; their product overflows 128 bits).
  Write("matrix_registry", "begin_int64_min",
        FuzzScript()
            .U32(1 << 20)
            .I64(65536)
            .U8(0)
            .I64(std::numeric_limits<int64_t>::min())
            .I64(std::numeric_limits<int64_t>::min())
            .str());
  // Two uploads, the second over the cap; header limits.
  Write("matrix_registry", "cap_and_limits",
        FuzzScript()
            .U32(100)
            .I64(16)
            .U8(0)
            .I64(5)
            .I64(5)
            .U8(0)
            .I64(5)
            .I64(5)
            .U8(0)
            .I64(17)
            .I64(1)
            .U8(0)
            .I64(0)
            .I64(3)
            .U8(4)
            .U8(255)
            .str());
}

void ShmRegistrySeeds() {
  auto number = [](FuzzScript& s, int64_t v) { s.U8(0).U16(static_cast<uint16_t>(v)); };
  FuzzScript s;
  s.U32(1 << 20);
  // Register r0 = object 1 [0, 4096); resolve [100, +200); unregister under use; resolve again.
  s.U8(0).U8(0).U8(1);
  number(s, 0);
  number(s, 4096);
  s.U8(2).U8(0);
  number(s, 100);
  number(s, 200);
  s.U8(1).U8(0).U8(2).U8(0);
  number(s, 0);
  number(s, 1);
  Write("shm_registry", "register_resolve_unregister", s.str());

  FuzzScript t;
  t.U32(1 << 20);
  // r1 = object 3 from mid-page; the name again; a range past the end; a key outside the
  // prefix; then drop.
  t.U8(0).U8(1).U8(3);
  number(t, 4097);
  number(t, 1000);
  t.U8(0).U8(1).U8(2);
  number(t, 0);
  number(t, 1);
  t.U8(0).U8(2).U8(0);
  number(t, 0);
  number(t, 2);
  t.U8(0).U8(3).U8(6).Bytes("/elsewhere");
  number(t, 0);
  number(t, 1);
  t.U8(2).U8(1);
  number(t, 999);
  number(t, 1);
  t.U8(3);
  Write("shm_registry", "ranges_and_keys", t.str());
}

void NpySeeds() {
  const std::string tmp = absl::StrCat(g_dir, "/npy.tmp");
  auto file = [&](const std::vector<int64_t>& shape, const std::vector<float>& data) {
    (void)WriteNpy(tmp, shape, data);
    std::ifstream in(tmp, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(tmp.c_str());
    return bytes;
  };
  Write("npy", "f4_2x3", file({2, 3}, {1, 2, 3, 4, 5, 6}));
  Write("npy", "f4_1d", file({4}, {0.5f, -1, 2, 8}));
  Write("npy", "f4_scalar", file({}, {7}));
  Write("npy", "f4_empty", file({0, 3}, {}));
  // Empty, with dimensions whose product without the zero overflows 128 bits.
  Write("npy", "f4_empty_wide", file({int64_t{1} << 62, int64_t{1} << 62, 297, 0}, {}));
  // float64, written as numpy does (version 1.0, header padded to 64 bytes).
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  const double f8[2] = {1.5, -2.25};
  Write("npy", "f8_v1",
        absl::StrCat(std::string("\x93NUMPY\x01\x00", 8),
                     std::string(1, static_cast<char>(header.size())), std::string(1, '\0'), header,
                     std::string(reinterpret_cast<const char*>(f8), 16)));
  // Version 2.0 (a 4-byte header length).
  std::string h2 = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }";
  h2.append((64 - (12 + h2.size() + 1) % 64) % 64, ' ');
  h2.push_back('\n');
  const float one = 1;
  Write("npy", "f4_v2",
        absl::StrCat(std::string("\x93NUMPY\x02\x00", 8),
                     std::string(1, static_cast<char>(h2.size())), std::string(3, '\0'), h2,
                     std::string(reinterpret_cast<const char*>(&one), 4)));
}

}  // namespace
}  // namespace gemm::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  gemm::fuzz::g_dir = argv[1];
  mkdir(argv[1], 0755);
  gemm::fuzz::RequestSeeds();
  gemm::fuzz::PackedSeeds();
  gemm::fuzz::ReceivedMessageSeeds();
  gemm::fuzz::MatrixRegistrySeeds();
  gemm::fuzz::ShmRegistrySeeds();
  gemm::fuzz::NpySeeds();
  return 0;
}
