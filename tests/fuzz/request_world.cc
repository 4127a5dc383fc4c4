// RequestWorld (see request_world.h).
#include "tests/fuzz/request_world.h"

#include <limits>

#include "absl/time/time.h"
#include "google/protobuf/stubs/logging.h"
#include "server/core/validation.h"
#include "server/grpc/convert.h"

namespace gemm::fuzz {
namespace {

using Int = __int128;  // sizes computed here cannot overflow

constexpr int kObjectBytes[] = {4096, 100};

// Registers a resident matrix of `rows` x `cols` filled with a pattern; returns its handle.
std::string AddMatrix(core::MatrixRegistry& registry, int64_t rows, int64_t cols,
                      core::BLayout layout) {
  auto reg = registry.Begin({.name = "fuzz", .rows = rows, .cols = cols, .layout = layout}, 65536);
  FUZZ_CHECK(reg.ok(), reg.status().ToString());
  std::string bytes(rows * cols * 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 37);
  FUZZ_CHECK((*reg)->Append(0, bytes).ok(), "resident upload");
  auto m = (*reg)->Finish();
  FUZZ_CHECK(m.ok(), m.status().ToString());
  return (*m)->desc().handle;
}

const v1::Problem& ProtoProblem(const v1::GemmRequest& proto, size_t i) {
  switch (proto.work_case()) {
    case v1::GemmRequest::kBatch:
      return proto.batch().problem();
    case v1::GemmRequest::kGroup:
      return proto.group().problems(static_cast<int>(i));
    default:
      return proto.problem();
  }
}

void SwapHandle(const std::string handles[2], v1::Problem* p) {
  if (p->b_handle() == "@0") p->set_b_handle(handles[0]);
  if (p->b_handle() == "@1") p->set_b_handle(handles[1]);
}

}  // namespace

RequestWorld& RequestWorld::Get() {
  static RequestWorld world;  // its objects are unlinked at exit
  return world;
}

RequestWorld::RequestWorld()
    : objects_({kObjectBytes[0], kObjectBytes[1]}),
      matrices_(&backend_, int64_t{1} << 20),
      regions_(&backend_, int64_t{1} << 20, objects_.prefix()) {
  // Inputs with invalid UTF-8 in string fields fail to parse, and protobuf logs each one.
  google::protobuf::SetLogHandler(nullptr);
  handles_[0] = AddMatrix(matrices_, 3, 5, core::BLayout::kKN);
  handles_[1] = AddMatrix(matrices_, 2, 7, core::BLayout::kNK);
  const struct {
    const char* name;
    int object;
    int64_t offset, bytes;
  } regions[] = {{"s0", 0, 0, 4096}, {"s1", 1, 10, 90}, {"s2", 0, 1000, 2000}};
  for (const auto& r : regions) {
    auto region = regions_.Register(
        {.name = r.name, .key = objects_.key(r.object), .offset = r.offset, .byte_size = r.bytes});
    FUZZ_CHECK(region.ok(), region.status().ToString());
  }
}

core::Limits RequestWorld::ReadLimits(FuzzInput& in) {
  core::Limits limits;
  switch (in.U8() % 4) {
    case 1:
      limits.max_dim = 64;
      limits.max_request_bytes = 4096;
      limits.max_message_bytes = (int64_t{1} << 20) + 4096;
      limits.max_problems = 4;
      break;
    case 2:
      limits.max_dim = in.I64();
      limits.max_request_bytes = in.I64();
      limits.max_message_bytes = in.I64();
      limits.max_problems = in.I64();
      break;
    case 3:
      limits.max_dim = std::numeric_limits<int64_t>::max();
      break;
    default:
      break;
  }
  // The server only runs with limits ResolveLimits() accepts (it refuses the rest at start-up).
  std::vector<std::string> notes;
  absl::StatusOr<core::Limits> resolved = core::ResolveLimits(
      limits, core::UsableMemory{.bytes = int64_t{16} << 30, .source = "fuzz"}, false, &notes);
  return resolved.ok()
             ? *resolved
             : core::ResolveLimits(core::Limits{},
                                   core::UsableMemory{.bytes = int64_t{16} << 30, .source = "fuzz"},
                                   false, &notes)
                   .value();
}

absl::StatusOr<core::GemmRequest> RequestWorld::Admit(v1::GemmRequest& proto,
                                                      const core::Limits& limits) {
  if (proto.has_problem()) SwapHandle(handles_, proto.mutable_problem());
  if (proto.has_batch()) SwapHandle(handles_, proto.mutable_batch()->mutable_problem());
  if (proto.has_group()) {
    for (v1::Problem& p : *proto.mutable_group()->mutable_problems()) SwapHandle(handles_, &p);
  }
  const absl::Time arrival = absl::FromUnixSeconds(1'000'000'000);
  auto request =
      service::FromProto(proto, arrival, absl::InfiniteFuture(), limits, regions_, core::Caller{});
  absl::Status status = request.status();
  if (request.ok()) status = core::ValidateRequest(limits, matrices_, &*request).status();
  if (!status.ok()) {
    const auto code = status.code();
    FUZZ_CHECK(code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kNotFound ||
                   code == absl::StatusCode::kResourceExhausted ||
                   code == absl::StatusCode::kFailedPrecondition,
               absl::StrCat("undocumented refusal: ", status.ToString()));
    FUZZ_CHECK(!status.message().empty(), "a refusal without a message");
    return status;
  }
  CheckAccepted(proto, *request, limits);
  return request;
}

bool RequestWorld::Inside(const char* data, size_t size, const std::string& owner) const {
  if (data >= owner.data() && data + size <= owner.data() + owner.size()) return true;
  for (const auto& e : regions_.List()) {
    const char* base = e.region->data();
    if (data >= base && data + size <= base + e.region->desc().byte_size) return true;
  }
  return false;
}

void RequestWorld::CheckAccepted(const v1::GemmRequest& proto, const core::GemmRequest& r,
                                 const core::Limits& limits) const {
  FUZZ_CHECK(!r.problems.empty(), "accepted a request without problems");
  FUZZ_CHECK(static_cast<Int>(r.problems.size()) <= limits.max_problems, "group over the limit");
  Int in_bytes = 0, out_bytes = 0;
  for (size_t i = 0; i < r.problems.size(); ++i) {
    const core::Problem& p = r.problems[i];
    const v1::Problem& pp = ProtoProblem(proto, i);
    const std::string where = absl::StrCat("problem ", i, " (", p.m, "x", p.n, "x", p.k, ")");
    for (int64_t d : {p.m, p.n, p.k}) {
      FUZZ_CHECK(d >= 1 && d <= limits.max_dim, absl::StrCat(where, ": dimension ", d));
    }
    FUZZ_CHECK(p.count >= 1 && (p.count == 1 || r.kind == core::WorkKind::kBatch) &&
                   p.count <= limits.max_problems,
               absl::StrCat(where, ": count ", p.count));
    const Int count = p.count, elem = core::DTypeBytes(p.out_dtype);
    const Int a = count * p.m * p.k * 2, d = count * p.m * p.n * elem;
    FUZZ_CHECK(static_cast<Int>(p.a.size()) == a, absl::StrCat(where, ": a has ", p.a.size()));
    FUZZ_CHECK(Inside(p.a.data(), p.a.size(), pp.a()), where + ": a outside its memory");
    in_bytes += a;
    if (p.b_resident != nullptr) {
      FUZZ_CHECK(p.b.empty() && p.b_resident->k() == p.k && p.b_resident->n() == p.n &&
                     p.b_layout == p.b_resident->desc().layout,
                 where + ": resident B does not match");
    } else {
      const Int b = (p.b_shared ? 1 : count) * p.k * p.n * 2;
      FUZZ_CHECK(static_cast<Int>(p.b.size()) == b, absl::StrCat(where, ": b has ", p.b.size()));
      FUZZ_CHECK(Inside(p.b.data(), p.b.size(), pp.b()), where + ": b outside its memory");
      in_bytes += b;
    }
    if (p.c.empty()) {
      FUZZ_CHECK(p.beta == 0.0f, where + ": beta without c");
    } else {
      FUZZ_CHECK(static_cast<Int>(p.c.size()) == d, absl::StrCat(where, ": c has ", p.c.size()));
      FUZZ_CHECK(Inside(p.c.data(), p.c.size(), pp.c()), where + ": c outside its memory");
      in_bytes += d;
    }
    if (p.d_dest.empty()) {
      out_bytes += d;
    } else {
      FUZZ_CHECK(static_cast<Int>(p.d_dest.size()) == d, where + ": d_shm of the wrong size");
      FUZZ_CHECK(Inside(p.d_dest.data(), p.d_dest.size(), ""), where + ": d_shm outside");
    }
  }
  FUZZ_CHECK(in_bytes <= limits.max_request_bytes, "operands over --max_request_bytes");
  FUZZ_CHECK(out_bytes <= limits.max_message_bytes, "response over --max_message_bytes");
}

int64_t RequestWorld::ResponseBytes(const core::GemmRequest& request) {
  int64_t bytes = 0;
  for (const core::Problem& p : request.problems) {
    if (p.d_dest.empty()) bytes += p.count * p.m * p.n * core::DTypeBytes(p.out_dtype);
  }
  return bytes;
}

}  // namespace gemm::fuzz
