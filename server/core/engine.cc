// GemmEngine wiring.
#include "server/core/engine.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/core/client_string.h"
#include "server/core/device_split.h"
#include "server/core/validation.h"

namespace gemm::core {

absl::StatusOr<std::unique_ptr<GemmEngine>> GemmEngine::Create(const Options& options,
                                                               std::unique_ptr<Backend> backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("no backend");
  // A backend whose device list holds -1 keeps resident matrices in host memory.
  const std::vector<int> devices = backend->Devices();
  const bool resident_in_host = std::find(devices.begin(), devices.end(), -1) != devices.end();
  std::vector<std::string> notes;
  auto limits = ResolveLimits(options.limits,
                              options.usable_memory ? *options.usable_memory : DetectUsableMemory(),
                              resident_in_host, &notes);
  if (!limits.ok()) return limits.status();
  Options resolved = options;
  resolved.limits = *limits;
  Clock* clock = options.clock ? options.clock : RealClock::Get();
  auto batcher = Batcher::Create(options.batcher, clock);
  if (!batcher.ok()) return batcher.status();
  std::unique_ptr<GemmEngine> engine(
      new GemmEngine(resolved, std::move(notes), std::move(backend), std::move(*batcher)));
  if (auto s = engine->backend_->Start(engine->batcher_.get()); !s.ok()) {
    engine->batcher_->Shutdown();
    return s;
  }
  return engine;
}

GemmEngine::GemmEngine(const Options& options, std::vector<std::string> limit_notes,
                       std::unique_ptr<Backend> backend, std::unique_ptr<Batcher> batcher)
    : options_(options),
      limit_notes_(std::move(limit_notes)),
      clock_(options.clock ? options.clock : RealClock::Get()),
      backend_(std::move(backend)),
      batcher_(std::move(batcher)),
      registry_(std::make_unique<MatrixRegistry>(backend_.get(), options.limits.max_resident_bytes,
                                                 options.release_repository_weights)),
      shared_memory_(std::make_unique<SharedMemoryRegistry>(
          backend_.get(), options.limits.max_shared_memory_bytes,
          options.limits.shared_memory_key_prefix, options.limits.max_shared_memory_regions)),
      budget_(
          std::make_shared<WorkBudget>(options.limits.max_in_flight_bytes, "max_in_flight_bytes")) {
  for (const auto& k : backend_->Describe().kernels) {
    if (k.usable) kernels_.push_back(k.name);
  }
}

GemmEngine::~GemmEngine() { Shutdown(); }

absl::StatusOr<int64_t> GemmEngine::Validate(WorkItem* item) const {
  const std::string& kernel = item->request.kernel;
  if (!kernel.empty() && std::find(kernels_.begin(), kernels_.end(), kernel) == kernels_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel: ", QuoteClientString(kernel),
                     " is not a usable kernel here (usable: ", absl::StrJoin(kernels_, ", "), ")"));
  }
  auto bytes = ValidateRequest(options_.limits, *registry_, &item->request);
  if (!bytes.ok()) return bytes.status();
  return bytes->held();
}

absl::Status GemmEngine::Admit(WorkItem* item, int64_t bytes) {
  if (auto s = budget_->Acquire(bytes); !s.ok()) return s;
  // The bytes go back once the answer has been handed over (for a split request: the whole
  // answer, DeviceSplit calling this `done` once).
  item->done = [budget = budget_, bytes,
                done = std::move(item->done)](absl::StatusOr<GemmResult> result) {
    done(std::move(result));
    budget->Release(bytes);
  };
  return absl::OkStatus();
}

absl::Status GemmEngine::Submit(std::shared_ptr<WorkItem> item) {
  std::vector<std::shared_ptr<WorkItem>> items;
  items.push_back(std::move(item));
  return SubmitAll(std::move(items))[0];
}

std::vector<absl::Status> GemmEngine::SubmitAll(std::vector<std::shared_ptr<WorkItem>> items) {
  std::vector<absl::Status> statuses(items.size());
  std::vector<int64_t> held(items.size(), 0);    // bytes each admitted item took from the budget
  std::vector<std::shared_ptr<WorkItem>> queue;  // admitted items needing no split, in order
  std::vector<size_t> queue_index;               // their index in `items`
  for (size_t i = 0; i < items.size(); ++i) {
    absl::StatusOr<int64_t> bytes = Validate(items[i].get());
    statuses[i] = bytes.ok() ? Admit(items[i].get(), *bytes) : bytes.status();
    if (!statuses[i].ok()) continue;
    held[i] = *bytes;
    std::unique_ptr<DeviceSplit> split = DeviceSplit::Make(items[i]);
    if (split == nullptr) {
      backend_->PinMessageOperands(items[i].get());
      queue.push_back(std::move(items[i]));
      queue_index.push_back(i);
      continue;
    }
    statuses[i] = SubmitSplit(*split);
    if (!statuses[i].ok()) budget_->Release(held[i]);  // its `done` is never called
  }
  if (queue.empty()) return statuses;
  std::vector<absl::Status> queued = batcher_->SubmitAll(std::move(queue));
  for (size_t j = 0; j < queued.size(); ++j) {
    const size_t i = queue_index[j];
    if (!queued[j].ok()) budget_->Release(held[i]);  // refused: its `done` is never called
    statuses[i] = std::move(queued[j]);
  }
  return statuses;
}

absl::Status GemmEngine::SubmitSplit(DeviceSplit& split) {
  // A group over matrices on different devices: one part per device, answered as one.
  for (const auto& part : split.parts()) {
    if (auto s = batcher_->Submit(part); !s.ok()) {
      split.Abandon();  // parts already queued still run; their answers go nowhere
      return s;
    }
  }
  return absl::OkStatus();
}

void GemmEngine::Shutdown() {
  if (shut_down_.exchange(true)) return;
  batcher_->Shutdown();
  backend_->Stop();
}

}  // namespace gemm::core
