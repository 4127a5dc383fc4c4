// Unit planning (see unit_plan.h): the Planner lays out operands and copies; one routine per
// unit shape fills the launches.
#include "server/gpu/unit_plan.h"

#include <algorithm>
#include <bit>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "gemm/kernel.h"
#include "server/gpu/cuda_util.h"
#include "server/gpu/resident.h"

namespace gemm::gpu {
namespace {

constexpr int64_t kAlign = 256;  // sub-allocation alignment (TMA needs 16)

kernel::DType ToKernel(core::DType t) {
  return t == core::DType::kBF16 ? kernel::DType::kBF16 : kernel::DType::kFP32;
}
kernel::BLayout ToKernel(core::BLayout l) {
  return l == core::BLayout::kKN ? kernel::BLayout::kKN : kernel::BLayout::kNK;
}

int64_t PitchElems(int64_t cols, int64_t elem_bytes) {
  return DevicePitchBytes(cols * elem_bytes) / elem_bytes;
}

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
  // `where`: where `host` lives (page-locked shared memory is copied in place; it is one range).
  void In(const core::OperandBytes& host, core::HostMemory where, int64_t rows, int64_t row_bytes,
          int64_t dev_off, int64_t dpitch) {
    const bool pieces = !host.contiguous();
    // Page-locked pieces (a message received into the pinned heap) are read in place by the
    // device copy kernel, which needs the rows back to back on the device; else they are staged.
    const bool pinned = core::CopiedInPlace(where) && (!pieces || dpitch == row_bytes);
    u_->ins.push_back({pieces ? nullptr : host.data(),
                       pieces ? host.pieces() : absl::Span<const absl::string_view>(), rows,
                       row_bytes, dev_off, dpitch, pinned ? -1 : TakeStage(rows * row_bytes),
                       pinned, where == core::HostMemory::kSharedDevice});
  }
  // Offset of `bytes` in the answer region (the inline results, laid out apart from staging).
  int64_t TakeAnswer(int64_t bytes) {
    const int64_t off = answer_;
    answer_ = RoundUp(answer_ + std::max<int64_t>(bytes, 1), kAlign);
    return off;
  }
  // D of `p` (item `item`, output `output`): into its shared-memory destination (through
  // staging unless page-locked) or, for the response, the answer region.
  void Out(const core::Problem& p, size_t item, size_t output, int64_t dev_off, int64_t dpitch,
           int64_t rows, int64_t row_bytes) {
    char* dest = p.d_dest.empty() ? nullptr : p.d_dest.data();
    const bool pinned = dest != nullptr && core::CopiedInPlace(p.d_mem);
    const bool staged = dest != nullptr && !pinned;
    u_->outs.push_back({item, output, dev_off, dpitch, rows, row_bytes,
                        staged ? TakeStage(rows * row_bytes) : -1, dest, pinned,
                        pinned && p.d_mem == core::HostMemory::kSharedDevice,
                        dest == nullptr ? TakeAnswer(rows * row_bytes) : -1});
  }
  int64_t dev_bytes() const { return dev_; }
  int64_t stage_bytes() const { return stage_; }
  int64_t answer_bytes() const { return answer_; }
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
    In(p.b, p.b_mem, mats * rows, cols * 2, off, *ld * 2);
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
    In(p.a, p.a_mem, p.count * p.m, p.k * 2, off_a, kp.lda * 2);
    kp.a = Ptr(off_a);
    void* b = nullptr;
    GEMM_RETURN_IF_ERROR(PlaceB(p, &b, &kp.ldb, &sb.stride_b));
    kp.b = b;
    kp.b_layout = ToKernel(p.b_layout);
    kp.ldd = kp.ldc = PitchElems(p.n, es);
    if (beta != 0.0f) {
      const int64_t off_c = TakeDev(p.count * p.m * kp.ldc * es);
      In(p.c, p.c_mem, p.count * p.m, p.n * es, off_c, kp.ldc * es);
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
  int64_t answer_ = 0;
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
  GEMM_RETURN_IF_ERROR(pl.PlaceB(first, &b, &kp.ldb, &stride_b));
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
    pl.In(p.a, p.a_mem, p.m, K * 2, pl.Offset(s.parts[i].a), row_a);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const core::Problem& p = problem(parts[i]);
    if (s.parts[i].c != nullptr) pl.In(p.c, p.c_mem, p.m, N * es, pl.Offset(s.parts[i].c), row_d);
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

}  // namespace

// Fills the unit's plan. `measure`: first pass (base 0), also sizes the workspace.
absl::Status BuildPlan(Unit& u, uintptr_t base, int device, bool measure) {
  u.ins.clear();
  u.outs.clear();
  u.launches.clear();
  u.outputs.assign(u.items.size(), {});
  u.batch_rows = 0;
  // Operands in a client's GPU memory are read by our copy kernel on this GPU: only where they
  // live (the batcher routes such problems there; this guards against a fault).
  for (const auto& item : u.items) {
    for (const core::Problem& p : item->request.problems) {
      if (p.operand_device >= 0 && p.operand_device != device) {
        return absl::FailedPreconditionError(
            absl::StrCat("the problem's operands are in GPU memory of device ", p.operand_device,
                         ", not of device ", device, " where it was to run"));
      }
    }
  }
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
  GEMM_RETURN_IF_ERROR(st);
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
    u.answer_bytes = pl.answer_bytes();
  } else if (pl.dev_bytes() != u.device_bytes || pl.stage_bytes() != u.staging_bytes ||
             pl.answer_bytes() != u.answer_bytes) {
    return absl::InternalError("plan changed between passes");
  }
  return absl::OkStatus();
}

}  // namespace gemm::gpu
