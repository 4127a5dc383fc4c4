// DeviceSplit: one part per device of a group request whose resident matrices share no device,
// answered as one (see device_split.h).
#include "server/core/device_split.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace gemm::core {
namespace {

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

// The original request and what its parts have answered so far.
struct DeviceSplit::Join {
  std::shared_ptr<WorkItem> original;
  absl::Mutex mu;
  int remaining ABSL_GUARDED_BY(mu) = 0;
  bool abandoned ABSL_GUARDED_BY(mu) = false;
  std::optional<absl::Status> error ABSL_GUARDED_BY(mu);
  GemmResult result ABSL_GUARDED_BY(mu);  // outputs in the original's order

  // Part `part` (its problems at `indices` of the original) answered `r`.
  void Done(int part, const std::vector<size_t>& indices, absl::StatusOr<GemmResult> r) {
    DoneCallback done;
    absl::StatusOr<GemmResult> answer = absl::UnknownError("unset");
    {
      absl::MutexLock lock(&mu);
      if (!r.ok()) {
        if (!error.has_value()) error = r.status();
      } else if (r->outputs.size() != indices.size()) {
        if (!error.has_value()) {
          error = absl::InternalError("a device part of the request returned the wrong outputs");
        }
      } else {
        for (size_t i = 0; i < indices.size(); ++i) {
          result.outputs[indices[i]] = std::move(r->outputs[i]);
        }
        Merge(part, r->timing);
        if (result.kernel.empty()) result.kernel = r->kernel;
      }
      if (--remaining > 0 || abandoned) return;
      done = std::move(original->done);
      if (error.has_value()) {
        answer = *error;
      } else {
        answer = std::move(result);
      }
    }
    done(std::move(answer));
  }

  // Adds part `part`'s timing: the longest of each duration, rows summed, the most requests a
  // part ran with, part 0's device.
  void Merge(int part, const Timing& t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Timing& m = result.timing;
    m.queue = std::max(m.queue, t.queue);
    m.copy_in = std::max(m.copy_in, t.copy_in);
    m.compute = std::max(m.compute, t.compute);
    m.copy_out = std::max(m.copy_out, t.copy_out);
    m.total = std::max(m.total, t.total);
    m.launch = std::max(m.launch, t.launch);
    m.completion = std::max(m.completion, t.completion);
    m.batch_rows += t.batch_rows;
    m.batch_requests = std::max(m.batch_requests, t.batch_requests);
    if (part == 0) m.device = t.device;
    m.gpu_timing_skipped = m.gpu_timing_skipped || t.gpu_timing_skipped;  // a part's max unknown
  }
};

std::unique_ptr<DeviceSplit> DeviceSplit::Make(const std::shared_ptr<WorkItem>& item) {
  const GemmRequest& req = item->request;
  if (req.kind != WorkKind::kGroup || req.problems.size() < 2) return nullptr;

  // A split only when no device holds every resident matrix the group names.
  const std::optional<std::vector<int>> common = CommonDevices(req);
  if (!common.has_value() || !common->empty()) return nullptr;

  // Each constrained problem goes to a device already chosen for an earlier one if its matrix
  // lives there (fewest parts), else to its matrix's first device; unconstrained ones to part 0.
  std::vector<int> part_device;                 // device of each part
  std::vector<std::vector<size_t>> part_index;  // original problem indices of each part
  std::vector<size_t> anywhere;
  for (size_t i = 0; i < req.problems.size(); ++i) {
    const std::vector<int> d = ProblemDevices(req.problems[i]);
    if (d.empty()) {
      anywhere.push_back(i);
      continue;
    }
    size_t part = 0;
    while (part < part_device.size() && !Contains(d, part_device[part])) ++part;
    if (part == part_device.size()) {
      part_device.push_back(d[0]);
      part_index.emplace_back();
    }
    part_index[part].push_back(i);
  }
  for (size_t i : anywhere) part_index[0].push_back(i);
  std::sort(part_index[0].begin(), part_index[0].end());

  auto split = std::unique_ptr<DeviceSplit>(new DeviceSplit());
  split->join_ = std::make_shared<Join>();
  Join& join = *split->join_;
  join.original = item;
  {
    absl::MutexLock lock(&join.mu);
    join.remaining = static_cast<int>(part_index.size());
    join.result.outputs.resize(req.problems.size());
  }
  for (size_t part = 0; part < part_index.size(); ++part) {
    auto sub = std::make_shared<WorkItem>();
    sub->request.request_id = req.request_id;
    sub->request.kind = WorkKind::kGroup;
    sub->request.priority = req.priority;
    sub->request.deadline = req.deadline;
    sub->request.kernel = req.kernel;
    sub->request.regions = req.regions;
    for (size_t i : part_index[part]) sub->request.problems.push_back(req.problems[i]);
    sub->arrival = item->arrival;
    sub->cancelled = item->cancelled;
    sub->keep_alive = item;  // the original keeps the bytes the problems point into
    sub->done = [join = split->join_, part = static_cast<int>(part), indices = part_index[part]](
                    absl::StatusOr<GemmResult> r) { join->Done(part, indices, std::move(r)); };
    split->parts_.push_back(std::move(sub));
  }
  return split;
}

void DeviceSplit::Abandon() {
  absl::MutexLock lock(&join_->mu);
  join_->abandoned = true;
}

}  // namespace gemm::core
