// The load generator's calls in flight and the streams that carry them: a GemmStream (one
// request per message) or a GemmStreamPacked (every request queued while the previous write was
// out goes in the next message). Both serialize writes from a queue, match responses to calls by
// request_id and hand each finished call to a completion hook.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gemm/v1/gemm_service.grpc.pb.h"

namespace gemm::loadgen {

// One request in flight.
struct Call {
  int endpoint = 0;
  int shape = 0;
  int dslot = 0;  // --shm: the output slot the server writes D into
  int tmpl = 0;   // index of the request template (shape and output slot)
  int64_t intended_ns = 0;
  bool verify = false;
  std::unique_ptr<grpc::ClientContext> ctx;  // unary only
  v1::GemmResponse resp;                     // unary only
  std::string id;                            // streaming only
};

class CallStream {
 public:
  struct Options {
    v1::GemmService::Stub* stub = nullptr;
    bool packed = false;  // GemmStreamPacked instead of GemmStream
    int slot = 0;         // the caller's index for this stream (see slot())
    // Request fields other than id and problem, the same for every request.
    v1::Priority priority = v1::PRIORITY_NORMAL;
    int64_t timeout_us = 0;
    std::string kernel;
    // The read-only Problem of request template `Call::tmpl`; it is spliced into the
    // outgoing message, not copied, and must outlive the stream.
    std::function<const v1::Problem&(int template_index)> problem;
    // Told once per call sent: its response (status OK; the response may carry `error`) or the
    // stream's failure (resp null). Runs on gRPC's threads.
    std::function<void(Call*, const grpc::Status&, const v1::GemmResponse*)> complete;
    // Optional: counts the messages written and the requests they carried.
    std::atomic<int64_t>* messages_written = nullptr;
    std::atomic<int64_t>* requests_written = nullptr;
  };

  // Opens the stream (the call starts at once).
  static std::unique_ptr<CallStream> Open(Options options);
  virtual ~CallStream() = default;

  // Queues `c` for sending; false when the stream is closed (the caller still owns `c`).
  virtual bool Send(Call* c) = 0;
  // Half-closes the stream once queued writes are out.
  virtual void Close() = 0;
  // Cancels the stream (pending calls fail with CANCELLED).
  virtual void Cancel() = 0;
  // Why the stream ended ("" while it is open).
  virtual std::string final_message() = 0;
  // Waits until gRPC is done with the stream (it may then be destroyed); false on timeout.
  virtual bool WaitDone(std::chrono::steady_clock::time_point deadline) = 0;

  int slot() const { return slot_; }

  // The packed stream whose response message the calling thread is completing, or null. A
  // closed-loop caller whose call just finished sends its next request on this stream: it is
  // held back until every response of the message is handled and then goes out with the others
  // in one message, instead of the first of them leaving alone.
  static CallStream* Completing();

 protected:
  explicit CallStream(int slot) : slot_(slot) {}

 private:
  const int slot_;
};

}  // namespace gemm::loadgen
