// The server state the request fuzz targets convert and validate requests against: limits chosen
// by the input, two resident matrices and three shared-memory regions over real objects, and the
// properties every accepted request must have (exact operand sizes, ranges inside their memory,
// totals within the limits) and every refused one (a documented code and a message).
//
// Resident handles are random, so an input names them as "@0" (B [K=3, N=5], layout KN) and "@1"
// (B [N=2, K=7], layout NK); the world swaps in the real handle before conversion. Regions:
// "s0" (all 4096 bytes of object 0), "s1" (bytes [10, 100) of object 1, 100 bytes) and "s2" (bytes
// [1000, 3000) of object 0).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "gemm/v1/gemm_service.pb.h"
#include "server/core/limits.h"
#include "server/core/matrix_registry.h"
#include "server/core/shared_memory_registry.h"
#include "server/core/types.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_support.h"

namespace gemm::fuzz {

class RequestWorld {
 public:
  // The process-wide world (built on first use; its regions live until exit).
  static RequestWorld& Get();

  // Limits picked by the next input byte: 0 the defaults, 1 tight ones, 2 every field read from
  // the input (any int64), 3 the defaults with --max_dim at its largest.
  static core::Limits ReadLimits(FuzzInput& in);

  // Swaps "@i" handles in `proto` for the registered ones, converts it (FromProto) and validates
  // it; checks the properties of an accepted or refused request (aborting when one fails).
  absl::StatusOr<core::GemmRequest> Admit(v1::GemmRequest& proto, const core::Limits& limits);

  // Output bytes of an accepted request's response (outputs not written to shared memory).
  static int64_t ResponseBytes(const core::GemmRequest& request);

 private:
  RequestWorld();
  void CheckAccepted(const v1::GemmRequest& proto, const core::GemmRequest& r,
                     const core::Limits& limits) const;
  // Whether [data, data + size) lies in `owner` (the proto's bytes) or in a registered region.
  bool Inside(const char* data, size_t size, const std::string& owner) const;

  FuzzBackend backend_;
  FuzzShmObjects objects_;
  core::MatrixRegistry matrices_;
  core::SharedMemoryRegistry regions_;
  std::string handles_[2];
};

}  // namespace gemm::fuzz
