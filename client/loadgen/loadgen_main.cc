// gemm_loadgen: load generator for gemm.v1.GemmService. Closed loop (--concurrency, sweeps like
// 1:64:x2) or open loop (--rate, constant or Poisson arrivals, sweeps); per point a warm-up and
// measurement windows until three agree; reports as a table on stdout and --json/--csv/--html.
// Exit status: 0 success; 1 errors above --max_error_fraction, verification mismatches or no
// successful request; 2 bad flags or setup failure; 130 interrupted (Ctrl-C; reports still
// written).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/gemm_client.h"
#include "client/loadgen/report.h"
#include "client/loadgen/runner.h"
#include "client/loadgen/workload.h"
#include "common/abseil_runtime.h"
#include "common/channel_args.h"

ABSL_FLAG(std::string, target, "localhost:50051",
          "Server(s): comma-separated gRPC targets (host:port, dns:///name:port, ...); requests "
          "go round-robin over all of them");
ABSL_FLAG(std::string, lb_policy, "round_robin",
          "gRPC load-balancing policy per target (round_robin spreads a dns:/// name's "
          "addresses; pick_first)");
ABSL_FLAG(std::string, workload, "",
          "Workload file of 'flag = value' lines (any flag below except workload); command-line "
          "flags override it");
ABSL_FLAG(std::string, shapes, "128x128x128",
          "Shape mix: MxNxK[@weight], comma-separated, e.g. 16x4096x4096@3,128x4096x4096@1");
ABSL_FLAG(std::string, b, "inline",
          "inline: B travels in every request; resident: registered once per shape and target, "
          "requests carry its handle (released at the end)");
ABSL_FLAG(std::string, b_layout, "kn", "kn ([K,N], numpy a@b) or nk ([N,K], a PyTorch weight)");
ABSL_FLAG(std::string, output_dtype, "bf16", "bf16 or fp32");
ABSL_FLAG(std::string, priority, "normal", "normal or high");
ABSL_FLAG(double, deadline_ms, 0, "Per-request deadline in ms (0: none beyond --rpc_timeout_s)");
ABSL_FLAG(std::string, rpc, "unary",
          "unary (Gemm), stream (GemmStream) or packed (GemmStreamPacked: the requests queued on "
          "a stream while its previous write was out go in one message)");
ABSL_FLAG(std::vector<std::string>, grpc_arg, {},
          "Extra gRPC channel arguments, name=value[,name=value...] (integers where the value is "
          "one), e.g. grpc.http2.max_frame_size=1048576");
ABSL_FLAG(int, channels, 1, "gRPC channels (connections) per target");
ABSL_FLAG(int, streams_per_channel, 1, "GemmStream streams per channel (--rpc=stream)");
ABSL_FLAG(std::string, client_api, "callback",
          "callback (requests sent and answered on gRPC's callback threads) or sync (closed loop "
          "only: one thread per caller making blocking calls; with --rpc=stream each caller owns "
          "one GemmStream, and --streams_per_channel does not apply)");
ABSL_FLAG(std::string, kernel, "", "GemmRequest.kernel: '' (server's choice) or a kernel name");
ABSL_FLAG(std::string, experts, "",
          "E:T: mixture-of-experts steps, each request a group of T problems of the drawn shape "
          "against T of E resident experts (needs --b=resident, unary RPCs, no --shm)");
ABSL_FLAG(bool, shm, false,
          "Pass A (and inline B) and receive D through a POSIX shared-memory region registered on "
          "each target (servers on this host only)");
ABSL_FLAG(int32_t, shm_device, -1,
          "--shm: put the region in GPU memory of this device (as the server numbers its GPUs) and "
          "share it through CUDA IPC, so A and D never cross PCIe (cuda backend, same host); -1: "
          "host shared memory");
ABSL_FLAG(int64_t, shm_output_slots, 0,
          "--shm: output slots per shape, so each request in flight has its own D (as a real "
          "client's outputs would); 0: the largest --concurrency of the sweep (open loop: 64). "
          "Requests beyond the slots share one.");
ABSL_FLAG(std::string, concurrency, "",
          "Closed loop: requests in flight; a value, list (1,4,16) or sweep (1:64:x2, 4:32:+4). "
          "Default 1 when --rate is not given");
ABSL_FLAG(std::string, rate, "",
          "Open loop: offered requests/s; a value, list or sweep (100:1600:x2, 100:1000:+100)");
ABSL_FLAG(std::string, arrival, "constant", "Open loop arrivals: constant or poisson");
ABSL_FLAG(double, warmup_s, 2, "Warm-up per point, seconds (not measured)");
ABSL_FLAG(double, window_s, 2, "Measurement window, seconds");
ABSL_FLAG(int, stable_windows, 3, "Consecutive windows that must agree");
ABSL_FLAG(double, stability_pct, 10,
          "Windows agree when throughput and latency of each are within this percent of their "
          "mean");
ABSL_FLAG(double, stability_percentile, 0,
          "Latency metric of the stability rule: 0 = mean, else a percentile (e.g. 99)");
ABSL_FLAG(int, max_windows, 10, "Most windows per point (bounds the run; point marked unstable)");
ABSL_FLAG(double, verify_fraction, 0,
          "Share of responses checked against a local float64 reference (0..1)");
ABSL_FLAG(int64_t, max_outstanding, 4096, "Open loop: most requests in flight");
ABSL_FLAG(int, dispatch_threads, 4,
          "Open loop: threads sending requests, each drawing 1/N of the arrivals (one thread "
          "tops out below ~40k req/s)");
ABSL_FLAG(double, error_backoff_ms, 10, "Closed loop: pause after a failed request");
ABSL_FLAG(double, rpc_timeout_s, 60, "gRPC deadline of every request, seconds");
ABSL_FLAG(int64_t, max_message_bytes, (int64_t{1} << 30) + (int64_t{16} << 20),
          "Max gRPC message size sent/received");
ABSL_FLAG(double, max_error_fraction, 0,
          "Exit 1 when failed/(all) requests in any point exceed this (0: any error fails)");
ABSL_FLAG(uint64_t, seed, 1, "Seed of operands, shape mix, arrivals and verify sampling");
ABSL_FLAG(std::string, json, "", "Write the JSON report here");
ABSL_FLAG(std::string, csv, "", "Write the CSV report here");
ABSL_FLAG(std::string, html, "", "Write the self-contained HTML report here");
ABSL_FLAG(std::string, progress, "auto",
          "Live progress line on stderr: auto (when a TTY), on, off");

namespace {

using gemm::loadgen::BSource;

std::atomic<bool> g_stop{false};

void OnSignal(int) {
  if (g_stop.exchange(true)) _exit(130);  // second Ctrl-C: leave now
  const char msg[] = "\ngemm_loadgen: stopping (Ctrl-C again to quit at once)\n";
  (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "gemm_loadgen: %s\n", std::string(status.message()).c_str());
  return 2;
}

// Applies a --workload file as new flag defaults, before the command line is parsed (so the
// command line wins). Looks for --workload=F / --workload F in argv itself.
absl::Status ApplyWorkloadFile(int argc, char** argv) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    if (a == "--") break;
    if (absl::ConsumePrefix(&a, "--workload=") || absl::ConsumePrefix(&a, "-workload=")) {
      path = std::string(a);
    } else if ((a == "--workload" || a == "-workload") && i + 1 < argc) {
      path = argv[i + 1];
    }
  }
  if (path.empty()) return absl::OkStatus();
  std::ifstream f(path);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot read workload file ", path));
  std::stringstream ss;
  ss << f.rdbuf();
  absl::StatusOr<std::map<std::string, std::string>> kv =
      gemm::loadgen::ParseKeyValueText(ss.str());
  if (!kv.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", kv.status().message()));
  for (const auto& [key, value] : *kv) {
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(key);
    if (flag == nullptr || key == "workload" ||
        flag->Filename().find("loadgen_main") == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": unknown key '", key, "'"));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", key, ": ", error));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<gemm::loadgen::WorkloadSpec> WorkloadFromFlags() {
  gemm::loadgen::WorkloadSpec w;
  auto shapes = gemm::loadgen::ParseShapes(absl::GetFlag(FLAGS_shapes));
  if (!shapes.ok()) return shapes.status();
  w.shapes = *shapes;
  auto b = gemm::loadgen::ParseBSource(absl::GetFlag(FLAGS_b));
  if (!b.ok()) return b.status();
  w.b_source = *b;
  auto nk = gemm::loadgen::ParseLayoutNk(absl::GetFlag(FLAGS_b_layout));
  if (!nk.ok()) return nk.status();
  w.b_nk = *nk;
  auto fp32 = gemm::loadgen::ParseOutputFp32(absl::GetFlag(FLAGS_output_dtype));
  if (!fp32.ok()) return fp32.status();
  w.output_fp32 = *fp32;
  auto high = gemm::loadgen::ParsePriorityHigh(absl::GetFlag(FLAGS_priority));
  if (!high.ok()) return high.status();
  w.priority_high = *high;
  if (auto s = gemm::loadgen::ParseRpc(absl::GetFlag(FLAGS_rpc), &w); !s.ok()) return s;
  auto sync = gemm::loadgen::ParseSyncCallers(absl::GetFlag(FLAGS_client_api));
  if (!sync.ok()) return sync.status();
  w.sync_callers = *sync;
  const double deadline_ms = absl::GetFlag(FLAGS_deadline_ms);
  if (deadline_ms < 0) return absl::InvalidArgumentError("--deadline_ms must be >= 0");
  w.deadline_us = static_cast<int64_t>(deadline_ms * 1000);
  w.channels = absl::GetFlag(FLAGS_channels);
  w.streams_per_channel = absl::GetFlag(FLAGS_streams_per_channel);
  if (w.channels < 1 || w.channels > 1024) return absl::InvalidArgumentError("--channels: 1..1024");
  if (w.streams_per_channel < 1 || w.streams_per_channel > 1024) {
    return absl::InvalidArgumentError("--streams_per_channel: 1..1024");
  }
  w.kernel = absl::GetFlag(FLAGS_kernel);
  w.shared_memory = absl::GetFlag(FLAGS_shm);
  w.shm_device = absl::GetFlag(FLAGS_shm_device);
  if (w.shm_device >= 0 && !w.shared_memory) {
    return absl::InvalidArgumentError("--shm_device needs --shm");
  }
  if (auto s = gemm::loadgen::ParseExperts(absl::GetFlag(FLAGS_experts), &w); !s.ok()) return s;
  if (w.experts > 0 && (w.b_source != BSource::kResident || w.streaming || w.shared_memory)) {
    return absl::InvalidArgumentError(
        "--experts needs --b=resident and --rpc=unary, without --shm");
  }
  return w;
}

std::string UtcNow() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

std::string DescribeDevices(const gemm::v1::ServerInfo& info) {
  std::vector<std::string> parts;
  for (const auto& d : info.devices()) {
    std::string part = d.name();
    if (d.compute_capability_major() > 0) {
      absl::StrAppend(&part, " sm_", d.compute_capability_major(), d.compute_capability_minor());
    }
    if (!d.kernel().empty()) absl::StrAppend(&part, " [", d.kernel(), "]");
    parts.push_back(part);
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

int main(int argc, char** argv) {
  gemm::DisableMutexDeadlockDetection();
  absl::SetProgramUsageMessage(
      "Load generator for gemm.v1.GemmService.\n"
      "  gemm_loadgen --target=localhost:50051 --shapes=64x64x64 --concurrency=1:16:x2\n"
      "  gemm_loadgen --rate=100:800:x2 --arrival=poisson --html=report.html");
  if (absl::Status s = ApplyWorkloadFile(argc, argv); !s.ok()) return Fail(s);
  const std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("unexpected argument '", rest[1], "'")));
  }
  std::vector<std::string> args(argv, argv + argc);

  absl::StatusOr<gemm::loadgen::WorkloadSpec> workload = WorkloadFromFlags();
  if (!workload.ok()) return Fail(workload.status());

  const std::string conc_flag = absl::GetFlag(FLAGS_concurrency);
  const std::string rate_flag = absl::GetFlag(FLAGS_rate);
  if (!conc_flag.empty() && !rate_flag.empty()) {
    return Fail(absl::InvalidArgumentError(
        "give --concurrency (closed loop) or --rate (open loop), not both"));
  }
  const bool open_loop = !rate_flag.empty();
  if (workload->sync_callers && workload->packed) {
    return Fail(absl::InvalidArgumentError(
        "--rpc=packed needs --client_api=callback: a sync caller owns its stream and has one "
        "request at a time, so there is nothing to pack"));
  }
  if (open_loop && workload->sync_callers) {
    return Fail(
        absl::InvalidArgumentError("--client_api=sync is closed loop only (a thread per caller); "
                                   "drop --rate or use callback"));
  }
  absl::StatusOr<std::vector<double>> levels =
      gemm::loadgen::ParseSweep(open_loop ? rate_flag : (conc_flag.empty() ? "1" : conc_flag));
  if (!levels.ok()) return Fail(levels.status());
  const std::string arrival = absl::GetFlag(FLAGS_arrival);
  if (arrival != "constant" && arrival != "poisson") {
    return Fail(absl::InvalidArgumentError("--arrival: constant or poisson"));
  }
  const double verify_fraction = absl::GetFlag(FLAGS_verify_fraction);
  if (!(verify_fraction >= 0 && verify_fraction <= 1)) {
    return Fail(absl::InvalidArgumentError("--verify_fraction: 0..1"));
  }
  if (absl::GetFlag(FLAGS_window_s) <= 0 || absl::GetFlag(FLAGS_warmup_s) < 0 ||
      absl::GetFlag(FLAGS_max_windows) < 1 || absl::GetFlag(FLAGS_stable_windows) < 1) {
    return Fail(absl::InvalidArgumentError(
        "need --window_s > 0, --warmup_s >= 0, --max_windows >= 1, --stable_windows >= 1"));
  }
  const std::string progress = absl::GetFlag(FLAGS_progress);
  if (progress != "auto" && progress != "on" && progress != "off") {
    return Fail(absl::InvalidArgumentError("--progress: auto, on or off"));
  }

  std::vector<std::string> target_names =
      absl::StrSplit(absl::GetFlag(FLAGS_target), ',', absl::SkipWhitespace());
  if (target_names.empty()) return Fail(absl::InvalidArgumentError("--target is empty"));
  // "ipv4:a:p,b:p"-style targets contain commas themselves: keep them whole.
  if (absl::StartsWith(absl::GetFlag(FLAGS_target), "ipv4:") ||
      absl::StartsWith(absl::GetFlag(FLAGS_target), "ipv6:")) {
    target_names = {absl::GetFlag(FLAGS_target)};
  }
  absl::StatusOr<std::vector<gemm::ChannelArg>> channel_args =
      gemm::ParseChannelArgs(absl::GetFlag(FLAGS_grpc_arg));
  if (!channel_args.ok()) return Fail(channel_args.status());
  std::vector<gemm::loadgen::Target> targets;
  for (const std::string& name : target_names) {
    gemm::client::GemmClient::Options o;
    o.target = std::string(absl::StripAsciiWhitespace(name));
    o.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
    o.lb_policy = absl::GetFlag(FLAGS_lb_policy);
    o.channels = workload->channels;
    o.channel_args = *channel_args;
    auto client = gemm::client::GemmClient::Create(o);
    if (!client.ok()) return Fail(client.status());
    targets.push_back({o.target, std::shared_ptr<gemm::client::GemmClient>(std::move(*client))});
  }

  gemm::loadgen::Report report;
  gemm::loadgen::RunInfo& info = report.info;
  info.started_utc = UtcNow();
  info.command_line = absl::StrJoin(args, " ");
  info.targets = target_names;
  info.lb_policy = absl::GetFlag(FLAGS_lb_policy);
  info.open_loop = open_loop;
  info.poisson = arrival == "poisson";
  info.workload = *workload;
  info.warmup_s = absl::GetFlag(FLAGS_warmup_s);
  info.window_s = absl::GetFlag(FLAGS_window_s);
  info.stability_pct = absl::GetFlag(FLAGS_stability_pct);
  info.stable_windows = absl::GetFlag(FLAGS_stable_windows);
  info.max_windows = absl::GetFlag(FLAGS_max_windows);
  info.verify_fraction = verify_fraction;

  // The server's description (a failure is reported, not fatal: the run then measures errors).
  {
    targets[0].client->WaitForConnected(absl::Seconds(1));
    absl::StatusOr<gemm::v1::ServerInfo> si = targets[0].client->GetServerInfo();
    if (si.ok()) {
      info.server_version = si->version();
      info.server_backend = si->backend();
      info.server_devices = DescribeDevices(*si);
    } else {
      info.server_error = si.status().ToString();
      std::fprintf(stderr, "gemm_loadgen: GetServerInfo on %s failed: %s\n",
                   targets[0].name.c_str(), info.server_error.c_str());
    }
  }

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  gemm::loadgen::RunnerOptions ro;
  ro.workload = *workload;
  ro.open_loop = open_loop;
  ro.poisson = info.poisson;
  ro.warmup_s = info.warmup_s;
  ro.window_s = info.window_s;
  ro.stable_windows = info.stable_windows;
  ro.stability_pct = info.stability_pct;
  ro.stability_percentile = absl::GetFlag(FLAGS_stability_percentile);
  ro.max_windows = info.max_windows;
  ro.verify_fraction = verify_fraction;
  ro.max_outstanding = absl::GetFlag(FLAGS_max_outstanding);
  if (ro.max_outstanding < 1) return Fail(absl::InvalidArgumentError("--max_outstanding: >= 1"));
  ro.dispatch_threads = absl::GetFlag(FLAGS_dispatch_threads);
  if (ro.dispatch_threads < 1 || ro.dispatch_threads > 64) {
    return Fail(absl::InvalidArgumentError("--dispatch_threads: 1..64"));
  }
  ro.error_backoff_ms = absl::GetFlag(FLAGS_error_backoff_ms);
  ro.rpc_timeout_s = absl::GetFlag(FLAGS_rpc_timeout_s);
  ro.seed = absl::GetFlag(FLAGS_seed);
  ro.shm_output_slots = absl::GetFlag(FLAGS_shm_output_slots);
  if (ro.shm_output_slots < 0 || ro.shm_output_slots > 4096) {
    return Fail(absl::InvalidArgumentError("--shm_output_slots: 0..4096"));
  }
  if (ro.shm_output_slots == 0) {
    ro.shm_output_slots =
        open_loop ? 64 : static_cast<int64_t>(*std::max_element(levels->begin(), levels->end()));
  }
  ro.progress = progress == "on" || (progress == "auto" && isatty(STDERR_FILENO));
  ro.stop = &g_stop;

  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<gemm::loadgen::Runner>> runner =
      gemm::loadgen::Runner::Create(ro, std::move(targets));
  if (!runner.ok()) return Fail(runner.status());
  for (size_t i = 0; i < levels->size() && !g_stop.load(); ++i) {
    report.points.push_back(
        (*runner)->RunPoint((*levels)[i], static_cast<int>(i), static_cast<int>(levels->size())));
  }
  info.interrupted = g_stop.load();
  (*runner)->Finish(info.interrupted ? 2.0 : 10.0);
  runner->reset();
  info.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::fputs(gemm::loadgen::FormatTable(report).c_str(), stdout);
  std::fflush(stdout);
  int rc = 0;
  const std::pair<std::string, std::string> outputs[] = {
      {absl::GetFlag(FLAGS_json), gemm::loadgen::FormatJson(report)},
      {absl::GetFlag(FLAGS_csv), gemm::loadgen::FormatCsv(report)},
      {absl::GetFlag(FLAGS_html), gemm::loadgen::FormatHtml(report)}};
  for (const auto& [path, content] : outputs) {
    if (path.empty()) continue;
    if (absl::Status s = gemm::loadgen::WriteTextFile(path, content); !s.ok()) {
      std::fprintf(stderr, "gemm_loadgen: %s\n", s.ToString().c_str());
      rc = 2;
    }
  }

  // Verdict.
  int64_t ok = 0, mismatches = 0;
  bool too_many_errors = false;
  for (const auto& p : report.points) {
    ok += p.measured.ok;
    mismatches += p.measured.mismatches;
    const int64_t all = p.measured.ok + p.measured.failed;
    if (all > 0 &&
        static_cast<double>(p.measured.failed) / all > absl::GetFlag(FLAGS_max_error_fraction)) {
      too_many_errors = true;
    }
  }
  if (info.interrupted) return 130;
  if (rc != 0) return rc;
  if (ok == 0) {
    std::fprintf(stderr, "gemm_loadgen: FAIL: no request succeeded\n");
    return 1;
  }
  if (mismatches > 0) {
    std::fprintf(stderr, "gemm_loadgen: FAIL: %lld verification mismatches\n",
                 static_cast<long long>(mismatches));
    return 1;
  }
  if (too_many_errors) {
    std::fprintf(stderr, "gemm_loadgen: FAIL: error fraction above --max_error_fraction=%g\n",
                 absl::GetFlag(FLAGS_max_error_fraction));
    return 1;
  }
  return 0;
}
