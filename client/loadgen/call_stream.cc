// GemmStream and GemmStreamPacked reactors of the load generator (see call_stream.h).
#include "client/loadgen/call_stream.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/loadgen/stats.h"

namespace gemm::loadgen {
namespace {

namespace v1 = ::gemm::v1;

thread_local CallStream* t_completing = nullptr;

struct Item {
  std::string id;
  int template_index;
};

// Fills one outgoing request. NOTE: the shared, read-only template Problem is spliced in instead
// of copying its operands; Release() takes it back out once the write is done.
void SetRequest(const CallStream::Options& o, const Item& item, v1::GemmRequest* r) {
  r->set_request_id(item.id);
  r->set_priority(o.priority);
  r->set_timeout_us(o.timeout_us);
  r->set_kernel(o.kernel);
  r->unsafe_arena_set_allocated_problem(const_cast<v1::Problem*>(&o.problem(item.template_index)));
}

// GemmStream: one request per message.
struct SingleWire {
  using In = v1::GemmRequest;
  using Out = v1::GemmResponse;
  static constexpr bool kPacked = false;
  static void Open(v1::GemmService::Stub* stub, grpc::ClientContext* ctx,
                   grpc::ClientBidiReactor<In, Out>* reactor) {
    stub->async()->GemmStream(ctx, reactor);
  }
  // Puts the first of `queue` (not empty) into `wire`; returns how many it took.
  static size_t Fill(const CallStream::Options& o, const std::deque<Item>& queue, In* wire) {
    SetRequest(o, queue.front(), wire);
    return 1;
  }
  static void Release(In* wire) { wire->unsafe_arena_release_problem(); }
  template <class F>
  static void ForEach(const Out& out, F f) {
    f(out);
  }
};

// GemmStreamPacked: the queued requests in one message, up to kMaxPerMessage of them and
// kMaxBytes of problems (at least one).
struct PackedWire {
  using In = v1::GemmRequestPack;
  using Out = v1::GemmResponsePack;
  static constexpr bool kPacked = true;
  static constexpr size_t kMaxPerMessage = 256;
  static constexpr size_t kMaxBytes = size_t{64} << 20;
  static void Open(v1::GemmService::Stub* stub, grpc::ClientContext* ctx,
                   grpc::ClientBidiReactor<In, Out>* reactor) {
    stub->async()->GemmStreamPacked(ctx, reactor);
  }
  static size_t Fill(const CallStream::Options& o, const std::deque<Item>& queue, In* wire) {
    size_t n = 0, bytes = 0;
    while (n < queue.size() && n < kMaxPerMessage) {
      const size_t size = o.problem(queue[n].template_index).ByteSizeLong();
      if (n > 0 && bytes + size > kMaxBytes) break;
      bytes += size;
      SetRequest(o, queue[n], wire->add_requests());
      ++n;
    }
    return n;
  }
  // Takes the problems back out; the cleared requests stay allocated for the next message.
  static void Release(In* wire) {
    while (wire->requests_size() > 0) {
      wire->mutable_requests(wire->requests_size() - 1)->unsafe_arena_release_problem();
      wire->mutable_requests()->RemoveLast();
    }
  }
  template <class F>
  static void ForEach(const Out& out, F f) {
    for (const v1::GemmResponse& r : out.responses()) f(r);
  }
};

// One stream. Writes are serialized (one StartWrite at a time) from a queue; responses are
// matched to calls by request_id. A hold keeps OnDone away while the dispatcher may still write.
template <class W>
class StreamImpl final : public CallStream,
                         public grpc::ClientBidiReactor<typename W::In, typename W::Out> {
 public:
  explicit StreamImpl(Options options) : CallStream(options.slot), o_(std::move(options)) {
    W::Open(o_.stub, &ctx_, this);
    this->AddHold();
    this->StartRead(&read_);
    this->StartCall();
  }

  bool Send(Call* c) override {
    Next next;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (broken_ || done_ || closing_) return false;
      pending_[c->id] = c;
      queue_.push_back(Item{c->id, c->tmpl});
      next = NextLocked();
    }
    Do(next);
    return true;
  }

  void Close() override {
    Next next;
    bool release = false;
    {
      std::lock_guard<std::mutex> l(mu_);
      closing_ = true;
      next = NextLocked();
      release = ReleaseHoldLocked();
    }
    Do(next);
    if (release) this->RemoveHold();
  }

  void Cancel() override { ctx_.TryCancel(); }

  std::string final_message() override {
    std::lock_guard<std::mutex> l(mu_);
    return final_message_;
  }

  bool WaitDone(std::chrono::steady_clock::time_point deadline) override {
    std::unique_lock<std::mutex> l(mu_);
    return done_cv_.wait_until(l, deadline, [&] { return done_; });
  }

  void OnWriteDone(bool ok) override {
    Next next;
    bool release = false;
    {
      std::lock_guard<std::mutex> l(mu_);
      W::Release(&wire_);
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(written_));
      writing_ = false;
      if (!ok) {
        broken_ = true;
        queue_.clear();  // their calls stay in pending_ and fail in OnDone
      }
      next = NextLocked();
      release = ReleaseHoldLocked();
    }
    Do(next);
    if (release) this->RemoveHold();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      bool release = false;
      {
        std::lock_guard<std::mutex> l(mu_);
        broken_ = true;
        release = ReleaseHoldLocked();
      }
      if (release) this->RemoveHold();
      return;
    }
    std::vector<std::pair<Call*, const v1::GemmResponse*>> finished;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (W::kPacked) corked_ = true;  // requests sent while completing wait for the message
      W::ForEach(read_, [&](const v1::GemmResponse& r) {
        auto it = pending_.find(r.request_id());
        if (it == pending_.end()) return;
        finished.emplace_back(it->second, &r);
        pending_.erase(it);
      });
    }
    CallStream* const outer = t_completing;
    if (W::kPacked) t_completing = this;
    for (auto [c, r] : finished) o_.complete(c, grpc::Status::OK, r);
    t_completing = outer;
    if (W::kPacked) {
      Next next;
      {
        std::lock_guard<std::mutex> l(mu_);
        corked_ = false;
        next = NextLocked();
      }
      Do(next);
    }
    this->StartRead(&read_);
  }

  void OnDone(const grpc::Status& status) override {
    std::unordered_map<std::string, Call*> pending;
    {
      std::lock_guard<std::mutex> l(mu_);
      pending.swap(pending_);
      final_message_ = status.ok() ? std::string("stream closed by the server")
                                   : absl::StrCat(StatusCodeName(status.error_code()), ": ",
                                                  status.error_message());
    }
    const grpc::Status fail =
        status.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream closed") : status;
    for (auto& [id, c] : pending) o_.complete(c, fail, nullptr);
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
    }
    done_cv_.notify_all();
  }

 private:
  enum class Next { kNothing, kWrite, kWritesDone };

  // What to start now that the state changed: the next write (queued requests, no write out,
  // not corked) or the half-close (closing with nothing left to write).
  Next NextLocked() {
    if (writing_ || broken_ || done_) return Next::kNothing;
    if (!queue_.empty()) {
      if (corked_) return Next::kNothing;
      writing_ = true;
      written_ = W::Fill(o_, queue_, &wire_);
      return Next::kWrite;
    }
    if (closing_ && !writes_done_started_) {
      writes_done_started_ = true;
      return Next::kWritesDone;
    }
    return Next::kNothing;
  }

  // Starts what NextLocked chose (without mu_ held).
  void Do(Next next) {
    if (next == Next::kWrite) {
      if (o_.messages_written != nullptr) o_.messages_written->fetch_add(1);
      if (o_.requests_written != nullptr) {
        o_.requests_written->fetch_add(static_cast<int64_t>(written_));
      }
      this->StartWrite(&wire_);
    }
    if (next == Next::kWritesDone) this->StartWritesDone();
  }

  bool ReleaseHoldLocked() {
    if (!hold_released_ && !writing_ && (broken_ || writes_done_started_)) {
      hold_released_ = true;
      return true;
    }
    return false;
  }

  const Options o_;
  grpc::ClientContext ctx_;
  typename W::In wire_;  // the message being written (ours from NextLocked to OnWriteDone)
  typename W::Out read_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  std::unordered_map<std::string, Call*> pending_;
  std::deque<Item> queue_;  // not yet written; the first written_ are in wire_ while writing_
  size_t written_ = 0;
  bool writing_ = false;
  bool corked_ = false;  // packed: the read chain is completing a message
  bool broken_ = false;
  bool closing_ = false;
  bool writes_done_started_ = false;
  bool hold_released_ = false;
  bool done_ = false;
  std::string final_message_;
};

}  // namespace

std::unique_ptr<CallStream> CallStream::Open(Options options) {
  if (options.packed) return std::make_unique<StreamImpl<PackedWire>>(std::move(options));
  return std::make_unique<StreamImpl<SingleWire>>(std::move(options));
}

CallStream* CallStream::Completing() { return t_completing; }

}  // namespace gemm::loadgen
