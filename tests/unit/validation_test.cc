// Request validation: each error names its field; good requests resolve resident handles.
#include "server/core/validation.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <limits>

#include "server/core/client_string.h"
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

  absl::Status Check(GemmRequest r) { return ValidateRequest(limits_, registry_, &r).status(); }

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
  r.problems[0].a = absl::string_view(r.problems[0].a.data() + 1, r.problems[0].a.size() - 1);
  ExpectError(Check(r), absl::StatusCode::kInvalidArgument, "problem.a");
  r = Single(3, 4, 5);
  r.problems[0].b = absl::string_view(r.problems[0].b.data() + 2, r.problems[0].b.size() - 2);
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

// A declared size whose byte count does not fit 64 bits is refused, not wrapped (the registry
// is also used with limits no flag would allow, e.g. by the fuzzers).
TEST_F(ValidationTest, RegistrySizeThatOverflowsIsRefused) {
  constexpr int64_t kHuge = int64_t{5497558138880};  // 5 * 2^40: rows * cols * 2 wraps
  auto reg = registry_.Begin({.rows = kHuge, .cols = kHuge}, kHuge);
  ASSERT_FALSE(reg.ok());
  EXPECT_EQ(reg.status().code(), absl::StatusCode::kResourceExhausted) << reg.status();
  EXPECT_EQ(registry_.resident_bytes(), 0);
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

// With --max_dim past ~3.04e9 the products of dimensions used to wrap around: m=n=k=2^32 made
// every operand size 0 (empty operands accepted, an empty answer), and m=n=k=1125891317039105
// made A's size 512 KiB. Whatever the limits, such sizes are refused.
TEST_F(ValidationTest, DimensionProductsThatOverflowAreRefused) {
  limits_.max_dim = std::numeric_limits<int64_t>::max();
  const int64_t big = int64_t{1} << 32;
  GemmRequest empty;
  empty.problems.push_back({.m = big, .n = big, .k = big, .a = {}, .b = {}});
  ExpectError(Check(empty), absl::StatusCode::kResourceExhausted, "problem.a: count*M*K*2");

  const int64_t wrap = 1125891317039105;
  a_.assign(512 << 10, '\x3f');
  b_.assign(512 << 10, '\x3f');
  GemmRequest r;
  r.problems.push_back({.m = wrap, .n = wrap, .k = wrap, .a = a_, .b = b_});
  ExpectError(Check(r), absl::StatusCode::kResourceExhausted, "overflow");

  // A batch whose count overflows an entry's size that fits.
  limits_.max_problems = std::numeric_limits<int64_t>::max();
  GemmRequest batch;
  batch.kind = WorkKind::kBatch;
  batch.problems.push_back(
      {.m = int64_t{1} << 20, .n = 1, .k = int64_t{1} << 20, .count = int64_t{1} << 22});
  ExpectError(Check(batch), absl::StatusCode::kResourceExhausted, "overflow");
}

// Responses of a group add up past 2^63 without wrapping.
TEST_F(ValidationTest, ResponseTotalsDoNotWrap) {
  limits_.max_dim = std::numeric_limits<int32_t>::max();
  limits_.max_request_bytes = std::numeric_limits<int64_t>::max();
  limits_.max_response_bytes = std::numeric_limits<int64_t>::max();
  limits_.max_message_bytes = std::numeric_limits<int64_t>::max();
  const int64_t m = int64_t{1} << 30, n = int64_t{1} << 30;  // one FP32 output: 2^62 bytes
  // A and B (k = 1) of 2 GiB each: reserved address space, never touched (validation only
  // compares sizes).
  const size_t operand = size_t{2} << 30;
  void* mem = mmap(nullptr, operand, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  const absl::string_view ab(static_cast<const char*>(mem), operand);
  GemmRequest r;
  r.kind = WorkKind::kGroup;
  for (int i = 0; i < 3; ++i) {
    r.problems.push_back({.m = m, .n = n, .k = 1, .a = ab, .b = ab, .out_dtype = DType::kFP32});
  }
  ExpectError(Check(r), absl::StatusCode::kResourceExhausted,
              "response outputs are at least 2^63 bytes (through group.problems[1])");
  munmap(mem, operand);
}

TEST_F(ValidationTest, ResponseOverItsLimitIsResourceExhausted) {
  limits_.max_response_bytes = 4096;
  // 64 bytes of operands asking for a 16 KiB FP32 response.
  auto r = Single(64, 64, 1);
  r.problems[0].out_dtype = DType::kFP32;
  ExpectError(Check(r), absl::StatusCode::kResourceExhausted, "--max_response_bytes");
  // Written to shared memory instead, the output does not count.
  std::string d(64 * 64 * 4, '\0');
  r.problems[0].d_dest = absl::MakeSpan(d);
  auto bytes = ValidateRequest(limits_, registry_, &r);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(bytes->response, 0);
}

TEST_F(ValidationTest, ReportsTheBytesARequestHolds) {
  auto r = Single(3, 4, 5);
  r.problems[0].out_dtype = DType::kFP32;
  auto bytes = ValidateRequest(limits_, registry_, &r);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(bytes->operands, 3 * 5 * 2 + 5 * 4 * 2);
  EXPECT_EQ(bytes->in_message, bytes->operands);
  EXPECT_EQ(bytes->response, 3 * 4 * 4);
  EXPECT_EQ(bytes->held(), bytes->in_message + bytes->response);
}

// ResponseBytes, what a stream's answer budget counts, is the response size validation reports
// (and the in-flight budget counts): singles, batches and groups, BF16 and FP32, outputs in
// shared memory excluded.
TEST_F(ValidationTest, ResponseBytesIsWhatValidationCounts) {
  limits_.max_request_bytes = 1 << 20;
  std::vector<GemmRequest> requests(4);
  requests[0] = Single(3, 4, 5);  // a_, b_: one 3x5 A, one 5x4 B
  const std::string batch_a(2 * 3 * 5 * 2, '\x3f');
  std::string d(2 * 3 * 4 * 4, '\0');
  requests[1].kind = WorkKind::kBatch;
  requests[1].problems.push_back(
      {.m = 3, .n = 4, .k = 5, .count = 2, .a = batch_a, .b = b_, .out_dtype = DType::kFP32});
  requests[2].kind = WorkKind::kGroup;
  requests[2].problems = {requests[0].problems[0], requests[0].problems[0]};
  requests[2].problems[1].out_dtype = DType::kFP32;
  requests[3] = requests[1];
  requests[3].problems[0].d_dest = absl::MakeSpan(d);  // written to shared memory
  const int64_t expected[] = {3 * 4 * 2, 2 * 3 * 4 * 4, 3 * 4 * 2 + 3 * 4 * 4, 0};
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(ResponseBytes(requests[i]), expected[i]) << "request " << i;
    auto bytes = ValidateRequest(limits_, registry_, &requests[i]);
    ASSERT_TRUE(bytes.ok()) << "request " << i << ": " << bytes.status();
    EXPECT_EQ(bytes->response, ResponseBytes(requests[i])) << "request " << i;
  }
}

// For sizes validation refuses, ResponseBytes saturates instead of wrapping.
TEST(ResponseBytesTest, SaturatesForSizesThatOverflowOrAreNegative) {
  GemmRequest r;
  r.problems.push_back({.m = int64_t{1} << 40, .n = int64_t{1} << 40, .out_dtype = DType::kFP32});
  EXPECT_EQ(ResponseBytes(r), kSaturatedResponseBytes);
  r.problems.assign(2, {.m = int64_t{1} << 48, .n = 2});  // 2^50 each: the sum saturates
  EXPECT_EQ(ResponseBytes(r), kSaturatedResponseBytes);
  r.problems.assign(1, {.m = 4, .n = 4, .count = -1});
  EXPECT_EQ(ResponseBytes(r), kSaturatedResponseBytes);
}

TEST_F(ValidationTest, ClientStringsInMessagesAreCut) {
  auto r = Single(3, 4, 5);
  r.problems[0].b = {};
  r.problems[0].b_handle = std::string(5'000'000, 'h');
  const absl::Status s = Check(r);
  ExpectError(s, absl::StatusCode::kNotFound, "problem.b_handle");
  EXPECT_LT(s.message().size(), 512u) << s.message().substr(0, 200);
  EXPECT_NE(s.message().find("(5000000 bytes)"), std::string::npos);
}

// The CPU backend has one device, the host (-1): a matrix asked to live on GPU 77 is refused.
TEST_F(ValidationTest, MatrixDevicesMustBeTheBackends) {
  auto bad = registry_.Begin({.name = "w", .rows = 4, .cols = 4, .devices = {77}}, 1000);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("header.devices[0]: 77"), std::string::npos)
      << bad.status();
  EXPECT_EQ(registry_.resident_bytes(), 0);
  EXPECT_TRUE(registry_.Begin({.name = "w", .rows = 4, .cols = 4, .devices = {-1}}, 1000).ok());
  EXPECT_TRUE(registry_.Begin({.name = "w", .rows = 4, .cols = 4}, 1000).ok());
  ExpectError(CheckMatrixDevices({0, 1, 0}, {0, 1}), absl::StatusCode::kInvalidArgument,
              "header.devices[2]: device 0 is listed twice");
  ExpectError(CheckMatrixDevices({-1}, {0, 1}), absl::StatusCode::kInvalidArgument,
              "header.devices[0]: -1 is not a device of this server (devices: 0, 1)");
}

}  // namespace
}  // namespace gemm::core
