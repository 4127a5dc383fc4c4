// gemm_loadgen: load generator for gemm.v1.GemmService. Closed loop (--concurrency, sweeps like
// 1:64:x2) or open loop (--rate, constant or Poisson arrivals, sweeps); before each point it waits
// for every target's health check to say SERVING; per point a warm-up and measurement windows
// until three agree; reports as a table on stdout and --json/--csv/--html.
// Exit status: 0 success; 1 no server serving within --wait_for_server_s, errors above
// --max_error_fraction, verification mismatches or no successful request; 2 bad flags or setup
// failure; 130 interrupted (Ctrl-C; reports still written).
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
#include "absl/flags/reflection.h"
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
#include "client/security_flags.h"
#include "common/abseil_runtime.h"
#include "common/channel_args.h"
#include "common/cli_flags.h"
#include "common/transport_flags.h"

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
ABSL_FLAG(double, wait_for_server_s, 30,
          "Before each sweep point, wait up to this many seconds for every target to report "
          "SERVING through the gRPC health check (grpc.health.v1); none serving by then ends the "
          "run with exit status 1");

namespace {

using gemm::loadgen::BSource;
namespace lg = gemm::loadgen;

constexpr int kExitFail = 1;
constexpr int kExitInterrupted = 130;

std::atomic<bool> g_stop{false};

void OnSignal(int) {
  if (g_stop.exchange(true)) _exit(kExitInterrupted);  // second Ctrl-C: leave now
  const char msg[] = "\ngemm_loadgen: stopping (Ctrl-C again to quit at once)\n";
  (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
}

// A bad flag or a setup failure.
int Fail(const absl::Status& status) {
  std::fprintf(stderr, "gemm_loadgen: %s\n", std::string(status.message()).c_str());
  return gemm::kUsageErrorExit;
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
  absl::StatusOr<std::map<std::string, std::string>> kv = lg::ParseKeyValueText(ss.str());
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

// The request side of the workload flags (shapes, B, layout, dtype, priority, RPC).
absl::Status RequestFlags(lg::WorkloadSpec* w) {
  auto shapes = lg::ParseShapes(absl::GetFlag(FLAGS_shapes));
  if (!shapes.ok()) return shapes.status();
  w->shapes = *shapes;
  auto b = lg::ParseBSource(absl::GetFlag(FLAGS_b));
  if (!b.ok()) return b.status();
  w->b_source = *b;
  auto nk = lg::ParseLayoutNk(absl::GetFlag(FLAGS_b_layout));
  if (!nk.ok()) return nk.status();
  w->b_nk = *nk;
  auto fp32 = lg::ParseOutputFp32(absl::GetFlag(FLAGS_output_dtype));
  if (!fp32.ok()) return fp32.status();
  w->output_fp32 = *fp32;
  auto high = lg::ParsePriorityHigh(absl::GetFlag(FLAGS_priority));
  if (!high.ok()) return high.status();
  w->priority_high = *high;
  if (auto s = lg::ParseRpc(absl::GetFlag(FLAGS_rpc), w); !s.ok()) return s;
  auto sync = lg::ParseSyncCallers(absl::GetFlag(FLAGS_client_api));
  if (!sync.ok()) return sync.status();
  w->sync_callers = *sync;
  const double deadline_ms = absl::GetFlag(FLAGS_deadline_ms);
  if (deadline_ms < 0) return absl::InvalidArgumentError("--deadline_ms must be >= 0");
  w->deadline_us = static_cast<int64_t>(deadline_ms * 1000);
  w->kernel = absl::GetFlag(FLAGS_kernel);
  return lg::ParseExperts(absl::GetFlag(FLAGS_experts), w);
}

absl::StatusOr<lg::WorkloadSpec> WorkloadFromFlags(bool open_loop) {
  lg::WorkloadSpec w;
  if (absl::Status s = RequestFlags(&w); !s.ok()) return s;
  w.channels = absl::GetFlag(FLAGS_channels);
  w.streams_per_channel = absl::GetFlag(FLAGS_streams_per_channel);
  if (w.channels < 1 || w.channels > 1024) return absl::InvalidArgumentError("--channels: 1..1024");
  if (w.streams_per_channel < 1 || w.streams_per_channel > 1024) {
    return absl::InvalidArgumentError("--streams_per_channel: 1..1024");
  }
  w.shared_memory = absl::GetFlag(FLAGS_shm);
  w.shm_device = absl::GetFlag(FLAGS_shm_device);
  if (w.shm_device >= 0 && !w.shared_memory) {
    return absl::InvalidArgumentError("--shm_device needs --shm");
  }
  if (w.experts > 0 && (w.b_source != BSource::kResident || w.streaming || w.shared_memory)) {
    return absl::InvalidArgumentError(
        "--experts needs --b=resident and --rpc=unary, without --shm");
  }
  if (w.sync_callers && w.packed) {
    return absl::InvalidArgumentError(
        "--rpc=packed needs --client_api=callback: a sync caller owns its stream and has one "
        "request at a time, so there is nothing to pack");
  }
  if (open_loop && w.sync_callers) {
    return absl::InvalidArgumentError(
        "--client_api=sync is closed loop only (a thread per caller); drop --rate or use "
        "callback");
  }
  return w;
}

// Checks the measurement flags.
absl::Status CheckMeasurementFlags() {
  const std::string arrival = absl::GetFlag(FLAGS_arrival);
  if (arrival != "constant" && arrival != "poisson") {
    return absl::InvalidArgumentError("--arrival: constant or poisson");
  }
  const double verify_fraction = absl::GetFlag(FLAGS_verify_fraction);
  if (!(verify_fraction >= 0 && verify_fraction <= 1)) {
    return absl::InvalidArgumentError("--verify_fraction: 0..1");
  }
  if (!(absl::GetFlag(FLAGS_window_s) > 0) || !(absl::GetFlag(FLAGS_warmup_s) >= 0) ||
      absl::GetFlag(FLAGS_max_windows) < 1 || absl::GetFlag(FLAGS_stable_windows) < 1) {
    return absl::InvalidArgumentError(
        "need --window_s > 0, --warmup_s >= 0, --max_windows >= 1, --stable_windows >= 1");
  }
  const std::string progress = absl::GetFlag(FLAGS_progress);
  if (progress != "auto" && progress != "on" && progress != "off") {
    return absl::InvalidArgumentError("--progress: auto, on or off");
  }
  if (!(absl::GetFlag(FLAGS_wait_for_server_s) >= 0)) {
    return absl::InvalidArgumentError("--wait_for_server_s: must be >= 0");
  }
  if (absl::GetFlag(FLAGS_max_outstanding) < 1) {
    return absl::InvalidArgumentError("--max_outstanding: >= 1");
  }
  if (absl::GetFlag(FLAGS_dispatch_threads) < 1 || absl::GetFlag(FLAGS_dispatch_threads) > 64) {
    return absl::InvalidArgumentError("--dispatch_threads: 1..64");
  }
  const int64_t slots = absl::GetFlag(FLAGS_shm_output_slots);
  if (slots < 0 || slots > 4096) return absl::InvalidArgumentError("--shm_output_slots: 0..4096");
  return absl::OkStatus();
}

absl::StatusOr<lg::RunnerOptions> RunnerOptionsFromFlags(const lg::WorkloadSpec& w, bool open_loop,
                                                         const std::vector<double>& levels) {
  if (absl::Status s = CheckMeasurementFlags(); !s.ok()) return s;
  int64_t slots = absl::GetFlag(FLAGS_shm_output_slots);
  if (slots == 0) {
    slots = open_loop ? 64 : static_cast<int64_t>(*std::max_element(levels.begin(), levels.end()));
  }
  const std::string progress = absl::GetFlag(FLAGS_progress);
  return lg::RunnerOptions{
      .workload = w,
      .open_loop = open_loop,
      .poisson = absl::GetFlag(FLAGS_arrival) == "poisson",
      .warmup_s = absl::GetFlag(FLAGS_warmup_s),
      .window_s = absl::GetFlag(FLAGS_window_s),
      .stable_windows = absl::GetFlag(FLAGS_stable_windows),
      .stability_pct = absl::GetFlag(FLAGS_stability_pct),
      .stability_percentile = absl::GetFlag(FLAGS_stability_percentile),
      .max_windows = absl::GetFlag(FLAGS_max_windows),
      .verify_fraction = absl::GetFlag(FLAGS_verify_fraction),
      .max_outstanding = absl::GetFlag(FLAGS_max_outstanding),
      .dispatch_threads = absl::GetFlag(FLAGS_dispatch_threads),
      .error_backoff_ms = absl::GetFlag(FLAGS_error_backoff_ms),
      .rpc_timeout_s = absl::GetFlag(FLAGS_rpc_timeout_s),
      .seed = absl::GetFlag(FLAGS_seed),
      .shm_output_slots = slots,
      .progress = progress == "on" || (progress == "auto" && isatty(STDERR_FILENO)),
      .stop = &g_stop,
  };
}

// The --target list: comma-separated, except "ipv4:a:p,b:p"-style targets, which hold commas
// themselves.
std::vector<std::string> TargetNames() {
  const std::string flag = absl::GetFlag(FLAGS_target);
  if (absl::StartsWith(flag, "ipv4:") || absl::StartsWith(flag, "ipv6:")) return {flag};
  std::vector<std::string> names;
  for (absl::string_view name : absl::StrSplit(flag, ',', absl::SkipWhitespace())) {
    names.emplace_back(absl::StripAsciiWhitespace(name));
  }
  return names;
}

absl::StatusOr<std::vector<lg::Target>> MakeTargets(const std::vector<std::string>& names,
                                                    int channels) {
  if (names.empty()) return absl::InvalidArgumentError("--target is empty");
  absl::StatusOr<std::vector<gemm::ChannelArg>> channel_args =
      gemm::ParseChannelArgs(absl::GetFlag(FLAGS_grpc_arg));
  if (!channel_args.ok()) return channel_args.status();
  std::vector<lg::Target> targets;
  for (const std::string& name : names) {
    auto client = gemm::client::GemmClient::Create(
        {.target = name,
         .max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes),
         .lb_policy = absl::GetFlag(FLAGS_lb_policy),
         .channels = channels,
         .transport = gemm::TransportOptionsFromFlags(),
         .channel_args = *channel_args,
         .security = gemm::client::ChannelSecurityFromFlags()});
    if (!client.ok()) return client.status();
    targets.push_back({name, std::shared_ptr<gemm::client::GemmClient>(*std::move(client))});
  }
  return targets;
}

// Waits (--wait_for_server_s) until every target reports SERVING; says which one did not.
absl::Status WaitForServers(const std::vector<lg::Target>& targets) {
  const absl::Duration timeout = absl::Seconds(absl::GetFlag(FLAGS_wait_for_server_s));
  const absl::Time deadline = absl::Now() + timeout;
  for (const lg::Target& t : targets) {
    const absl::Status s =
        t.client->WaitForServing(std::max(deadline - absl::Now(), absl::ZeroDuration()));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
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

lg::RunInfo MakeRunInfo(const lg::RunnerOptions& ro, const std::vector<std::string>& targets,
                        const std::vector<std::string>& args) {
  return lg::RunInfo{
      .started_utc = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()),
      .command_line = absl::StrJoin(args, " "),
      .targets = targets,
      .lb_policy = absl::GetFlag(FLAGS_lb_policy),
      .open_loop = ro.open_loop,
      .poisson = ro.poisson,
      .workload = ro.workload,
      .warmup_s = ro.warmup_s,
      .window_s = ro.window_s,
      .stability_pct = ro.stability_pct,
      .stable_windows = ro.stable_windows,
      .max_windows = ro.max_windows,
      .verify_fraction = ro.verify_fraction,
  };
}

// The first target's description (a failure is reported, not fatal).
void DescribeServer(const lg::Target& target, lg::RunInfo* info) {
  absl::StatusOr<gemm::v1::ServerInfo> si = target.client->GetServerInfo();
  if (si.ok()) {
    info->server_version = si->version();
    info->server_backend = si->backend();
    info->server_devices = DescribeDevices(*si);
  } else {
    info->server_error = si.status().ToString();
    std::fprintf(stderr, "gemm_loadgen: GetServerInfo on %s failed: %s\n", target.name.c_str(),
                 info->server_error.c_str());
  }
}

// Prints the table and writes the report files; false when a file could not be written.
bool WriteReports(const lg::Report& report) {
  std::fputs(lg::FormatTable(report).c_str(), stdout);
  std::fflush(stdout);
  bool ok = true;
  const std::pair<std::string, std::string> outputs[] = {
      {absl::GetFlag(FLAGS_json), lg::FormatJson(report)},
      {absl::GetFlag(FLAGS_csv), lg::FormatCsv(report)},
      {absl::GetFlag(FLAGS_html), lg::FormatHtml(report)}};
  for (const auto& [path, content] : outputs) {
    if (path.empty()) continue;
    if (absl::Status s = lg::WriteTextFile(path, content); !s.ok()) {
      std::fprintf(stderr, "gemm_loadgen: %s\n", s.ToString().c_str());
      ok = false;
    }
  }
  return ok;
}

// The exit status of a completed run (see the header).
int Verdict(const lg::Report& report) {
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
  if (!report.info.stopped_early.empty()) {
    std::fprintf(stderr, "gemm_loadgen: FAIL: %s\n", report.info.stopped_early.c_str());
    return kExitFail;
  }
  if (ok == 0) {
    std::fprintf(stderr, "gemm_loadgen: FAIL: no request succeeded\n");
    return kExitFail;
  }
  if (mismatches > 0) {
    std::fprintf(stderr, "gemm_loadgen: FAIL: %lld verification mismatches\n",
                 static_cast<long long>(mismatches));
    return kExitFail;
  }
  if (too_many_errors) {
    std::fprintf(stderr, "gemm_loadgen: FAIL: error fraction above --max_error_fraction=%g\n",
                 absl::GetFlag(FLAGS_max_error_fraction));
    return kExitFail;
  }
  return 0;
}

// Runs the sweep's points, each after its servers are serving; fills report->points.
void RunSweep(lg::Runner& runner, const std::vector<lg::Target>& targets,
              const std::vector<double>& levels, lg::Report* report) {
  for (size_t i = 0; i < levels.size() && !g_stop.load(); ++i) {
    if (i > 0) {
      if (absl::Status s = WaitForServers(targets); !s.ok()) {
        report->info.stopped_early = std::string(s.message());
        return;
      }
    }
    report->points.push_back(
        runner.RunPoint(levels[i], static_cast<int>(i), static_cast<int>(levels.size())));
  }
}

void CatchSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  gemm::DisableMutexDeadlockDetection();
  const gemm::CommandLineUsage usage{
      .usage =
          "Load generator for gemm.v1.GemmService.\n"
          "  gemm_loadgen --target=localhost:50051 --shapes=64x64x64 --concurrency=1:16:x2\n"
          "  gemm_loadgen --rate=100:800:x2 --arrival=poisson --html=report.html"};
  if (absl::Status s = ApplyWorkloadFile(argc, argv); !s.ok()) return Fail(s);
  const std::vector<char*> rest = gemm::ParseCommandLine(argc, argv, usage);
  if (rest.size() > 1) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("unexpected argument '", rest[1], "'")));
  }
  const std::string conc_flag = absl::GetFlag(FLAGS_concurrency);
  const std::string rate_flag = absl::GetFlag(FLAGS_rate);
  if (!conc_flag.empty() && !rate_flag.empty()) {
    return Fail(absl::InvalidArgumentError(
        "give --concurrency (closed loop) or --rate (open loop), not both"));
  }
  const bool open_loop = !rate_flag.empty();
  absl::StatusOr<lg::WorkloadSpec> workload = WorkloadFromFlags(open_loop);
  if (!workload.ok()) return Fail(workload.status());
  absl::StatusOr<std::vector<double>> levels =
      lg::ParseSweep(open_loop ? rate_flag : (conc_flag.empty() ? "1" : conc_flag));
  if (!levels.ok()) return Fail(levels.status());
  absl::StatusOr<lg::RunnerOptions> ro = RunnerOptionsFromFlags(*workload, open_loop, *levels);
  if (!ro.ok()) return Fail(ro.status());
  const std::vector<std::string> names = TargetNames();
  absl::StatusOr<std::vector<lg::Target>> targets = MakeTargets(names, workload->channels);
  if (!targets.ok()) return Fail(targets.status());

  lg::Report report;
  report.info = MakeRunInfo(*ro, names, std::vector<std::string>(argv, argv + argc));
  if (absl::Status s = WaitForServers(*targets); !s.ok()) {
    std::fprintf(stderr, "gemm_loadgen: FAIL: %s\n", std::string(s.message()).c_str());
    return kExitFail;
  }
  DescribeServer((*targets)[0], &report.info);
  CatchSignals();

  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<lg::Runner>> runner = lg::Runner::Create(*ro, *targets);
  if (!runner.ok()) return Fail(runner.status());
  RunSweep(**runner, *targets, *levels, &report);
  report.info.interrupted = g_stop.load();
  (*runner)->Finish(report.info.interrupted ? 2.0 : 10.0);
  runner->reset();
  report.info.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const bool written = WriteReports(report);
  if (report.info.interrupted) return kExitInterrupted;
  if (!written) return gemm::kUsageErrorExit;
  return Verdict(report);
}
