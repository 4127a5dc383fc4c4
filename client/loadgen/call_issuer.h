// Sends the load generator's requests: picks each call's shape, D slot, expert draw and whether it
// is verified, then sends it through gRPC's callback API, as a unary Gemm on the next channel
// round-robin or on the next GemmStream / GemmStreamPacked (reopened when one fails). Owns the
// endpoints (every channel of every target), the streams and the unary calls in flight; every
// call's end goes to the completion given at construction, once.
//
// Thread-safety: Issue and NewCall may be called from any thread (dispatchers, gRPC's callback
// threads, sync callers).
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_set>
#include <vector>

#include "client/loadgen/call_stream.h"
#include "client/loadgen/operand_region.h"
#include "client/loadgen/request_templates.h"
#include "client/loadgen/target.h"
#include "client/loadgen/workload.h"

namespace gemm::loadgen {

class CallIssuer {
 public:
  struct Options {
    WorkloadSpec workload;
    double verify_fraction = 0;  // share of calls marked for verification
    double rpc_timeout_s = 60;   // gRPC deadline of every request
    uint64_t seed = 1;           // shape mix and verify sampling
  };
  // Told once per call when it ends: its response (status OK; a stream's response may carry
  // `error`) or the failure (resp null). The completion must hand the call back (Finished).
  using Completion = std::function<void(Call*, const grpc::Status&, const v1::GemmResponse*)>;

  // `templates` and `region` (may be null) must outlive the issuer.
  CallIssuer(const Options& options, const std::vector<Target>& targets,
             const RequestTemplates& templates, OperandRegion* region, Completion complete);
  ~CallIssuer();
  CallIssuer(const CallIssuer&) = delete;
  CallIssuer& operator=(const CallIssuer&) = delete;

  // Opens --streams_per_channel streams per endpoint (callback streaming only).
  void OpenStreams();
  // Sends one request intended to leave at `intended_ns` (NowNs() time base).
  void Issue(int64_t intended_ns);
  // A new call to `endpoint` (-1: the next one round-robin) with its draws made and its D slot
  // poisoned when verified; counted as issued. For callers that send it themselves (sync
  // callers).
  Call* NewCall(int endpoint);
  // Ends the issuer's part of a finished call: forgets it, frees its D slot and deletes it.
  void Finished(Call* c);

  // The gRPC deadline of a request sent now: --rpc_timeout_s, or the request's own deadline
  // when sooner.
  std::chrono::system_clock::time_point Deadline() const;
  int endpoints() const { return static_cast<int>(endpoints_.size()); }
  v1::GemmService::Stub* stub(int endpoint) const { return endpoints_[endpoint].stub; }
  const std::vector<v1::GemmRequest>& templates(int endpoint) const;

  // Cancels the unary calls in flight (they then end as CANCELLED).
  void CancelUnaryCalls();
  // Half-closes the open streams once their queued writes are out.
  void CloseStreams();
  // Waits until gRPC is done with every stream ever opened; cancels those not done by
  // `deadline`.
  void WaitStreamsDone(std::chrono::steady_clock::time_point deadline);
  // Waits (5 s, then cancels, then 5 s more) until gRPC is done with every stream, so that no
  // completion comes after it returns (unary calls must be finished already). Idempotent.
  void Shutdown();

  // Requests sent so far; stream messages written and the requests they carried.
  int64_t issued() const { return issued_.load(); }
  int64_t stream_messages() const { return stream_messages_.load(); }
  int64_t stream_requests() const { return stream_requests_.load(); }

 private:
  // One channel of one target.
  struct Endpoint {
    int target = 0;
    v1::GemmService::Stub* stub = nullptr;  // owned by the target's GemmClient
  };
  // Draws `c`'s shape, slot, expert draw and verify decision, and its id when streaming.
  // Caller holds mu_.
  void PickLocked(Call* c);
  // The stream of slot `slot` (callers hold mu_ or are constructing).
  std::unique_ptr<CallStream> OpenStream(int slot);
  void SendUnary(Call* c);
  void SendOnStream(Call* c, CallStream* stream, size_t slot);
  // Every stream opened so far.
  std::vector<CallStream*> AllStreams();

  const Options options_;
  const RequestTemplates& templates_;
  OperandRegion* const region_;
  const Completion complete_;
  std::vector<Endpoint> endpoints_;
  std::discrete_distribution<int> shape_pick_;

  std::mutex mu_;  // guards the draws and the streams
  std::mt19937_64 rng_;
  uint64_t next_id_ = 0;
  uint64_t round_robin_ = 0;
  std::vector<CallStream*> streams_;                      // the live stream of each slot
  std::vector<int64_t> stream_opened_ns_;                 // when each slot's stream was opened
  std::vector<std::unique_ptr<CallStream>> all_streams_;  // every stream opened, kept to the end

  std::mutex live_mu_;
  std::unordered_set<Call*> live_;  // unary calls in flight, guarded by live_mu_

  std::atomic<int64_t> issued_{0};
  std::atomic<int64_t> stream_messages_{0};  // written by the streams
  std::atomic<int64_t> stream_requests_{0};
};

}  // namespace gemm::loadgen
