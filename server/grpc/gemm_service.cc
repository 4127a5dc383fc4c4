// GemmService reactors.
#include "server/grpc/gemm_service.h"

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/core/answer_batch.h"
#include "server/grpc/convert.h"
#include "server/grpc/peer.h"
#include "server/grpc/response_pack.h"
#include "server/grpc/status_util.h"

namespace gemm::service {
namespace {

absl::Time RpcDeadline(const grpc::CallbackServerContext* context) {
  const auto d = context->deadline();
  if (d == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(d);
}

}  // namespace

GemmServiceImpl::GemmServiceImpl(core::GemmEngine* engine, std::string version,
                                 RpcObserver observer)
    : engine_(engine), version_(std::move(version)), observer_(std::move(observer)) {}

void GemmServiceImpl::Observe(absl::string_view method, absl::StatusCode code,
                              const core::Timing* timing) const {
  if (observer_) observer_(method, code, timing);
}

grpc::ServerUnaryReactor* GemmServiceImpl::Gemm(grpc::CallbackServerContext* context,
                                                const v1::GemmRequest* request,
                                                v1::GemmResponse* response) {
  auto* reactor = context->DefaultReactor();
  const absl::Time arrival = absl::Now();
  auto domain = FromProto(*request, arrival, RpcDeadline(context), engine_->limits(),
                          engine_->shared_memory());
  if (!domain.ok()) {
    Observe("Gemm", domain.status().code(), nullptr);
    reactor->Finish(ToGrpcStatus(domain.status()));
    return reactor;
  }
  auto item = std::make_shared<core::WorkItem>();
  item->request = std::move(*domain);
  item->arrival = arrival;
  item->cancelled = [context] { return context->IsCancelled(); };
  item->done = [this, reactor, response,
                id = request->request_id()](absl::StatusOr<core::GemmResult> result) {
    if (!result.ok()) {
      Observe("Gemm", result.status().code(), nullptr);
      reactor->Finish(ToGrpcStatus(result.status()));
      return;
    }
    Observe("Gemm", absl::StatusCode::kOk, &result->timing);
    response->set_request_id(id);
    ToProto(std::move(*result), response);
    reactor->Finish(grpc::Status::OK);
  };
  if (auto s = engine_->Submit(item); !s.ok()) {
    Observe("Gemm", s.code(), nullptr);
    reactor->Finish(ToGrpcStatus(s));
  }
  return reactor;
}

namespace {

// How a stream's messages carry requests and responses: one per message (GemmStream) or
// several (GemmStreamPacked).
struct SingleMessages {
  using In = v1::GemmRequest;
  using Out = v1::GemmResponse;
  static constexpr absl::string_view kMethod = "GemmStream";
  static int Count(const In& /*in*/) { return 1; }
  static v1::GemmRequest* At(In* in, int /*i*/) { return in; }
  // The next message to write, taken from `ready` (not empty): its first response.
  static std::unique_ptr<Out> Take(std::deque<std::unique_ptr<v1::GemmResponse>>* ready) {
    std::unique_ptr<Out> out = std::move(ready->front());
    ready->pop_front();
    return out;
  }
};

struct PackedMessages {
  using In = v1::GemmRequestPack;
  using Out = v1::GemmResponsePack;
  static constexpr absl::string_view kMethod = "GemmStreamPacked";
  static int Count(const In& in) { return in.requests_size(); }
  static v1::GemmRequest* At(In* in, int i) { return in->mutable_requests(i); }
  // The next message to write: the oldest responses in `ready` (not empty), up to
  // kMaxResponsePackBytes.
  static std::unique_ptr<Out> Take(std::deque<std::unique_ptr<v1::GemmResponse>>* ready) {
    return TakeResponsePack(ready);
  }
};

}  // namespace

// Bidirectional stream: reads messages one after another, submits the requests of each together
// (GemmEngine::SubmitAll), writes responses as they complete (one write in flight at a time; with
// PackedMessages a write carries the responses that became ready meanwhile, up to
// kMaxResponsePackBytes, and the answers a backend gives inside one AnswerBatch wait for each
// other), finishes when the client is done and every request has been answered.
template <class Messages>
class GemmServiceImpl::StreamReactor final
    : public grpc::ServerBidiReactor<typename Messages::In, typename Messages::Out> {
 public:
  StreamReactor(GemmServiceImpl* service, grpc::CallbackServerContext* context)
      : service_(service), context_(context) {
    StartNextRead();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      bool finish = false;
      {
        absl::MutexLock lock(&mu_);
        reads_done_ = true;
        finish = ShouldFinishLocked();
      }
      if (finish) FinishNow();
      return;
    }
    std::shared_ptr<typename Messages::In> message = std::move(reading_);
    const int count = Messages::Count(*message);
    {
      // NOTE: counted before the next read starts: that read can end (client done) on another
      // thread at once, and must not see zero requests in flight and finish the call while
      // these are still being handled (seen in CI: a lost response and a use after free).
      absl::MutexLock lock(&mu_);
      in_flight_ += count;
    }
    StartNextRead();
    std::vector<std::shared_ptr<core::WorkItem>> items;
    std::vector<std::string> ids;
    items.reserve(count);
    ids.reserve(count);
    for (int i = 0; i < count; ++i) {
      // Each request keeps the whole message alive (its operands may point into it).
      std::shared_ptr<v1::GemmRequest> request(message, Messages::At(message.get(), i));
      std::string id = request->request_id();
      auto item = MakeItem(std::move(request));
      if (item == nullptr) continue;  // answered with its error
      ids.push_back(std::move(id));
      items.push_back(std::move(item));
    }
    if (items.empty()) return;
    // Queued together: a batch being gathered takes all of them or none.
    std::vector<absl::Status> queued = service_->engine_->SubmitAll(std::move(items));
    for (size_t i = 0; i < queued.size(); ++i) {
      if (!queued[i].ok()) Complete(ids[i], queued[i]);
    }
  }

  void OnWriteDone(bool ok) override {
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      if (!ok) broken_ = true;
      if (!ready_.empty() && !broken_ && !flush_pending_) {
        StartWriteLocked();
      } else {
        writing_.reset();
        finish = ShouldFinishLocked();
      }
    }
    if (finish) FinishNow();
  }

  void OnDone() override { delete this; }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    broken_ = true;
  }

 private:
  void StartNextRead() {
    reading_ = std::make_shared<typename Messages::In>();
    this->StartRead(reading_.get());
  }

  // Writes the next message made of ready responses (ready_ not empty).
  void StartWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    writing_ = Messages::Take(&ready_);
    this->StartWrite(writing_.get());
  }

  // The work item of one request (already counted in in_flight_), or null after answering the
  // request with why it cannot be converted.
  std::shared_ptr<core::WorkItem> MakeItem(std::shared_ptr<v1::GemmRequest> request) {
    const absl::Time arrival = absl::Now();
    const std::string id = request->request_id();
    auto domain = FromProto(*request, arrival, RpcDeadline(context_), service_->engine_->limits(),
                            service_->engine_->shared_memory());
    if (!domain.ok()) {
      Complete(id, domain.status());
      return nullptr;
    }
    auto item = std::make_shared<core::WorkItem>();
    item->request = std::move(*domain);
    item->arrival = arrival;
    item->answer_group = this;
    item->cancelled = [ctx = context_] { return ctx->IsCancelled(); };
    item->done = [this, id](absl::StatusOr<core::GemmResult> result) {
      Complete(id, std::move(result));
    };
    item->keep_alive = std::move(request);
    return item;
  }

  void Complete(const std::string& id, absl::StatusOr<core::GemmResult> result) {
    auto response = std::make_unique<v1::GemmResponse>();
    response->set_request_id(id);
    if (result.ok()) {
      service_->Observe(Messages::kMethod, absl::StatusCode::kOk, &result->timing);
      ToProto(std::move(*result), response.get());
    } else {
      service_->Observe(Messages::kMethod, result.status().code(), nullptr);
      response->mutable_error()->set_code(static_cast<int>(result.status().code()));
      response->mutable_error()->set_message(std::string(result.status().message()));
    }
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      --in_flight_;
      if (broken_) {
        finish = ShouldFinishLocked();
      } else {
        ready_.push_back(std::move(response));
        // Answers completing together (one AnswerBatch: a GPU unit's answers for this stream)
        // are written together, when the batch closes; until then no write starts (also not
        // at the end of one in flight now), so they do not leave one by one.
        if (!flush_pending_) {
          if (core::AnswerBatch::Defer([this] { Flush(); })) {
            flush_pending_ = true;
          } else if (writing_ == nullptr) {
            StartWriteLocked();
          }
        }
      }
    }
    if (finish) FinishNow();
  }

  // The deferred write of Complete(): writes what is ready unless a write is still out (its end
  // writes them).
  void Flush() {
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      flush_pending_ = false;
      if (!broken_ && !ready_.empty() && writing_ == nullptr) {
        StartWriteLocked();
      } else {
        finish = ShouldFinishLocked();
      }
    }
    if (finish) FinishNow();
  }

  // True (once) when the call can end: reads over (or broken), nothing in flight or being
  // written. The caller then calls FinishNow() after releasing mu_: OnDone may delete this
  // reactor as soon as Finish() is called, so no lock of ours may still be held then.
  bool ShouldFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || in_flight_ > 0 || writing_ != nullptr || flush_pending_) return false;
    if (!reads_done_ && !broken_) return false;
    finished_ = true;
    finish_status_ = broken_ && !reads_done_ ? grpc::Status::CANCELLED : grpc::Status::OK;
    return true;
  }

  // Ends the call with the status chosen by ShouldFinishLocked(); touches nothing afterwards.
  void FinishNow() { this->Finish(finish_status_); }

  GemmServiceImpl* const service_;
  grpc::CallbackServerContext* const context_;
  std::shared_ptr<typename Messages::In> reading_;  // only touched by the read chain
  absl::Mutex mu_;
  std::deque<std::unique_ptr<v1::GemmResponse>> ready_ ABSL_GUARDED_BY(mu_);  // not yet written
  std::unique_ptr<typename Messages::Out> writing_ ABSL_GUARDED_BY(mu_);      // the write in flight
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool flush_pending_ ABSL_GUARDED_BY(mu_) = false;  // a Flush() is deferred (AnswerBatch)
  grpc::Status finish_status_;  // set once by ShouldFinishLocked, read by FinishNow
};

grpc::ServerBidiReactor<v1::GemmRequest, v1::GemmResponse>* GemmServiceImpl::GemmStream(
    grpc::CallbackServerContext* context) {
  return new StreamReactor<SingleMessages>(this, context);
}

grpc::ServerBidiReactor<v1::GemmRequestPack, v1::GemmResponsePack>*
GemmServiceImpl::GemmStreamPacked(grpc::CallbackServerContext* context) {
  return new StreamReactor<PackedMessages>(this, context);
}

// Client-streaming upload of a resident matrix.
class GemmServiceImpl::RegisterReactor final
    : public grpc::ServerReadReactor<v1::RegisterMatrixChunk> {
 public:
  RegisterReactor(GemmServiceImpl* service, v1::MatrixInfo* response)
      : service_(service), response_(response) {
    StartRead(&chunk_);
  }

  void OnReadDone(bool ok) override {
    if (done_) return;
    if (!ok) {
      if (registration_ == nullptr) {
        Fail(absl::InvalidArgumentError("stream ended before a chunk with a header"));
        return;
      }
      auto m = registration_->Finish();
      if (!m.ok()) {
        Fail(m.status());
        return;
      }
      ToProto(**m, 0, response_);
      registration_.reset();
      done_ = true;
      service_->Observe("RegisterMatrix", absl::StatusCode::kOk, nullptr);
      Finish(grpc::Status::OK);
      return;
    }
    if (auto s = HandleChunk(); !s.ok()) {
      Fail(s);
      return;
    }
    chunk_.Clear();
    StartRead(&chunk_);
  }

  void OnDone() override { delete this; }

 private:
  absl::Status HandleChunk() {
    if (registration_ == nullptr) {
      if (!chunk_.has_header()) {
        return absl::InvalidArgumentError("header: the first chunk must carry the header");
      }
      auto desc = FromProto(chunk_.header());
      if (!desc.ok()) return desc.status();
      auto reg = service_->engine_->registry().Begin(std::move(*desc),
                                                     service_->engine_->limits().max_dim);
      if (!reg.ok()) return reg.status();
      registration_ = std::move(*reg);
    } else if (chunk_.has_header()) {
      return absl::InvalidArgumentError("header: only the first chunk may carry a header");
    }
    return registration_->Append(chunk_.offset(), chunk_.data());
  }

  void Fail(const absl::Status& s) {
    done_ = true;
    registration_.reset();  // abandons the upload and its reservation
    service_->Observe("RegisterMatrix", s.code(), nullptr);
    Finish(ToGrpcStatus(s));
  }

  GemmServiceImpl* const service_;
  v1::MatrixInfo* const response_;
  v1::RegisterMatrixChunk chunk_;
  std::unique_ptr<core::MatrixRegistration> registration_;
  bool done_ = false;
};

grpc::ServerReadReactor<v1::RegisterMatrixChunk>* GemmServiceImpl::RegisterMatrix(
    grpc::CallbackServerContext* /*context*/, v1::MatrixInfo* response) {
  return new RegisterReactor(this, response);
}

grpc::ServerUnaryReactor* GemmServiceImpl::ReleaseMatrix(grpc::CallbackServerContext* context,
                                                         const v1::ReleaseMatrixRequest* request,
                                                         v1::ReleaseMatrixResponse* /*response*/) {
  auto* reactor = context->DefaultReactor();
  absl::Status s = request->handle().empty() ? absl::InvalidArgumentError("handle: is empty")
                                             : engine_->registry().Release(request->handle());
  Observe("ReleaseMatrix", s.code(), nullptr);
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

grpc::ServerUnaryReactor* GemmServiceImpl::ListMatrices(grpc::CallbackServerContext* context,
                                                        const v1::ListMatricesRequest* /*request*/,
                                                        v1::ListMatricesResponse* response) {
  auto* reactor = context->DefaultReactor();
  for (const auto& e : engine_->registry().List()) {
    ToProto(*e.matrix, e.in_flight, response->add_matrices());
  }
  Observe("ListMatrices", absl::StatusCode::kOk, nullptr);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* GemmServiceImpl::GetServerInfo(
    grpc::CallbackServerContext* context, const v1::GetServerInfoRequest* /*request*/,
    v1::ServerInfo* response) {
  auto* reactor = context->DefaultReactor();
  ToProto(engine_->backend().Describe(), engine_->limits(), response);
  response->set_version(version_);
  Observe("GetServerInfo", absl::StatusCode::kOk, nullptr);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* GemmServiceImpl::RegisterSharedMemory(
    grpc::CallbackServerContext* context, const v1::RegisterSharedMemoryRequest* request,
    v1::SharedMemoryInfo* response) {
  auto* reactor = context->DefaultReactor();
  if (!IsLocalPeer(context->peer())) {
    // A remote caller cannot share memory with us; it must not map the host's objects either.
    const absl::Status s = absl::PermissionDeniedError(absl::StrCat(
        "RegisterSharedMemory is only for clients on the server's host; this call came from ",
        context->peer()));
    Observe("RegisterSharedMemory", s.code(), nullptr);
    reactor->Finish(ToGrpcStatus(s));
    return reactor;
  }
  // NOTE: maps and page-locks on this gRPC thread (pinning large ranges takes a while); a
  // registration is rare next to the requests it serves.
  auto region = engine_->shared_memory().Register(FromProto(*request));
  if (region.ok()) ToProto(**region, 0, response);
  Observe("RegisterSharedMemory", region.status().code(), nullptr);
  reactor->Finish(ToGrpcStatus(region.status()));
  return reactor;
}

grpc::ServerUnaryReactor* GemmServiceImpl::UnregisterSharedMemory(
    grpc::CallbackServerContext* context, const v1::UnregisterSharedMemoryRequest* request,
    v1::UnregisterSharedMemoryResponse* /*response*/) {
  auto* reactor = context->DefaultReactor();
  absl::Status s = request->name().empty() ? absl::InvalidArgumentError("name: is empty")
                                           : engine_->shared_memory().Unregister(request->name());
  Observe("UnregisterSharedMemory", s.code(), nullptr);
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

grpc::ServerUnaryReactor* GemmServiceImpl::ListSharedMemory(
    grpc::CallbackServerContext* context, const v1::ListSharedMemoryRequest* /*request*/,
    v1::ListSharedMemoryResponse* response) {
  auto* reactor = context->DefaultReactor();
  for (const auto& e : engine_->shared_memory().List()) {
    ToProto(*e.region, e.in_flight, response->add_regions());
  }
  Observe("ListSharedMemory", absl::StatusCode::kOk, nullptr);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace gemm::service
