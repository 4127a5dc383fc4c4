// The requests the load generator sends: one read-only template per shape, D slot (--shm) and
// expert draw (--experts), built once; calls send a template as it is (unary) or splice its
// Problem into their wire message (streams), so nothing is copied per request. With resident B
// each shape's B is registered on every target (handles are local to a server), so there is one
// group of templates per target; with inline B one group serves them all.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/loadgen/operand_region.h"
#include "client/loadgen/operands.h"
#include "client/loadgen/target.h"
#include "client/loadgen/workload.h"
#include "gemm/v1/gemm_service.pb.h"

namespace gemm::loadgen {

class RequestTemplates {
 public:
  // Registers the resident matrices (resident B: each shape's B on every target, --experts
  // times) and builds the templates. `region` (may be null) is the --shm region the templates
  // refer to. A failed registration is returned; what was registered is released.
  static absl::StatusOr<std::unique_ptr<RequestTemplates>> Create(
      const WorkloadSpec& workload, uint64_t seed, const std::vector<ShapeOperands>& shapes,
      const OperandRegion* region, const std::vector<Target>& targets);
  ~RequestTemplates();
  RequestTemplates(const RequestTemplates&) = delete;
  RequestTemplates& operator=(const RequestTemplates&) = delete;

  // Releases the resident matrices registered (failures reported on stderr). Idempotent.
  void Release();

  // The templates a request to `target` picks from.
  const std::vector<v1::GemmRequest>& ForTarget(int target) const {
    return groups_[groups_.size() == 1 ? 0 : target];
  }
  // Index in ForTarget() of the template for `shape`, D slot `slot` and expert draw `variant`.
  int Index(int shape, int slot, int variant) const {
    return (shape * slots_ + slot) * variants_ + variant;
  }
  // Expert draws per shape and slot (1 without --experts).
  int variants() const { return variants_; }

 private:
  RequestTemplates(const WorkloadSpec& workload, uint64_t seed, std::vector<Target> targets,
                   int slots);
  // Registers `s`'s B on target `target`; returns the handle.
  absl::StatusOr<std::string> RegisterB(int target, const ShapeOperands& s);
  // The templates of shape `shape` for one target group, given its B handles (one per expert;
  // one empty handle for inline B).
  void AddShape(int shape, const ShapeOperands& s, const std::vector<std::string>& handles,
                const OperandRegion* region, std::vector<v1::GemmRequest>* group) const;
  void AddExpertDraws(const ShapeOperands& s, const std::vector<std::string>& handles,
                      uint64_t draw_seed, std::vector<v1::GemmRequest>* group) const;
  // Request fields other than the problem.
  void SetRequestFields(v1::GemmRequest* r) const;

  const WorkloadSpec workload_;
  const uint64_t seed_;
  std::vector<Target> targets_;
  const int slots_;
  int variants_ = 1;
  std::vector<std::vector<v1::GemmRequest>> groups_;
  std::vector<std::pair<int, std::string>> handles_;  // (target, handle) registered
};

}  // namespace gemm::loadgen
