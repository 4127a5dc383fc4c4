// Host shared-memory regions against a client that shrinks its object (ftruncate) or registers
// without end: a reference into a shrunk region is refused at Resolve (FAILED_PRECONDITION naming
// the field and region); a request admitted before the shrink fails on the CPU backend with that
// error for every operand it reads or writes (a, b, c, d), and the engine goes on serving; the
// region count is capped (and bounded by the process's spare memory mappings); each region counts
// as the whole pages it maps.
#include <unistd.h>

#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/bf16.h"
#include "gtest/gtest.h"
#include "server/core/engine.h"
#include "server/cpu/cpu_backend.h"
#include "tests/common/shm_util.h"

namespace gemm::core {
namespace {

using ::gemm::testing::CreateTestShm;
using ::gemm::testing::ResizeShm;

const int64_t kPage = sysconf(_SC_PAGESIZE);

// A backend that only takes part in registration (host regions are not page-locked).
class RegistrationOnlyBackend : public Backend {
 public:
  std::string Name() const override { return "registration-only"; }
  BackendDescription Describe() const override { return {}; }
  std::vector<int> Devices() const override { return {-1}; }
  absl::Status Start(WorkSource*) override { return absl::OkStatus(); }
  void Stop() override {}
  absl::StatusOr<std::unique_ptr<MatrixUpload>> BeginUpload(ResidentMatrix::Desc) override {
    return absl::UnimplementedError("no uploads");
  }
};

class SharedMemoryHostTest : public ::testing::Test {
 protected:
  RegistrationOnlyBackend backend_;
};

SharedMemoryRegion::Desc Host(const std::string& name, const std::string& key, int64_t offset,
                              int64_t bytes) {
  return {.name = name, .key = key, .offset = offset, .byte_size = bytes};
}

TEST_F(SharedMemoryHostTest, ReferenceIntoAShrunkRegionIsRefused) {
  auto shm = CreateTestShm("resolve", 2 * kPage);
  ASSERT_TRUE(shm.ok()) << shm.status();
  SharedMemoryRegistry registry(&backend_, 1 << 20, "/gemm");
  ASSERT_TRUE(registry.Register(Host("r", (*shm)->key(), 0, 2 * kPage)).ok());
  std::vector<std::shared_ptr<const SharedMemoryRegion>> keep;
  ASSERT_TRUE(registry.Resolve("problem.a_shm", {"r", 0, 64}, &keep).ok());
  ASSERT_TRUE(ResizeShm((*shm)->key(), kPage).ok());
  // Any reference into the region, even to bytes still backed: the region is broken.
  auto r = registry.Resolve("problem.a_shm", {"r", 0, 64}, &keep);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_NE(r.status().message().find("problem.a_shm: shared-memory region 'r'"), std::string::npos)
      << r.status();
  EXPECT_EQ(keep.size(), 1u);  // only the first, good, reference holds it
  // The error of a copy that faulted names the operand and the region holding the byte.
  GemmRequest request;
  request.kind = WorkKind::kBatch;
  request.problems.emplace_back().d_dest = absl::Span<char>(keep[0]->data() + 8, 16);
  request.regions = keep;
  const absl::Status s = SharedMemoryRegistry::ShrunkError(request, keep[0]->data() + 10);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("batch.problem.d_shm: shared-memory region 'r'"), std::string::npos)
      << s;
}

TEST_F(SharedMemoryHostTest, RegionCountIsCapped) {
  auto shm = CreateTestShm("count", kPage);
  ASSERT_TRUE(shm.ok()) << shm.status();
  SharedMemoryRegistry registry(&backend_, int64_t{1} << 30, "/gemm", /*max_regions=*/3);
  EXPECT_EQ(registry.max_regions(), 3);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(registry.Register(Host(absl::StrCat("r", i), (*shm)->key(), i, 1)).ok());
  }
  auto over = registry.Register(Host("r3", (*shm)->key(), 3, 1));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted) << over.status();
  EXPECT_NE(over.status().message().find("--max_shared_memory_regions"), std::string::npos)
      << over.status();
  ASSERT_TRUE(registry.Unregister("r0").ok());
  EXPECT_TRUE(registry.Register(Host("r3", (*shm)->key(), 3, 1)).ok());
}

TEST_F(SharedMemoryHostTest, RegionCountIsBoundedByTheMappingsLeft) {
  SharedMemoryRegistry registry(&backend_, 1 << 20, "/gemm",
                                std::numeric_limits<int64_t>::max() / 2);
  int64_t max_map_count = 0;
  FILE* f = fopen("/proc/sys/vm/max_map_count", "r");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(fscanf(f, "%ld", &max_map_count), 1);
  fclose(f);
  EXPECT_GT(registry.max_regions(), 0);
  EXPECT_LE(registry.max_regions(), max_map_count / 2);
  EXPECT_EQ(SharedMemoryRegistry(&backend_, 1 << 20, "/gemm").max_regions(),
            SharedMemoryRegistry::kDefaultMaxRegions);
}

TEST_F(SharedMemoryHostTest, EachRegionCountsAsTheWholePagesItMaps) {
  auto shm = CreateTestShm("pages", 4 * kPage);
  ASSERT_TRUE(shm.ok()) << shm.status();
  SharedMemoryRegistry registry(&backend_, 3 * kPage, "/gemm");
  ASSERT_TRUE(registry.Register(Host("a", (*shm)->key(), 0, 1)).ok());
  EXPECT_EQ(registry.bytes(), kPage);
  // Two bytes across a page boundary map two pages.
  ASSERT_TRUE(registry.Register(Host("b", (*shm)->key(), kPage - 1, 2)).ok());
  EXPECT_EQ(registry.bytes(), 3 * kPage);
  auto over = registry.Register(Host("c", (*shm)->key(), 0, 1));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted) << over.status();
  ASSERT_TRUE(registry.Unregister("b").ok());
  EXPECT_EQ(registry.bytes(), kPage);
  ASSERT_TRUE(registry.Unregister("a").ok());
  EXPECT_EQ(registry.bytes(), 0);
}

// The CPU backend behind an engine, with one registered region "r" of three pages whose last
// page the tests shrink away after resolving their references (as if the client shrank it while
// the requests were queued).
class ShrunkUnderRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = cpu::CreateCpuBackend({.workers = 1});
    ASSERT_TRUE(backend.ok()) << backend.status();
    auto engine = GemmEngine::Create({}, std::move(*backend));
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = std::move(*engine);
    auto shm = CreateTestShm("cpu", 3 * kPage);
    ASSERT_TRUE(shm.ok()) << shm.status();
    shm_ = std::move(*shm);
    ASSERT_TRUE(engine_->shared_memory().Register(Host("r", shm_->key(), 0, 3 * kPage)).ok());
  }

  // A 4x4x4 problem with inline operands (ones) and a BF16 output in the response.
  static Problem Inline(const std::string& ones) {
    return {.m = 4, .n = 4, .k = 4, .a = ones, .b = ones, .out_dtype = DType::kBF16};
  }
  // `*bytes` points to `size` bytes of region "r" at `offset`, held by `request`.
  template <typename Bytes>
  void Refer(const std::string& field, int64_t offset, int64_t size, GemmRequest* request,
             Bytes* bytes, HostMemory* where) {
    auto r = engine_->shared_memory().Resolve(field, {"r", offset, size}, &request->regions);
    ASSERT_TRUE(r.ok()) << r.status();
    *bytes = Bytes(r->bytes.data(), r->bytes.size());
    *where = HostMemory::kShared;
  }
  // Runs `request` through the engine and returns its answer.
  absl::StatusOr<GemmResult> Run(GemmRequest request) {
    auto item = std::make_shared<WorkItem>();
    item->request = std::move(request);
    item->arrival = absl::Now();
    absl::Notification answered;
    absl::StatusOr<GemmResult> result = absl::UnknownError("not answered");
    item->done = [&](absl::StatusOr<GemmResult> r) {
      result = std::move(r);
      answered.Notify();
    };
    if (absl::Status s = engine_->Submit(item); !s.ok()) return s;
    answered.WaitForNotification();
    return result;
  }
  // Expects `request` to fail naming `field` and region 'r', and a plain request to run after.
  void ExpectShrunkError(GemmRequest request, const std::string& field) {
    auto r = Run(std::move(request));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_NE(r.status().message().find(absl::StrCat(field, ": shared-memory region 'r'")),
              std::string::npos)
        << r.status();
    GemmRequest plain;
    plain.problems.push_back(Inline(ones_));
    auto ok = Run(std::move(plain));
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(ok->outputs[0].data.size(), 32u);
  }

  std::unique_ptr<GemmEngine> engine_;
  std::unique_ptr<PosixShm> shm_;
  const std::string ones_ = FloatsToBf16Bytes(std::vector<float>(16, 1.0f));
  const int64_t gone_ = 2 * kPage;  // offset of the page that vanishes
};

TEST_F(ShrunkUnderRequestTest, EveryOperandAndTheOutput) {
  for (const char* operand : {"a", "b", "c", "d"}) {
    SCOPED_TRACE(operand);
    ASSERT_TRUE(ResizeShm(shm_->key(), 3 * kPage).ok());  // whole again
    GemmRequest request;
    Problem& p = request.problems.emplace_back(Inline(ones_));
    const std::string field = absl::StrCat("problem.", operand, "_shm");
    switch (operand[0]) {
      case 'a':
        Refer(field, gone_, 32, &request, &p.a, &p.a_mem);
        break;
      case 'b':
        Refer(field, gone_, 32, &request, &p.b, &p.b_mem);
        break;
      case 'c':
        p.beta = 1.0f;
        Refer(field, gone_, 32, &request, &p.c, &p.c_mem);
        break;
      case 'd':
        Refer(field, gone_, 32, &request, &p.d_dest, &p.d_mem);
        break;
    }
    ASSERT_TRUE(ResizeShm(shm_->key(), 2 * kPage).ok());
    ExpectShrunkError(std::move(request), field);
  }
}

TEST_F(ShrunkUnderRequestTest, OneProblemOfAGroup) {
  GemmRequest request;
  request.kind = WorkKind::kGroup;
  request.problems.push_back(Inline(ones_));
  Problem& p = request.problems.emplace_back(Inline(ones_));
  Refer("group.problems[1].a_shm", gone_, 32, &request, &p.a, &p.a_mem);
  ASSERT_TRUE(ResizeShm(shm_->key(), 2 * kPage).ok());
  ExpectShrunkError(std::move(request), "group.problems[1].a_shm");
}

}  // namespace
}  // namespace gemm::core
