// Integration: a stream request whose timeout_us passes while it waits behind a long job on the
// server's only worker is answered DEADLINE_EXCEEDED at its deadline, not when the job ends.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/common/loopback_http.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

TEST(QueueDeadlineTest, StreamRequestExpiresOnTimeBehindALongJob) {
  const int metrics_port = ServerProcess::FreePort();
  auto server = ServerProcess::Start(
      {"--backend=cpu", "--cpu_workers=1", absl::StrCat("--metrics_port=", metrics_port)});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::BitGen gen;
  grpc::ClientContext context;
  auto stream = (*server)->client().stub()->GemmStream(&context);

  // One large GEMM that holds the only worker well past the timeout of the request after it.
  const HostProblem big = RandomProblem(4096, 4096, 4096, false, false, 1, 0, gen);
  v1::GemmRequest long_request;
  long_request.set_request_id("long");
  FillProto(big, long_request.mutable_problem());
  ASSERT_TRUE(stream->Write(long_request));
  // The worker has taken it once the batcher has handed out a batch.
  const std::string released = "gemm_batches_released_total{reason=\"alone\"}";
  for (int i = 0; i < 300 && ScrapeMetric(metrics_port, released) < 1; ++i) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_GE(ScrapeMetric(metrics_port, released), 1) << "the long job never started";

  constexpr absl::Duration kTimeout = absl::Milliseconds(300);
  const HostProblem small = RandomProblem(8, 8, 8, false, false, 1, 0, gen);
  v1::GemmRequest request;
  request.set_request_id("queued");
  request.set_timeout_us(absl::ToInt64Microseconds(kTimeout));
  FillProto(small, request.mutable_problem());
  const absl::Time sent = absl::Now();
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();

  v1::GemmResponse queued, done;
  ASSERT_TRUE(stream->Read(&queued));
  const absl::Duration answered_after = absl::Now() - sent;
  ASSERT_TRUE(stream->Read(&done));
  const absl::Duration long_done_after = absl::Now() - sent;
  EXPECT_TRUE(stream->Finish().ok());

  EXPECT_EQ(done.request_id(), "long");
  EXPECT_EQ(done.error().code(), 0) << done.error().message();
  if (long_done_after < kTimeout + absl::Milliseconds(300)) {
    GTEST_SKIP() << "the long job ended " << long_done_after
                 << " after the request was sent: too soon to show anything on this machine";
  }
  EXPECT_EQ(queued.request_id(), "queued");
  EXPECT_EQ(queued.error().code(), grpc::StatusCode::DEADLINE_EXCEEDED) << queued.error().message();
  EXPECT_GE(answered_after, kTimeout);
  // Within a few milliseconds of the deadline (generous for a loaded test machine), and long
  // before the job it waited behind ended.
  EXPECT_LT(answered_after, kTimeout + absl::Milliseconds(150))
      << "the long job took " << long_done_after;
}

}  // namespace
}  // namespace gemm::testing
