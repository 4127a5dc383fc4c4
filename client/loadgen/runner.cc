// Load-generator engine: wiring of the parts, the completion path, sweep points and the drain at
// the end. Judging answers is OutcomeRecorder's job, measuring a point PointMeasurer's.
#include "client/loadgen/runner.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "client/loadgen/call_issuer.h"
#include "client/loadgen/dispatcher.h"
#include "client/loadgen/operand_region.h"
#include "client/loadgen/operands.h"
#include "client/loadgen/outcome_recorder.h"
#include "client/loadgen/point_measurer.h"
#include "client/loadgen/request_templates.h"
#include "client/loadgen/response_checker.h"
#include "client/loadgen/sync_caller.h"
#include "client/loadgen/window_recorder.h"

namespace gemm::loadgen {
namespace {

std::chrono::steady_clock::time_point After(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

}  // namespace

class Runner::Impl {
 public:
  Impl(const RunnerOptions& options, std::vector<Target> targets)
      : options_(options), targets_(std::move(targets)) {}
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

  const RunnerOptions options_;
  const std::vector<Target> targets_;
  std::vector<ShapeOperands> shapes_;
  WindowRecorder recorder_;
  bool finished_ = false;
  // Declared in the order they are built: each may use those above it, and is destroyed first.
  std::unique_ptr<OperandRegion> region_;
  std::unique_ptr<RequestTemplates> templates_;
  std::unique_ptr<ResponseChecker> checker_;
  std::unique_ptr<OutcomeRecorder> outcomes_;
  std::unique_ptr<CallIssuer> issuer_;
  std::unique_ptr<SyncCaller> sync_caller_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<PointMeasurer> measurer_;
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
  outcomes_ = std::make_unique<OutcomeRecorder>(shapes_, *checker_, recorder_);
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
  measurer_ = std::make_unique<PointMeasurer>(
      PointMeasurer::Options{.warmup_s = options_.warmup_s,
                             .window_s = options_.window_s,
                             .max_windows = options_.max_windows,
                             .stability = {.stable_windows = options_.stable_windows,
                                           .stability_pct = options_.stability_pct,
                                           .latency_percentile = options_.stability_percentile},
                             .progress = options_.progress,
                             .stop = options_.stop},
      recorder_, [this] { return dispatcher_->in_flight(); });
  if (w.streaming && !w.sync_callers) issuer_->OpenStreams();  // sync callers open their own
  recorder_.TakeWindow();
  return absl::OkStatus();
}

void Runner::Impl::Complete(Call* c, const grpc::Status& status, const v1::GemmResponse* resp) {
  const bool ok = outcomes_->Record(*c, status, resp);
  issuer_->Finished(c);
  dispatcher_->OnFinished(ok);
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
  measurer_->Measure(label, r);
  dispatcher_->Stop();
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
