// What the reactors of gemm.v1.GemmService share: the engine, the service's options, the answer
// budget of the streams, whether the server is draining, the observer told about finished RPCs,
// and who may call (Enter: the caller, its role and its open calls). Thread-safe.
#pragma once

#include <grpcpp/server_context.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/core/caller_calls.h"
#include "server/core/engine.h"
#include "server/grpc/answer_budget.h"
#include "server/grpc/authorizer.h"

namespace gemm::service {

// Told about every finished RPC (for metrics). `timing` is null when the request did not run.
// Called from gRPC or engine threads; must be thread-safe and fast.
using RpcObserver = std::function<void(absl::string_view method, absl::StatusCode code,
                                       const core::Timing* timing)>;

struct ServiceOptions {
  // Reported by GetServerInfo. Default "dev".
  std::string version = "dev";
  // Told about every finished RPC; may be empty (default).
  RpcObserver observer;
  // Stream backpressure (AnswerBudget): 256 MiB per stream, a quarter of physical memory in all.
  AnswerBudget::Options answers;
  // A RegisterMatrix upload that receives no chunk for this long ends DEADLINE_EXCEEDED and
  // gives its reservation back. Default 60 s.
  absl::Duration upload_idle_timeout = absl::Seconds(60);
  // Who may call what; null (default): every call is an anonymous admin.
  std::shared_ptr<const Authorizer> authorizer;
};

// An admitted call: who made it and the slot it holds among the caller's open calls (given back
// when the grant is destroyed).
struct CallGrant {
  core::Caller caller;
  core::CallSlot slot;
};

class ServiceState {
 public:
  // `engine` must outlive the state; `options` must be resolved (AnswerBudget::Resolve).
  ServiceState(core::GemmEngine* engine, ServiceOptions options)
      : engine_(engine), options_(std::move(options)), answers_(options_.answers) {}

  core::GemmEngine& engine() const { return *engine_; }
  const ServiceOptions& options() const { return options_; }
  AnswerBudget& answers() { return answers_; }

  // Tells the observer (if any) that `method` finished with `code`.
  void Observe(absl::string_view method, absl::StatusCode code, const core::Timing* timing) const {
    if (options_.observer) options_.observer(method, code, timing);
  }

  // The caller of `method` on `context` and its call slot: UNAUTHENTICATED, PERMISSION_DENIED
  // (Authorizer::Authorize) or RESOURCE_EXHAUSTED (the caller's max_calls). The grant must not
  // outlive this state.
  absl::StatusOr<CallGrant> Enter(const grpc::ServerContextBase& context,
                                  absl::string_view method) {
    absl::StatusOr<core::Caller> caller =
        options_.authorizer == nullptr
            ? core::Caller{}
            : options_.authorizer->Authorize(PresentedBy(context), method);
    if (!caller.ok()) return caller.status();
    absl::StatusOr<core::CallSlot> slot = calls_.Enter(*caller);
    if (!slot.ok()) return slot.status();
    return CallGrant{.caller = std::move(*caller), .slot = std::move(*slot)};
  }

  // From now on new requests are refused (Admit), also on streams already open.
  void StartDrain() { draining_.store(true); }
  // OK while the server takes new requests; UNAVAILABLE once it drains.
  absl::Status Admit() const {
    if (!draining_.load()) return absl::OkStatus();
    refused_.fetch_add(1, std::memory_order_relaxed);
    return absl::UnavailableError("the server is shutting down; send the request to another one");
  }
  // Requests refused because the server drains, so far.
  int64_t refused() const { return refused_.load(); }

 private:
  core::GemmEngine* const engine_;
  const ServiceOptions options_;
  AnswerBudget answers_;
  core::CallerCalls calls_;
  std::atomic<bool> draining_{false};
  mutable std::atomic<int64_t> refused_{0};
};

// The call's deadline (InfiniteFuture when it has none).
inline absl::Time RpcDeadline(const grpc::CallbackServerContext& context) {
  const auto d = context.deadline();
  if (d == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(d);
}

}  // namespace gemm::service
