// Request templates and the resident matrices they use.
#include "client/loadgen/request_templates.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"

namespace gemm::loadgen {
namespace {

// Expert draws per shape and slot with --experts: enough that a run's requests use the experts
// evenly, few enough to build quickly.
constexpr int kExpertDraws = 64;

}  // namespace

absl::StatusOr<std::unique_ptr<RequestTemplates>> RequestTemplates::Create(
    const WorkloadSpec& w, uint64_t seed, const std::vector<ShapeOperands>& shapes,
    const OperandRegion* region, const std::vector<Target>& targets) {
  if (w.experts > 0 && (w.b_source != BSource::kResident || w.streaming || w.shared_memory ||
                        w.experts_per_request < 1 || w.experts_per_request > w.experts)) {
    return absl::InvalidArgumentError(
        "--experts needs --b=resident, unary RPCs and no --shm, and 1 <= T <= E");
  }
  std::unique_ptr<RequestTemplates> t(
      new RequestTemplates(w, seed, targets, region != nullptr ? region->slots() : 1));
  const bool resident = w.b_source == BSource::kResident;
  t->groups_.resize(resident ? targets.size() : 1);
  for (int g = 0; g < static_cast<int>(t->groups_.size()); ++g) {
    for (int i = 0; i < static_cast<int>(shapes.size()); ++i) {
      std::vector<std::string> handles(std::max(1, w.experts));  // stay empty for inline B
      for (std::string& handle : handles) {
        if (!resident) break;
        absl::StatusOr<std::string> h = t->RegisterB(g, shapes[i]);
        if (!h.ok()) return h.status();  // ~RequestTemplates releases the others
        handle = *h;
      }
      t->AddShape(i, shapes[i], handles, region, &t->groups_[g]);
    }
  }
  return t;
}

RequestTemplates::RequestTemplates(const WorkloadSpec& workload, uint64_t seed,
                                   std::vector<Target> targets, int slots)
    : workload_(workload),
      seed_(seed),
      targets_(std::move(targets)),
      slots_(slots),
      variants_(workload.experts > 0 ? kExpertDraws : 1) {}

RequestTemplates::~RequestTemplates() { Release(); }

void RequestTemplates::Release() {
  for (const auto& [target, handle] : handles_) {
    const absl::Status status = targets_[target].client->ReleaseMatrix(handle);
    if (!status.ok()) {
      std::fprintf(stderr, "gemm_loadgen: releasing %s on %s failed: %s\n", handle.c_str(),
                   targets_[target].name.c_str(), status.ToString().c_str());
    }
  }
  handles_.clear();
}

absl::StatusOr<std::string> RequestTemplates::RegisterB(int target, const ShapeOperands& s) {
  const bool nk = workload_.b_nk;
  v1::MatrixHeader h;
  h.set_name(absl::StrCat("gemm_loadgen ", s.spec.Name()));
  h.set_rows(nk ? s.spec.n : s.spec.k);
  h.set_cols(nk ? s.spec.k : s.spec.n);
  h.set_dtype(v1::DTYPE_BF16);
  h.set_layout(nk ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN);
  absl::StatusOr<v1::MatrixInfo> info = targets_[target].client->RegisterMatrix(h, s.b);
  if (!info.ok()) {
    return absl::Status(info.status().code(),
                        absl::StrCat("registering B of ", s.spec.Name(), " on ",
                                     targets_[target].name, " failed: ", info.status().message()));
  }
  handles_.emplace_back(target, info->handle());
  return info->handle();
}

void RequestTemplates::SetRequestFields(v1::GemmRequest* r) const {
  r->set_priority(workload_.priority_high ? v1::PRIORITY_HIGH : v1::PRIORITY_NORMAL);
  r->set_timeout_us(workload_.deadline_us);
  r->set_kernel(workload_.kernel);
}

void RequestTemplates::AddShape(int shape, const ShapeOperands& s,
                                const std::vector<std::string>& handles,
                                const OperandRegion* region,
                                std::vector<v1::GemmRequest>* group) const {
  if (workload_.experts > 0) {
    AddExpertDraws(s, handles, seed_ ^ (0xe4e2 + group->size()), group);
    return;
  }
  const bool resident = workload_.b_source == BSource::kResident;
  for (int slot = 0; slot < slots_; ++slot) {
    v1::GemmRequest req;
    v1::Problem* p = req.mutable_problem();
    p->set_m(s.spec.m);
    p->set_n(s.spec.n);
    p->set_k(s.spec.k);
    if (region != nullptr) {
      *p->mutable_a_shm() = region->RefA(shape);
      *p->mutable_d_shm() = region->RefD(shape, slot);
    } else {
      p->set_a(s.a);
    }
    if (resident) {
      p->set_b_handle(handles[0]);
    } else {
      if (region != nullptr) {
        *p->mutable_b_shm() = region->RefB(shape);
      } else {
        p->set_b(s.b);
      }
      p->set_b_layout(workload_.b_nk ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN);
    }
    p->set_output_dtype(workload_.output_fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16);
    SetRequestFields(&req);
    group->push_back(std::move(req));
  }
}

void RequestTemplates::AddExpertDraws(const ShapeOperands& s,
                                      const std::vector<std::string>& handles, uint64_t draw_seed,
                                      std::vector<v1::GemmRequest>* group) const {
  // Each draw takes its own experts (distinct within a request).
  std::mt19937_64 draw(draw_seed);
  for (int v = 0; v < variants_; ++v) {
    std::vector<int> order(workload_.experts);
    for (int e = 0; e < workload_.experts; ++e) order[e] = e;
    std::shuffle(order.begin(), order.end(), draw);
    v1::GemmRequest req;
    for (int t = 0; t < workload_.experts_per_request; ++t) {
      v1::Problem* p = req.mutable_group()->add_problems();
      p->set_m(s.spec.m);
      p->set_n(s.spec.n);
      p->set_k(s.spec.k);
      p->set_a(s.a);
      p->set_b_handle(handles[order[t]]);
      p->set_output_dtype(workload_.output_fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16);
    }
    SetRequestFields(&req);
    group->push_back(std::move(req));
  }
}

}  // namespace gemm::loadgen
