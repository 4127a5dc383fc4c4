// Executor of one GPU (see executor.h): batch -> units -> plan -> pool/staging -> stream work ->
// host callback -> completion thread.
#include "server/gpu/executor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "common/uninitialized_string.h"
#include "gemm/kernel.h"
#include "server/gpu/copy_batch.h"
#include "server/gpu/cuda_util.h"
#include "server/gpu/resident.h"

namespace gemm::gpu {
namespace {

constexpr int64_t kAlign = 256;  // sub-allocation alignment (TMA needs 16)

// One host->device 2D copy: `rows` rows of `row_bytes` contiguous host bytes into a device region
// with row pitch `dpitch`, through staging bytes at `stage_off`, or straight from `host` when it
// is page-locked (a registered shared-memory region).
struct InCopy {
  const char* host = nullptr;
  int64_t rows = 0, row_bytes = 0, dev_off = 0, dpitch = 0, stage_off = 0;
  bool pinned = false;
};

// One device->host 2D copy of a whole output (item `item`, output `output`) into the response
// bytes or into `dest` (the problem's shared-memory D; written directly when `pinned`).
struct OutCopy {
  size_t item = 0, output = 0;
  int64_t dev_off = 0, dpitch = 0, rows = 0, row_bytes = 0, stage_off = 0;
  char* dest = nullptr;
  bool pinned = false;
};

// One kernel-library call.
struct Launch {
  bool grouped = false;
  kernel::StridedBatch batch;
  std::vector<kernel::Problem> group;
};

enum class UnitShape { kStacked, kStrided, kGroup, kExperts };

kernel::DType ToKernel(core::DType t) {
  return t == core::DType::kBF16 ? kernel::DType::kBF16 : kernel::DType::kFP32;
}
kernel::BLayout ToKernel(core::BLayout l) {
  return l == core::BLayout::kKN ? kernel::BLayout::kKN : kernel::BLayout::kNK;
}

int64_t PitchElems(int64_t cols, int64_t elem_bytes) {
  return RoundUp(cols * elem_bytes, 16) / elem_bytes;
}

}  // namespace

// A group of items run by one or a few kernel calls on one stream, with one device allocation
// and one staging block. Owned by the executor thread until enqueued, then by the host callback
// and completion thread.
struct Unit {
  Executor* owner = nullptr;
  std::vector<std::shared_ptr<core::WorkItem>> items;
  UnitShape shape = UnitShape::kStacked;
  absl::Time released;
  bool high_priority = false;
  kernel::KernelKind kind = kernel::KernelKind::kAuto;
  bool explicit_kernel = false;
  std::string kernel_name;
  int64_t batch_rows = 0;
  double est_us = 0;  // estimated GPU time, counted in the executor's work in flight

  // Plan (offsets relative to the device allocation / staging block).
  std::vector<InCopy> ins;
  std::vector<OutCopy> outs;
  std::vector<Launch> launches;
  std::vector<std::vector<core::Output>> outputs;  // per item
  int64_t device_bytes = 0;
  int64_t staging_bytes = 0;
  int64_t workspace_bytes = 0;  // the largest any launch needs
  int64_t workspace_off = -1;   // in the device allocation; -1: the stream's own workspace

  // Resources.
  const StreamSlot* slot = nullptr;   // copies (and kernels unless kslot differs)
  const StreamSlot* kslot = nullptr;  // kernels: slot, or the device's compute stream
  char* dev = nullptr;
  int64_t dev_accounted = 0;
  StagingBlock staging;
  bool direct = false;  // operands too large for a staging block: copied from pageable memory
  // Timing: before H2D, after H2D, after the kernels, after D2H; and (kernels on the compute
  // stream) when the compute stream reached this unit's kernels.
  cudaEvent_t ev[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  bool timed = false;
  absl::Duration host_copy_in;  // memcpy into staging (part of copy_in)
  absl::Duration launch;        // host time planning and enqueuing (Timing::launch)
  absl::Time gpu_done;          // when the stream callback ran
  absl::Status status;
};

namespace {

// Lays out a unit's operands: device offsets, staging offsets, copies and launches. Run twice:
// once with base 0 to measure, once with the real device allocation.
class Planner {
 public:
  Planner(Unit* u, uintptr_t base, int device) : u_(u), base_(base), device_(device) {}

  int64_t TakeDev(int64_t bytes) {
    const int64_t off = dev_;
    dev_ = RoundUp(dev_ + std::max<int64_t>(bytes, 1), kAlign);
    return off;
  }
  int64_t TakeStage(int64_t bytes) {
    const int64_t off = stage_;
    stage_ = RoundUp(stage_ + std::max<int64_t>(bytes, 1), kAlign);
    return off;
  }
  void* Ptr(int64_t off) const { return reinterpret_cast<void*>(base_ + off); }
  // The offset of a pointer made by Ptr().
  int64_t Offset(const void* ptr) const { return reinterpret_cast<uintptr_t>(ptr) - base_; }
  // `where`: where `host` lives (page-locked shared memory is copied in place).
  void In(const char* host, core::HostMemory where, int64_t rows, int64_t row_bytes,
          int64_t dev_off, int64_t dpitch) {
    const bool pinned = where == core::HostMemory::kSharedPinned;
    u_->ins.push_back({host, rows, row_bytes, dev_off, dpitch,
                       pinned ? -1 : TakeStage(rows * row_bytes), pinned});
  }
  // D of `p` (item `item`, output `output`): into its shared-memory destination or the response.
  void Out(const core::Problem& p, size_t item, size_t output, int64_t dev_off, int64_t dpitch,
           int64_t rows, int64_t row_bytes) {
    char* dest = p.d_dest.empty() ? nullptr : p.d_dest.data();
    const bool pinned = dest != nullptr && p.d_mem == core::HostMemory::kSharedPinned;
    u_->outs.push_back({item, output, dev_off, dpitch, rows, row_bytes,
                        pinned ? -1 : TakeStage(rows * row_bytes), dest, pinned});
  }
  int64_t dev_bytes() const { return dev_; }
  int64_t stage_bytes() const { return stage_; }
  int device() const { return device_; }

  // B of `p` on the device: resident replica or an inline copy. Sets *ptr, *ld (elements) and
  // *stride (elements between batch entries; 0 when shared).
  absl::Status PlaceB(const core::Problem& p, void** ptr, int64_t* ld, int64_t* stride) {
    const bool kn = p.b_layout == core::BLayout::kKN;
    if (p.b_resident != nullptr) {
      const auto* m = dynamic_cast<const CudaResidentMatrix*>(p.b_resident.get());
      if (m == nullptr)
        return absl::InternalError("resident matrix not stored by the CUDA backend");
      if (m->k() != p.k || m->n() != p.n || m->desc().layout != p.b_layout) {
        return absl::InvalidArgumentError(absl::StrCat(
            "resident matrix ", m->desc().handle, " does not match the problem's K, N, layout"));
      }
      const CudaResidentMatrix::Replica* r = m->OnDevice(device_);
      if (r == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat("resident matrix ", m->desc().handle,
                                                          " does not live on device ", device_));
      }
      *ptr = r->ptr;
      *ld = r->pitch_bytes / 2;
      *stride = 0;
      return absl::OkStatus();
    }
    const int64_t rows = kn ? p.k : p.n, cols = kn ? p.n : p.k;
    const int64_t mats = p.b_shared ? 1 : p.count;
    if (static_cast<int64_t>(p.b.size()) != mats * rows * cols * 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("B has ", p.b.size(), " bytes, expected ", mats * rows * cols * 2));
    }
    *ld = PitchElems(cols, 2);
    const int64_t off = TakeDev(mats * rows * *ld * 2);
    In(p.b.data(), p.b_mem, mats * rows, cols * 2, off, *ld * 2);
    *ptr = Ptr(off);
    *stride = p.b_shared ? 0 : rows * *ld;
    return absl::OkStatus();
  }

  // A, B, C, D of one (possibly batched) problem; output `output` of item `item`.
  absl::StatusOr<kernel::StridedBatch> AddProblem(const core::Problem& p, size_t item,
                                                  size_t output, bool batch_shape) {
    if (p.m < 1 || p.n < 1 || p.k < 1 || p.count < 1) {
      return absl::InvalidArgumentError("M, N, K and count must be >= 1");
    }
    const int64_t es = core::DTypeBytes(p.out_dtype);
    if (static_cast<int64_t>(p.a.size()) != p.count * p.m * p.k * 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("A has ", p.a.size(), " bytes, expected ", p.count * p.m * p.k * 2));
    }
    const float beta = p.c.empty() ? 0.0f : p.beta;
    if (beta != 0.0f && static_cast<int64_t>(p.c.size()) != p.count * p.m * p.n * es) {
      return absl::InvalidArgumentError(
          absl::StrCat("C has ", p.c.size(), " bytes, expected ", p.count * p.m * p.n * es));
    }
    kernel::StridedBatch sb;
    kernel::Problem& kp = sb.problem;
    kp.m = p.m;
    kp.n = p.n;
    kp.k = p.k;
    kp.lda = PitchElems(p.k, 2);
    const int64_t off_a = TakeDev(p.count * p.m * kp.lda * 2);
    In(p.a.data(), p.a_mem, p.count * p.m, p.k * 2, off_a, kp.lda * 2);
    kp.a = Ptr(off_a);
    void* b = nullptr;
    GPU_RETURN_IF_ERROR(PlaceB(p, &b, &kp.ldb, &sb.stride_b));
    kp.b = b;
    kp.b_layout = ToKernel(p.b_layout);
    kp.ldd = kp.ldc = PitchElems(p.n, es);
    if (beta != 0.0f) {
      const int64_t off_c = TakeDev(p.count * p.m * kp.ldc * es);
      In(p.c.data(), p.c_mem, p.count * p.m, p.n * es, off_c, kp.ldc * es);
      kp.c = Ptr(off_c);
    }
    const int64_t off_d = TakeDev(p.count * p.m * kp.ldd * es);
    kp.d = Ptr(off_d);
    Out(p, item, output, off_d, kp.ldd * es, p.count * p.m, p.n * es);
    kp.d_dtype = ToKernel(p.out_dtype);
    kp.alpha = p.alpha;
    kp.beta = beta;
    sb.batch = p.count;
    sb.stride_a = p.m * kp.lda;
    sb.stride_c = beta != 0.0f ? p.m * kp.ldc : 0;
    sb.stride_d = p.m * kp.ldd;
    core::Output out;
    if (batch_shape || p.count > 1) out.shape.push_back(p.count);
    out.shape.push_back(p.m);
    out.shape.push_back(p.n);
    out.dtype = p.out_dtype;
    auto& outs = u_->outputs[item];
    if (outs.size() <= output) outs.resize(output + 1);
    outs[output] = std::move(out);
    return sb;
  }

 private:
  Unit* u_;
  uintptr_t base_;
  int device_;
  int64_t dev_ = 0;
  int64_t stage_ = 0;
};

// One problem's rows in a stack: problem `output` of item `item`.
struct StackPart {
  size_t item = 0, output = 0;
};

// Rows of several problems against one B, laid out one after another along M.
struct Stack {
  kernel::Problem whole;               // all the rows as one GEMM (scalars of the first part)
  std::vector<kernel::Problem> parts;  // one per part, into the same buffers
  bool uniform = true;                 // every part has the first part's alpha and beta
};

// Stacks the A (and C, where a part has one) rows of `parts`, all M x K against the B of the
// first part (placed once), and hands each part's rows of D back to its own (item, output). The
// callers check that the parts agree in K, N, output dtype and B layout.
absl::StatusOr<Stack> StackRows(Unit& u, Planner& pl, std::span<const StackPart> parts) {
  const auto problem = [&u](const StackPart& part) -> const core::Problem& {
    return u.items[part.item]->request.problems[part.output];
  };
  const core::Problem& first = problem(parts[0]);
  const int64_t K = first.k, N = first.n, es = core::DTypeBytes(first.out_dtype);
  const auto beta_of = [](const core::Problem& p) { return p.c.empty() ? 0.0f : p.beta; };
  int64_t rows = 0;
  bool any_c = false;
  Stack s;
  for (const StackPart& part : parts) {
    const core::Problem& p = problem(part);
    if (static_cast<int64_t>(p.a.size()) != p.m * K * 2) {
      return absl::InvalidArgumentError(absl::StrCat("A of problem ", part.output, " has ",
                                                     p.a.size(), " bytes, expected ", p.m * K * 2));
    }
    if (beta_of(p) != 0.0f) {
      any_c = true;
      if (static_cast<int64_t>(p.c.size()) != p.m * N * es) {
        return absl::InvalidArgumentError(absl::StrCat(
            "C of problem ", part.output, " has ", p.c.size(), " bytes, expected ", p.m * N * es));
      }
    }
    if (std::bit_cast<uint32_t>(p.alpha) != std::bit_cast<uint32_t>(first.alpha) ||
        beta_of(p) != beta_of(first)) {
      s.uniform = false;
    }
    rows += p.m;
  }
  kernel::Problem kp;
  void* b = nullptr;
  int64_t stride_b = 0;
  GPU_RETURN_IF_ERROR(pl.PlaceB(first, &b, &kp.ldb, &stride_b));
  kp.n = N;
  kp.k = K;
  kp.b = b;
  kp.b_layout = ToKernel(first.b_layout);
  kp.lda = PitchElems(K, 2);
  kp.ldc = kp.ldd = PitchElems(N, es);
  kp.d_dtype = ToKernel(first.out_dtype);
  const int64_t row_a = kp.lda * 2, row_d = kp.ldd * es;
  const int64_t off_a = pl.TakeDev(rows * row_a);
  const int64_t off_c = any_c ? pl.TakeDev(rows * row_d) : -1;
  const int64_t off_d = pl.TakeDev(rows * row_d);
  s.parts.reserve(parts.size());
  int64_t row = 0;
  for (const StackPart& part : parts) {
    const core::Problem& p = problem(part);
    kernel::Problem& pp = s.parts.emplace_back(kp);
    pp.m = p.m;
    pp.a = pl.Ptr(off_a + row * row_a);
    pp.beta = beta_of(p);
    if (pp.beta != 0.0f) pp.c = pl.Ptr(off_c + row * row_d);
    pp.d = pl.Ptr(off_d + row * row_d);
    pp.alpha = p.alpha;
    auto& outs = u.outputs[part.item];
    if (outs.size() <= part.output) outs.resize(part.output + 1);
    outs[part.output] = core::Output{.shape = {p.m, N}, .dtype = p.out_dtype};
    row += p.m;
  }
  // The copies operand by operand, so the parts' rows lie back to back in staging as on the
  // device and each operand's copies merge into one (MergeAdjacentCopies).
  for (size_t i = 0; i < parts.size(); ++i) {
    const core::Problem& p = problem(parts[i]);
    pl.In(p.a.data(), p.a_mem, p.m, K * 2, pl.Offset(s.parts[i].a), row_a);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const core::Problem& p = problem(parts[i]);
    if (s.parts[i].c != nullptr)
      pl.In(p.c.data(), p.c_mem, p.m, N * es, pl.Offset(s.parts[i].c), row_d);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const core::Problem& p = problem(parts[i]);
    pl.Out(p, parts[i].item, parts[i].output, pl.Offset(s.parts[i].d), row_d, p.m, N * es);
  }
  // NOTE: the point of stacking: one GEMM with M = the sum of the parts' M reads B once for all.
  s.whole = s.parts[0];
  s.whole.m = rows;
  s.whole.c = any_c ? pl.Ptr(off_c) : nullptr;
  u.batch_rows += rows;
  return s;
}

// Items that share a resident B (same K, N, dtype, scalars or not) stacked along M: one GEMM, or
// one grouped call over the items where their alpha or beta differ.
absl::Status PlanStacked(Unit& u, Planner& pl) {
  const core::Problem& first = u.items[0]->request.problems[0];
  absl::InlinedVector<StackPart, 16> parts;
  for (size_t i = 0; i < u.items.size(); ++i) {
    const core::Problem& p = u.items[i]->request.problems[0];
    if (p.k != first.k || p.n != first.n || p.out_dtype != first.out_dtype ||
        p.b_layout != first.b_layout || p.count != 1 || p.m < 1) {
      return absl::InternalError("stacked items differ in K, N, dtype, layout or count");
    }
    parts.push_back({i, 0});
  }
  absl::StatusOr<Stack> s = StackRows(u, pl, parts);
  if (!s.ok()) return s.status();
  Launch l;
  if (s->uniform) {
    l.batch.problem = s->whole;
    l.batch.batch = 1;
  } else {
    l.grouped = true;
    l.group = std::move(s->parts);
  }
  u.launches.push_back(std::move(l));
  return absl::OkStatus();
}

absl::Status PlanStrided(Unit& u, Planner& pl) {
  const core::GemmRequest& req = u.items[0]->request;
  if (req.problems.size() != 1) return absl::InvalidArgumentError("expected one problem");
  auto sb = pl.AddProblem(req.problems[0], 0, 0, req.kind == core::WorkKind::kBatch);
  if (!sb.ok()) return sb.status();
  u.batch_rows = req.problems[0].count * req.problems[0].m;
  Launch l;
  l.batch = *sb;
  u.launches.push_back(std::move(l));
  return absl::OkStatus();
}

absl::Status PlanGroup(Unit& u, Planner& pl) {
  const core::GemmRequest& req = u.items[0]->request;
  if (req.problems.empty()) return absl::InvalidArgumentError("empty group");
  // One GemmGrouped per (output dtype, B layout), problems in request order.
  std::map<std::pair<int, int>, size_t> launch_of;
  for (size_t j = 0; j < req.problems.size(); ++j) {
    const core::Problem& p = req.problems[j];
    auto sb = pl.AddProblem(p, 0, j, false);
    if (!sb.ok()) return sb.status();
    u.batch_rows += p.count * p.m;
    const auto key = std::make_pair(static_cast<int>(p.out_dtype), static_cast<int>(p.b_layout));
    auto [it, inserted] = launch_of.try_emplace(key, u.launches.size());
    if (inserted) {
      Launch l;
      l.grouped = true;
      u.launches.push_back(std::move(l));
    }
    Launch& l = u.launches[it->second];
    const int64_t ea = 2, eb = 2, ed = core::DTypeBytes(p.out_dtype);
    for (int64_t e = 0; e < sb->batch; ++e) {
      kernel::Problem kp = sb->problem;
      kp.a = static_cast<const char*>(kp.a) + e * sb->stride_a * ea;
      kp.b = static_cast<const char*>(kp.b) + e * sb->stride_b * eb;
      if (kp.c != nullptr) kp.c = static_cast<const char*>(kp.c) + e * sb->stride_c * ed;
      kp.d = static_cast<char*>(kp.d) + e * sb->stride_d * ed;
      l.group.push_back(kp);
    }
  }
  return absl::OkStatus();
}

// Expert groups of several requests (core::IsExpertGroup): the rows of every problem that names
// one resident matrix, whichever request it comes from, are stacked into one member, so each
// expert's weights are read once for all of them. One GemmGrouped per B layout over the members
// (a lone member runs as one GEMM); each problem's rows of D go back to its own request.
absl::Status PlanExperts(Unit& u, Planner& pl) {
  struct Member {
    const core::Problem* first = nullptr;
    std::vector<StackPart> parts;
  };
  std::vector<Member> members;
  std::map<const core::ResidentMatrix*, size_t> member_of;
  for (size_t i = 0; i < u.items.size(); ++i) {
    const core::GemmRequest& req = u.items[i]->request;
    if (!core::IsExpertGroup(req)) return absl::InternalError("not an expert group");
    for (size_t j = 0; j < req.problems.size(); ++j) {
      const core::Problem& p = req.problems[j];
      auto [it, inserted] = member_of.try_emplace(p.b_resident.get(), members.size());
      if (inserted) members.push_back(Member{.first = &p});
      Member& m = members[it->second];
      if (p.m < 1 || p.k != m.first->k || p.n != m.first->n || p.out_dtype != m.first->out_dtype ||
          std::bit_cast<uint32_t>(p.alpha) != std::bit_cast<uint32_t>(m.first->alpha)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "problem ", j, " of request ", req.request_id,
            " differs from the others on its matrix in M, K, N, output dtype or alpha"));
      }
      m.parts.push_back({i, j});
    }
  }
  std::map<int, size_t> launch_of;  // B layout -> launch
  for (const Member& m : members) {
    absl::StatusOr<Stack> s = StackRows(u, pl, m.parts);
    if (!s.ok()) return s.status();
    auto [it, inserted] = launch_of.try_emplace(static_cast<int>(m.first->b_layout), 0);
    if (inserted) {
      it->second = u.launches.size();
      u.launches.push_back(Launch{.grouped = true});
    }
    u.launches[it->second].group.push_back(s->whole);
  }
  for (Launch& l : u.launches) {
    if (l.group.size() == 1) {  // one matrix: the single-problem kernels (small-M, split-K)
      l.grouped = false;
      l.batch.problem = l.group[0];
      l.batch.batch = 1;
      l.group.clear();
    }
  }
  return absl::OkStatus();
}

// Fills the unit's plan. `measure`: first pass (base 0), also sizes the workspace.
absl::Status BuildPlan(Unit& u, uintptr_t base, int device, bool measure) {
  u.ins.clear();
  u.outs.clear();
  u.launches.clear();
  u.outputs.assign(u.items.size(), {});
  u.batch_rows = 0;
  Planner pl(&u, base, device);
  absl::Status st;
  switch (u.shape) {
    case UnitShape::kStacked:
      st = PlanStacked(u, pl);
      break;
    case UnitShape::kStrided:
      st = PlanStrided(u, pl);
      break;
    case UnitShape::kGroup:
      st = PlanGroup(u, pl);
      break;
    case UnitShape::kExperts:
      st = PlanExperts(u, pl);
      break;
  }
  GPU_RETURN_IF_ERROR(st);
  if (measure) {
    int64_t ws = 0;
    for (const Launch& l : u.launches) {
      ws = std::max<int64_t>(
          ws, static_cast<int64_t>(l.grouped ? kernel::WorkspaceBytes(l.group, u.kind)
                                             : kernel::WorkspaceBytes(l.batch, u.kind)));
    }
    u.workspace_bytes = ws;
  }
  u.workspace_off = -1;
  if (u.workspace_bytes > u.kslot->workspace_bytes) u.workspace_off = pl.TakeDev(u.workspace_bytes);
  if (measure) {
    u.device_bytes = pl.dev_bytes();
    u.staging_bytes = pl.stage_bytes();
  } else if (pl.dev_bytes() != u.device_bytes || pl.stage_bytes() != u.staging_bytes) {
    return absl::InternalError("plan changed between passes");
  }
  return absl::OkStatus();
}

bool Coalescable(const core::WorkItem& item) {
  const core::GemmRequest& r = item.request;
  return r.kind == core::WorkKind::kSingle && r.problems.size() == 1 && r.problems[0].count == 1 &&
         r.problems[0].b_resident != nullptr;
}

}  // namespace

Executor::Executor(std::shared_ptr<DeviceContext> device, StagingPool* staging, HostCopier* copier,
                   Config config)
    : device_(std::move(device)), staging_(staging), copier_(copier), config_(Normalized(config)) {}

Executor::Config Executor::Normalized(Config c) {
  c.launch = std::max(1, c.launch);
  c.completion = std::max(1, c.completion);
  c.max_in_flight = std::max(0, c.max_in_flight);
  c.max_work_in_flight_us = std::max(0.0, c.max_work_in_flight_us);
  return c;
}

void Executor::HostCopy(std::span<const CopyJob> jobs) {
  if (copier_ != nullptr) {
    copier_->Copy(jobs);
    return;
  }
  for (const CopyJob& j : jobs) {
    if (j.bytes > 0) std::memcpy(j.dst, j.src, j.bytes);
  }
}

Executor::~Executor() { Join(); }

void Executor::Start(core::WorkSource* source) {
  started_ = true;
  // NOTE: several of each. Measured on the H200 (decode M=16, 64 callers, --shm): with one of
  // each, the completion thread was the limit when batching (1.2 ms from the GPU finishing to
  // completion; 22.9k req/s) and the launch thread without (~60 us of CUDA calls per unit; 11.4k
  // req/s); 4 launch + 8 completion threads: 30.0k and 17.9k req/s.
  for (int i = 0; i < config_.completion; ++i) {
    completers_.emplace_back([this] {
      SetCurrentThreadName(absl::StrCat("gemm-done-", device_->ordinal()));
      CompletionLoop();
    });
  }
  if (config_.poll_completion) {
    watcher_ = std::make_unique<EventWatcher>(device_->ordinal(),
                                              absl::StrCat("gemm-poll-", device_->ordinal()));
  }
  for (int i = 0; i < config_.launch; ++i) {
    pullers_.emplace_back([this, source] {
      SetCurrentThreadName(absl::StrCat("gemm-launch-", device_->ordinal()));
      PullLoop(source);
    });
  }
}

void Executor::Join() {
  if (!started_) return;
  for (auto& t : pullers_) {
    if (t.joinable()) t.join();
  }
  if (watcher_ != nullptr) watcher_->Stop();  // hands over the last units
  for (auto& t : completers_) {
    if (t.joinable()) t.join();
  }
  LogPhases();
  started_ = false;  // a second Join() (the destructor's) does nothing
}

void Executor::Mark(Phase phase, absl::Time* mark) {
  const absl::Time now = absl::Now();
  phase_ns_[phase].fetch_add(absl::ToInt64Nanoseconds(now - *mark), std::memory_order_relaxed);
  *mark = now;
}

void Executor::LogPhases() const {
  static constexpr const char* kNames[kPhases] = {
      "prepare+plan", "allocate+stage", "stream lock",   "events+H2D",
      "kernels",      "D2H+free+hand",  "to completion", "completion work"};
  const int64_t n = units_timed_.load();
  if (n == 0) return;
  std::string line;
  for (int i = 0; i < kPhases; ++i) {
    absl::StrAppend(&line, i == 0 ? "" : ", ", kNames[i], " ",
                    absl::StrFormat("%.1f", phase_ns_[i].load() * 1e-3 / n));
  }
  GEMM_LOG(INFO) << "device " << device_->ordinal() << ": host time per unit over " << n
                 << " units (us): " << line;
}

int64_t Executor::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

void Executor::PullLoop(core::WorkSource* source) {
  absl::Status st = CudaStatus(cudaSetDevice(device_->ordinal()), "cudaSetDevice");
  if (!st.ok()) GEMM_LOG(ERROR) << "executor for device " << device_->ordinal() << ": " << st;
  while (true) {
    if (bounded()) {
      // Hold a slot (pulling_) from here until RunBatch counts the batch's units, so launch
      // threads pulling at once cannot overshoot the bound between them.
      absl::MutexLock lock(&mu_);
      while (!MayPullLocked()) slot_cv_.Wait(&mu_);
      ++pulling_;
    }
    std::optional<core::Batch> batch = source->Next(device_->ordinal());
    if (!batch.has_value()) {
      if (bounded()) {
        absl::MutexLock lock(&mu_);
        --pulling_;
        slot_cv_.SignalAll();  // the others waiting for a slot must see the end too
      }
      break;
    }
    RunBatch(std::move(*batch));
  }
  absl::MutexLock lock(&mu_);
  if (++pullers_done_ == config_.launch && in_flight_ == 0) work_cv_.SignalAll();  // all exit
}

bool Executor::MayPullLocked() const {
  if (config_.max_in_flight > 0 && in_flight_ + pulling_ >= config_.max_in_flight) return false;
  // The work bound lets one thread pull at a time: a batch's size is known only once pulled.
  // Below two units in flight it does not hold, so that the next unit's copies always overlap
  // the current one's kernels, however long the units are.
  if (config_.max_work_in_flight_us > 0 &&
      (pulling_ > 0 || (work_in_flight_us_ >= config_.max_work_in_flight_us && in_flight_ >= 2))) {
    return false;
  }
  return true;
}

double Executor::EstimateUs(const Unit& unit) const {
  double flops = 0, bytes = 0;
  // NOTE: a resident B is read once per unit however many of its items name it (coalesced
  // items and expert groups stack their rows on it). Counted per item, a coalesced decode batch
  // of 17 looked 17 times its cost, and a 1 ms bound held the decode load back (H200: 64k
  // against 82k req/s).
  // (Runs under the executor's lock: a linear search over an inline vector, no allocation for up
  // to 16 distinct matrices.)
  absl::InlinedVector<const core::ResidentMatrix*, 16> resident;
  for (const auto& item : unit.items) {
    for (const core::Problem& p : item->request.problems) {
      const double count = static_cast<double>(p.count);
      const double m = static_cast<double>(p.m), n = static_cast<double>(p.n),
                   k = static_cast<double>(p.k);
      const double out = p.out_dtype == core::DType::kFP32 ? 4 : 2;
      flops += 2 * m * n * k * count;
      bytes += count * (2 * m * k + out * m * n);
      if (p.b_resident != nullptr) {
        if (std::find(resident.begin(), resident.end(), p.b_resident.get()) == resident.end()) {
          resident.push_back(p.b_resident.get());
          bytes += 2 * k * n;
        }
      } else {
        // B once per entry only when each entry has its own (inline, not shared).
        bytes += 2 * k * n * (p.b_shared ? 1 : count);
      }
    }
  }
  return std::max(flops / device_->peak_flop_per_us(), bytes / device_->peak_bytes_per_us());
}

void Executor::CountInFlightLocked(Unit& unit) {
  ++in_flight_;
  if (config_.max_work_in_flight_us > 0) {
    unit.est_us = EstimateUs(unit);
    work_in_flight_us_ += unit.est_us;
  }
}

void Executor::RunBatch(core::Batch batch) {
  const absl::Time now = absl::Now();
  // Coalescable items keyed by (B, dtype, kernel), expert groups by (dtype, kernel); the rest run
  // alone.
  std::map<std::tuple<const void*, int, std::string>, size_t> stack_of;
  std::vector<std::unique_ptr<Unit>> units;
  for (auto& item : batch.items) {
    if (item->cancelled && item->cancelled()) {
      item->done(absl::CancelledError("request cancelled before it ran"));
      continue;
    }
    if (item->request.deadline < now) {
      item->done(absl::DeadlineExceededError("deadline passed before the request ran"));
      continue;
    }
    const bool high = item->request.priority == core::Priority::kHigh;
    const bool experts = core::IsExpertGroup(item->request);
    if (Coalescable(*item) || experts) {
      // Expert groups share one unit per (dtype, kernel), whatever matrices they name.
      const core::Problem& p = item->request.problems[0];
      auto key = std::make_tuple(experts ? nullptr : static_cast<const void*>(p.b_resident.get()),
                                 static_cast<int>(p.out_dtype), item->request.kernel);
      auto [it, inserted] = stack_of.try_emplace(key, units.size());
      if (inserted) {
        auto u = std::make_unique<Unit>();
        u->shape = experts ? UnitShape::kExperts : UnitShape::kStacked;
        units.push_back(std::move(u));
      }
      Unit& u = *units[it->second];
      u.items.push_back(std::move(item));
      u.high_priority |= high;
      continue;
    }
    auto u = std::make_unique<Unit>();
    const core::GemmRequest& r = item->request;
    if (r.kind == core::WorkKind::kGroup) {
      u->shape = UnitShape::kGroup;
    } else if (r.kind == core::WorkKind::kBatch ||
               (!r.problems.empty() && r.problems[0].count > 1)) {
      u->shape = UnitShape::kStrided;
    } else {
      u->shape = UnitShape::kStacked;
    }
    u->high_priority = high;
    u->items.push_back(std::move(item));
    units.push_back(std::move(u));
  }
  {
    // The batch's units take over the slot its launch thread held while pulling it.
    absl::MutexLock lock(&mu_);
    for (auto& u : units) CountInFlightLocked(*u);
    if (bounded()) {
      --pulling_;
      slot_cv_.Signal();  // an empty batch (all items dropped) frees its slot
    }
  }
  for (auto& u : units) {
    u->released = batch.released;
    RunUnit(std::move(u));
  }
}

void Executor::RunItemsAlone(Unit* u) {
  for (auto& item : u->items) {
    auto one = std::make_unique<Unit>();
    one->shape = u->shape;
    one->high_priority = u->high_priority;
    one->released = u->released;
    one->items.push_back(std::move(item));
    {
      absl::MutexLock lock(&mu_);
      CountInFlightLocked(*one);
    }
    RunUnit(std::move(one));
  }
  u->items.clear();
}

void Executor::RunUnit(std::unique_ptr<Unit> u) {
  const absl::Time launch_start = absl::Now();
  absl::Time mark = launch_start;
  u->owner = this;
  const int ordinal = device_->ordinal();
  auto fail = [&](absl::Status st) {
    u->status = std::move(st);
    Enqueued(u.release());
  };

  // Kernel: "" / "auto" = the device's serving kernel; else an explicit, usable one.
  const std::string& want = u->items[0]->request.kernel;
  if (want.empty() || want == "auto") {
    u->kind =
        device_->selected_usable() ? kernel::KernelKind::kAuto : kernel::KernelKind::kCublasLt;
    u->kernel_name = kernel::KernelName(device_->serving());
  } else if (want == kernel::KernelName(kernel::KernelKind::kCublasLt)) {
    u->kind = kernel::KernelKind::kCublasLt;
    u->explicit_kernel = true;
    u->kernel_name = want;
  } else if (want == kernel::KernelName(device_->selected())) {
    if (!device_->selected_usable()) {
      return fail(absl::FailedPreconditionError(
          absl::StrCat("kernel ", want, " failed its start-up self-test on device ", ordinal,
                       " and is disabled: ", device_->self_test_detail())));
    }
    u->kind = device_->selected();
    u->explicit_kernel = true;
    u->kernel_name = want;
  } else if (want == kernel::KernelName(kernel::KernelKind::kSm90) ||
             want == kernel::KernelName(kernel::KernelKind::kSm100)) {
    return fail(absl::FailedPreconditionError(
        absl::StrCat("kernel ", want, " cannot run on device ", ordinal, " (compute capability ",
                     device_->cc_major(), ".", device_->cc_minor(), ")")));
  } else {
    return fail(absl::InvalidArgumentError(absl::StrCat("unknown kernel \"", want, "\"")));
  }

  // Resident B matrices must have finished uploading (waits on this thread only).
  for (const auto& item : u->items) {
    for (const core::Problem& p : item->request.problems) {
      if (const auto* m = dynamic_cast<const CudaResidentMatrix*>(p.b_resident.get())) {
        absl::Status st = m->WaitReady();
        if (!st.ok()) {
          return fail(absl::Status(
              st.code(), absl::StrCat("resident matrix ", m->desc().handle, ": ", st.message())));
        }
      }
    }
  }

  u->slot = &device_->NextStream(u->high_priority);
  const StreamSlot* compute =
      config_.serial_kernels ? device_->ComputeStream(u->high_priority) : nullptr;
  u->kslot = compute != nullptr ? compute : u->slot;
  cudaStream_t stream = u->slot->stream;
  if (absl::Status st = BuildPlan(*u, 0, ordinal, /*measure=*/true); !st.ok()) {
    // Several coalesced items: one bad item must not fail the others.
    if (u->items.size() > 1 && absl::IsInvalidArgument(st)) {
      RunItemsAlone(u.get());
      return fail(absl::OkStatus());
    }
    return fail(st);
  }
  if (u->items.size() > 1 && u->staging_bytes > staging_->max_block_bytes()) {
    // Coalesced past a staging slab: the direct path would copy from pageable memory, which
    // holds this thread for the whole transfer. Each item alone fits in staging (or takes the
    // direct path on its own, if it is that large by itself).
    RunItemsAlone(u.get());
    return fail(absl::OkStatus());
  }

  Mark(Phase::kPrepare, &mark);
  absl::StatusOr<void*> dev = device_->pool().Allocate(u->device_bytes, stream);
  if (!dev.ok()) {
    if (u->items.size() > 1 && absl::IsResourceExhausted(dev.status())) {
      // The batch as a whole does not fit: run its items one by one.
      RunItemsAlone(u.get());
      return fail(absl::OkStatus());
    }
    return fail(dev.status());
  }
  u->dev = static_cast<char*>(*dev);
  u->dev_accounted = u->device_bytes;

  u->direct = u->staging_bytes > staging_->max_block_bytes();
  if (!u->direct && u->staging_bytes > 0) {
    absl::StatusOr<StagingBlock> block = staging_->Allocate(u->staging_bytes);
    if (!block.ok()) {
      (void)device_->pool().FreeAsync(u->dev, stream);
      u->dev = nullptr;
      return fail(block.status());
    }
    u->staging = *block;
  }
  if (absl::Status st = BuildPlan(*u, reinterpret_cast<uintptr_t>(u->dev), ordinal, false);
      !st.ok()) {
    (void)device_->pool().FreeAsync(u->dev, stream);
    u->dev = nullptr;
    return fail(st);
  }
  if (u->direct) {  // results land straight in the outputs
    for (const OutCopy& o : u->outs) {
      if (o.dest == nullptr)
        ResizeUninitialized(&u->outputs[o.item][o.output].data, o.rows * o.row_bytes);
    }
  } else {
    const absl::Time t0 = absl::Now();
    std::vector<CopyJob> jobs;
    jobs.reserve(u->ins.size());
    for (const InCopy& in : u->ins) {
      if (in.pinned) continue;  // the device copy reads it in place
      jobs.push_back(
          {u->staging.ptr + in.stage_off, in.host, static_cast<size_t>(in.rows * in.row_bytes)});
    }
    HostCopy(jobs);
    u->host_copy_in = absl::Now() - t0;
  }

  // Enqueue: events, H2D, kernels, D2H, free, callback. Once anything is enqueued, the unit is
  // only released by the stream (callback), so buffers the copies read stay valid.
  // NOTE: under the stream's enqueue lock, so no other unit's work lands in between (the stream's
  // workspace is shared, and the timing events must bracket this unit's work alone).
  Mark(Phase::kAllocate, &mark);
  absl::MutexLock enqueue_lock(u->slot->enqueue_mu.get());
  Mark(Phase::kStreamLock, &mark);
  absl::Status st;
  u->timed = true;
  // The fifth event (when the compute stream reached this unit) only for kernels on it.
  const int events = u->kslot != u->slot ? 5 : 4;
  for (int i = 0; i < events; ++i) {
    auto ev = device_->GetEvent();
    if (!ev.ok()) {
      u->timed = false;
      break;
    }
    u->ev[i] = *ev;
  }
  // Kernels on the compute stream need the events as dependencies; without them, this unit's
  // kernels run on its own stream.
  if (!u->timed) u->kslot = u->slot;
  const cudaStream_t kstream = u->kslot->stream;
  const bool serial = kstream != stream;
  auto record = [&](int i, cudaStream_t s) {
    if (u->timed && st.ok()) {
      absl::Status rs = CudaStatus(cudaEventRecord(u->ev[i], s), "cudaEventRecord");
      if (!rs.ok()) u->timed = false;
    }
  };
  record(0, stream);
  std::vector<Copy2D> copies;
  copies.reserve(std::max(u->ins.size(), u->outs.size()));
  for (const InCopy& in : u->ins) {
    const void* src = u->direct || in.pinned
                          ? static_cast<const void*>(in.host)
                          : static_cast<const void*>(u->staging.ptr + in.stage_off);
    copies.push_back({u->dev + in.dev_off, static_cast<size_t>(in.dpitch), src,
                      static_cast<size_t>(in.row_bytes), static_cast<size_t>(in.row_bytes),
                      static_cast<size_t>(in.rows)});
  }
  // Pageable memory (the direct path) keeps one call per copy.
  const bool batched = config_.batched_copies && !u->direct;
  if (config_.merge_copies) MergeAdjacentCopies(copies);
  if (st.ok()) st = EnqueueCopies(copies, cudaMemcpyHostToDevice, stream, batched);
  Mark(Phase::kH2D, &mark);
  {
    // NOTE: the compute stream's lock too (taken after the copy stream's, always in this order):
    // its workspace is shared, so one unit's kernels go onto it back to back.
    std::optional<absl::MutexLock> kernel_lock;
    if (serial) {
      kernel_lock.emplace(u->kslot->enqueue_mu.get());
      if (st.ok()) {
        st = CudaStatus(cudaEventRecord(u->ev[1], stream), "cudaEventRecord");
      }
      if (st.ok()) st = CudaStatus(cudaStreamWaitEvent(kstream, u->ev[1]), "cudaStreamWaitEvent");
      record(4, kstream);
    } else {
      record(1, stream);
    }
    for (const Launch& l : u->launches) {
      if (!st.ok()) break;
      kernel::LaunchOptions opts;
      opts.kind = u->kind;
      if (u->workspace_off >= 0) {
        opts.workspace = u->dev + u->workspace_off;
        opts.workspace_bytes = u->workspace_bytes;
      } else {
        opts.workspace = u->kslot->workspace;
        opts.workspace_bytes = u->kslot->workspace_bytes;
      }
      auto run = [&] {
        return l.grouped ? kernel::GemmGrouped(l.group, kstream, opts)
                         : kernel::Gemm(l.batch, kstream, opts);
      };
      st = run();
      if (absl::IsUnimplemented(st) && !u->explicit_kernel &&
          opts.kind != kernel::KernelKind::kCublasLt) {
        // The native kernel does not cover this call: serve it through cuBLASLt.
        opts.kind = kernel::KernelKind::kCublasLt;
        if (u->workspace_off < 0) {
          opts.workspace = u->kslot->workspace;
          opts.workspace_bytes = u->kslot->workspace_bytes;
        }
        st = run();
        u->kernel_name = kernel::KernelName(kernel::KernelKind::kCublasLt);
      }
    }
    if (serial) {
      // The copy stream (D2H, the free, the callback) goes on after this unit's kernels, also
      // when one failed to launch: the buffers must outlive whatever was enqueued.
      absl::Status ks = CudaStatus(cudaEventRecord(u->ev[2], kstream), "cudaEventRecord");
      if (ks.ok()) ks = CudaStatus(cudaStreamWaitEvent(stream, u->ev[2]), "cudaStreamWaitEvent");
      if (!ks.ok()) {
        GEMM_LOG(ERROR) << "device " << ordinal << ": " << ks
                        << "; synchronizing the compute stream";
        (void)cudaStreamSynchronize(kstream);
        if (st.ok()) st = ks;
      }
    } else {
      record(2, stream);
    }
  }
  Mark(Phase::kKernels, &mark);
  copies.clear();
  for (const OutCopy& o : u->outs) {
    void* dst = o.pinned            ? static_cast<void*>(o.dest)
                : !u->direct        ? static_cast<void*>(u->staging.ptr + o.stage_off)
                : o.dest != nullptr ? static_cast<void*>(o.dest)
                                    : static_cast<void*>(u->outputs[o.item][o.output].data.data());
    copies.push_back({dst, static_cast<size_t>(o.row_bytes), u->dev + o.dev_off,
                      static_cast<size_t>(o.dpitch), static_cast<size_t>(o.row_bytes),
                      static_cast<size_t>(o.rows)});
  }
  if (config_.merge_copies) MergeAdjacentCopies(copies);
  if (st.ok()) st = EnqueueCopies(copies, cudaMemcpyDeviceToHost, stream, batched);
  record(3, stream);
  if (!st.ok()) u->timed = false;
  u->status = st;
  absl::Status fs = device_->pool().FreeAsync(u->dev, stream);
  if (!fs.ok()) {
    GEMM_LOG(ERROR) << "device " << ordinal << ": " << fs;
    cudaStreamSynchronize(stream);  // error path: cudaFreeAsync failed, free synchronously
    cudaFree(u->dev);
  }
  u->dev = nullptr;
  u->launch = absl::Now() - launch_start;
  Unit* raw = u.release();
  if (watcher_ != nullptr && raw->timed) {
    // ev[3] follows the unit's last copy on `stream`.
    watcher_->Watch(raw->ev[3], &Executor::EventDone, raw);
    Mark(Phase::kD2H, &mark);
    units_timed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  absl::Status cs =
      CudaStatus(cudaLaunchHostFunc(stream, &Executor::HostCallback, raw), "cudaLaunchHostFunc");
  Mark(Phase::kD2H, &mark);
  units_timed_.fetch_add(1, std::memory_order_relaxed);
  if (!cs.ok()) {
    // Cannot be called back: wait here (this executor thread, never a gRPC thread).
    GEMM_LOG(ERROR) << "device " << ordinal << ": " << cs << "; synchronizing the stream";
    absl::Status ss = CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (raw->status.ok()) raw->status = ss.ok() ? cs : ss;
    Enqueued(raw);
  }
}

void Executor::HostCallback(void* unit) {
  // Runs on CUDA's callback thread: no CUDA calls here, just hand over.
  Unit* u = static_cast<Unit*>(unit);
  u->gpu_done = absl::Now();
  u->owner->Enqueued(u);
}

void Executor::EventDone(void* unit, cudaError_t result) {
  Unit* u = static_cast<Unit*>(unit);
  u->gpu_done = absl::Now();
  if (result != cudaSuccess && u->status.ok()) {
    u->status = CudaStatus(result, "cudaEventQuery (the unit's GPU work)");
  }
  // NOTE: a unit with little to copy out is completed right here on the watcher thread (its
  // first answer too; the others go to the completion threads): handing it over cost ~40 us of
  // wake-up under the decode load over shared memory. Large copy-outs hold up the polling of
  // other units: one 256 KiB D per unit, copied and answered inline on the watcher, bounded
  // decode without batching to ~8k units/s (H200, 2026-11-25; see watcher_completion_bytes).
  if (u->owner->QuickToComplete(*u)) {
    u->owner->Retire(std::unique_ptr<Unit>(u), /*drain=*/false);
    return;
  }
  u->owner->Enqueued(u);
}

void Executor::Enqueued(Unit* unit) {
  absl::MutexLock lock(&mu_);
  done_queue_.push_back(unit);
  work_cv_.Signal();
}

void Executor::CompletionLoop() {
  absl::Status st = CudaStatus(cudaSetDevice(device_->ordinal()), "cudaSetDevice");
  if (!st.ok()) GEMM_LOG(ERROR) << "completion thread, device " << device_->ordinal() << ": " << st;
  while (true) {
    Unit* u = nullptr;
    {
      absl::MutexLock lock(&mu_);
      // NOTE: a CondVar signalled per queued unit or answer wakes one thread; mu_.Await() had
      // every unlock of mu_ (launch threads count units in flight under it) re-check the
      // condition of all eight waiting threads.
      while (done_queue_.empty() && answers_.empty() &&
             !(pullers_done_ == config_.launch && in_flight_ == 0)) {
        work_cv_.Wait(&mu_);
      }
      if (!answers_.empty()) {  // answers first: their GPU work is done, they only wait for us
        std::function<void()> answer = std::move(answers_.front());
        answers_.pop_front();
        mu_.Unlock();
        answer();
        mu_.Lock();
        continue;
      }
      if (done_queue_.empty()) return;
      u = done_queue_.front();
      done_queue_.pop_front();
    }
    Retire(std::unique_ptr<Unit>(u), /*drain=*/true);
  }
}

void Executor::Retire(std::unique_ptr<Unit> u, bool drain) {
  const double est_us = u->est_us;
  Complete(std::move(u), drain);
  absl::MutexLock lock(&mu_);
  if (bounded()) {  // else no launch thread ever waits on slot_cv_
    work_in_flight_us_ = std::max(0.0, work_in_flight_us_ - est_us);
    slot_cv_.Signal();
  }
  if (--in_flight_ == 0 && pullers_done_ == config_.launch) work_cv_.SignalAll();  // all exit
}

bool Executor::QuickToComplete(const Unit& u) const {
  if (u.direct || config_.watcher_completion_bytes < 0) return false;
  int64_t bytes = 0;
  for (const OutCopy& o : u.outs) {
    if (!o.pinned) bytes += o.rows * o.row_bytes;
  }
  return bytes <= config_.watcher_completion_bytes;
}

void Executor::Complete(std::unique_ptr<Unit> u, bool drain) {
  absl::Time mark = absl::Now();
  const bool counted = u->gpu_done != absl::Time();
  if (counted) {
    phase_ns_[Phase::kToCompletion].fetch_add(absl::ToInt64Nanoseconds(mark - u->gpu_done),
                                              std::memory_order_relaxed);
  }
  core::Timing t;
  if (u->status.ok() && u->timed) {
    float ms[3] = {0, 0, 0};
    // Kernels on the compute stream: from when that stream reached them (not from the end of
    // this unit's copy-in, which may have waited there behind other units' kernels).
    const bool serial = u->kslot != u->slot;
    for (int i = 0; i < 3; ++i) {
      cudaEvent_t from = i == 1 && serial ? u->ev[4] : u->ev[i];
      if (cudaEventElapsedTime(&ms[i], from, u->ev[i + 1]) != cudaSuccess) {
        (void)cudaGetLastError();
        ms[i] = 0;
      }
    }
    t.copy_in = absl::Microseconds(static_cast<double>(ms[0]) * 1e3);
    t.compute = absl::Microseconds(static_cast<double>(ms[1]) * 1e3);
    t.copy_out = absl::Microseconds(static_cast<double>(ms[2]) * 1e3);
  }
  if (u->status.ok() && !u->direct) {
    const absl::Time t0 = absl::Now();
    // Size every output first (allocation only: no zero fill, the copy writes every byte), then
    // copy them all in one go on the copier's threads.
    std::vector<CopyJob> jobs;
    jobs.reserve(u->outs.size());
    for (const OutCopy& o : u->outs) {
      if (o.pinned) continue;  // the device copy wrote it in place
      const size_t bytes = o.rows * o.row_bytes;
      char* dst = o.dest;
      if (dst == nullptr) {
        std::string& data = u->outputs[o.item][o.output].data;
        ResizeUninitialized(&data, bytes);
        dst = data.data();
      }
      jobs.push_back({dst, u->staging.ptr + o.stage_off, bytes});
    }
    HostCopy(jobs);
    t.copy_out += absl::Now() - t0;  // staging -> response bytes
  }
  t.copy_in += u->host_copy_in;  // request bytes -> staging
  staging_->Free(u->staging);
  u->staging = {};
  if (u->dev_accounted > 0) device_->pool().Release(u->dev_accounted);
  u->dev_accounted = 0;
  for (cudaEvent_t& e : u->ev) {
    device_->PutEvent(e);
    e = nullptr;
  }
  t.launch = u->launch;
  t.batch_rows = u->batch_rows;
  t.batch_requests = static_cast<int>(u->items.size());
  t.device = device_->ordinal();
  std::vector<std::function<void()>> answers;
  answers.reserve(u->items.size());
  for (size_t i = 0; i < u->items.size(); ++i) {
    // Drop the unit's reference to the item (and so to its resident B) before completing it, so
    // whoever is told "done" sees the memory of a released matrix already returned.
    std::shared_ptr<core::WorkItem> item = std::move(u->items[i]);
    core::DoneCallback done = item->done;
    if (!u->status.ok()) {
      answers.push_back([done = std::move(done), st = u->status] { done(st); });
      continue;
    }
    core::GemmResult r;
    r.outputs = std::move(u->outputs[i]);
    r.kernel = u->kernel_name;
    r.timing = t;
    r.timing.queue = u->released - item->arrival;
    // Total and completion are stamped when the answer goes out (after any wait for a thread).
    answers.push_back([done = std::move(done), r = std::move(r), arrival = item->arrival,
                       gpu_done = u->gpu_done]() mutable {
      const absl::Time now = absl::Now();
      if (gpu_done != absl::Time()) r.timing.completion = now - gpu_done;
      r.timing.total = now - arrival;
      done(std::move(r));
    });
  }
  u.reset();
  if (counted) Mark(Phase::kCompletionWork, &mark);
  if (answers.empty()) return;
  if (answers.size() > 1) {
    absl::MutexLock lock(&mu_);
    for (size_t i = 1; i < answers.size(); ++i) {
      answers_.push_back(std::move(answers[i]));
      work_cv_.Signal();
    }
  }
  answers[0]();
  if (drain) DrainAnswers();
}

void Executor::DrainAnswers() {
  for (;;) {
    std::function<void()> answer;
    {
      absl::MutexLock lock(&mu_);
      if (answers_.empty()) return;
      answer = std::move(answers_.front());
      answers_.pop_front();
    }
    answer();
  }
}

}  // namespace gemm::gpu
