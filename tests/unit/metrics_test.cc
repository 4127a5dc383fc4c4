// Tests of the Prometheus metrics: what each recording method exposes, the kernel info gauge,
// thread-safety, and the /metrics HTTP endpoint on loopback.
#include "server/core/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/common/loopback_http.h"

namespace gemm::core {
namespace {

bool Has(const std::string& text, const std::string& line) { return absl::StrContains(text, line); }

TEST(MetricsTest, RejectsBadPort) {
  EXPECT_EQ(Metrics::Create(-1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Metrics::Create(70000).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MetricsTest, RegistryOnlyWithPortZero) {
  auto m = Metrics::Create(0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->port(), 0);
  const std::string text = (*m)->Serialize();
  EXPECT_TRUE(Has(text, "gemm_queue_depth 0")) << text;
  EXPECT_TRUE(Has(text, "gemm_resident_matrix_bytes 0")) << text;
}

TEST(MetricsTest, CountsRpcsByMethodAndCode) {
  auto m = *Metrics::Create(0);
  m->RecordRpc("Gemm", 0);
  m->RecordRpc("Gemm", 0);
  m->RecordRpc("Gemm", 4);
  m->RecordRpc("RegisterMatrix", 8);
  m->RecordRpc("Gemm", 99);
  const std::string text = m->Serialize();
  EXPECT_TRUE(Has(text, "gemm_rpcs_total{code=\"OK\",method=\"Gemm\"} 2")) << text;
  EXPECT_TRUE(Has(text, "gemm_rpcs_total{code=\"DEADLINE_EXCEEDED\",method=\"Gemm\"} 1"));
  EXPECT_TRUE(
      Has(text, "gemm_rpcs_total{code=\"RESOURCE_EXHAUSTED\",method=\"RegisterMatrix\"} 1"));
  EXPECT_TRUE(Has(text, "gemm_rpcs_total{code=\"99\",method=\"Gemm\"} 1"));
}

TEST(MetricsTest, RecordsTimingHistograms) {
  auto m = *Metrics::Create(0);
  Timing t;
  t.queue = absl::Microseconds(150);
  t.copy_in = absl::Microseconds(20);
  t.compute = absl::Microseconds(300);
  t.copy_out = absl::Microseconds(30);
  t.total = absl::Microseconds(600);
  t.launch = absl::Microseconds(40);
  t.completion = absl::Microseconds(60);
  t.batch_rows = 256;
  t.batch_requests = 16;
  t.device = 1;
  m->RecordTiming(t);
  t.device = -1;
  t.total = absl::Seconds(20);
  m->RecordTiming(t);
  const std::string text = m->Serialize();
  EXPECT_TRUE(Has(text, "gemm_queue_seconds_count{device=\"1\"} 1")) << text;
  EXPECT_TRUE(Has(text, "gemm_queue_seconds_sum{device=\"1\"} 0.00015")) << text;
  // 150us falls in the 250us bucket, not the 100us one.
  EXPECT_TRUE(Has(text, "gemm_queue_seconds_bucket{device=\"1\",le=\"0.0001\"} 0")) << text;
  EXPECT_TRUE(Has(text, "gemm_queue_seconds_bucket{device=\"1\",le=\"0.00025\"} 1")) << text;
  EXPECT_TRUE(Has(text, "gemm_copy_in_seconds_count{device=\"1\"} 1"));
  EXPECT_TRUE(Has(text, "gemm_compute_seconds_count{device=\"1\"} 1"));
  EXPECT_TRUE(Has(text, "gemm_copy_out_seconds_count{device=\"1\"} 1"));
  EXPECT_TRUE(Has(text, "gemm_request_seconds_count{device=\"1\"} 1"));
  EXPECT_TRUE(Has(text, "gemm_launch_seconds_sum{device=\"1\"} 4e-05")) << text;
  EXPECT_TRUE(Has(text, "gemm_completion_seconds_sum{device=\"1\"} 6e-05")) << text;
  EXPECT_TRUE(Has(text, "gemm_request_seconds_bucket{device=\"cpu\",le=\"10\"} 0")) << text;
  EXPECT_TRUE(Has(text, "gemm_request_seconds_bucket{device=\"cpu\",le=\"+Inf\"} 1")) << text;
  EXPECT_TRUE(Has(text, "gemm_batch_rows_bucket{device=\"1\",le=\"128\"} 0")) << text;
  EXPECT_TRUE(Has(text, "gemm_batch_rows_bucket{device=\"1\",le=\"256\"} 1")) << text;
  EXPECT_TRUE(Has(text, "gemm_batch_requests_sum{device=\"1\"} 16")) << text;
}

// A request whose unit's GPU phases were not timed (--gpu_timing_every) counts in the queue,
// request, launch and completion histograms but not in copy-in, compute and copy-out.
TEST(MetricsTest, UntimedGpuPhasesAreNotObserved) {
  auto m = *Metrics::Create(0);
  Timing t;
  t.queue = absl::Microseconds(40);
  t.copy_in = absl::Microseconds(7);
  t.compute = absl::Microseconds(68);
  t.copy_out = absl::Microseconds(5);
  t.total = absl::Microseconds(300);
  t.device = 0;
  m->RecordTiming(t);
  t.gpu_timing_skipped = true;
  t.copy_in = absl::Microseconds(1);
  t.compute = absl::ZeroDuration();
  t.copy_out = absl::Microseconds(2);
  m->RecordTiming(t);
  m->RecordTiming(t);
  const std::string text = m->Serialize();
  EXPECT_TRUE(Has(text, "gemm_queue_seconds_count{device=\"0\"} 3")) << text;
  EXPECT_TRUE(Has(text, "gemm_request_seconds_count{device=\"0\"} 3")) << text;
  EXPECT_TRUE(Has(text, "gemm_copy_in_seconds_count{device=\"0\"} 1")) << text;
  EXPECT_TRUE(Has(text, "gemm_compute_seconds_count{device=\"0\"} 1")) << text;
  EXPECT_TRUE(Has(text, "gemm_compute_seconds_sum{device=\"0\"} 6.8e-05")) << text;
  EXPECT_TRUE(Has(text, "gemm_copy_out_seconds_count{device=\"0\"} 1")) << text;
}

TEST(MetricsTest, Gauges) {
  auto m = *Metrics::Create(0);
  m->SetQueueDepth(17);
  m->SetPoolBytes(0, 1 << 20, 1 << 30);
  m->SetPoolBytes(1, 0, 1 << 30);
  m->SetResidentMatrices(3, 3 << 20);
  m->SetSharedMemory(2, 5 << 20);
  m->RecordDropped("deadline");
  m->RecordDropped("deadline");
  const std::string text = m->Serialize();
  EXPECT_TRUE(Has(text, "gemm_queue_depth 17")) << text;
  EXPECT_TRUE(Has(text, "gemm_pool_bytes_in_use{device=\"0\"} 1048576")) << text;
  EXPECT_TRUE(Has(text, "gemm_pool_bytes_capacity{device=\"1\"} 1073741824")) << text;
  EXPECT_TRUE(Has(text, "gemm_resident_matrices 3")) << text;
  EXPECT_TRUE(Has(text, "gemm_resident_matrix_bytes 3145728")) << text;
  EXPECT_TRUE(Has(text, "gemm_shared_memory_regions 2")) << text;
  EXPECT_TRUE(Has(text, "gemm_shared_memory_bytes 5242880")) << text;
  EXPECT_TRUE(Has(text, "gemm_batcher_dropped_total{reason=\"deadline\"} 2")) << text;
}

TEST(MetricsTest, ConnectionsShedFollowTheListenersTotals) {
  auto m = *Metrics::Create(0);
  m->SetConnectionsShed("max_connections", 0);
  m->SetConnectionsShed("out_of_descriptors", 5);
  m->SetConnectionsShed("out_of_descriptors", 12);
  m->SetConnectionsShed("out_of_descriptors", 7);  // never goes back
  const std::string text = m->Serialize();
  EXPECT_TRUE(Has(text, "gemm_connections_shed_total{reason=\"max_connections\"} 0")) << text;
  EXPECT_TRUE(Has(text, "gemm_connections_shed_total{reason=\"out_of_descriptors\"} 12")) << text;
}

TEST(MetricsTest, StagingAndInlineAnswersFollowTheBackendsTotals) {
  auto m = *Metrics::Create(0);
  m->SetStaging({.used_bytes = 3 << 20,
                 .answer_bytes = 1 << 20,
                 .answer_max_bytes = 8 << 20,
                 .pinned_answers = 40,
                 .copied_answers = 2,
                 .request_bytes = 1 << 18,
                 .request_max_bytes = 128 << 20,
                 .heap_bytes = 1 << 30,
                 .heap_taken_bytes = 300 << 20,
                 .received_pinned_operands = 90});
  m->SetStaging({.used_bytes = 0,
                 .pinned_answers = 35,
                 .copied_answers = 5,  // never goes back
                 .request_max_bytes = 128 << 20,
                 .heap_bytes = 1 << 30,
                 .heap_taken_bytes = 310 << 20,
                 .received_pinned_operands = 120});
  const std::string text = m->Serialize();
  EXPECT_TRUE(Has(text, "gemm_staging_bytes_in_use 0")) << text;
  EXPECT_TRUE(Has(text, "gemm_pinned_answer_bytes 0")) << text;
  EXPECT_TRUE(Has(text, "gemm_pinned_request_bytes 0")) << text;
  EXPECT_TRUE(Has(text, "gemm_pinned_request_bytes_limit 134217728")) << text;
  EXPECT_TRUE(Has(text, "gemm_inline_answers_total{from=\"pinned\"} 40")) << text;
  EXPECT_TRUE(Has(text, "gemm_inline_answers_total{from=\"copied\"} 5")) << text;
  EXPECT_TRUE(Has(text, "gemm_pinned_heap_bytes 1073741824")) << text;
  EXPECT_TRUE(Has(text, "gemm_pinned_heap_taken_bytes 325058560")) << text;
  EXPECT_TRUE(Has(text, "gemm_request_operands_received_pinned_total 120")) << text;
}

TEST(MetricsTest, KernelInfoReplacesPreviousKernel) {
  auto m = *Metrics::Create(0);
  m->SetKernel(0, "sm90_wgmma");
  m->SetKernel(1, "sm90_wgmma");
  m->SetKernel(0, "cublaslt");  // e.g. the self-test failed
  m->SetKernel(0, "cublaslt");
  const std::string text = m->Serialize();
  EXPECT_TRUE(Has(text, "gemm_kernel_info{device=\"0\",kernel=\"cublaslt\"} 1")) << text;
  EXPECT_TRUE(Has(text, "gemm_kernel_info{device=\"1\",kernel=\"sm90_wgmma\"} 1")) << text;
  EXPECT_FALSE(Has(text, "gemm_kernel_info{device=\"0\",kernel=\"sm90_wgmma\"}")) << text;
}

TEST(MetricsTest, UnusableVariantsCarryABoundedReasonAndClearWhenUsable) {
  auto m = *Metrics::Create(0);
  m->SetVariantUsability("sm90.wgmma_128x256", false, "timeout");
  m->SetVariantUsability("sm90.small_m", false, "free text from a log line");
  m->SetVariantUsability("sm90.wgmma_64x128", true, "");
  std::string text = m->Serialize();
  EXPECT_TRUE(Has(
      text, "gemm_kernel_variant_unusable{reason=\"timeout\",variant=\"sm90.wgmma_128x256\"} 1"))
      << text;
  EXPECT_TRUE(
      Has(text, "gemm_kernel_variant_unusable{reason=\"error\",variant=\"sm90.small_m\"} 1"))
      << text;
  EXPECT_FALSE(Has(text, "sm90.wgmma_64x128")) << text;
  m->SetVariantUsability("sm90.wgmma_128x256", false, "mismatch");  // the reason changed
  m->SetVariantUsability("sm90.small_m", true, "");                 // qualified after all
  text = m->Serialize();
  EXPECT_TRUE(Has(
      text, "gemm_kernel_variant_unusable{reason=\"mismatch\",variant=\"sm90.wgmma_128x256\"} 1"))
      << text;
  EXPECT_FALSE(Has(text, "reason=\"timeout\"")) << text;
  EXPECT_FALSE(Has(text, "sm90.small_m")) << text;
}

TEST(MetricsTest, ThreadSafe) {
  auto m = *Metrics::Create(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&m, t] {
      Timing timing;
      timing.device = t % 2;
      for (int i = 0; i < 2000; ++i) {
        m->RecordRpc(t % 2 ? "Gemm" : "Info", i % 3);
        m->RecordTiming(timing);
        m->SetQueueDepth(i);
        m->SetKernel(t % 2, i % 2 ? "a" : "b");
        if (i % 100 == 0) m->Serialize();
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::string text = m->Serialize();
  EXPECT_TRUE(Has(text, "gemm_request_seconds_count{device=\"0\"} 8000")) << text;
  EXPECT_TRUE(Has(text, "gemm_request_seconds_count{device=\"1\"} 8000")) << text;
}

// A free loopback TCP port (racy in theory; fine for a test).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return -1;
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(MetricsTest, ServesMetricsOverHttp) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  auto m = Metrics::Create(port);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->port(), port);
  (*m)->SetQueueDepth(5);
  const std::string response = gemm::testing::LoopbackGet(port, "/metrics");
  EXPECT_TRUE(Has(response, "200 OK")) << response;
  EXPECT_TRUE(Has(response, "gemm_queue_depth 5")) << response;

  // The port is taken now: a second endpoint cannot bind.
  auto second = Metrics::Create(port);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

}  // namespace
}  // namespace gemm::core
