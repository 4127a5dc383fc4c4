// RegisterMatrix reactor.
#include "server/grpc/register_reactor.h"

#include <grpcpp/alarm.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gemm/v1/gemm_service.pb.h"
#include "server/grpc/convert.h"
#include "server/grpc/refused_call.h"
#include "server/grpc/status_util.h"
#include "server/grpc/wire_message.h"

namespace gemm::service {
namespace {

constexpr absl::string_view kMethod = "RegisterMatrix";

// Client-streaming upload of a resident matrix into a MatrixRegistration (the registry checks
// the chunk protocol). The upload ends:
//  - when the client is done: the matrix is published and its MatrixInfo answered, unless the
//    call was cancelled (a client that cancels after its last byte gets nothing published);
//  - DEADLINE_EXCEEDED when no chunk arrives for the idle timeout (a grpc::Alarm; the reservation
//    and the bytes received are given back);
//  - with the error of a chunk that does not parse or does not fit the protocol.
// A matrix published by a call that turns out cancelled at OnDone (the cancel crossed the answer)
// is released again: its handle never reached the client.
// Lifetime: gRPC's OnDone and each armed alarm's callback hold a reference; the last one deletes.
class RegisterReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  // `grant` admitted the caller, who will own the matrix; the upload holds its call slot.
  RegisterReactor(ServiceState* state, grpc::CallbackServerContext* context,
                  grpc::ByteBuffer* response, CallGrant grant)
      : state_(state), context_(context), response_(response), grant_(std::move(grant)) {
    absl::MutexLock lock(&mu_);
    last_chunk_ = absl::Now();
    ArmIdleTimerLocked(last_chunk_ + state_->options().upload_idle_timeout);
    StartRead(&chunk_bytes_);
  }

  void OnReadDone(bool ok) override {
    std::optional<grpc::Status> end;
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;  // timed out; this read ended with the call
      end = ok ? TakeChunkLocked() : CompleteLocked();
      if (end) {
        ended_ = true;
      } else {
        last_chunk_ = absl::Now();
        StartRead(&chunk_bytes_);
      }
    }
    if (end) End(*end);
  }

  void OnCancel() override { cancelled_.store(true); }

  void OnDone() override {
    if (!published_.empty() && context_->IsCancelled()) {
      (void)state_->engine().registry().Release(published_, grant_.caller);
    }
    Unref();
  }

 private:
  // Handles one chunk; returns the status to end the call with, or nullopt to read on.
  std::optional<grpc::Status> TakeChunkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++chunks_;
    absl::Status s = ParseMessage(chunk_bytes_, absl::StrCat(kMethod, " chunk ", chunks_), &chunk_);
    chunk_bytes_.Clear();
    if (s.ok()) s = AppendChunkLocked();
    if (s.ok()) return std::nullopt;
    return FailLocked(s);
  }

  absl::Status AppendChunkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (registration_ == nullptr) {
      if (!chunk_.has_header()) {
        return absl::InvalidArgumentError("header: the first chunk must carry the header");
      }
      auto desc = FromProto(chunk_.header());
      if (!desc.ok()) return desc.status();
      core::GemmEngine& engine = state_->engine();
      named_ = !chunk_.header().handle().empty();
      auto reg = engine.registry().Begin(std::move(*desc), engine.limits().max_dim,
                                         NamingFromProto(chunk_.header()), grant_.caller);
      if (!reg.ok()) return reg.status();
      registration_ = std::move(*reg);
    } else if (chunk_.has_header()) {
      return absl::InvalidArgumentError("header: only the first chunk may carry a header");
    }
    return registration_->Append(chunk_.offset(), chunk_.data());
  }

  // The client is done sending: publishes the matrix (unless the call was cancelled).
  grpc::Status CompleteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (registration_ == nullptr) {
      return FailLocked(absl::InvalidArgumentError("stream ended before a chunk with a header"));
    }
    if (cancelled_.load() || context_->IsCancelled()) {
      return FailLocked(absl::CancelledError("the upload was cancelled; nothing was registered"));
    }
    auto m = registration_->Finish();
    if (!m.ok()) return FailLocked(m.status());
    v1::MatrixInfo info;
    ToProto({.matrix = *m, .content_hash = registration_->content_hash()}, &info);
    registration_.reset();
    // NOTE: a generated handle that never reaches the client is released again; a chosen name
    // stays (the client can register it again, idempotently, and others may rely on it).
    absl::StatusOr<grpc::ByteBuffer> bytes = SerializeMessage(info);
    if (!bytes.ok()) {
      if (!named_) (void)state_->engine().registry().Release((*m)->desc().handle, grant_.caller);
      return FailLocked(bytes.status());
    }
    *response_ = std::move(*bytes);
    if (!named_) published_ = (*m)->desc().handle;
    state_->Observe(kMethod, absl::StatusCode::kOk, nullptr);
    return grpc::Status::OK;
  }

  // Abandons the upload (its reservation and bytes go back) and returns how the call ends.
  grpc::Status FailLocked(const absl::Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    registration_.reset();
    state_->Observe(kMethod, s.code(), nullptr);
    return ToGrpcStatus(s);
  }

  // Ends the call (after `ended_` was set under mu_): stops the idle timer and finishes.
  void End(const grpc::Status& status) {
    std::unique_ptr<grpc::Alarm> alarm;
    {
      absl::MutexLock lock(&mu_);
      alarm = std::move(alarm_);
    }
    alarm.reset();  // cancels it: its callback runs soon with `fired` false
    // The call slot goes back before the status is sent (a client that has seen the call end may
    // open its next one at once).
    grant_.slot.Reset();
    Finish(status);
  }

  void ArmIdleTimerLocked(absl::Time when) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    refs_.fetch_add(1);
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_->Set(absl::ToChronoTime(when), [this](bool fired) { OnIdleTimer(fired); });
  }

  // The idle timer fired (or was cancelled: `fired` false): ends an upload idle for the whole
  // timeout, else waits for the rest of it.
  void OnIdleTimer(bool fired) {
    std::optional<grpc::Status> end;
    {
      absl::MutexLock lock(&mu_);
      const absl::Duration timeout = state_->options().upload_idle_timeout;
      if (fired && !ended_) {
        if (absl::Now() >= last_chunk_ + timeout) {
          ended_ = true;
          end = FailLocked(absl::DeadlineExceededError(
              absl::StrCat("no chunk arrived for ", absl::FormatDuration(timeout),
                           " (--upload_idle_timeout_s); the upload was abandoned")));
        } else {
          ArmIdleTimerLocked(last_chunk_ + timeout);
        }
      }
    }
    if (end) End(*end);
    Unref();
  }

  void Unref() {
    if (refs_.fetch_sub(1) == 1) delete this;
  }

  ServiceState* const state_;
  grpc::CallbackServerContext* const context_;
  grpc::ByteBuffer* const response_;
  CallGrant grant_;           // its slot is given back in End
  std::atomic<int> refs_{1};  // OnDone's, plus one per armed alarm
  std::atomic<bool> cancelled_{false};
  std::string published_;  // a generated handle published (read at OnDone, after the last reaction)
  bool named_ = false;     // the client chose the handle
  absl::Mutex mu_;
  grpc::ByteBuffer chunk_bytes_ ABSL_GUARDED_BY(mu_);  // the read in flight
  v1::RegisterMatrixChunk chunk_ ABSL_GUARDED_BY(mu_);
  int64_t chunks_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<core::MatrixRegistration> registration_ ABSL_GUARDED_BY(mu_);
  absl::Time last_chunk_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Alarm> alarm_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* NewRegisterMatrix(ServiceState* state,
                                                             grpc::CallbackServerContext* context,
                                                             grpc::ByteBuffer* response) {
  absl::StatusOr<CallGrant> grant = state->Enter(*context, kMethod);
  if (!grant.ok()) {
    return new RefusedCall<grpc::ServerReadReactor<grpc::ByteBuffer>>(*state, kMethod,
                                                                      grant.status());
  }
  return new RegisterReactor(state, context, response, std::move(*grant));
}

}  // namespace gemm::service
