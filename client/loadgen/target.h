// A server (or a load-balanced name) the load generator sends to.
#pragma once

#include <memory>
#include <string>

#include "client/gemm_client.h"

namespace gemm::loadgen {

// One server (or one load-balanced name). The client was created with `workload.channels`
// channels; requests go round-robin over every channel of every target. Resident matrices and
// shared-memory regions are registered per target (handles are local to a server).
struct Target {
  std::string name;
  std::shared_ptr<client::GemmClient> client;
};

}  // namespace gemm::loadgen
