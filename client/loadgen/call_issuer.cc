// Sending the load generator's calls: draws, unary calls, streams.
#include "client/loadgen/call_issuer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "client/loadgen/window_recorder.h"

namespace gemm::loadgen {
namespace {

// A failed stream is reopened at most this often per slot.
constexpr int64_t kStreamReopenNs = 200'000'000;

}  // namespace

CallIssuer::CallIssuer(const Options& options, const std::vector<Target>& targets,
                       const RequestTemplates& templates, OperandRegion* region,
                       Completion complete)
    : options_(options),
      templates_(templates),
      region_(region),
      complete_(std::move(complete)),
      rng_(options.seed) {
  for (int t = 0; t < static_cast<int>(targets.size()); ++t) {
    for (int i = 0; i < std::max(1, options.workload.channels); ++i) {
      endpoints_.push_back(Endpoint{t, targets[t].client->stub(i)});
    }
  }
  std::vector<double> weights;
  for (const ShapeSpec& s : options.workload.shapes) weights.push_back(s.weight);
  shape_pick_ = std::discrete_distribution<int>(weights.begin(), weights.end());
}

CallIssuer::~CallIssuer() { Shutdown(); }

void CallIssuer::Shutdown() {
  // Streams are destroyed only after gRPC is done with them (their OnDone ran), cancelled ones
  // included.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  WaitStreamsDone(deadline);
  for (CallStream* s : AllStreams()) s->WaitDone(deadline + std::chrono::seconds(5));
}

std::vector<CallStream*> CallIssuer::AllStreams() {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<CallStream*> all;
  for (auto& s : all_streams_) all.push_back(s.get());
  return all;
}

const std::vector<v1::GemmRequest>& CallIssuer::templates(int endpoint) const {
  return templates_.ForTarget(endpoints_[endpoint].target);
}

void CallIssuer::OpenStreams() {
  std::lock_guard<std::mutex> l(mu_);
  for (int e = 0; e < endpoints(); ++e) {
    for (int i = 0; i < std::max(1, options_.workload.streams_per_channel); ++i) {
      all_streams_.push_back(OpenStream(static_cast<int>(streams_.size())));
      streams_.push_back(all_streams_.back().get());
      stream_opened_ns_.push_back(NowNs());
    }
  }
}

std::unique_ptr<CallStream> CallIssuer::OpenStream(int slot) {
  const WorkloadSpec& w = options_.workload;
  const int endpoint = slot / std::max(1, w.streams_per_channel);
  CallStream::Options o;
  o.stub = endpoints_[endpoint].stub;
  o.packed = w.packed;
  o.slot = slot;
  o.priority = w.priority_high ? v1::PRIORITY_HIGH : v1::PRIORITY_NORMAL;
  o.timeout_us = w.deadline_us;
  o.kernel = w.kernel;
  const std::vector<v1::GemmRequest>* group = &templates(endpoint);
  o.problem = [group](int tmpl) -> const v1::Problem& { return (*group)[tmpl].problem(); };
  o.complete = complete_;
  o.messages_written = &stream_messages_;
  o.requests_written = &stream_requests_;
  return CallStream::Open(std::move(o));
}

void CallIssuer::PickLocked(Call* c) {
  c->shape = shape_pick_(rng_);
  c->dslot = region_ != nullptr ? region_->TakeSlot() : -1;
  const int variants = templates_.variants();
  const int variant = variants > 1 ? std::uniform_int_distribution<int>(0, variants - 1)(rng_) : 0;
  c->tmpl = templates_.Index(c->shape, std::max(0, c->dslot), variant);
  c->verify = options_.verify_fraction > 0 &&
              std::uniform_real_distribution<double>(0, 1)(rng_) < options_.verify_fraction;
  if (options_.workload.streaming) c->id = absl::StrCat(next_id_++);
}

Call* CallIssuer::NewCall(int endpoint) {
  Call* c = new Call;
  {
    std::lock_guard<std::mutex> l(mu_);
    c->endpoint = endpoint >= 0 ? endpoint : static_cast<int>(round_robin_++ % endpoints_.size());
    PickLocked(c);
  }
  if (region_ != nullptr && c->verify) region_->Poison(c->shape, c->dslot);
  issued_.fetch_add(1);
  return c;
}

void CallIssuer::Finished(Call* c) {
  if (c->ctx) {
    std::lock_guard<std::mutex> l(live_mu_);
    live_.erase(c);
  }
  if (region_ != nullptr) region_->ReturnSlot(c->dslot);
  delete c;
}

std::chrono::system_clock::time_point CallIssuer::Deadline() const {
  const auto now = std::chrono::system_clock::now();
  auto deadline =
      now + std::chrono::microseconds(static_cast<int64_t>(options_.rpc_timeout_s * 1e6));
  const int64_t request_us = options_.workload.deadline_us;
  if (request_us > 0) deadline = std::min(deadline, now + std::chrono::microseconds(request_us));
  return deadline;
}

void CallIssuer::Issue(int64_t intended_ns) {
  if (!options_.workload.streaming) {
    Call* c = NewCall(-1);
    c->intended_ns = intended_ns;
    SendUnary(c);
    return;
  }
  Call* c = new Call;
  c->intended_ns = intended_ns;
  CallStream* stream = nullptr;
  size_t slot = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    PickLocked(c);
    // A packed stream completing a message takes its callers' next requests (see Completing).
    stream = options_.workload.packed ? CallStream::Completing() : nullptr;
    if (stream != nullptr) {
      slot = static_cast<size_t>(stream->slot());
    } else {
      slot = round_robin_++ % streams_.size();
      stream = streams_[slot];
    }
  }
  if (region_ != nullptr && c->verify) region_->Poison(c->shape, c->dslot);
  issued_.fetch_add(1);
  SendOnStream(c, stream, slot);
}

void CallIssuer::SendUnary(Call* c) {
  c->ctx = std::make_unique<grpc::ClientContext>();
  c->ctx->set_deadline(Deadline());
  {
    std::lock_guard<std::mutex> l(live_mu_);
    live_.insert(c);
  }
  const v1::GemmRequest& req = templates(c->endpoint)[c->tmpl];
  endpoints_[c->endpoint].stub->async()->Gemm(
      c->ctx.get(), &req, &c->resp,
      [this, c](grpc::Status status) { complete_(c, status, &c->resp); });
}

void CallIssuer::SendOnStream(Call* c, CallStream* stream, size_t slot) {
  if (stream->Send(c)) return;
  // The stream is gone: reopen it (at most every kStreamReopenNs per slot) or fail the request.
  CallStream* fresh = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    const int64_t now = NowNs();
    if (streams_[slot] != stream) {
      fresh = streams_[slot];  // another thread reopened it already
    } else if (now - stream_opened_ns_[slot] >= kStreamReopenNs) {
      stream_opened_ns_[slot] = now;
      stream->Close();
      all_streams_.push_back(OpenStream(static_cast<int>(slot)));
      fresh = streams_[slot] = all_streams_.back().get();
    }
  }
  if (fresh != nullptr && fresh->Send(c)) return;
  complete_(c, grpc::Status(grpc::StatusCode::UNAVAILABLE, stream->final_message()), nullptr);
}

void CallIssuer::CancelUnaryCalls() {
  std::lock_guard<std::mutex> l(live_mu_);
  for (Call* c : live_) c->ctx->TryCancel();
}

void CallIssuer::CloseStreams() {
  std::lock_guard<std::mutex> l(mu_);
  for (CallStream* s : streams_) s->Close();
}

void CallIssuer::WaitStreamsDone(std::chrono::steady_clock::time_point deadline) {
  for (CallStream* s : AllStreams()) {
    if (!s->WaitDone(deadline)) s->Cancel();
  }
}

}  // namespace gemm::loadgen
