// GemmEngine: the server core behind the RPC layer. Validates domain requests, admits them against
// the in-flight memory budget, queues them in the batcher, owns the backend's lifecycle, the
// resident-matrix and shared-memory registries. Knows nothing of gRPC or CUDA. Thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/core/backend.h"
#include "server/core/batcher.h"
#include "server/core/clock.h"
#include "server/core/limits.h"
#include "server/core/matrix_registry.h"
#include "server/core/shared_memory_registry.h"
#include "server/core/types.h"
#include "server/core/usable_memory.h"
#include "server/core/work_budget.h"

namespace gemm::core {

class DeviceSplit;

class GemmEngine {
 public:
  struct Options {
    // As asked (flags); Create() resolves them against the host's memory (ResolveLimits).
    Limits limits;
    Batcher::Options batcher;
    Clock* clock = nullptr;  // nullptr: RealClock
    // The memory the limits are derived from; nullopt (default): DetectUsableMemory().
    std::optional<UsableMemory> usable_memory;
    // Clients may release and replace the weight repository's matrices. Default false.
    bool release_repository_weights = false;
  };

  // Takes ownership of `backend`, resolves the limits (INVALID_ARGUMENT naming the flag of one
  // that makes no sense) and starts the backend's workers.
  static absl::StatusOr<std::unique_ptr<GemmEngine>> Create(const Options& options,
                                                            std::unique_ptr<Backend> backend);
  ~GemmEngine();

  // Validates `item->request` (resolving resident handles), takes the bytes it holds (operands
  // in the message plus response) from the in-flight budget until its answer has been handed to
  // `item->done` (RESOURCE_EXHAUSTED naming --max_in_flight_bytes when they do not fit), and
  // queues it; a group over resident matrices that share no device is queued as one part per
  // device (DeviceSplit) and answered as one. On error returns the status and does NOT call
  // `item->done`; on OK, `item->done` is called exactly once later, from a backend or batcher
  // thread. Never blocks on compute.
  absl::Status Submit(std::shared_ptr<WorkItem> item);

  // Submit() for the requests of one wire message: returns one status per item, with Submit()'s
  // meaning. The valid ones are queued together (Batcher::SubmitAll), so a batch being gathered
  // takes all of them or none and they tend to be answered together.
  std::vector<absl::Status> SubmitAll(std::vector<std::shared_ptr<WorkItem>> items);

  // Stops accepting work, lets queued and running requests finish, stops the backend. Idempotent.
  void Shutdown();

  MatrixRegistry& registry() { return *registry_; }
  // Client shared-memory regions (requests resolve their references through it).
  SharedMemoryRegistry& shared_memory() { return *shared_memory_; }
  // The limits in force (resolved against the host's memory).
  const Limits& limits() const { return options_.limits; }
  // How the limits derived from or clamped to the host's memory came about, one line each (for
  // the start-up log).
  const std::vector<std::string>& limit_notes() const { return limit_notes_; }
  // Bytes held by requests in flight now (see Submit).
  int64_t in_flight_bytes() const { return budget_->held(); }
  Backend& backend() { return *backend_; }
  Batcher& batcher() { return *batcher_; }
  Clock* clock() const { return clock_; }

 private:
  GemmEngine(const Options& options, std::vector<std::string> limit_notes,
             std::unique_ptr<Backend> backend, std::unique_ptr<Batcher> batcher);
  // Checks the requested kernel and the request (resolving resident handles); returns the bytes
  // the request holds until answered.
  absl::StatusOr<int64_t> Validate(WorkItem* item) const;
  // Takes `bytes` from the budget for `item` and makes its `done` give them back after answering.
  absl::Status Admit(WorkItem* item, int64_t bytes);
  // Queues the parts of a request that DeviceSplit divided; on error abandons them.
  absl::Status SubmitSplit(DeviceSplit& split);
  Options options_;  // limits resolved
  std::vector<std::string> limit_notes_;
  Clock* clock_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Batcher> batcher_;
  std::unique_ptr<MatrixRegistry> registry_;
  std::unique_ptr<SharedMemoryRegistry> shared_memory_;
  std::shared_ptr<WorkBudget> budget_;  // shared with the `done` of requests in flight
  std::vector<std::string> kernels_;    // usable kernel names a request may ask for
  std::atomic<bool> shut_down_{false};
};

}  // namespace gemm::core
