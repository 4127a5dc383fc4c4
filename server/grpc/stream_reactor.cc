// GemmStream / GemmStreamPacked reactors.
#include "server/grpc/stream_reactor.h"

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gemm/v1/gemm_service.pb.h"
#include "server/core/answer_batch.h"
#include "server/core/validation.h"
#include "server/grpc/convert.h"
#include "server/grpc/received_message.h"
#include "server/grpc/refused_call.h"
#include "server/grpc/response_pack.h"
#include "server/grpc/status_util.h"

namespace gemm::service {
namespace {

using Responses = ReadyResponses;

// How a stream's messages carry requests and responses: one per message (GemmStream) or
// several (GemmStreamPacked).
struct SingleMessages {
  using In = v1::GemmRequest;
  static constexpr absl::string_view kMethod = "GemmStream";
  static int Count(const In& /*in*/) { return 1; }
  static v1::GemmRequest* At(In* in, int /*i*/) { return in; }
  // The next message to write, taken from `ready` (not empty): its first response.
  static absl::StatusOr<grpc::ByteBuffer> Take(Responses* ready) {
    std::unique_ptr<OutgoingResponse> out = std::move(ready->front());
    ready->pop_front();
    return SerializeResponse(*out);
  }
};

struct PackedMessages {
  using In = v1::GemmRequestPack;
  static constexpr absl::string_view kMethod = "GemmStreamPacked";
  static int Count(const In& in) { return in.requests_size(); }
  static v1::GemmRequest* At(In* in, int i) { return in->mutable_requests(i); }
  // The next message to write: the oldest responses in `ready` (not empty), up to
  // kMaxResponsePackBytes.
  static absl::StatusOr<grpc::ByteBuffer> Take(Responses* ready) {
    std::vector<std::unique_ptr<OutgoingResponse>> pack = TakeResponsePack(ready);
    std::vector<OutgoingResponse*> order;
    order.reserve(pack.size());
    for (const auto& r : pack) order.push_back(r.get());
    return SerializeResponsePack(order);
  }
};

// One GemmStream / GemmStreamPacked call. Reads messages one at a time and submits the requests
// of each together (GemmEngine::SubmitAll); writes answers as they complete, one write in flight
// (with PackedMessages a write carries the answers that became ready meanwhile, up to
// kMaxResponsePackBytes, and answers a backend gives inside one AnswerBatch wait for each other).
//
// Rules that keep the call's context and this reactor alive while anything can reach them (both
// go away at OnDone, after Finish):
//  - Finish only when no read is outstanding, no message is being handled, every request handed
//    out has been answered and no write or deferred flush is pending.
//  - The next read starts as soon as a message has arrived (its requests counted first), so
//    reading overlaps handling; two messages may be handled at once.
//  - Once the call is broken (cancelled by the client, its deadline or the server's shutdown, or
//    a write failed) nothing more is read or submitted: a read that completes late is dropped,
//    queued requests see `cancelled` and are answered without running, answers are dropped.
//  - The next message is read only while the AnswerBudget allows; the answers this stream holds
//    (handed to the engine, waiting or being written) count until written or dropped.
//  - While the server drains, requests read are answered UNAVAILABLE; the stream stays open.
// The call ends OK when the client is done and every request answered; INVALID_ARGUMENT naming
// the message when a message does not parse (the requests before it are answered first, later
// messages are not read: a stream cannot resynchronize past bytes it cannot read); CANCELLED
// when broken.
template <class Messages>
class StreamReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  using In = typename Messages::In;

  // `grant` admitted the caller; the stream holds its call slot until it ends.
  StreamReactor(ServiceState* state, grpc::CallbackServerContext* context, CallGrant grant)
      : state_(state), context_(context), grant_(std::move(grant)) {
    absl::MutexLock lock(&mu_);
    StartReadLocked();
  }

  void OnReadDone(bool ok) override {
    auto message = std::make_shared<Received<In>>();
    absl::Status parsed = absl::OkStatus();
    if (ok) {
      parsed =
          message->Parse(read_buffer_, absl::StrCat(Messages::kMethod, " message ", ++messages_));
    }
    read_buffer_.Clear();  // the message holds the buffers it reads its operands from
    if (!BeginHandling(ok && parsed.ok() ? &message->message : nullptr, parsed)) return;
    HandleMessage(std::move(message));
    std::optional<grpc::Status> end;
    {
      absl::MutexLock lock(&mu_);
      --handling_;
      end = AdvanceLocked();
    }
    if (end) Finish(*end);
  }

  void OnWriteDone(bool ok) override {
    std::optional<grpc::Status> end;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      write_buffer_.Clear();
      ReleaseLocked(writing_bytes_);
      writing_bytes_ = 0;
      if (!ok) BreakLocked();
      end = AdvanceLocked();
    }
    if (end) Finish(*end);
  }

  void OnCancel() override {
    std::optional<grpc::Status> end;
    {
      absl::MutexLock lock(&mu_);
      BreakLocked();
      end = AdvanceLocked();
    }
    if (end) Finish(*end);
  }

  void OnDone() override { delete this; }

 private:
  // The read that just completed is over. Returns true when `message` (null: none, the client is
  // done or `parsed` says why not) is to be handled: its requests are counted in flight first, so
  // that the call cannot end under them, and the next read starts at once if the budget allows
  // (it overlaps the handling). Otherwise stops reading (and may end the call).
  bool BeginHandling(const In* message, const absl::Status& parsed) {
    std::optional<grpc::Status> end;
    {
      absl::MutexLock lock(&mu_);
      reading_ = false;
      if (message != nullptr && !broken_) {
        in_flight_ += Messages::Count(*message);
        ++handling_;
        MaybeStartReadLocked();
        return true;
      }
      reads_over_ = true;
      if (!parsed.ok() && !broken_) status_ = ToGrpcStatus(parsed);
      end = AdvanceLocked();
    }
    if (end) Finish(*end);
    return false;
  }

  // Submits the requests of `message` together (answering those that cannot run with their
  // error), or answers them all UNAVAILABLE while the server drains.
  void HandleMessage(std::shared_ptr<Received<In>> message) {
    const int count = Messages::Count(message->message);
    const absl::Status admitted = state_->Admit();
    std::vector<std::shared_ptr<core::WorkItem>> items;
    std::vector<std::pair<std::string, int64_t>> held;  // id and answer bytes of each item
    for (int i = 0; i < count; ++i) {
      // Each request keeps the whole message alive (its operands point into its buffers).
      std::shared_ptr<v1::GemmRequest> request(message, Messages::At(&message->message, i));
      if (!admitted.ok()) {
        Complete(request->request_id(), admitted, 0);
        continue;
      }
      std::string id = request->request_id();
      int64_t bytes = 0;
      auto item = MakeItem(std::move(request), message->bytes, &bytes);
      if (item == nullptr) continue;  // answered with its error
      held.emplace_back(std::move(id), bytes);
      items.push_back(std::move(item));
    }
    if (items.empty()) return;
    // Queued together: a batch being gathered takes all of them or none.
    std::vector<absl::Status> queued = state_->engine().SubmitAll(std::move(items));
    for (size_t i = 0; i < queued.size(); ++i) {
      if (!queued[i].ok()) Complete(held[i].first, queued[i], held[i].second);
    }
  }

  // The work item of one request (already counted in in_flight_; its operands read from the
  // buffers of `received`), holding `*bytes` of the answer budget, or null after answering the
  // request with why it cannot be converted.
  std::shared_ptr<core::WorkItem> MakeItem(std::shared_ptr<v1::GemmRequest> request,
                                           const ReceivedMessage& received, int64_t* bytes) {
    const absl::Time arrival = absl::Now();
    std::string id = request->request_id();
    auto domain = FromProto(*request, arrival, RpcDeadline(*context_), state_->engine().limits(),
                            state_->engine().shared_memory(), grant_.caller, &received);
    if (!domain.ok()) {
      Complete(id, domain.status(), 0);
      return nullptr;
    }
    *bytes = core::ResponseBytes(*domain);
    {
      absl::MutexLock lock(&mu_);
      held_bytes_ += *bytes;
      state_->answers().Take(*bytes);
    }
    auto item = std::make_shared<core::WorkItem>();
    item->request = std::move(*domain);
    item->arrival = arrival;
    item->answer_group = this;
    item->cancelled = [cancelled = cancelled_] { return cancelled->load(); };
    item->done = [this, id = std::move(id), bytes = *bytes](absl::StatusOr<core::GemmResult> r) {
      Complete(id, std::move(r), bytes);
    };
    item->keep_alive = std::move(request);
    return item;
  }

  // Answers request `id` (in flight, holding `bytes`) with `result`.
  void Complete(const std::string& id, absl::StatusOr<core::GemmResult> result, int64_t bytes) {
    auto response = std::make_unique<OutgoingResponse>();
    response->message.set_request_id(id);
    if (result.ok()) {
      state_->Observe(Messages::kMethod, absl::StatusCode::kOk, &result->timing);
      ToOutgoing(std::move(*result), response.get());
    } else {
      state_->Observe(Messages::kMethod, result.status().code(), nullptr);
      v1::Error* error = response->message.mutable_error();
      error->set_code(static_cast<int>(result.status().code()));
      error->set_message(CappedStatusMessage(result.status().message()));
    }
    std::optional<grpc::Status> end;
    {
      absl::MutexLock lock(&mu_);
      --in_flight_;
      if (broken_) {
        ReleaseLocked(bytes);
      } else {
        ready_.push_back(std::move(response));
        ready_bytes_.push_back(bytes);
        // Answers completing together (one AnswerBatch: a GPU unit's answers for this stream)
        // are written together, when the batch closes; until then no write starts (also not at
        // the end of one in flight now), so they do not leave one by one.
        if (!flush_pending_ && core::AnswerBatch::Defer([this] { Flush(); })) {
          flush_pending_ = true;
        }
      }
      end = AdvanceLocked();
    }
    if (end) Finish(*end);
  }

  // The deferred write of Complete().
  void Flush() {
    std::optional<grpc::Status> end;
    {
      absl::MutexLock lock(&mu_);
      flush_pending_ = false;
      end = AdvanceLocked();
    }
    if (end) Finish(*end);
  }

  // Starts what can start now (the next write, the next read) and returns the status to end the
  // call with once it can end (then only once). The caller calls Finish() with it after
  // releasing mu_: OnDone may delete this reactor as soon as Finish() is called.
  std::optional<grpc::Status> AdvanceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!broken_ && !writing_ && !flush_pending_ && !ready_.empty()) StartWriteLocked();
    MaybeStartReadLocked();
    if (finished_ || reading_ || handling_ > 0 || in_flight_ > 0 || writing_ || flush_pending_) {
      return std::nullopt;
    }
    if (!broken_ && (!reads_over_ || !ready_.empty())) return std::nullopt;
    finished_ = true;
    if (broken_ && status_.ok()) status_ = grpc::Status::CANCELLED;
    // The call slot goes back before the status is sent: a client that has seen its stream end
    // may open its next call at once.
    grant_.slot.Reset();
    return status_;
  }

  // Reads the next message unless a read is out, reading is over, or the answers this stream
  // holds are over the budget (a message being handled already counts its answers unless its
  // read overlapped; so a stream holds at most one message's answers beyond its cap).
  void MaybeStartReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (broken_ || reading_ || reads_over_ || !state_->answers().MayRead(held_bytes_)) return;
    StartReadLocked();
  }

  void StartReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    reading_ = true;
    StartRead(&read_buffer_);
  }

  // Writes the next message made of ready answers (ready_ not empty).
  void StartWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const size_t before = ready_.size();
    absl::StatusOr<grpc::ByteBuffer> bytes = Messages::Take(&ready_);
    for (size_t i = ready_.size(); i < before; ++i) {
      writing_bytes_ += ready_bytes_.front();
      ready_bytes_.pop_front();
    }
    if (!bytes.ok()) {  // over 2 GiB: the limits keep answers far below
      status_ = ToGrpcStatus(bytes.status());
      ReleaseLocked(writing_bytes_);
      writing_bytes_ = 0;
      BreakLocked();
      return;
    }
    write_buffer_ = std::move(*bytes);
    writing_ = true;
    StartWrite(&write_buffer_);
  }

  // Nothing more is read, submitted or written: queued requests are dropped as cancelled and the
  // answers waiting are dropped.
  void BreakLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    broken_ = true;
    cancelled_->store(true);
    for (int64_t bytes : ready_bytes_) ReleaseLocked(bytes);
    ready_.clear();
    ready_bytes_.clear();
  }

  // Gives `bytes` of answers back to the budget.
  void ReleaseLocked(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    held_bytes_ -= bytes;
    state_->answers().Give(bytes);
  }

  ServiceState* const state_;
  grpc::CallbackServerContext* const context_;
  CallGrant grant_;  // its slot is given back when the call ends (AdvanceLocked)
  // Set once the call is broken; polled by queued requests (never through the context, which
  // goes away with the call).
  const std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
  grpc::ByteBuffer read_buffer_;  // the read chain's (one read at a time)
  int64_t messages_ = 0;          // messages read so far (the read chain's)
  absl::Mutex mu_;
  Responses ready_ ABSL_GUARDED_BY(mu_);                  // answers not yet written
  std::deque<int64_t> ready_bytes_ ABSL_GUARDED_BY(mu_);  // the budget bytes of each of ready_
  grpc::ByteBuffer write_buffer_ ABSL_GUARDED_BY(mu_);    // the write in flight
  int64_t writing_bytes_ ABSL_GUARDED_BY(mu_) = 0;        // the budget bytes of that write
  int64_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;           // budget bytes this stream holds
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;            // requests not yet answered
  bool reading_ ABSL_GUARDED_BY(mu_) = false;             // a read is outstanding
  int handling_ ABSL_GUARDED_BY(mu_) = 0;                 // messages whose requests are submitted
  bool reads_over_ ABSL_GUARDED_BY(mu_) = false;          // nothing more will be read
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool flush_pending_ ABSL_GUARDED_BY(mu_) = false;  // a Flush() is deferred (AnswerBatch)
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);  // how the call ends unless broken
};

// A stream of `Messages` for an admitted caller, or a call refused with why not.
template <class Messages>
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewStream(
    ServiceState* state, grpc::CallbackServerContext* context) {
  absl::StatusOr<CallGrant> grant = state->Enter(*context, Messages::kMethod);
  if (!grant.ok()) {
    return new RefusedCall<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>>(
        *state, Messages::kMethod, grant.status());
  }
  return new StreamReactor<Messages>(state, context, std::move(*grant));
}

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewGemmStream(
    ServiceState* state, grpc::CallbackServerContext* context) {
  return NewStream<SingleMessages>(state, context);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewGemmStreamPacked(
    ServiceState* state, grpc::CallbackServerContext* context) {
  return NewStream<PackedMessages>(state, context);
}

}  // namespace gemm::service
