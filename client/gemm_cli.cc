// gemm_client: command-line client for gemm-service.
//   gemm_client [gemm] --m=..--n=..--k=.. [--verify]      random operands (or --a_npy/--b_npy)
//   gemm_client gemm --batch=8 ...                          same-shape batch
//   gemm_client gemm --group=64x128x256,7x9x11 ...          heterogeneous group
//   gemm_client register --rows=K --cols=N [--b_npy=w.npy]  resident matrix -> handle
//   gemm_client gemm --b_handle=mat-... --m=16              use a resident B
//   gemm_client list | release --handle=... | info
// Exit codes: 0 ok, 1 RPC or I/O error, 2 usage error, 3 --verify mismatch.
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/gemm_client.h"
#include "common/abseil_runtime.h"
#include "common/bf16.h"
#include "common/npy.h"
#include "common/reference_gemm.h"

ABSL_FLAG(std::string, target, "localhost:50051", "Server address.");
ABSL_FLAG(int64_t, m, 128, "Rows of A and D.");
ABSL_FLAG(int64_t, n, 128, "Columns of D.");
ABSL_FLAG(int64_t, k, 128, "Columns of A / reduction dimension.");
ABSL_FLAG(int64_t, batch, 0, "Same-shape batch of this many problems (0: single problem).");
ABSL_FLAG(std::string, group, "", "Heterogeneous group: comma-separated MxNxK list.");
ABSL_FLAG(std::string, b_layout, "kn",
          "kn: B is [K,N] (numpy a@b); nk: B is [N,K] (Linear weight).");
ABSL_FLAG(std::string, out_dtype, "bf16", "bf16 or fp32.");
ABSL_FLAG(double, alpha, 1.0, "Scale of A*B.");
ABSL_FLAG(double, beta, 0.0, "Scale of C (random C unless --c_npy).");
ABSL_FLAG(std::string, a_npy, "", "A from a float32/float64 .npy [M,K] (converted to BF16).");
ABSL_FLAG(std::string, b_npy, "", "B from a .npy ([K,N] or [N,K] per --b_layout).");
ABSL_FLAG(std::string, c_npy, "", "C from a .npy [M,N].");
ABSL_FLAG(std::string, out_npy, "", "Write D (first output) as float32 .npy.");
ABSL_FLAG(std::string, b_handle, "", "Use this resident matrix as B.");
ABSL_FLAG(bool, verify, false, "Compare with a local float64 reference; exit 3 on mismatch.");
ABSL_FLAG(double, tolerance, -1, "Max relative error for --verify (default 8e-3 bf16, 1e-5 fp32).");
ABSL_FLAG(int64_t, timeout_ms, 60000, "RPC deadline.");
ABSL_FLAG(std::string, priority, "normal", "normal or high.");
ABSL_FLAG(std::string, kernel, "", "Kernel to request (see `info`); empty: server's choice.");
ABSL_FLAG(int32_t, repeat, 1, "Send the request this many times (timings of each printed).");
ABSL_FLAG(bool, json, false, "Print results as JSON.");
ABSL_FLAG(int64_t, rows, 0, "register: rows of the matrix.");
ABSL_FLAG(int64_t, cols, 0, "register: cols of the matrix.");
ABSL_FLAG(std::string, name, "", "register: name of the matrix.");
ABSL_FLAG(std::string, handle, "", "release: handle to release.");

namespace {

using gemm::client::GemmClient;
namespace v1 = gemm::v1;

struct Shape {
  int64_t m, n, k;
};

// Operands of one problem kept host-side for --verify.
struct Operands {
  Shape s;
  int64_t count = 1;
  std::string a, b, c;  // BF16 bytes (c: out dtype bytes)
  bool b_shared = true;
};

int Fail(const absl::Status& s, int code = 1) {
  std::cerr << "error: " << absl::StatusCodeToString(s.code()) << ": " << s.message() << "\n";
  return code;
}

absl::StatusOr<std::string> Bf16FromNpy(const std::string& path, std::vector<int64_t> want) {
  auto arr = gemm::ReadNpy(path);
  if (!arr.ok()) return arr.status();
  if (arr->shape != want) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": shape does not match ", absl::StrJoin(want, "x")));
  }
  return gemm::FloatsToBf16Bytes(arr->data);
}

std::string PrintJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = false;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

// Response summary without the (large) output bytes.
std::string Summary(const v1::GemmResponse& r) {
  v1::GemmResponse copy = r;
  for (auto& o : *copy.mutable_outputs()) o.clear_data();
  return PrintJson(copy);
}

int RunGemm(GemmClient& client) {
  const bool fp32 = absl::GetFlag(FLAGS_out_dtype) == "fp32";
  if (!fp32 && absl::GetFlag(FLAGS_out_dtype) != "bf16") {
    return Fail(absl::InvalidArgumentError("--out_dtype must be bf16 or fp32"), 2);
  }
  const std::string layout = absl::GetFlag(FLAGS_b_layout);
  if (layout != "kn" && layout != "nk") {
    return Fail(absl::InvalidArgumentError("--b_layout must be kn or nk"), 2);
  }
  const bool nk = layout == "nk";
  const std::string handle = absl::GetFlag(FLAGS_b_handle);
  const double beta = absl::GetFlag(FLAGS_beta);
  absl::BitGen gen;

  std::vector<Shape> shapes;
  if (!absl::GetFlag(FLAGS_group).empty()) {
    for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_group), ',')) {
      std::vector<std::string> d = absl::StrSplit(part, 'x');
      Shape s{};
      if (d.size() != 3 || !absl::SimpleAtoi(d[0], &s.m) || !absl::SimpleAtoi(d[1], &s.n) ||
          !absl::SimpleAtoi(d[2], &s.k)) {
        return Fail(absl::InvalidArgumentError(absl::StrCat("--group: bad entry '", part, "'")), 2);
      }
      shapes.push_back(s);
    }
  } else {
    shapes.push_back({absl::GetFlag(FLAGS_m), absl::GetFlag(FLAGS_n), absl::GetFlag(FLAGS_k)});
  }
  const int64_t count = std::max<int64_t>(1, absl::GetFlag(FLAGS_batch));

  v1::GemmRequest request;
  request.set_request_id("cli-1");
  request.set_kernel(absl::GetFlag(FLAGS_kernel));
  if (absl::GetFlag(FLAGS_priority) == "high") request.set_priority(v1::PRIORITY_HIGH);
  std::vector<Operands> ops;
  for (const Shape& s : shapes) {
    Operands op{s, count};
    std::vector<v1::Problem*> dummy;
    if (!absl::GetFlag(FLAGS_a_npy).empty()) {
      auto a = Bf16FromNpy(absl::GetFlag(FLAGS_a_npy), {s.m, s.k});
      if (!a.ok()) return Fail(a.status());
      op.a = *a;
    } else {
      op.a = gemm::RandomBf16Bytes(count * s.m * s.k, gen);
    }
    if (handle.empty()) {
      if (!absl::GetFlag(FLAGS_b_npy).empty()) {
        auto b = Bf16FromNpy(absl::GetFlag(FLAGS_b_npy),
                             nk ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n});
        if (!b.ok()) return Fail(b.status());
        op.b = *b;
      } else {
        op.b_shared = false;
        op.b = gemm::RandomBf16Bytes(count * s.k * s.n, gen);
      }
    }
    if (beta != 0.0) {
      if (!absl::GetFlag(FLAGS_c_npy).empty()) {
        auto arr = gemm::ReadNpy(absl::GetFlag(FLAGS_c_npy));
        if (!arr.ok()) return Fail(arr.status());
        op.c = fp32 ? std::string(reinterpret_cast<const char*>(arr->data.data()),
                                  arr->data.size() * 4)
                    : gemm::FloatsToBf16Bytes(arr->data);
      } else if (fp32) {
        std::vector<float> c(count * s.m * s.n);
        for (float& x : c) x = absl::Uniform<float>(gen, -1.0f, 1.0f);
        op.c.assign(reinterpret_cast<const char*>(c.data()), c.size() * 4);
      } else {
        op.c = gemm::RandomBf16Bytes(count * s.m * s.n, gen);
      }
    }
    v1::Problem* p = absl::GetFlag(FLAGS_batch) > 0 ? request.mutable_batch()->mutable_problem()
                     : !absl::GetFlag(FLAGS_group).empty() ? request.mutable_group()->add_problems()
                                                           : request.mutable_problem();
    if (absl::GetFlag(FLAGS_batch) > 0) request.mutable_batch()->set_count(count);
    p->set_m(s.m);
    p->set_n(s.n);
    p->set_k(s.k);
    p->set_a(op.a);
    if (handle.empty()) {
      p->set_b(op.b);
      p->set_b_layout(nk ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN);
    } else {
      p->set_b_handle(handle);
    }
    p->set_alpha(static_cast<float>(absl::GetFlag(FLAGS_alpha)));
    if (beta != 0.0) {
      p->set_beta(static_cast<float>(beta));
      p->set_c(op.c);
    }
    p->set_output_dtype(fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16);
    ops.push_back(std::move(op));
  }

  absl::StatusOr<v1::GemmResponse> response;
  for (int r = 0; r < std::max(1, absl::GetFlag(FLAGS_repeat)); ++r) {
    const absl::Time t0 = absl::Now();
    response = client.Gemm(request, absl::Milliseconds(absl::GetFlag(FLAGS_timeout_ms)));
    const absl::Duration rtt = absl::Now() - t0;
    if (!response.ok()) return Fail(response.status());
    const auto& t = response->timing();
    if (absl::GetFlag(FLAGS_json)) {
      std::cout << Summary(*response) << "\n";
    } else {
      std::cout << absl::StrFormat(
          "kernel=%s device=%d round_trip=%.3fms server: total=%dus queue=%dus copy_in=%dus "
          "compute=%dus copy_out=%dus batch_rows=%d batch_requests=%d%s\n",
          response->kernel(), t.device(), absl::ToDoubleMilliseconds(rtt), t.total_us(),
          t.queue_us(), t.copy_in_us(), t.compute_us(), t.copy_out_us(), t.batch_rows(),
          t.batch_requests(),
          t.gpu_timing_skipped() ? " (GPU phases not timed: --gpu_timing_every)" : "");
    }
  }
  const v1::GemmResponse& resp = *response;
  if (resp.outputs_size() != static_cast<int>(ops.size())) {
    return Fail(absl::InternalError(
        absl::StrCat("expected ", ops.size(), " outputs, got ", resp.outputs_size())));
  }
  if (!absl::GetFlag(FLAGS_out_npy).empty()) {
    const auto& o = resp.outputs(0);
    std::vector<int64_t> shape(o.shape().begin(), o.shape().end());
    auto s = gemm::WriteNpy(absl::GetFlag(FLAGS_out_npy), shape,
                            gemm::DecodeOutput(o.data(), o.dtype() == v1::DTYPE_FP32));
    if (!s.ok()) return Fail(s);
  }
  if (!absl::GetFlag(FLAGS_verify)) return 0;
  if (!handle.empty()) {
    return Fail(absl::InvalidArgumentError("--verify needs B locally (not with --b_handle)"), 2);
  }
  double tol = absl::GetFlag(FLAGS_tolerance);
  if (tol < 0) tol = fp32 ? 1e-5 : 8e-3;
  double worst = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operands& op = ops[i];
    const auto out = gemm::DecodeOutput(resp.outputs(i).data(), fp32);
    const int64_t mn = op.s.m * op.s.n, mk = op.s.m * op.s.k, kn = op.s.k * op.s.n;
    for (int64_t b = 0; b < op.count; ++b) {
      std::vector<float> c;
      if (!op.c.empty()) {
        c = gemm::DecodeOutput(
            absl::string_view(op.c).substr(b * mn * (fp32 ? 4 : 2), mn * (fp32 ? 4 : 2)), fp32);
      }
      const auto ref = gemm::ReferenceGemm(
          {op.s.m, op.s.n, op.s.k, nk, absl::GetFlag(FLAGS_alpha), beta},
          absl::string_view(op.a).substr(b * mk * 2, mk * 2),
          absl::string_view(op.b).substr(op.b_shared ? 0 : b * kn * 2, kn * 2), c);
      const std::vector<float> got(out.begin() + b * mn, out.begin() + (b + 1) * mn);
      worst = std::max(worst, gemm::RelativeError(got, ref));
    }
  }
  const bool ok = worst <= tol;
  std::cout << absl::StrFormat("verify: relative error %.3e (tolerance %.1e): %s\n", worst, tol,
                               ok ? "OK" : "MISMATCH");
  return ok ? 0 : 3;
}

int RunRegister(GemmClient& client) {
  v1::MatrixHeader header;
  header.set_name(absl::GetFlag(FLAGS_name));
  header.set_rows(absl::GetFlag(FLAGS_rows));
  header.set_cols(absl::GetFlag(FLAGS_cols));
  header.set_dtype(v1::DTYPE_BF16);
  header.set_layout(absl::GetFlag(FLAGS_b_layout) == "nk" ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN);
  std::string bytes;
  if (!absl::GetFlag(FLAGS_b_npy).empty()) {
    auto b = Bf16FromNpy(absl::GetFlag(FLAGS_b_npy), {header.rows(), header.cols()});
    if (!b.ok()) return Fail(b.status());
    bytes = *b;
  } else {
    absl::BitGen gen;
    bytes = gemm::RandomBf16Bytes(header.rows() * header.cols(), gen);
  }
  auto info = client.RegisterMatrix(header, bytes);
  if (!info.ok()) return Fail(info.status());
  std::cout << (absl::GetFlag(FLAGS_json) ? PrintJson(*info) : info->handle()) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gemm::DisableMutexDeadlockDetection();
  absl::SetProgramUsageMessage(
      "gemm_client [gemm|register|list|release|info] [flags]: call gemm-service.");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  const std::string command = args.size() > 1 ? args[1] : "gemm";
  auto client = GemmClient::Create({.target = absl::GetFlag(FLAGS_target)});
  if (!client.ok()) return Fail(client.status(), 2);
  if (command == "gemm") return RunGemm(**client);
  if (command == "register") return RunRegister(**client);
  if (command == "release") {
    auto s = (*client)->ReleaseMatrix(absl::GetFlag(FLAGS_handle));
    return s.ok() ? 0 : Fail(s);
  }
  if (command == "list") {
    auto list = (*client)->ListMatrices();
    if (!list.ok()) return Fail(list.status());
    for (const auto& m : *list) std::cout << PrintJson(m) << "\n";
    return 0;
  }
  if (command == "info") {
    auto info = (*client)->GetServerInfo();
    if (!info.ok()) return Fail(info.status());
    std::cout << PrintJson(*info) << "\n";
    return 0;
  }
  return Fail(absl::InvalidArgumentError(absl::StrCat("unknown command '", command, "'")), 2);
}
