// Chaos requests and answer checks (see chaos_requests.h).
#include "tests/chaos/chaos_requests.h"

#include <cmath>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "common/reference_gemm.h"

namespace gemm::testing {
namespace {

int64_t Pick(Rng& rng, int64_t lo, int64_t hi) {
  return absl::Uniform<int64_t>(absl::IntervalClosed, rng, lo, hi);
}

int64_t Dim(Rng& rng, Size size) {
  switch (size) {
    case Size::kTiny:
      return Pick(rng, 1, 9);
    case Size::kSmall:
      return Pick(rng, 1, 64);
    case Size::kLarge:
      return Pick(rng, 128, 256);
  }
  return 1;
}

// Random dtype, layout, alpha and (one time in three) C with beta.
HostProblem RandomOptions(Rng& rng, int64_t m, int64_t n, int64_t k) {
  HostProblem p{.m = m, .n = n, .k = k};
  p.b_nk = absl::Bernoulli(rng, 0.5);
  p.fp32 = absl::Bernoulli(rng, 0.5);
  p.alpha = absl::Bernoulli(rng, 0.5) ? 1.0f : 0.5f;
  p.beta = absl::Bernoulli(rng, 1.0 / 3) ? 0.75f : 0.0f;
  return p;
}

void FillOperands(Rng& rng, HostProblem* p) {
  p->a = RandomBf16Bytes(p->m * p->k, rng);
  p->b = RandomBf16Bytes(p->k * p->n, rng);
  p->c.clear();
  if (p->beta == 0.0f) return;
  if (p->fp32) {
    std::vector<float> c(p->m * p->n);
    for (float& x : c) x = absl::Uniform<float>(rng, -1.0f, 1.0f);
    p->c.assign(reinterpret_cast<const char*>(c.data()), c.size() * 4);
  } else {
    p->c = RandomBf16Bytes(p->m * p->n, rng);
  }
}

// A batch of `count` entries sharing B: the proto holds the entries' A (and C) back to back.
void AddBatch(Rng& rng, Size size, v1::GemmRequest* r, Expected* e) {
  const int64_t count = Pick(rng, 2, 4);
  HostProblem shape = RandomOptions(rng, Dim(rng, size), Dim(rng, size), Dim(rng, size));
  ExpectedOutput out{.batch = true};
  std::string a, c;
  const std::string b = RandomBf16Bytes(shape.k * shape.n, rng);
  for (int64_t i = 0; i < count; ++i) {
    HostProblem p = shape;
    FillOperands(rng, &p);
    p.b = b;
    a += p.a;
    c += p.c;
    out.entries.push_back(std::move(p));
  }
  v1::Problem* proto = r->mutable_batch()->mutable_problem();
  FillProto(out.entries[0], proto);
  proto->set_a(a);
  if (!c.empty()) proto->set_c(c);
  r->mutable_batch()->set_count(count);
  e->outputs.push_back(std::move(out));
}

// `bf16` with every value's sign cleared.
std::string AbsBf16(std::string bf16) {
  for (size_t i = 1; i < bf16.size(); i += 2) bf16[i] = static_cast<char>(bf16[i] & 0x7f);
  return bf16;
}

// "" when `got` (M*N values of p's output dtype) matches the float64 reference element by
// element: within 1e-5 of the sum of the absolute terms (FP32 accumulation) plus the output
// rounding (2^-8 of the value for BF16, 1e-6 for FP32). A NaN or Inf never passes.
std::string CheckValues(const HostProblem& p, absl::string_view got_bytes) {
  const std::vector<float> got = DecodeOutput(got_bytes, p.fp32);
  std::vector<float> c, abs_c;
  if (!p.c.empty()) c = DecodeOutput(p.c, p.fp32);
  for (float x : c) abs_c.push_back(std::fabs(x));
  const auto ref = ReferenceGemm({p.m, p.n, p.k, p.b_nk, p.alpha, p.beta}, p.a, p.b, c);
  const auto mag = ReferenceGemm({p.m, p.n, p.k, p.b_nk, std::fabs(p.alpha), std::fabs(p.beta)},
                                 AbsBf16(p.a), AbsBf16(p.b), abs_c);
  const double rounding = p.fp32 ? 1e-6 : 1.0 / 256;
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = 1e-5 * mag[i] + rounding * std::fabs(ref[i]) + 1e-30;
    if (!(std::fabs(got[i] - ref[i]) <= bound)) {
      return absl::StrCat("element ", i, " is ", got[i], ", expected ", ref[i], " (+-", bound, ")");
    }
  }
  return "";
}

}  // namespace

Size RandomSize(Rng& rng) {
  const int64_t x = Pick(rng, 0, 19);
  return x < 8 ? Size::kTiny : x < 19 ? Size::kSmall : Size::kLarge;
}

HostProblem RandomHostProblem(Rng& rng, int64_t m, int64_t n, int64_t k) {
  HostProblem p = RandomOptions(rng, m, n, k);
  FillOperands(rng, &p);
  return p;
}

v1::GemmRequest RandomRequest(Rng& rng, const std::string& id, Size size, int invalid_every,
                              Expected* e) {
  *e = Expected();
  v1::GemmRequest r;
  r.set_request_id(id);
  if (invalid_every > 0 && absl::Uniform(rng, 0, invalid_every) == 0) {
    // Valid but for one field: m = 0, or A one element short.
    HostProblem p = RandomHostProblem(rng, Dim(rng, size), Dim(rng, size), Dim(rng, size));
    FillProto(p, r.mutable_problem());
    e->code = absl::StatusCode::kInvalidArgument;
    if (absl::Bernoulli(rng, 0.5)) {
      r.mutable_problem()->set_m(0);
      e->field = "problem.m";
    } else {
      r.mutable_problem()->mutable_a()->resize(p.a.size() - 2);
      e->field = "problem.a";
    }
    return r;
  }
  const int kind = absl::Uniform(rng, 0, 6);  // 4 in 6 single, 1 batch, 1 group
  if (kind == 4) {
    AddBatch(rng, size, &r, e);
  } else if (kind == 5) {
    const int64_t count = Pick(rng, 2, 3);
    for (int64_t i = 0; i < count; ++i) {
      HostProblem p = RandomHostProblem(rng, Dim(rng, size), Dim(rng, size), Dim(rng, size));
      FillProto(p, r.mutable_group()->add_problems());
      e->outputs.push_back({.entries = {std::move(p)}});
    }
  } else {
    HostProblem p = RandomHostProblem(rng, Dim(rng, size), Dim(rng, size), Dim(rng, size));
    FillProto(p, r.mutable_problem());
    e->outputs.push_back({.entries = {std::move(p)}});
  }
  return r;
}

std::string CheckOutputs(const Expected& expected,
                         const google::protobuf::RepeatedPtrField<v1::Output>& outputs) {
  if (expected.code != absl::StatusCode::kOk) {
    return absl::StrCat("an invalid request (", expected.field, ") was answered OK");
  }
  if (outputs.size() != static_cast<int>(expected.outputs.size())) {
    return absl::StrCat(outputs.size(), " outputs, expected ", expected.outputs.size());
  }
  for (int i = 0; i < outputs.size(); ++i) {
    const ExpectedOutput& want = expected.outputs[i];
    const v1::Output& got = outputs[i];
    const HostProblem& p = want.entries[0];
    const int64_t count = want.entries.size(), elem = p.fp32 ? 4 : 2;
    std::vector<int64_t> shape = {p.m, p.n};
    if (want.batch) shape.insert(shape.begin(), count);
    const std::vector<int64_t> got_shape(got.shape().begin(), got.shape().end());
    const std::string where = absl::StrCat("output ", i, " (", count, "x", p.m, "x", p.n, "x", p.k,
                                           p.fp32 ? " fp32" : " bf16", ")");
    if (got_shape != shape) return where + ": wrong shape";
    if (got.dtype() != (p.fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16)) return where + ": wrong dtype";
    if (static_cast<int64_t>(got.data().size()) != count * p.m * p.n * elem) {
      return absl::StrCat(where, ": ", got.data().size(), " bytes, expected exactly ",
                          count * p.m * p.n * elem);
    }
    const int64_t entry_bytes = p.m * p.n * elem;
    for (int64_t j = 0; j < count; ++j) {
      const std::string wrong = CheckValues(
          want.entries[j], absl::string_view(got.data()).substr(j * entry_bytes, entry_bytes));
      if (!wrong.empty()) return absl::StrCat(where, ": entry ", j, ": ", wrong);
    }
  }
  return "";
}

std::string CheckOutputRows(const HostProblem& p, const v1::Output& out, Rng& rng, int rows) {
  const int64_t elem = p.fp32 ? 4 : 2;
  if (out.shape_size() != 2 || out.shape(0) != p.m || out.shape(1) != p.n) return "wrong shape";
  if (out.dtype() != (p.fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16)) return "wrong dtype";
  if (static_cast<int64_t>(out.data().size()) != p.m * p.n * elem) {
    return absl::StrCat(out.data().size(), " bytes, expected exactly ", p.m * p.n * elem);
  }
  for (float v : DecodeOutput(out.data(), p.fp32)) {
    if (!std::isfinite(v)) return "a value is not finite";
  }
  // The problem of the chosen rows alone, and those rows of the output.
  HostProblem sub = p;
  sub.m = rows;
  sub.a.clear();
  sub.c.clear();
  std::string got;
  for (int i = 0; i < rows; ++i) {
    const int64_t r = Pick(rng, 0, p.m - 1);
    sub.a += p.a.substr(r * p.k * 2, p.k * 2);
    if (!p.c.empty()) sub.c += p.c.substr(r * p.n * elem, p.n * elem);
    got += out.data().substr(r * p.n * elem, p.n * elem);
  }
  const std::string wrong = CheckValues(sub, got);
  return wrong.empty() ? "" : "sampled rows: " + wrong;
}

std::string CheckRefusal(const Expected& expected, int code, const std::string& message) {
  if (expected.code == absl::StatusCode::kOk) {
    return absl::StrCat("a valid request was refused: ", code, " ", message);
  }
  if (code != static_cast<int>(expected.code) ||
      message.find(expected.field) == std::string::npos) {
    return absl::StrCat("an invalid request (", expected.field, ") got ", code, " '", message, "'");
  }
  return "";
}

}  // namespace gemm::testing
