// --client_api=sync: a closed-loop caller that makes blocking calls through gRPC's synchronous
// API on its own thread: sends a request, waits for its answer, hands it to the completion,
// repeats. Unary Gemm, or one GemmStream per caller (reopened after a failure).
#pragma once

#include <atomic>

#include "client/loadgen/call_issuer.h"
#include "client/loadgen/dispatcher.h"

namespace gemm::loadgen {

class SyncCaller {
 public:
  // `issuer`, `dispatcher` and `complete` must outlive every Run.
  SyncCaller(const WorkloadSpec& workload, double error_backoff_ms, CallIssuer& issuer,
             Dispatcher& dispatcher, CallIssuer::Completion complete)
      : workload_(workload),
        error_backoff_ms_(error_backoff_ms),
        issuer_(issuer),
        dispatcher_(dispatcher),
        complete_(std::move(complete)) {}

  // Runs caller `caller` (its endpoint: caller % endpoints) until `stop` is set.
  void Run(int caller, const std::atomic<bool>& stop);

 private:
  // The stream of one caller and its wire message (the template's Problem is spliced in).
  struct Stream;
  // One unary call; fills *resp. Returns the call's status.
  grpc::Status CallUnary(const Call& c, v1::GemmResponse* resp);
  // One request and its answer on `stream` (opened when absent, dropped after a failure).
  grpc::Status CallOnStream(const Call& c, Stream& stream, v1::GemmResponse* resp);

  const WorkloadSpec workload_;
  const double error_backoff_ms_;
  CallIssuer& issuer_;
  Dispatcher& dispatcher_;
  const CallIssuer::Completion complete_;
};

}  // namespace gemm::loadgen
