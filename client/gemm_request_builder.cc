// gemm_client's request building: shape resolution from flags and .npy files, operands.
#include "client/gemm_request_builder.h"

#include <utility>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/bf16.h"
#include "common/npy.h"
#include "common/reference_gemm.h"

namespace gemm::client {
namespace {

constexpr int64_t kDefaultDim = 128;
// Most elements of one operand: 2 GiB of BF16, more than one gRPC message can carry.
constexpr int64_t kMaxOperandElements = int64_t{1} << 30;

struct Shape {
  int64_t m = 0, n = 0, k = 0;
};

// An operand read from a .npy file.
struct NpyOperand {
  std::string path;
  NpyArray array;
  // "b.npy (48x64 as [K,N])": the file and how its shape is read, for messages.
  std::string Describe(absl::string_view layout) const {
    return absl::StrCat(path, " (", absl::StrJoin(array.shape, "x"), " as ", layout, ")");
  }
};

// One of M, N and K as the flags and the files give it: the first source sets it, every later
// one must agree.
class Dim {
 public:
  explicit Dim(absl::string_view name) : name_(name) {}

  absl::Status Set(int64_t value, const std::string& source) {
    if (source_.empty()) {
      value_ = value;
      source_ = source;
      return absl::OkStatus();
    }
    if (value == value_) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(name_, " differs: ", source_, " gives ", value_,
                                                   ", ", source, " gives ", value));
  }

  int64_t Get() const { return source_.empty() ? kDefaultDim : value_; }

 private:
  std::string name_;
  int64_t value_ = 0;
  std::string source_;  // empty while unset
};

absl::StatusOr<std::optional<NpyOperand>> ReadOperand(const std::string& path) {
  if (path.empty()) return std::nullopt;
  absl::StatusOr<NpyArray> array = ReadNpy(path);
  if (!array.ok()) return array.status();
  return NpyOperand{path, *std::move(array)};
}

// The (rows, cols) of the matrices in `op`: [rows,cols], or [count,rows,cols] for a batch of
// `count` (0: no batch). `shared_ok`: one [rows,cols] matrix may serve the whole batch.
absl::StatusOr<std::pair<int64_t, int64_t>> MatrixDims(const NpyOperand& op,
                                                       absl::string_view layout, int64_t count,
                                                       bool shared_ok) {
  const std::vector<int64_t>& s = op.array.shape;
  if (s.size() == 2 && (count == 0 || shared_ok)) return std::make_pair(s[0], s[1]);
  if (s.size() == 3 && count > 0 && s[0] == count) return std::make_pair(s[1], s[2]);
  const std::string want =
      count == 0 ? std::string(layout) : absl::StrCat("[", count, ",", layout.substr(1));
  return absl::InvalidArgumentError(
      absl::StrCat(op.path, ": shape ", absl::StrJoin(s, "x"), " does not fit ", want,
                   count > 0 ? absl::StrCat(" (--batch=", count, ")") : ""));
}

// The files of a single problem (or batch).
struct OperandFiles {
  std::optional<NpyOperand> a, b, c;
};

// M, N and K from the flags and the files, which must agree; unset ones default to 128.
absl::StatusOr<Shape> ResolveShape(const GemmCommand& cmd, const OperandFiles& files) {
  Dim m("M"), n("N"), k("K");
  absl::Status s;
  if (cmd.m) s.Update(m.Set(*cmd.m, "--m"));
  if (cmd.n) s.Update(n.Set(*cmd.n, "--n"));
  if (cmd.k) s.Update(k.Set(*cmd.k, "--k"));
  if (files.a) {
    auto dims = MatrixDims(*files.a, "[M,K]", cmd.batch, false);
    if (!dims.ok()) return dims.status();
    s.Update(m.Set(dims->first, files.a->Describe("[M,K]")));
    s.Update(k.Set(dims->second, files.a->Describe("[M,K]")));
  }
  if (files.b) {
    const char* layout = cmd.b_nk ? "[N,K]" : "[K,N]";
    auto dims = MatrixDims(*files.b, layout, cmd.batch, true);
    if (!dims.ok()) return dims.status();
    s.Update((cmd.b_nk ? n : k).Set(dims->first, files.b->Describe(layout)));
    s.Update((cmd.b_nk ? k : n).Set(dims->second, files.b->Describe(layout)));
  }
  if (files.c) {
    auto dims = MatrixDims(*files.c, "[M,N]", cmd.batch, false);
    if (!dims.ok()) return dims.status();
    s.Update(m.Set(dims->first, files.c->Describe("[M,N]")));
    s.Update(n.Set(dims->second, files.c->Describe("[M,N]")));
  }
  if (!s.ok()) return s;
  return Shape{m.Get(), n.Get(), k.Get()};
}

absl::StatusOr<std::vector<Shape>> ParseGroup(absl::string_view text) {
  std::vector<Shape> shapes;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<std::string> d = absl::StrSplit(part, 'x');
    Shape s;
    if (d.size() != 3 || !absl::SimpleAtoi(d[0], &s.m) || !absl::SimpleAtoi(d[1], &s.n) ||
        !absl::SimpleAtoi(d[2], &s.k)) {
      return absl::InvalidArgumentError(absl::StrCat("--group: bad entry '", part, "'"));
    }
    shapes.push_back(s);
  }
  return shapes;
}

// Whether `count` matrices of rows x cols (all >= 0) stay within kMaxOperandElements.
bool Fits(int64_t count, int64_t rows, int64_t cols) {
  if (count == 0 || rows == 0 || cols == 0) return true;
  return rows <= kMaxOperandElements / cols && rows * cols <= kMaxOperandElements / count;
}

// Dimensions are >= 0 and each operand fits in a request (the server checks its own limits).
absl::Status CheckShape(const Shape& s, int64_t count) {
  if (s.m < 0 || s.n < 0 || s.k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", s.m, "x", s.n, "x", s.k, ": dimensions must be >= 0"));
  }
  if (!Fits(count, s.m, s.k) || !Fits(count, s.k, s.n) || !Fits(count, s.m, s.n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", s.m, "x", s.n, "x", s.k, ": an operand exceeds 2^30 elements"));
  }
  return absl::OkStatus();
}

// Checks the option combinations the shapes depend on.
absl::Status CheckCombinations(const GemmCommand& cmd) {
  const bool files = !cmd.a_npy.empty() || !cmd.b_npy.empty() || !cmd.c_npy.empty();
  if (!cmd.group.empty() && (files || cmd.m || cmd.n || cmd.k)) {
    return absl::InvalidArgumentError(
        "--group gives the shapes: it takes no --m/--n/--k and no .npy operands");
  }
  if (!cmd.group.empty() && cmd.batch > 0) {
    return absl::InvalidArgumentError("--group and --batch do not go together");
  }
  if (!cmd.b_handle.empty() && !cmd.b_npy.empty()) {
    return absl::InvalidArgumentError("--b_handle and --b_npy both give B; pass one");
  }
  if (!cmd.c_npy.empty() && cmd.beta == 0.0) {
    return absl::InvalidArgumentError("--c_npy is added only with --beta != 0");
  }
  return absl::OkStatus();
}

// C's bytes in the output dtype: the file's values, or random ones.
std::string OperandC(const std::optional<NpyOperand>& file, int64_t elements, bool fp32,
                     absl::BitGenRef gen) {
  std::vector<float> c;
  if (file) {
    c = file->array.data;
  } else {
    c.resize(elements);
    for (float& x : c) x = absl::Uniform<float>(gen, -1.0f, 1.0f);
  }
  if (!fp32) return FloatsToBf16Bytes(c);
  return std::string(reinterpret_cast<const char*>(c.data()), c.size() * sizeof(float));
}

// The operands of one problem of shape `s` (a batch of `count`).
ProblemOperands MakeOperands(const GemmCommand& cmd, const Shape& s, int64_t count,
                             const OperandFiles& files, absl::BitGenRef gen) {
  ProblemOperands op{.m = s.m, .n = s.n, .k = s.k, .count = count};
  op.a = files.a ? FloatsToBf16Bytes(files.a->array.data) : RandomBf16Bytes(count * s.m * s.k, gen);
  if (cmd.b_handle.empty()) {
    if (files.b) {
      op.b = FloatsToBf16Bytes(files.b->array.data);
      op.b_shared = files.b->array.shape.size() == 2;
    } else {
      op.b = RandomBf16Bytes(count * s.k * s.n, gen);
      op.b_shared = count == 1;
    }
  }
  if (cmd.beta != 0.0) op.c = OperandC(files.c, count * s.m * s.n, cmd.out_fp32, gen);
  return op;
}

void FillProblem(const GemmCommand& cmd, const ProblemOperands& op, v1::Problem* p) {
  p->set_m(op.m);
  p->set_n(op.n);
  p->set_k(op.k);
  p->set_a(op.a);
  if (cmd.b_handle.empty()) {
    p->set_b(op.b);
    p->set_b_layout(cmd.b_nk ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN);
  } else {
    p->set_b_handle(cmd.b_handle);
  }
  p->set_alpha(static_cast<float>(cmd.alpha));
  if (cmd.beta != 0.0) {
    p->set_beta(static_cast<float>(cmd.beta));
    p->set_c(op.c);
  }
  p->set_output_dtype(cmd.out_fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16);
}

}  // namespace

absl::StatusOr<BuiltRequest> BuildGemmRequest(const GemmCommand& cmd, absl::BitGenRef gen) {
  if (absl::Status s = CheckCombinations(cmd); !s.ok()) return s;
  OperandFiles files;
  for (auto [path, file] :
       {std::make_pair(&cmd.a_npy, &files.a), std::make_pair(&cmd.b_npy, &files.b),
        std::make_pair(&cmd.c_npy, &files.c)}) {
    absl::StatusOr<std::optional<NpyOperand>> read = ReadOperand(*path);
    if (!read.ok()) return read.status();
    *file = *std::move(read);
  }
  std::vector<Shape> shapes;
  if (!cmd.group.empty()) {
    absl::StatusOr<std::vector<Shape>> group = ParseGroup(cmd.group);
    if (!group.ok()) return group.status();
    shapes = *std::move(group);
  } else {
    absl::StatusOr<Shape> shape = ResolveShape(cmd, files);
    if (!shape.ok()) return shape.status();
    shapes.push_back(*shape);
  }

  BuiltRequest built;
  v1::GemmRequest& request = built.request;
  request.set_request_id("cli-1");
  request.set_kernel(cmd.kernel);
  if (cmd.priority_high) request.set_priority(v1::PRIORITY_HIGH);
  const int64_t count = std::max<int64_t>(1, cmd.batch);
  if (cmd.batch > 0) request.mutable_batch()->set_count(count);
  for (const Shape& s : shapes) {
    if (absl::Status status = CheckShape(s, count); !status.ok()) return status;
  }
  for (const Shape& s : shapes) {
    ProblemOperands op = MakeOperands(cmd, s, count, files, gen);
    v1::Problem* p = cmd.batch > 0        ? request.mutable_batch()->mutable_problem()
                     : !cmd.group.empty() ? request.mutable_group()->add_problems()
                                          : request.mutable_problem();
    FillProblem(cmd, op, p);
    built.problems.push_back(std::move(op));
  }
  return built;
}

absl::StatusOr<std::pair<v1::MatrixHeader, std::string>> BuildRegistration(
    const RegisterCommand& cmd, absl::BitGenRef gen) {
  absl::StatusOr<std::optional<NpyOperand>> file = ReadOperand(cmd.b_npy);
  if (!file.ok()) return file.status();
  Dim rows("rows"), cols("cols");
  absl::Status s;
  if (cmd.rows) s.Update(rows.Set(*cmd.rows, "--rows"));
  if (cmd.cols) s.Update(cols.Set(*cmd.cols, "--cols"));
  if (*file) {
    auto dims = MatrixDims(**file, "[rows,cols]", 0, false);
    if (!dims.ok()) return dims.status();
    s.Update(rows.Set(dims->first, (*file)->Describe("[rows,cols]")));
    s.Update(cols.Set(dims->second, (*file)->Describe("[rows,cols]")));
  } else if (!cmd.rows || !cmd.cols) {
    return absl::InvalidArgumentError("register needs --b_npy or both --rows and --cols");
  }
  if (!s.ok()) return s;
  if (rows.Get() < 0 || cols.Get() < 0 || !Fits(1, rows.Get(), cols.Get())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix ", rows.Get(), "x", cols.Get(), ": needs dimensions >= 0, 2^30 elements at most"));
  }
  v1::MatrixHeader header;
  header.set_name(cmd.name);
  header.set_rows(rows.Get());
  header.set_cols(cols.Get());
  header.set_dtype(v1::DTYPE_BF16);
  header.set_layout(cmd.b_nk ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN);
  std::string bytes = *file ? FloatsToBf16Bytes((*file)->array.data)
                            : RandomBf16Bytes(header.rows() * header.cols(), gen);
  return std::make_pair(std::move(header), std::move(bytes));
}

}  // namespace gemm::client
