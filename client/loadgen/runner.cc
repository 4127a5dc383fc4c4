// Load-generator engine: wiring of the parts, the completion path, sweep points (warm-up,
// windows, stability, progress line) and the drain at the end.
#include "client/loadgen/runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/loadgen/call_issuer.h"
#include "client/loadgen/dispatcher.h"
#include "client/loadgen/operand_region.h"
#include "client/loadgen/operands.h"
#include "client/loadgen/request_templates.h"
#include "client/loadgen/response_checker.h"
#include "client/loadgen/stability.h"
#include "client/loadgen/sync_caller.h"
#include "client/loadgen/window_recorder.h"

namespace gemm::loadgen {
namespace {

constexpr int kMaxMismatchLogs = 5;
constexpr int64_t kProgressEveryNs = 250'000'000;

std::chrono::steady_clock::time_point After(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

}  // namespace

class Runner::Impl {
 public:
  Impl(const RunnerOptions& options, std::vector<Target> targets)
      : options_(options),
        targets_(std::move(targets)),
        stability_{.stable_windows = options.stable_windows,
                   .stability_pct = options.stability_pct,
                   .latency_percentile = options.stability_percentile} {}
  ~Impl() {
    Finish(5.0);
    // No completion may arrive once the parts it uses start going away.
    if (issuer_ != nullptr) issuer_->Shutdown();
  }

  absl::Status Init();
  PointResult RunPoint(double level, int index, int total);
  void Finish(double timeout_s);
  int64_t issued() const { return issuer_ != nullptr ? issuer_->issued() : 0; }

 private:
  // Records the outcome of `c` and hands it back. `resp` is the response (may carry a stream
  // error) or null on failure.
  void Complete(Call* c, const grpc::Status& status, const v1::GemmResponse* resp);
  // Whether a successful response is right; counts it as verified when it was checked.
  void Check(const Call& c, const v1::GemmResponse& resp, bool* verified, bool* mismatch);
  // Sleeps `seconds` (interruptible by `stop`), refreshing the progress line. False if stopped.
  bool WaitFor(double seconds, const std::string& label, const std::string& phase);
  void PrintProgress(const std::string& label, const std::string& phase);
  // Runs measurement windows until they agree, max_windows ran or the run is stopped; the
  // windows go into `r` and are returned. False in *running when stopped.
  std::vector<WindowStats> MeasureWindows(const std::string& label, PointResult& r, bool* running);
  bool Stopped() const { return options_.stop != nullptr && options_.stop->load(); }

  const RunnerOptions options_;
  const std::vector<Target> targets_;
  const StabilityRule stability_;
  std::vector<ShapeOperands> shapes_;
  WindowRecorder recorder_;
  std::atomic<int> mismatch_logs_{0};
  bool finished_ = false;
  // Declared in the order they are built: each may use those above it, and is destroyed first.
  std::unique_ptr<OperandRegion> region_;
  std::unique_ptr<RequestTemplates> templates_;
  std::unique_ptr<ResponseChecker> checker_;
  std::unique_ptr<CallIssuer> issuer_;
  std::unique_ptr<SyncCaller> sync_caller_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

absl::Status Runner::Impl::Init() {
  const WorkloadSpec& w = options_.workload;
  if (targets_.empty()) return absl::InvalidArgumentError("no targets");
  if (w.shapes.empty()) return absl::InvalidArgumentError("no shapes");
  shapes_ = MakeShapeOperands(w, options_.seed);
  if (w.shared_memory) {
    auto region = OperandRegion::Create(
        {.inline_b = w.b_source == BSource::kInline,
         .output_slots = static_cast<int>(std::max<int64_t>(1, options_.shm_output_slots)),
         .device = w.shm_device,
         .seed = options_.seed},
        shapes_, targets_);
    if (!region.ok()) return region.status();
    region_ = *std::move(region);
  }
  auto templates = RequestTemplates::Create(w, options_.seed, shapes_, region_.get(), targets_);
  if (!templates.ok()) return templates.status();
  templates_ = *std::move(templates);
  checker_ = std::make_unique<ResponseChecker>(w, shapes_, options_.verify_fraction > 0,
                                               options_.seed, region_.get());
  auto complete = [this](Call* c, const grpc::Status& s, const v1::GemmResponse* r) {
    Complete(c, s, r);
  };
  issuer_ =
      std::make_unique<CallIssuer>(CallIssuer::Options{.workload = w,
                                                       .verify_fraction = options_.verify_fraction,
                                                       .rpc_timeout_s = options_.rpc_timeout_s,
                                                       .seed = options_.seed},
                                   targets_, *templates_, region_.get(), complete);
  dispatcher_ = std::make_unique<Dispatcher>(
      Dispatcher::Options{.open_loop = options_.open_loop,
                          .poisson = options_.poisson,
                          .sync_callers = w.sync_callers,
                          .dispatch_threads = options_.dispatch_threads,
                          .max_outstanding = options_.max_outstanding,
                          .error_backoff_ms = options_.error_backoff_ms,
                          .seed = options_.seed},
      [this](int64_t intended_ns) { issuer_->Issue(intended_ns); },
      [this](int caller, const std::atomic<bool>& stop) { sync_caller_->Run(caller, stop); });
  sync_caller_ =
      std::make_unique<SyncCaller>(w, options_.error_backoff_ms, *issuer_, *dispatcher_, complete);
  if (w.streaming && !w.sync_callers) issuer_->OpenStreams();  // sync callers open their own
  recorder_.TakeWindow();
  return absl::OkStatus();
}

void Runner::Impl::Check(const Call& c, const v1::GemmResponse& resp, bool* verified,
                         bool* mismatch) {
  std::string why;
  const bool size_ok = checker_->SizesOk(c.shape, resp, &why);
  *verified = c.verify || !size_ok;
  *mismatch = !size_ok || (c.verify && !checker_->Verify(c.shape, c.dslot, resp, &why));
  if (*mismatch && mismatch_logs_.fetch_add(1) < kMaxMismatchLogs) {
    std::fprintf(stderr, "\ngemm_loadgen: MISMATCH in %s response: %s\n",
                 shapes_[c.shape].spec.Name().c_str(), why.c_str());
  }
}

void Runner::Impl::Complete(Call* c, const grpc::Status& status, const v1::GemmResponse* resp) {
  const int64_t latency = NowNs() - c->intended_ns;
  const bool stream_error = resp != nullptr && resp->has_error();
  const bool ok = status.ok() && resp != nullptr && !stream_error;
  if (ok) {
    bool verified = false, mismatch = false;
    Check(*c, *resp, &verified, &mismatch);
    recorder_.RecordSuccess(shapes_[c->shape], latency, *resp, verified, mismatch);
  } else {
    recorder_.RecordFailure(stream_error ? resp->error().code()
                                         : static_cast<int>(status.error_code()));
  }
  issuer_->Finished(c);
  dispatcher_->OnFinished(ok);
}

void Runner::Impl::PrintProgress(const std::string& label, const std::string& phase) {
  const WindowRecorder::Snapshot s = recorder_.Peek();
  std::fprintf(stderr,
               "\r\033[K[%s] %s  %.0f req/s  p99 %.3f ms  ok %lld  errors %lld  in flight %lld",
               label.c_str(), phase.c_str(), s.elapsed_s > 0 ? s.ok / s.elapsed_s : 0.0, s.p99_ms,
               static_cast<long long>(s.ok), static_cast<long long>(s.failed),
               static_cast<long long>(dispatcher_->in_flight()));
  std::fflush(stderr);
}

bool Runner::Impl::WaitFor(double seconds, const std::string& label, const std::string& phase) {
  const int64_t end = NowNs() + static_cast<int64_t>(seconds * 1e9);
  int64_t next_progress = 0;
  for (;;) {
    if (Stopped()) return false;
    const int64_t now = NowNs();
    if (now >= end) return true;
    if (options_.progress && now >= next_progress) {
      next_progress = now + kProgressEveryNs;
      PrintProgress(label, phase);
    }
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(end - now, 50'000'000)));
  }
}

std::vector<WindowStats> Runner::Impl::MeasureWindows(const std::string& label, PointResult& r,
                                                      bool* running) {
  std::vector<WindowStats> windows;
  while (*running) {
    *running = WaitFor(options_.window_s, label, absl::StrCat("window ", r.windows + 1));
    WindowStats w = recorder_.TakeWindow();
    // A window cut short by Ctrl-C still counts when it covers a meaningful span.
    if (!*running && w.duration_s < 0.2 * options_.window_s && !windows.empty()) break;
    r.window_throughput.push_back(w.Throughput());
    r.window_latency_ms.push_back(stability_.LatencyMs(w.latency_ns));
    windows.push_back(std::move(w));
    ++r.windows;
    if (stability_.IsStable(r)) {
      r.stable = true;
      break;
    }
    if (r.windows >= options_.max_windows) break;
  }
  return windows;
}

PointResult Runner::Impl::RunPoint(double level, int index, int total) {
  PointResult r;
  r.open_loop = options_.open_loop;
  (options_.open_loop ? r.target_rate : r.concurrency) = level;
  const std::string label = absl::StrCat(index + 1, "/", total, " ", r.Label());
  const int64_t issued_before = issuer_->issued();
  const int64_t messages_before = issuer_->stream_messages();
  const int64_t requests_before = issuer_->stream_requests();
  recorder_.TakeWindow();  // drop completions of earlier points' stragglers before this point
  dispatcher_->Start(level);
  bool running = WaitFor(options_.warmup_s, label, "warm-up");
  WindowStats warmup = recorder_.TakeWindow();
  const std::vector<WindowStats> windows = MeasureWindows(label, r, &running);
  r.interrupted = !running;
  dispatcher_->Stop();
  if (options_.progress) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  if (windows.empty()) {
    r.measured = std::move(warmup);  // interrupted during warm-up: report what there is
  } else {
    const size_t k = std::min<size_t>(windows.size(), std::max(1, options_.stable_windows));
    for (size_t i = windows.size() - k; i < windows.size(); ++i) r.measured.Merge(windows[i]);
  }
  r.issued = issuer_->issued() - issued_before;
  r.stream_messages = issuer_->stream_messages() - messages_before;
  r.stream_requests = issuer_->stream_requests() - requests_before;
  return r;
}

void Runner::Impl::Finish(double timeout_s) {
  if (finished_) return;
  finished_ = true;
  if (dispatcher_ != nullptr) {
    const auto deadline = After(timeout_s);
    if (!dispatcher_->WaitIdle(deadline)) issuer_->CancelUnaryCalls();
    issuer_->CloseStreams();
    issuer_->WaitStreamsDone(deadline);
    dispatcher_->WaitIdle(After(5.0));
  }
  if (templates_ != nullptr) templates_->Release();
  if (region_ != nullptr) region_->Release();  // unregisters and unlinks the region
}

Runner::Runner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runner::~Runner() = default;

absl::StatusOr<std::unique_ptr<Runner>> Runner::Create(const RunnerOptions& options,
                                                       std::vector<Target> targets) {
  auto impl = std::make_unique<Impl>(options, std::move(targets));
  absl::Status status = impl->Init();
  if (!status.ok()) return status;  // ~Impl releases what was registered
  return std::unique_ptr<Runner>(new Runner(std::move(impl)));
}

PointResult Runner::RunPoint(double level, int index, int total) {
  return impl_->RunPoint(level, index, total);
}

void Runner::Finish(double timeout_s) { impl_->Finish(timeout_s); }

int64_t Runner::issued() const { return impl_->issued(); }

}  // namespace gemm::loadgen
