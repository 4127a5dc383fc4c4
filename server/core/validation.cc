// Request validation.
#include "server/core/validation.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/core/checked_math.h"
#include "server/core/client_string.h"

namespace gemm::core {
namespace {

// Bytes of a response message beyond its outputs' data that --max_message_bytes must leave room
// for (shapes, timing, ids).
constexpr int64_t kResponseOverheadBytes = int64_t{1} << 20;

// Byte sizes of one problem's operands.
struct ProblemBytes {
  int64_t a = 0;                 // count*M*K*2
  int64_t b_one = 0;             // K*N*2 (one B, shared by a batch)
  std::optional<int64_t> b_all;  // count*K*N*2, when it fits in 64 bits
  int64_t d = 0;                 // count*M*N*(2 or 4); also C's size
};

// Where the running sizes of a request stand, and the limits they must stay under.
struct Totals {
  RequestBytes bytes;
  int64_t response_limit = 0;
  const char* response_flag = "";
};

// Whether `p`'s output travels in the response message (not written to shared memory).
bool OutputInResponse(const Problem& p) { return p.d_dest.empty(); }

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

// The operand sizes of `p` (dims and count already checked to be >= 1), or RESOURCE_EXHAUSTED
// naming the operand whose size does not fit in 64 bits.
absl::StatusOr<ProblemBytes> Sizes(const std::string& field, const Problem& p) {
  const std::optional<int64_t> a = CheckedProduct(p.m, p.k, 2, p.count);
  const std::optional<int64_t> b_one = CheckedProduct(p.k, p.n, 2);
  const std::optional<int64_t> d = OutputBytes(p);
  const char* what = !a ? ".a: count*M*K*2" : !b_one ? ".b: K*N*2" : !d ? ": count*M*N*dtype" : "";
  if (*what != '\0') {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, what, " bytes overflow 64 bits (m=", p.m, ", n=", p.n, ", k=", p.k,
                     ", count=", p.count, "), far over the request and response limits"));
  }
  return ProblemBytes{*a, *b_one, CheckedMul(*b_one, p.count), *d};
}

// Adds `bytes` (counted through `field`) to `*total`; RESOURCE_EXHAUSTED naming `flag` when the
// sum passes `limit`.
absl::Status AddBytes(const char* what, const std::string& field, int64_t bytes, int64_t limit,
                      const char* flag, int64_t* total) {
  const std::optional<int64_t> sum = CheckedAdd(*total, bytes);
  if (!sum.has_value() || *sum > limit) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " are at least ", sum ? absl::StrCat(*sum) : "2^63", " bytes (through ",
                     field, "), over the limit ", limit, " (--", flag, ")"));
  }
  *total = *sum;
  return absl::OkStatus();
}

// Counts an operand of `bytes` living in `where` (through `field`) against --max_request_bytes.
absl::Status AddOperand(const Limits& limits, const std::string& field, int64_t bytes,
                        HostMemory where, Totals* totals) {
  if (auto s = AddBytes("request operands", field, bytes, limits.max_request_bytes,
                        "max_request_bytes", &totals->bytes.operands);
      !s.ok()) {
    return s;
  }
  if (where == HostMemory::kMessage) totals->bytes.in_message += bytes;
  return absl::OkStatus();
}

// Resolves and checks a resident B (`p->b_handle`).
absl::Status CheckResidentB(const MatrixRegistry& registry, const std::string& field, Problem* p) {
  const std::string handle = QuoteClientString(p->b_handle);
  auto m = registry.Lookup(p->b_handle);
  if (!m.ok()) {
    return absl::Status(m.status().code(), absl::StrCat(field, ".b_handle: no resident matrix ",
                                                        handle, " (unknown or released)"));
  }
  const ResidentMatrix& rm = **m;
  if (p->b_layout_explicit && p->b_layout != rm.desc().layout) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".b_layout: ", BLayoutName(p->b_layout), " differs from the layout ",
                     BLayoutName(rm.desc().layout), " matrix ", handle, " was registered with"));
  }
  if (rm.k() != p->k || rm.n() != p->n) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".b_handle: matrix ", handle,
                                                   " is K=", rm.k(), " x N=", rm.n(),
                                                   " but the problem has k=", p->k, ", n=", p->n));
  }
  const std::vector<int>& on = rm.desc().devices;
  if (p->operand_device >= 0 && std::find(on.begin(), on.end(), p->operand_device) == on.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ".b_handle: matrix ", handle, " does not live on GPU ", p->operand_device,
        ", which holds the problem's operands in GPU memory (register it there, or replicate "
        "it)"));
  }
  p->b_layout = rm.desc().layout;
  p->b_resident = *m;
  p->b_shared = true;
  return absl::OkStatus();
}

// Checks an inline B (`p->b`, in the message or shared memory) against its expected sizes.
absl::Status CheckInlineB(const Limits& limits, const std::string& field, bool batch,
                          const ProblemBytes& size, Problem* p, Totals* totals) {
  const int64_t have = p->b.size();
  if (size.b_all.has_value() && have == *size.b_all) {
    p->b_shared = (p->count == 1);
  } else if (batch && have == size.b_one) {
    p->b_shared = true;
  } else if (have == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": no B operand: set b, b_shm or b_handle"));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(field, p->b_mem != HostMemory::kMessage ? ".b_shm: names " : ".b: has ", have,
                     " bytes, expected K*N*2 = ", size.b_one,
                     batch ? absl::StrCat(" (shared) or count*K*N*2 = ",
                                          size.b_all ? absl::StrCat(*size.b_all) : "over 2^63")
                           : "",
                     " (k=", p->k, ", n=", p->n, ")"));
  }
  return AddOperand(limits, field + ".b", have, p->b_mem, totals);
}

// Checks C (or beta without it) and where D goes, and counts the response bytes.
absl::Status CheckOutput(const Limits& limits, const std::string& field, bool batch,
                         const ProblemBytes& size, Problem* p, Totals* totals) {
  const std::string shape =
      absl::StrCat("M*N*", DTypeBytes(p->out_dtype), " = ", size.d, " (m=", p->m, ", n=", p->n,
                   ", output_dtype=", DTypeName(p->out_dtype), ")");
  if (!p->c.empty()) {
    if (static_cast<int64_t>(p->c.size()) != size.d) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, p->c_mem != HostMemory::kMessage ? ".c_shm: names " : ".c: has ",
                       p->c.size(), " bytes, expected ", batch ? "count*" : "", shape));
    }
    if (auto s = AddOperand(limits, field + ".c", size.d, p->c_mem, totals); !s.ok()) return s;
  } else if (p->beta != 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".beta: is ", p->beta, " but no c was given"));
  }
  if (!OutputInResponse(*p)) {
    if (static_cast<int64_t>(p->d_dest.size()) != size.d) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".d_shm: names ", p->d_dest.size(),
                                                     " bytes, the output needs ",
                                                     batch ? "count*" : "", shape));
    }
    return absl::OkStatus();
  }
  return AddBytes("response outputs", field, size.d, totals->response_limit, totals->response_flag,
                  &totals->bytes.response);
}

absl::Status CheckProblem(const Limits& limits, const MatrixRegistry& registry,
                          const std::string& field, bool batch, Problem* p, Totals* totals) {
  for (auto [name, v] : {std::pair{"m", p->m}, {"n", p->n}, {"k", p->k}}) {
    if (auto s = CheckDim(field, name, v, limits.max_dim); !s.ok()) return s;
  }
  if (p->count < 1 || (!batch && p->count != 1)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": count is ", p->count, ", expected ",
                                                   batch ? ">= 1" : "1 outside a batch"));
  }
  const absl::StatusOr<ProblemBytes> size = Sizes(field, *p);
  if (!size.ok()) return size.status();
  if (static_cast<int64_t>(p->a.size()) != size->a) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, p->a_mem != HostMemory::kMessage ? ".a_shm: names " : ".a: has ", p->a.size(),
        " bytes, expected ", batch ? "count*" : "", "M*K*2 = ", size->a, " (m=", p->m, ", k=", p->k,
        batch ? absl::StrCat(", count=", p->count) : "", ")"));
  }
  if (auto s = AddOperand(limits, field + ".a", size->a, p->a_mem, totals); !s.ok()) return s;
  const absl::Status b = p->b_handle.empty() ? CheckInlineB(limits, field, batch, *size, p, totals)
                                             : CheckResidentB(registry, field, p);
  if (!b.ok()) return b;
  return CheckOutput(limits, field, batch, *size, p, totals);
}

}  // namespace

std::optional<int64_t> OutputBytes(const Problem& p) {
  return CheckedProduct(p.m, p.n, DTypeBytes(p.out_dtype), p.count);
}

int64_t ResponseBytes(const GemmRequest& request) {
  int64_t total = 0;
  for (const Problem& p : request.problems) {
    if (!OutputInResponse(p)) continue;
    const std::optional<int64_t> bytes = OutputBytes(p);
    if (!bytes.has_value() || *bytes < 0 || *bytes >= kSaturatedResponseBytes - total) {
      return kSaturatedResponseBytes;
    }
    total += *bytes;
  }
  return total;
}

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

absl::Status CheckWorkCount(const Limits& limits, WorkKind kind, int64_t count) {
  switch (kind) {
    case WorkKind::kSingle:
      return absl::OkStatus();
    case WorkKind::kBatch:
      if (count < 1) {
        return absl::InvalidArgumentError(absl::StrCat("batch.count: must be >= 1, got ", count));
      }
      if (count > limits.max_problems) {
        return absl::InvalidArgumentError(absl::StrCat("batch.count: ", count,
                                                       " exceeds the limit ", limits.max_problems,
                                                       " (--max_problems)"));
      }
      return absl::OkStatus();
    case WorkKind::kGroup:
      if (count < 1) return absl::InvalidArgumentError("group.problems: is empty");
      if (count > limits.max_problems) {
        return absl::InvalidArgumentError(absl::StrCat("group.problems: has ", count,
                                                       " entries, over the limit ",
                                                       limits.max_problems, " (--max_problems)"));
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("request: unknown kind of work");
}

absl::StatusOr<RequestBytes> ValidateRequest(const Limits& limits, const MatrixRegistry& registry,
                                             GemmRequest* request) {
  if (request->problems.empty() && request->kind != WorkKind::kGroup) {
    return absl::InvalidArgumentError("request has no work: set problem, batch or group");
  }
  if (request->kind != WorkKind::kGroup && request->problems.size() != 1) {
    return absl::InvalidArgumentError("request: a single or batched problem is one problem");
  }
  const bool batch = request->kind == WorkKind::kBatch;
  const int64_t count =
      batch ? request->problems[0].count : static_cast<int64_t>(request->problems.size());
  if (auto s = CheckWorkCount(limits, request->kind, count); !s.ok()) return s;
  // The response must fit --max_response_bytes and, with its overhead, one gRPC message.
  const int64_t message_room = limits.max_message_bytes - kResponseOverheadBytes;
  Totals totals;
  totals.response_limit = std::min(limits.max_response_bytes, message_room);
  totals.response_flag =
      limits.max_response_bytes <= message_room ? "max_response_bytes" : "max_message_bytes";
  for (size_t i = 0; i < request->problems.size(); ++i) {
    if (auto s = CheckProblem(limits, registry, ProblemField(request->kind, i), batch,
                              &request->problems[i], &totals);
        !s.ok()) {
      return s;
    }
  }
  return totals.bytes;
}

absl::Status CheckMatrixDevices(const std::vector<int>& devices,
                                const std::vector<int>& available) {
  for (size_t i = 0; i < devices.size(); ++i) {
    const int d = devices[i];
    if (std::find(available.begin(), available.end(), d) == available.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "header.devices[", i, "]: ", d, " is not a device of this server (",
          available.empty() ? "it has none"
                            : absl::StrCat("devices: ", absl::StrJoin(available, ", ")),
          ")"));
    }
    if (std::find(devices.begin(), devices.begin() + i, d) != devices.begin() + i) {
      return absl::InvalidArgumentError(
          absl::StrCat("header.devices[", i, "]: device ", d, " is listed twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gemm::core
