// The gRPC layer's conversions: a request asking for more work than the limits allow is refused
// before any of it is converted, and status messages sent to clients stay bounded however much
// of a client's input they quote.
#include "server/grpc/convert.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/cpu/cpu_backend.h"
#include "server/grpc/status_util.h"

namespace gemm::service {
namespace {

class ConvertTest : public ::testing::Test {
 protected:
  ConvertTest() : backend_(*cpu::CreateCpuBackend({})), shm_(backend_.get(), 0, "/gemm") {
    limits_.max_problems = 4;
  }

  absl::StatusOr<core::GemmRequest> Convert(const v1::GemmRequest& r) {
    return FromProto(r, absl::Now(), absl::InfiniteFuture(), limits_, shm_, core::Caller{});
  }

  // A problem whose output dtype does not exist (conversion would refuse it).
  static v1::Problem BadProblem() {
    v1::Problem p;
    p.set_m(2);
    p.set_n(2);
    p.set_k(2);
    p.set_output_dtype(static_cast<v1::DType>(9));
    return p;
  }

  std::unique_ptr<core::Backend> backend_;
  core::SharedMemoryRegistry shm_;
  core::Limits limits_;
};

TEST_F(ConvertTest, GroupOverTheLimitIsRefusedBeforeItsProblemsAreConverted) {
  v1::GemmRequest r;
  for (int i = 0; i < 5; ++i) *r.mutable_group()->add_problems() = BadProblem();
  auto d = Convert(r);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  // The count is what is refused, not the first problem (which was never looked at).
  EXPECT_NE(d.status().message().find("group.problems: has 5 entries"), std::string::npos)
      << d.status();
  EXPECT_NE(d.status().message().find("--max_problems"), std::string::npos) << d.status();
}

TEST_F(ConvertTest, BatchOverTheLimitIsRefusedBeforeConversion) {
  v1::GemmRequest r;
  *r.mutable_batch()->mutable_problem() = BadProblem();
  r.mutable_batch()->set_count(5);
  auto d = Convert(r);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("batch.count"), std::string::npos) << d.status();
}

TEST_F(ConvertTest, GroupWithinTheLimitIsConverted) {
  v1::GemmRequest r;
  for (int i = 0; i < 4; ++i) {
    v1::Problem* p = r.mutable_group()->add_problems();
    p->set_m(i + 1);
    p->set_n(2);
    p->set_k(3);
  }
  auto d = Convert(r);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->problems.size(), 4u);
  EXPECT_EQ(d->problems[3].m, 4);
  *r.mutable_group()->add_problems() = BadProblem();
  EXPECT_FALSE(Convert(r).ok());
}

TEST(StatusUtilTest, MessagesSentToClientsAreCapped) {
  const std::string huge = "kernel: '" + std::string(5'000'000, 'x') + "' is not usable";
  const grpc::Status s = ToGrpcStatus(absl::InvalidArgumentError(huge));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LE(s.error_message().size(), kMaxStatusMessageBytes);
  EXPECT_EQ(s.error_message().rfind("kernel: 'xxx", 0), 0u) << s.error_message().substr(0, 40);
  EXPECT_NE(s.error_message().find(absl::StrCat("(", huge.size(), " bytes)")), std::string::npos);
  // Short messages pass unchanged.
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("handle: no resident matrix 'w'")).error_message(),
            "handle: no resident matrix 'w'");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(StatusUtilTest, CapDoesNotCutACharacterInHalf) {
  // Three-byte characters: wherever the cut falls, no partial character is left before the
  // ellipsis.
  for (size_t lead = 0; lead < 3; ++lead) {
    std::string text(lead, 'a');
    while (text.size() < 3 * kMaxStatusMessageBytes) text += "\xe2\x82\xac";  // U+20AC
    const std::string capped = CappedStatusMessage(text);
    ASSERT_LE(capped.size(), kMaxStatusMessageBytes);
    const size_t dots = capped.find("...");
    ASSERT_NE(dots, std::string::npos);
    EXPECT_EQ((dots - lead) % 3, 0u) << "lead " << lead;
  }
}

}  // namespace
}  // namespace gemm::service
