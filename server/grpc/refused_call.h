// A streaming call refused before its first message (its caller not admitted): the reactor
// answers `status` at once and reads nothing.
#pragma once

#include <grpcpp/support/server_callback.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/grpc/service_state.h"
#include "server/grpc/status_util.h"

namespace gemm::service {

// `Reactor` is the call's reactor type (grpc::ServerBidiReactor<...>, ServerReadReactor<...>).
// Deletes itself when gRPC is done with it.
template <class Reactor>
class RefusedCall final : public Reactor {
 public:
  // Reports `method` finishing with `status` to `state`'s observer and finishes the call.
  RefusedCall(const ServiceState& state, absl::string_view method, const absl::Status& status) {
    state.Observe(method, status.code(), nullptr);
    this->Finish(ToGrpcStatus(status));
  }
  void OnDone() override { delete this; }
};

}  // namespace gemm::service
