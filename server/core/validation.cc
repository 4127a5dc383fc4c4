// Request validation.
#include "server/core/validation.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace gemm::core {
namespace {

// a*b*c with overflow detection (operands are positive and bounded by max_dim, but count too).
bool MulOverflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

absl::Status CheckDim(const std::string& field, const char* name, int64_t v, int64_t max_dim) {
  if (v < 1) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".", name, ": must be >= 1, got ", v));
  }
  if (v > max_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".", name, ": ", v, " exceeds the limit ", max_dim, " (--max_dim)"));
  }
  return absl::OkStatus();
}

absl::Status CheckProblem(const Limits& limits, const MatrixRegistry& registry,
                          const std::string& field, bool batch, Problem* p, int64_t* bytes_in,
                          int64_t* bytes_out) {
  for (auto [name, v] : {std::pair{"m", p->m}, {"n", p->n}, {"k", p->k}}) {
    if (auto s = CheckDim(field, name, v, limits.max_dim); !s.ok()) return s;
  }
  int64_t mk, kn, mn, a_bytes, b_bytes, c_bytes, d_bytes;
  // Dims are <= max_dim (<= 2^31 in practice); products of two fit, times count may not.
  mk = p->m * p->k;
  kn = p->k * p->n;
  mn = p->m * p->n;
  if (MulOverflows(mk, 2 * p->count, &a_bytes) || MulOverflows(kn, 2 * p->count, &b_bytes) ||
      MulOverflows(mn, DTypeBytes(p->out_dtype) * p->count, &d_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(field, ": operand sizes overflow"));
  }
  c_bytes = d_bytes;
  if (static_cast<int64_t>(p->a.size()) != a_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, p->a_mem != HostMemory::kMessage ? ".a_shm: names " : ".a: has ", p->a.size(),
        " bytes, expected ", batch ? "count*" : "", "M*K*2 = ", a_bytes, " (m=", p->m, ", k=", p->k,
        batch ? absl::StrCat(", count=", p->count) : "", ")"));
  }
  *bytes_in += a_bytes;
  if (!p->b_handle.empty()) {
    auto m = registry.Lookup(p->b_handle);
    if (!m.ok()) {
      return absl::Status(m.status().code(),
                          absl::StrCat(field, ".b_handle: ", m.status().message()));
    }
    const ResidentMatrix& rm = **m;
    if (p->b_layout_explicit && p->b_layout != rm.desc().layout) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".b_layout: ", BLayoutName(p->b_layout), " differs from the layout ",
          BLayoutName(rm.desc().layout), " matrix '", p->b_handle, "' was registered with"));
    }
    if (rm.k() != p->k || rm.n() != p->n) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".b_handle: matrix '", p->b_handle, "' is K=", rm.k(),
                       " x N=", rm.n(), " but the problem has k=", p->k, ", n=", p->n));
    }
    const std::vector<int>& on = rm.desc().devices;
    if (p->operand_device >= 0 && std::find(on.begin(), on.end(), p->operand_device) == on.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          field, ".b_handle: matrix '", p->b_handle, "' does not live on GPU ", p->operand_device,
          ", which holds the problem's operands in GPU memory (register it there, or replicate "
          "it)"));
    }
    p->b_layout = rm.desc().layout;
    p->b_resident = *m;
    p->b_shared = true;
  } else {
    const int64_t have = p->b.size();
    if (have == b_bytes) {
      p->b_shared = (p->count == 1);
      *bytes_in += b_bytes;
    } else if (batch && have == kn * 2) {
      p->b_shared = true;
      *bytes_in += have;
    } else if (have == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": no B operand: set b, b_shm or b_handle"));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(field, p->b_mem != HostMemory::kMessage ? ".b_shm: names " : ".b: has ",
                       have, " bytes, expected K*N*2 = ", kn * 2,
                       batch ? absl::StrCat(" (shared) or count*K*N*2 = ", b_bytes) : "",
                       " (k=", p->k, ", n=", p->n, ")"));
    }
  }
  if (!p->c.empty()) {
    if (static_cast<int64_t>(p->c.size()) != c_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, p->c_mem != HostMemory::kMessage ? ".c_shm: names " : ".c: has ", p->c.size(),
          " bytes, expected ", batch ? "count*" : "", "M*N*", DTypeBytes(p->out_dtype), " = ",
          c_bytes, " (m=", p->m, ", n=", p->n, ", output_dtype=", DTypeName(p->out_dtype), ")"));
    }
    *bytes_in += c_bytes;
  } else if (p->beta != 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".beta: is ", p->beta, " but no c was given"));
  }
  if (!p->d_dest.empty()) {
    // D goes to shared memory, not into the response message.
    if (static_cast<int64_t>(p->d_dest.size()) != d_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".d_shm: names ", p->d_dest.size(), " bytes, the output needs ",
          batch ? "count*" : "", "M*N*", DTypeBytes(p->out_dtype), " = ", d_bytes, " (m=", p->m,
          ", n=", p->n, ", output_dtype=", DTypeName(p->out_dtype), ")"));
    }
  } else {
    *bytes_out += d_bytes;
  }
  return absl::OkStatus();
}

}  // namespace

std::string ProblemField(WorkKind kind, size_t index) {
  switch (kind) {
    case WorkKind::kSingle:
      return "problem";
    case WorkKind::kBatch:
      return "batch.problem";
    case WorkKind::kGroup:
      return absl::StrCat("group.problems[", index, "]");
  }
  return "problem";
}

absl::Status ValidateRequest(const Limits& limits, const MatrixRegistry& registry,
                             GemmRequest* request) {
  if (request->problems.empty()) {
    return absl::InvalidArgumentError(request->kind == WorkKind::kGroup
                                          ? "group.problems: is empty"
                                          : "request has no work: set problem, batch or group");
  }
  if (static_cast<int64_t>(request->problems.size()) > limits.max_problems) {
    return absl::InvalidArgumentError(absl::StrCat("group.problems: has ", request->problems.size(),
                                                   " entries, over the limit ", limits.max_problems,
                                                   " (--max_problems)"));
  }
  if (request->kind == WorkKind::kBatch) {
    const int64_t count = request->problems[0].count;
    if (count < 1) {
      return absl::InvalidArgumentError(absl::StrCat("batch.count: must be >= 1, got ", count));
    }
    if (count > limits.max_problems) {
      return absl::InvalidArgumentError(absl::StrCat("batch.count: ", count, " exceeds the limit ",
                                                     limits.max_problems, " (--max_problems)"));
    }
  }
  int64_t bytes_in = 0, bytes_out = 0;
  for (size_t i = 0; i < request->problems.size(); ++i) {
    if (auto s = CheckProblem(limits, registry, ProblemField(request->kind, i),
                              request->kind == WorkKind::kBatch, &request->problems[i], &bytes_in,
                              &bytes_out);
        !s.ok()) {
      return s;
    }
  }
  if (bytes_in > limits.max_request_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("request operands are ", bytes_in, " bytes, over the limit ",
                     limits.max_request_bytes, " (--max_request_bytes)"));
  }
  if (bytes_out > limits.max_message_bytes - (int64_t{1} << 20)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("response would be ", bytes_out, " bytes, over the message limit ",
                     limits.max_message_bytes, " (--max_message_bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace gemm::core
