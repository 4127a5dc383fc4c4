// Splitting a group request whose resident matrices live on different devices (a mixture-of-
// experts step whose experts the server placed on several GPUs) into one part per device, each a
// request of its own that the batcher routes to that device, and answering the original request
// once, with every output in its place, when all parts are done. No gRPC, no CUDA.
#pragma once

#include <memory>
#include <vector>

#include "server/core/types.h"

namespace gemm::core {

class DeviceSplit {
 public:
  // The split of `item`, or nullptr when it needs none: it is not a group, or one device holds
  // every resident matrix it names. Each part is a group request of the original's problems
  // whose matrices share a device (in their original order; problems with an inline B join the
  // first part), with the original's id, priority, deadline, kernel, cancellation and regions,
  // and keeps `item` alive. When every part has called its `done`, `item->done` is called once:
  // with the outputs in the original order and the timing merged (the longest of each duration,
  // rows summed, the most requests a part ran with, the first part's device), or with the first
  // error a part met.
  static std::unique_ptr<DeviceSplit> Make(const std::shared_ptr<WorkItem>& item);

  // The parts, at least two.
  const std::vector<std::shared_ptr<WorkItem>>& parts() const { return parts_; }

  // The original request is answered by the caller instead (a part could not be queued): the
  // parts' answers are dropped and `item->done` is never called.
  void Abandon();

  struct Join;  // collects the parts' answers (device_split.cc)

 private:
  DeviceSplit() = default;
  std::shared_ptr<Join> join_;
  std::vector<std::shared_ptr<WorkItem>> parts_;
};

}  // namespace gemm::core
