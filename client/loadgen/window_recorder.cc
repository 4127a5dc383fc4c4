// Window counters of the load generator.
#include "client/loadgen/window_recorder.h"

#include <chrono>
#include <utility>

namespace gemm::loadgen {
namespace {

void AddTiming(const v1::Timing& t, int64_t latency_ns, ServerTimingSums* st) {
  ++st->responses;
  st->queue_us += t.queue_us();
  if (!t.gpu_timing_skipped()) {
    ++st->gpu_timed;
    st->copy_in_us += t.copy_in_us();
    st->compute_us += t.compute_us();
    st->copy_out_us += t.copy_out_us();
    st->AddBatchCompute(t.batch_rows(), t.batch_requests(), static_cast<double>(t.compute_us()));
  }
  st->total_us += t.total_us();
  st->launch_us += t.launch_us();
  st->completion_us += t.completion_us();
  st->batch_requests += t.batch_requests();
  st->batch_rows += t.batch_rows();
  st->latency_us += static_cast<double>(latency_ns) / 1e3;
}

}  // namespace

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

WindowRecorder::WindowRecorder() : window_start_ns_(NowNs()) {}

void WindowRecorder::RecordSuccess(const ShapeOperands& s, int64_t latency_ns,
                                   const v1::GemmResponse& resp, bool verified, bool mismatch) {
  std::lock_guard<std::mutex> l(mu_);
  current_.latency_ns.Record(latency_ns);
  ++current_.ok;
  current_.flops += s.spec.Flops();
  current_.payload_bytes += static_cast<double>(s.request_bytes + s.response_bytes);
  current_.request_bytes += static_cast<double>(s.message_bytes);
  for (const v1::Output& o : resp.outputs()) {
    current_.response_bytes += static_cast<double>(o.data().size());
  }
  if (resp.has_timing()) AddTiming(resp.timing(), latency_ns, &current_.server);
  if (!resp.kernel().empty()) ++current_.kernels[resp.kernel()];
  if (verified) {
    ++current_.verified;
    if (mismatch) ++current_.mismatches;
  }
}

void WindowRecorder::RecordFailure(int code) {
  std::lock_guard<std::mutex> l(mu_);
  ++current_.failed;
  ++current_.errors_by_code[code];
}

WindowStats WindowRecorder::TakeWindow() {
  WindowStats w;
  const int64_t now = NowNs();
  std::lock_guard<std::mutex> l(mu_);
  std::swap(w, current_);
  w.duration_s = static_cast<double>(now - window_start_ns_) / 1e9;
  window_start_ns_ = now;
  return w;
}

WindowRecorder::Snapshot WindowRecorder::Peek() const {
  const int64_t now = NowNs();
  std::lock_guard<std::mutex> l(mu_);
  return Snapshot{.ok = current_.ok,
                  .failed = current_.failed,
                  .p99_ms = current_.latency_ns.Percentile(99) / 1e6,
                  .elapsed_s = static_cast<double>(now - window_start_ns_) / 1e9};
}

}  // namespace gemm::loadgen
