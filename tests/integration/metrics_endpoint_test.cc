// Integration: the real gemm_server serves Prometheus metrics on --metrics_port. Scraped with a
// plain socket after one Gemm call; the request must be counted and the serving kernel named.
// (CUDA builds once could not start this endpoint at all: CivetWeb's threads did not fit the
// process's static TLS, and the server exited at start-up.)
#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/common/loopback_http.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

// The value of the first sample of `name` whose labels contain every one of `labels`
// (e.g. `method="Gemm"`), or -1 when there is none.
double Sample(const std::string& text, const std::string& name,
              const std::vector<std::string>& labels) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, absl::StrCat(name, "{"))) continue;
    bool match = true;
    for (const auto& l : labels) match = match && absl::StrContains(line, l);
    double value;
    const size_t space = line.rfind(' ');
    if (match && space != absl::string_view::npos &&
        absl::SimpleAtod(line.substr(space + 1), &value)) {
      return value;
    }
  }
  return -1;
}

TEST(MetricsEndpointTest, ServerServesMetricsAfterAGemm) {
  const int metrics_port = ServerProcess::FreePort();
  auto server = ServerProcess::Start(
      {"--backend=cpu", "--cpu_workers=1", absl::StrCat("--metrics_port=", metrics_port)});
  ASSERT_TRUE(server.ok()) << server.status() << " (did the metrics endpoint fail to start?)";

  absl::BitGen gen;
  const HostProblem p = RandomProblem(32, 32, 32, false, false, 1, 0, gen);
  v1::GemmRequest req;
  FillProto(p, req.mutable_problem());
  auto resp = (*server)->client().Gemm(req, absl::Seconds(60));
  ASSERT_TRUE(resp.ok()) << resp.status();

  // The RPC is counted as it finishes and the kernel gauge is set by a periodic thread: poll.
  std::string response;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  do {
    response = LoopbackGet(metrics_port, "/metrics");
    if (Sample(response, "gemm_rpcs_total", {"method=\"Gemm\"", "code=\"OK\""}) >= 1 &&
        absl::StrContains(response, "gemm_kernel_info{")) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(100));
  } while (absl::Now() < deadline);

  ASSERT_TRUE(absl::StartsWith(response, "HTTP/1.1 200 OK\r\n")) << response;
  EXPECT_TRUE(absl::StrContains(response, "Content-Type: text/plain; version=0.0.4")) << response;
  EXPECT_GE(Sample(response, "gemm_rpcs_total", {"method=\"Gemm\"", "code=\"OK\""}), 1) << response;
  EXPECT_EQ(Sample(response, "gemm_kernel_info", {"device=\"cpu\""}), 1) << response;
  EXPECT_GE(Sample(response, "gemm_request_seconds_count", {"device=\"cpu\""}), 1) << response;

  EXPECT_TRUE(absl::StartsWith(LoopbackGet(metrics_port, "/"), "HTTP/1.1 404"));
  EXPECT_EQ((*server)->Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace gemm::testing
