// gemm_client: command-line client for gemm-service.
//   gemm_client [gemm] --m=..--n=..--k=.. [--verify]      random operands
//   gemm_client --a_npy=a.npy --b_npy=b.npy --out_npy=d.npy  shapes from the files
//   gemm_client gemm --batch=8 ...                          same-shape batch
//   gemm_client gemm --group=64x128x256,7x9x11 ...          heterogeneous group
//   gemm_client register --rows=K --cols=N | --b_npy=w.npy [--handle=name]  resident matrix ->
//   handle gemm_client gemm --b_handle=mat-... --m=16              use a resident B gemm_client
//   list | release --handle=... | info
// Exit codes: 0 ok, 1 RPC or I/O error, 2 usage error, 3 --verify mismatch.
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/gemm_client.h"
#include "client/gemm_request_builder.h"
#include "client/security_flags.h"
#include "client/verify_response.h"
#include "common/abseil_runtime.h"
#include "common/cli_flags.h"
#include "common/npy.h"
#include "common/reference_gemm.h"
#include "common/transport_flags.h"

ABSL_FLAG(std::string, target, "localhost:50051", "Server address (host:port).");
ABSL_FLAG(std::optional<int64_t>, m, std::nullopt,
          "Rows of A and D; default: from --a_npy or --c_npy, else 128.");
ABSL_FLAG(std::optional<int64_t>, n, std::nullopt,
          "Columns of D; default: from --b_npy or --c_npy, else 128.");
ABSL_FLAG(std::optional<int64_t>, k, std::nullopt,
          "Columns of A (the reduction dimension); default: from --a_npy or --b_npy, else 128.");
ABSL_FLAG(int64_t, batch, 0, "Same-shape batch of this many problems; 0: a single problem.");
ABSL_FLAG(std::string, group, "", "Heterogeneous group: comma-separated MxNxK list.");
ABSL_FLAG(std::string, b_layout, "kn",
          "kn: B is [K,N] (numpy a@b); nk: B is [N,K] (a Linear layer's weight).");
ABSL_FLAG(std::string, out_dtype, "bf16", "Output dtype: bf16 or fp32.");
ABSL_FLAG(double, alpha, 1.0, "Scale of A*B.");
ABSL_FLAG(double, beta, 0.0, "Scale of C (random C unless --c_npy).");
ABSL_FLAG(std::string, a_npy, "",
          "A from a float32/float64 .npy, [M,K] ([batch,M,K] with --batch); sent as BF16.");
ABSL_FLAG(std::string, b_npy, "",
          "B from a .npy, [K,N] or [N,K] per --b_layout (with --batch: one shared, or "
          "[batch,...]); register: the matrix to register.");
ABSL_FLAG(std::string, c_npy, "", "C from a .npy, [M,N] ([batch,M,N] with --batch).");
ABSL_FLAG(std::string, out_npy, "", "Write D (the first output) to this float32 .npy file.");
ABSL_FLAG(std::string, b_handle, "", "Use this resident matrix as B.");
ABSL_FLAG(bool, verify, false,
          "Compare with a float64 reference computed locally (OpenBLAS); exit 3 on mismatch.");
ABSL_FLAG(double, tolerance, -1,
          "Largest relative error --verify accepts; default 8e-3 for bf16, 1e-5 for fp32.");
ABSL_FLAG(int64_t, timeout_ms, 60000, "RPC deadline, milliseconds.");
ABSL_FLAG(std::string, priority, "normal", "Request priority: normal or high.");
ABSL_FLAG(std::string, kernel, "", "Kernel to request (see `info`); empty: the server's choice.");
ABSL_FLAG(int32_t, repeat, 1, "Send the request this many times (the timings of each printed).");
ABSL_FLAG(bool, json, false, "Print results as JSON.");
ABSL_FLAG(std::optional<int64_t>, rows, std::nullopt,
          "register: rows of the matrix; default: from --b_npy.");
ABSL_FLAG(std::optional<int64_t>, cols, std::nullopt,
          "register: columns of the matrix; default: from --b_npy.");
ABSL_FLAG(std::string, name, "", "register: name of the matrix.");
ABSL_FLAG(std::string, handle, "",
          "release: handle to release. register: a stable name to register the matrix under "
          "(the same content again is a no-op; other content is ALREADY_EXISTS without "
          "--replace). Default: none (the server generates a handle).");
ABSL_FLAG(bool, replace, false,
          "register with --handle: swap the new content in when the name holds other content. "
          "Default false.");

namespace {

using gemm::client::GemmClient;
namespace v1 = gemm::v1;

constexpr int kExitError = 1;
constexpr int kExitMismatch = 3;

int Fail(const absl::Status& s, int code = kExitError) {
  std::cerr << "error: " << absl::StatusCodeToString(s.code()) << ": " << s.message() << "\n";
  return code;
}

// Errors in what the command line asked for are usage errors; the rest (files that cannot be
// read, failed RPCs) are not.
int FailBuilding(const absl::Status& s) {
  return Fail(s, absl::IsInvalidArgument(s) ? gemm::kUsageErrorExit : kExitError);
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

std::string TimingLine(const v1::GemmResponse& r, absl::Duration round_trip) {
  const v1::Timing& t = r.timing();
  return absl::StrFormat(
      "kernel=%s device=%d round_trip=%.3fms server: total=%dus queue=%dus copy_in=%dus "
      "compute=%dus copy_out=%dus batch_rows=%d batch_requests=%d%s",
      r.kernel(), t.device(), absl::ToDoubleMilliseconds(round_trip), t.total_us(), t.queue_us(),
      t.copy_in_us(), t.compute_us(), t.copy_out_us(), t.batch_rows(), t.batch_requests(),
      t.gpu_timing_skipped() ? " (GPU phases not timed: --gpu_timing_every)" : "");
}

// The options of `gemm` from the flags; INVALID_ARGUMENT names a bad flag value.
absl::StatusOr<gemm::client::GemmCommand> GemmCommandFromFlags() {
  const std::string layout = absl::GetFlag(FLAGS_b_layout);
  const std::string dtype = absl::GetFlag(FLAGS_out_dtype);
  const std::string priority = absl::GetFlag(FLAGS_priority);
  if (layout != "kn" && layout != "nk") return absl::InvalidArgumentError("--b_layout: kn or nk");
  if (dtype != "bf16" && dtype != "fp32") {
    return absl::InvalidArgumentError("--out_dtype: bf16 or fp32");
  }
  if (priority != "normal" && priority != "high") {
    return absl::InvalidArgumentError("--priority: normal or high");
  }
  if (absl::GetFlag(FLAGS_batch) < 0) return absl::InvalidArgumentError("--batch: must be >= 0");
  if (absl::GetFlag(FLAGS_verify) && !absl::GetFlag(FLAGS_b_handle).empty()) {
    return absl::InvalidArgumentError("--verify needs B locally (not with --b_handle)");
  }
  return gemm::client::GemmCommand{
      .m = absl::GetFlag(FLAGS_m),
      .n = absl::GetFlag(FLAGS_n),
      .k = absl::GetFlag(FLAGS_k),
      .batch = absl::GetFlag(FLAGS_batch),
      .group = absl::GetFlag(FLAGS_group),
      .b_nk = layout == "nk",
      .out_fp32 = dtype == "fp32",
      .alpha = absl::GetFlag(FLAGS_alpha),
      .beta = absl::GetFlag(FLAGS_beta),
      .a_npy = absl::GetFlag(FLAGS_a_npy),
      .b_npy = absl::GetFlag(FLAGS_b_npy),
      .c_npy = absl::GetFlag(FLAGS_c_npy),
      .b_handle = absl::GetFlag(FLAGS_b_handle),
      .kernel = absl::GetFlag(FLAGS_kernel),
      .priority_high = priority == "high",
  };
}

// --verify: exit 0 when every output is within the tolerance, 3 when not.
int Verify(const gemm::client::GemmCommand& cmd, const gemm::client::BuiltRequest& built,
           const v1::GemmResponse& response) {
  absl::StatusOr<double> worst = gemm::client::WorstRelativeError(
      built.problems,
      {.b_nk = cmd.b_nk, .out_fp32 = cmd.out_fp32, .alpha = cmd.alpha, .beta = cmd.beta}, response);
  if (!worst.ok()) return Fail(worst.status());
  double tol = absl::GetFlag(FLAGS_tolerance);
  if (tol < 0) tol = cmd.out_fp32 ? 1e-5 : 8e-3;
  const bool ok = *worst <= tol;
  std::cout << absl::StrFormat("verify: relative error %.3e (tolerance %.1e): %s\n", *worst, tol,
                               ok ? "OK" : "MISMATCH");
  return ok ? 0 : kExitMismatch;
}

int RunGemm(GemmClient& client) {
  absl::StatusOr<gemm::client::GemmCommand> cmd = GemmCommandFromFlags();
  if (!cmd.ok()) return Fail(cmd.status(), gemm::kUsageErrorExit);
  absl::BitGen gen;
  absl::StatusOr<gemm::client::BuiltRequest> built = gemm::client::BuildGemmRequest(*cmd, gen);
  if (!built.ok()) return FailBuilding(built.status());

  absl::StatusOr<v1::GemmResponse> response;
  for (int r = 0; r < std::max(1, absl::GetFlag(FLAGS_repeat)); ++r) {
    const absl::Time t0 = absl::Now();
    response = client.Gemm(built->request, absl::Milliseconds(absl::GetFlag(FLAGS_timeout_ms)));
    const absl::Duration round_trip = absl::Now() - t0;
    if (!response.ok()) return Fail(response.status());
    std::cout << (absl::GetFlag(FLAGS_json) ? Summary(*response)
                                            : TimingLine(*response, round_trip))
              << "\n";
  }
  if (!absl::GetFlag(FLAGS_out_npy).empty()) {
    if (response->outputs_size() < 1) return Fail(absl::InternalError("response has no output"));
    const v1::Output& o = response->outputs(0);
    const std::vector<int64_t> shape(o.shape().begin(), o.shape().end());
    const absl::Status s =
        gemm::WriteNpy(absl::GetFlag(FLAGS_out_npy), shape,
                       gemm::DecodeOutput(o.data(), o.dtype() == v1::DTYPE_FP32));
    if (!s.ok()) return Fail(s);
  }
  return absl::GetFlag(FLAGS_verify) ? Verify(*cmd, *built, *response) : 0;
}

int RunRegister(GemmClient& client) {
  absl::BitGen gen;
  auto registration =
      gemm::client::BuildRegistration({.rows = absl::GetFlag(FLAGS_rows),
                                       .cols = absl::GetFlag(FLAGS_cols),
                                       .name = absl::GetFlag(FLAGS_name),
                                       .b_nk = absl::GetFlag(FLAGS_b_layout) == "nk",
                                       .b_npy = absl::GetFlag(FLAGS_b_npy)},
                                      gen);
  if (!registration.ok()) return FailBuilding(registration.status());
  registration->first.set_handle(absl::GetFlag(FLAGS_handle));
  registration->first.set_replace(absl::GetFlag(FLAGS_replace));
  auto info = client.RegisterMatrix(registration->first, registration->second);
  if (!info.ok()) return Fail(info.status());
  std::cout << (absl::GetFlag(FLAGS_json) ? PrintJson(*info) : info->handle()) << "\n";
  return 0;
}

int RunList(GemmClient& client) {
  auto list = client.ListMatrices();
  if (!list.ok()) return Fail(list.status());
  for (const auto& m : *list) std::cout << PrintJson(m) << "\n";
  return 0;
}

int RunInfo(GemmClient& client) {
  auto info = client.GetServerInfo();
  if (!info.ok()) return Fail(info.status());
  std::cout << PrintJson(*info) << "\n";
  return 0;
}

int RunRelease(GemmClient& client) {
  const absl::Status s = client.ReleaseMatrix(absl::GetFlag(FLAGS_handle));
  return s.ok() ? 0 : Fail(s);
}

}  // namespace

int main(int argc, char** argv) {
  gemm::DisableMutexDeadlockDetection();
  const std::vector<char*> args = gemm::ParseCommandLine(
      argc, argv,
      {.usage = "Calls gemm-service.\n"
                "  gemm_client [gemm|register|list|release|info] [flags]\n"
                "  gemm_client --a_npy=a.npy --b_npy=b.npy --out_npy=d.npy --verify"});
  if (args.size() > 2) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("unexpected argument '", args[2], "'")),
                gemm::kUsageErrorExit);
  }
  const std::string command = args.size() > 1 ? args[1] : "gemm";
  int (*run)(GemmClient&) = command == "gemm"       ? RunGemm
                            : command == "register" ? RunRegister
                            : command == "list"     ? RunList
                            : command == "info"     ? RunInfo
                            : command == "release"  ? RunRelease
                                                    : nullptr;
  if (run == nullptr) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("unknown command '", command, "'")),
                gemm::kUsageErrorExit);
  }
  auto client = GemmClient::Create({.target = absl::GetFlag(FLAGS_target),
                                    .transport = gemm::TransportOptionsFromFlags(),
                                    .security = gemm::client::ChannelSecurityFromFlags()});
  if (!client.ok()) return Fail(client.status(), gemm::kUsageErrorExit);
  return run(**client);
}
