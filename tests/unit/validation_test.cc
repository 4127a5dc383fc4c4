// Request validation: each error names its field; good requests resolve resident handles.
#include "server/core/validation.h"

#include <gtest/gtest.h>

#include "server/cpu/cpu_backend.h"

namespace gemm::core {
namespace {

class ValidationTest : public ::testing::Test {
 protected:
  ValidationTest() : backend_(*cpu::CreateCpuBackend({})), registry_(backend_.get(), 1 << 20) {
    limits_.max_dim = 1000;
    limits_.max_request_bytes = 100000;
    limits_.max_problems = 8;
  }

  GemmRequest Single(int64_t m, int64_t n, int64_t k) {
    a_.assign(m * k * 2, '\x3f');
    b_.assign(k * n * 2, '\x3f');
    GemmRequest r;
    r.problems.push_back({.m = m, .n = n, .k = k, .a = a_, .b = b_});
    return r;
  }

  absl::Status Check(GemmRequest r) { return ValidateRequest(limits_, registry_, &r); }

  std::unique_ptr<Backend> backend_;
  MatrixRegistry registry_;
  Limits limits_;
  std::string a_, b_;
};

void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s;
}

TEST_F(ValidationTest, AcceptsWellFormedSingle) { EXPECT_TRUE(Check(Single(3, 4, 5)).ok()); }

TEST_F(ValidationTest, RejectsBadDims) {
  ExpectError(Check(Single(0, 4, 5)), absl::StatusCode::kInvalidArgument, "problem.m");
  auto r = Single(3, 4, 5);
  r.problems[0].n = -1;
  ExpectError(Check(r), absl::StatusCode::kInvalidArgument, "problem.n");
  ExpectError(Check(Single(3, 4, 1001)), absl::StatusCode::kInvalidArgument, "max_dim");
}

TEST_F(ValidationTest, RejectsByteLengthMismatch) {
  auto r = Single(3, 4, 5);
  r.problems[0].a = r.problems[0].a.substr(1);
  ExpectError(Check(r), absl::StatusCode::kInvalidArgument, "problem.a");
  r = Single(3, 4, 5);
  r.problems[0].b = r.problems[0].b.substr(2);
  ExpectError(Check(r), absl::StatusCode::kInvalidArgument, "problem.b");
}

TEST_F(ValidationTest, BatchAcceptsSharedOrPerEntryB) {
  a_.assign(4 * 3 * 5 * 2, '\x3f');
  for (int64_t b_count : {1, 4}) {
    b_.assign(b_count * 5 * 6 * 2, '\x3f');
    GemmRequest r;
    r.kind = WorkKind::kBatch;
    r.problems.push_back({.m = 3, .n = 6, .k = 5, .count = 4, .a = a_, .b = b_});
    ASSERT_TRUE(ValidateRequest(limits_, registry_, &r).ok());
    EXPECT_EQ(r.problems[0].b_shared, b_count == 1);
  }
  b_.assign(2 * 5 * 6 * 2, '\x3f');
  GemmRequest r;
  r.kind = WorkKind::kBatch;
  r.problems.push_back({.m = 3, .n = 6, .k = 5, .count = 4, .a = a_, .b = b_});
  ExpectError(Check(r), absl::StatusCode::kInvalidArgument, "batch.problem.b");
}

TEST_F(ValidationTest, RequestSizeLimitIsResourceExhausted) {
  ExpectError(Check(Single(200, 200, 200)), absl::StatusCode::kResourceExhausted,
              "max_request_bytes");
}

TEST_F(ValidationTest, CShapeAndBetaWithoutC) {
  auto r = Single(3, 4, 5);
  std::string c(3 * 4 * 2 + 2, '\0');
  r.problems[0].c = c;
  ExpectError(Check(r), absl::StatusCode::kInvalidArgument, "problem.c");
  r = Single(3, 4, 5);
  r.problems[0].beta = 0.5f;
  ExpectError(Check(r), absl::StatusCode::kInvalidArgument, "problem.beta");
}

TEST_F(ValidationTest, ResidentHandleResolvesAndChecksShape) {
  auto reg = registry_.Begin({.name = "w", .rows = 5, .cols = 4}, 1000);  // K=5, N=4
  ASSERT_TRUE(reg.ok());
  ASSERT_TRUE((*reg)->Append(0, std::string(40, '\x3f')).ok());
  auto m = (*reg)->Finish();
  ASSERT_TRUE(m.ok());
  auto r = Single(3, 4, 5);
  r.problems[0].b = {};
  r.problems[0].b_handle = (*m)->desc().handle;
  ASSERT_TRUE(ValidateRequest(limits_, registry_, &r).ok());
  EXPECT_EQ(r.problems[0].b_resident, *m);
  auto wrong = Single(3, 6, 5);
  wrong.problems[0].b = {};
  wrong.problems[0].b_handle = (*m)->desc().handle;
  ExpectError(Check(wrong), absl::StatusCode::kInvalidArgument, "problem.b_handle");
  ASSERT_TRUE(registry_.Release((*m)->desc().handle).ok());
  ExpectError(Check(r), absl::StatusCode::kNotFound, "problem.b_handle");
  EXPECT_EQ(registry_.resident_bytes(), 0);
}

TEST_F(ValidationTest, ResidentMatrixMustLiveOnTheGpuOfOperandsInGpuMemory) {
  auto reg = registry_.Begin({.name = "w", .rows = 5, .cols = 4}, 1000);  // K=5, N=4
  ASSERT_TRUE(reg.ok());
  ASSERT_TRUE((*reg)->Append(0, std::string(40, '\x3f')).ok());
  auto m = (*reg)->Finish();
  ASSERT_TRUE(m.ok());
  auto r = Single(3, 4, 5);
  r.problems[0].b = {};
  r.problems[0].b_handle = (*m)->desc().handle;
  r.problems[0].operand_device = 1;  // A in a client's GPU memory on GPU 1; the matrix is not
  ExpectError(Check(r), absl::StatusCode::kFailedPrecondition, "does not live on GPU 1");
}

TEST_F(ValidationTest, RegistryCapAndAbandonedUploadsReturnBytes) {
  {
    auto reg = registry_.Begin({.rows = 512, .cols = 512}, 1000);  // 512 KiB of 1 MiB
    ASSERT_TRUE(reg.ok());
    EXPECT_EQ(registry_.resident_bytes(), 512 * 512 * 2);
    auto too_big = registry_.Begin({.rows = 1000, .cols = 1000}, 1000);
    EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  }  // abandoned
  EXPECT_EQ(registry_.resident_bytes(), 0);
}

TEST_F(ValidationTest, GroupErrorsNameTheIndex) {
  GemmRequest r;
  r.kind = WorkKind::kGroup;
  ExpectError(Check(r), absl::StatusCode::kInvalidArgument, "group.problems");
  a_.assign(3 * 5 * 2, '\x3f');
  b_.assign(5 * 4 * 2, '\x3f');
  r.problems.push_back({.m = 3, .n = 4, .k = 5, .a = a_, .b = b_});
  r.problems.push_back({.m = 3, .n = 4, .k = 0, .a = a_, .b = b_});
  ExpectError(Check(r), absl::StatusCode::kInvalidArgument, "group.problems[1].k");
}

}  // namespace
}  // namespace gemm::core
