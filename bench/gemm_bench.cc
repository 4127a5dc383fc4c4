// gemm_bench: times our kernels (public API, kind kSm90) against cuBLAS in the same process on
// the shape sets in bench/shapes/, with the device-to-device copy bandwidth as the memory
// ceiling. Prints a table (stderr with --json) and, with --json, one JSON object per line.
//
//   gemm_bench [--set all|large|decode|grouped|batched|moe|m_sweep] [--layout nk|kn|both]
//              [--dtype bf16|f32]
//              [--json] [--csv] [--check] [--reps N] [--warmup N] [--shapes DIR]
//              [--direct] [--ctas N] [--stream_k] [--sm90_main] [--no_split] [--split N|stream]
//              [--tile MxN] [--swap_ab on|off] [--same_set]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench_runner.h"
#include "sm90/small_m_gemm.h"

namespace {

using gemm::bench::BenchOptions;
using gemm::bench::BenchRow;
using gemm::kernel::BLayout;
using gemm::kernel::DType;

constexpr char kUsage[] =
    "usage: gemm_bench [--set all|large|decode|grouped|batched|moe|m_sweep]\n"
    "                  [--layout nk|kn|both] [--dtype bf16|f32] [--json] [--csv] [--check]\n"
    "                  [--reps N] [--warmup N] [--shapes DIR] [--direct] [--ctas N]\n"
    "                  [--sm90_main] [--no_split] [--split N|stream] [--tile MxN]\n"
    "                  [--swap_ab on|off] [--stages N] [--read_floor] [--idle_stream]\n"
    "                  [--cluster N] [--group_m N] [--debug_flags N] [--same_set] [--stream_k]\n"
    "  --set     all: decode, large, batched, grouped, moe; m_sweep (M from 1 to 8192 against\n"
    "            five weight shapes) runs only when named\n"
    "  --json    one JSON object per line on stdout (the table goes to stderr)\n"
    "  --csv     CSV lines on stdout instead of the table\n"
    "  --check   compare ours with cuBLASLt (relative Frobenius error) before timing\n"
    "  --direct  run the small-M kernel directly for M <= 128 (bypass the dispatch)\n"
    "  --sm90_main  time the SM90 WGMMA kernel directly (bypass the dispatch and small-M)\n"
    "  --no_split   never split the WGMMA kernel's last wave along K (A/B timing)\n"
    "  --split N    cut every tile of the WGMMA kernel's last partial wave into N K pieces\n"
    "               (at most 8; 1: never split; default: as many as fill the idle SMs);\n"
    "               stream: share that wave's K blocks evenly among the clusters (stream-K)\n"
    "  --tile MxN   force the WGMMA kernel's tile (128x256, 256x128, 128x128, 64x256, 64x128;\n"
    "               with --swap_ab on: 128xW, W = 144, 160, ..., 240)\n"
    "  --swap_ab on|off  force the WGMMA kernel's swap-AB tiles on or off\n"
    "  --stages, --cluster, --group_m  force these WGMMA launch parameters\n"
    "  --debug_flags N  sm90 kDebug* bits (1 skip epilogue, 2 no loads, 4 no multicast,\n"
    "               8 no split-K, 64 no split-K exchange (each K piece stores its own\n"
    "               partial), 128 exit after the prologue; host side: 16 / 32 / 512\n"
    "               L2 promotion none / 256B / 128B (default: the device's), 256 group\n"
    "               members load whole A boxes): timing experiments only, results are\n"
    "               wrong except with 8, 16, 32, 256 and 512\n"
    "  --ctas    with --direct: force the small-M grid size (stream-K CTAs)\n"
    "  --stream_k  with --direct: the small-M stream-K grid even where the dispatch would\n"
    "            use a tile-aligned grid (whole tiles or cluster split-K)\n"
    "  --read_floor  also time a read-only kernel over each row's B (JSON read_b_ms,\n"
    "            ours_pct_read): the least time any kernel reading the weight once can take\n"
    "  --idle_stream  time each call from an idle stream (no spin kernel holding it): the\n"
    "            span then includes the host's launch path, as on a server's idle GPU\n"
    "  --same_set  time both implementations of a rep on one operand set (cuBLAS then runs\n"
    "            on operands ours has just brought into L2; default: a fresh set per launch)\n";

struct Flags {
  BenchOptions bench;
  std::vector<std::string> sets = {"decode", "large", "batched", "grouped", "moe"};
  bool json = false;
  bool csv = false;
};

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "--json") {
      f->json = true;
    } else if (arg == "--csv") {
      f->csv = true;
    } else if (arg == "--check") {
      f->bench.check = true;
    } else if (arg == "--sm90_main") {
      f->bench.sm90_main = true;
    } else if (arg == "--no_split") {
      f->bench.no_split = true;
    } else if (arg == "--split" && value(&v)) {
      f->bench.tail_splits = v == "stream" ? -1 : std::atoi(v.c_str());
      if (f->bench.tail_splits == 0 || f->bench.tail_splits < -1) return false;
    } else if (arg == "--swap_ab" && value(&v)) {
      if (v != "on" && v != "off") return false;
      f->bench.swap_ab = v == "on" ? 1 : -1;
    } else if (arg == "--tile" && value(&v)) {
      if (std::sscanf(v.c_str(), "%dx%d", &f->bench.tile_m, &f->bench.tile_n) != 2) return false;
    } else if (arg == "--stages" && value(&v)) {
      f->bench.stages = std::atoi(v.c_str());
    } else if (arg == "--cluster" && value(&v)) {
      f->bench.cluster_m = std::atoi(v.c_str());
    } else if (arg == "--group_m" && value(&v)) {
      f->bench.group_m = std::atoi(v.c_str());
    } else if (arg == "--debug_flags" && value(&v)) {
      f->bench.debug_flags = std::atoi(v.c_str());
    } else if (arg == "--stream_k") {
      f->bench.stream_k = true;
    } else if (arg == "--idle_stream") {
      f->bench.idle_stream = true;
    } else if (arg == "--read_floor") {
      f->bench.read_floor = true;
    } else if (arg == "--direct") {
      f->bench.direct_small_m = true;
    } else if (arg == "--set" && value(&v)) {
      if (v == "all") {
        f->sets = {"decode", "large", "batched", "grouped", "moe"};
      } else if (v == "large" || v == "decode" || v == "grouped" || v == "batched" || v == "moe" ||
                 v == "m_sweep") {
        f->sets = {v};
      } else {
        return false;
      }
    } else if (arg == "--layout" && value(&v)) {
      if (v == "nk") {
        f->bench.layouts = {BLayout::kNK};
      } else if (v == "kn") {
        f->bench.layouts = {BLayout::kKN};
      } else if (v == "both") {
        f->bench.layouts = {BLayout::kNK, BLayout::kKN};
      } else {
        return false;
      }
    } else if (arg == "--dtype" && value(&v)) {
      if (v != "bf16" && v != "f32") return false;
      f->bench.d_dtype = v == "f32" ? DType::kFP32 : DType::kBF16;
    } else if (arg == "--reps" && value(&v)) {
      f->bench.reps = std::atoi(v.c_str());
      if (f->bench.reps < 1) return false;
    } else if (arg == "--warmup" && value(&v)) {
      f->bench.warmup = std::atoi(v.c_str());
    } else if (arg == "--ctas" && value(&v)) {
      f->bench.force_ctas = std::atoll(v.c_str());
    } else if (arg == "--same_set") {
      f->bench.same_set = true;
    } else if (arg == "--shapes" && value(&v)) {
      f->bench.shapes_dir = v;
    } else {
      return false;
    }
  }
  return true;
}

const char* LayoutName(BLayout l) { return l == BLayout::kNK ? "nk" : "kn"; }

double Tflops(double flops, double ms) { return flops / (ms * 1e-3) / 1e12; }
double Gbps(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

std::string JsonRow(const BenchRow& r, const std::string& device, double copy_gbps,
                    const char* dtype, const std::string& date) {
  const double ratio = r.cublas_ms / r.ours_ms;
  auto num = [](double v) { return std::isfinite(v) ? absl::StrFormat("%.6g", v) : "null"; };
  return absl::StrFormat(
      "{\"set\":\"%s\",\"M\":%d,\"N\":%d,\"K\":%d,\"batch\":%d,\"problems\":%d,"
      "\"b_layout\":\"%s\",\"d_dtype\":\"%s\",\"ours_ms\":%s,\"cublas_ms\":%s,"
      "\"ours_tflops\":%s,\"cublas_tflops\":%s,\"ratio\":%s,\"ours_gbps\":%s,"
      "\"cublas_gbps\":%s,\"copy_gbps\":%s,\"ours_pct_copy\":%s,\"rel_err\":%s,\"bad\":%d,"
      "\"read_b_ms\":%s,\"ours_pct_read\":%s,\"ctas\":%d,\"ours\":\"%s\",\"device\":\"%s\","
      "\"date\":\"%s\",\"error\":\"%s\"}",
      r.set, r.shape.m, r.shape.n, r.shape.k, r.shape.batch, r.problems, LayoutName(r.layout),
      dtype, num(r.ours_ms), num(r.cublas_ms), num(Tflops(r.flops, r.ours_ms)),
      num(Tflops(r.flops, r.cublas_ms)), num(ratio), num(Gbps(r.bytes, r.ours_ms)),
      num(Gbps(r.bytes, r.cublas_ms)), num(copy_gbps),
      num(100.0 * Gbps(r.bytes, r.ours_ms) / copy_gbps), num(r.rel_err), r.bad, num(r.read_b_ms),
      num(100.0 * r.read_b_ms / r.ours_ms), r.ctas, r.ours, device, date, r.error);
}

// With --read_floor: how close each row's kernel and the read-only kernel over its B come to the
// copy rate, over the rows of one set.
struct ReadFloorSummary {
  double floor_sum = 0, floor_min = 1e9, ours_sum = 0, ours_min = 1e9;
  int n = 0;

  void Add(const BenchRow& r, double copy_gbps) {
    if (!std::isfinite(r.read_b_ms) || !(r.ours_ms > 0)) return;
    const double floor_pct =
        100.0 * Gbps(static_cast<double>(r.read_b_bytes), r.read_b_ms) / copy_gbps;
    const double ours_pct = 100.0 * r.read_b_ms / r.ours_ms;
    floor_sum += floor_pct;
    floor_min = std::min(floor_min, floor_pct);
    ours_sum += ours_pct;
    ours_min = std::min(ours_min, ours_pct);
    ++n;
  }
  void Print(FILE* out, const std::string& set) const {
    if (n == 0) return;
    std::fprintf(out,
                 "%s: a read-only kernel over B alone reaches %%copy mean %.1f min %.1f; ours "
                 "runs at %.1f%% of its speed (min %.1f)\n",
                 set.c_str(), floor_sum / n, floor_min, ours_sum / n, ours_min);
  }
};

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  absl::StatusOr<std::unique_ptr<gemm::bench::Bench>> bench =
      gemm::bench::Bench::Create(flags.bench);
  if (!bench.ok()) {
    std::fprintf(stderr, "gemm_bench: %s\n", std::string(bench.status().message()).c_str());
    return 1;
  }
  FILE* table = flags.json || flags.csv ? stderr : stdout;
  const char* dtype = flags.bench.d_dtype == DType::kFP32 ? "f32" : "bf16";
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));

  absl::StatusOr<double> copy = (*bench)->CopyGbps();
  if (!copy.ok()) {
    std::fprintf(stderr, "gemm_bench: copy bandwidth: %s\n",
                 std::string(copy.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<double> read = (*bench)->ReadGbps();
  if (!read.ok()) {
    std::fprintf(stderr, "gemm_bench: read bandwidth: %s\n",
                 std::string(read.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<double> empty = (*bench)->EmptyLaunchUs();
  if (!empty.ok()) {
    std::fprintf(stderr, "gemm_bench: empty launch: %s\n",
                 std::string(empty.status().message()).c_str());
    return 1;
  }
  std::fprintf(table,
               "device %s, %d SMs, L2 %.0f MB, D2D copy %.0f GB/s (read+write), read %.0f GB/s, "
               "empty launch %.2f us, D %s, %s\n",
               (*bench)->device_name().c_str(), (*bench)->sm_count(), (*bench)->l2_bytes() / 1e6,
               *copy, *read, *empty, dtype, date);
  // How many small-M clusters fit at once decides where the decode kernel splits K in clusters.
  const absl::StatusOr<gemm::kernel::sm90::SmallMClusterLimits> clusters =
      gemm::kernel::sm90::QuerySmallMClusterLimits();
  const gemm::kernel::sm90::SmallMClusterLimits limits =
      clusters.ok() ? *clusters : gemm::kernel::sm90::SmallMClusterLimits{};
  std::fprintf(table, "small-M clusters that fit at once: %lld of 2, %lld of 4, %lld of 8\n",
               static_cast<long long>(limits.of2), static_cast<long long>(limits.of4),
               static_cast<long long>(limits.of8));
  if (flags.json) {
    std::printf(
        "{\"set\":\"copy\",\"copy_gbps\":%.6g,\"read_gbps\":%.6g,\"empty_launch_us\":%.4g,"
        "\"small_m_clusters\":[%lld,%lld,%lld],\"device\":\"%s\",\"sms\":%d,\"date\":\"%s\"}\n",
        *copy, *read, *empty, static_cast<long long>(limits.of2),
        static_cast<long long>(limits.of4), static_cast<long long>(limits.of8),
        (*bench)->device_name().c_str(), (*bench)->sm_count(), date);
  }
  if (flags.csv) {
    std::printf(
        "set,M,N,K,batch,problems,b_layout,ours_ms,cublas_ms,ours_tflops,cublas_tflops,"
        "ratio,ours_gbps,pct_copy,rel_err,ctas,error\n");
  }
  int failures = 0;
  for (const std::string& set : flags.sets) {
    absl::StatusOr<std::vector<BenchRow>> rows = (*bench)->RunSet(set);
    if (!rows.ok()) {
      std::fprintf(stderr, "gemm_bench: set %s: %s\n", set.c_str(),
                   std::string(rows.status().message()).c_str());
      ++failures;
      continue;
    }
    std::fprintf(table,
                 "\n== %s ==\n%-6s %6s %6s %6s %5s %3s %9s %9s %8s %8s %6s %8s %6s %9s %3s\n",
                 set.c_str(), "set", "M", "N", "K", "batch", "B", "ours_ms", "cublas_ms", "ours_TF",
                 "cublasTF", "ratio", "ours_GBs", "%copy", "rel_err", "ctas");
    // log_bound: the ratio a kernel moving its bytes at the higher of the two measured rates
    // (copy, read) would reach against cuBLAS: the most any kernel can show on a memory-bound set.
    // log_floor: the same with an empty kernel's time added to each row (no launch is cheaper).
    double log_sum = 0, log_bound = 0, log_floor = 0, pct_min = 1e9, pct_sum = 0;
    int n = 0;
    ReadFloorSummary read_floor;
    for (const BenchRow& r : *rows) {
      const double ratio = r.cublas_ms / r.ours_ms;
      const double gbps = Gbps(r.bytes, r.ours_ms);
      std::fprintf(table,
                   "%-6s %6lld %6lld %6lld %5lld %3s %9.4f %9.4f %8.1f %8.1f %6.3f %8.0f %6.1f "
                   "%9.2e %4lld %s\n",
                   r.set.c_str(), static_cast<long long>(r.shape.m),
                   static_cast<long long>(r.shape.n), static_cast<long long>(r.shape.k),
                   static_cast<long long>(r.shape.batch), LayoutName(r.layout), r.ours_ms,
                   r.cublas_ms, Tflops(r.flops, r.ours_ms), Tflops(r.flops, r.cublas_ms), ratio,
                   gbps, 100.0 * gbps / *copy, r.rel_err, static_cast<long long>(r.ctas),
                   r.error.empty() ? "" : ("ERROR " + r.error).c_str());
      if (flags.json)
        std::printf("%s\n", JsonRow(r, (*bench)->device_name(), *copy, dtype, date).c_str());
      if (flags.csv) {
        std::printf(
            "%s,%lld,%lld,%lld,%lld,%d,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.3e,%lld,\"%s\"\n",
            r.set.c_str(), static_cast<long long>(r.shape.m), static_cast<long long>(r.shape.n),
            static_cast<long long>(r.shape.k), static_cast<long long>(r.shape.batch), r.problems,
            LayoutName(r.layout), r.ours_ms, r.cublas_ms, Tflops(r.flops, r.ours_ms),
            Tflops(r.flops, r.cublas_ms), ratio, gbps, 100.0 * gbps / *copy, r.rel_err,
            static_cast<long long>(r.ctas), r.error.c_str());
      }
      const bool check_failed =
          flags.bench.check && (!(r.rel_err < 2e-2) || r.bad != 0);  // NaN never passes
      if (!r.error.empty() || check_failed) ++failures;
      if (std::isfinite(ratio) && ratio > 0) {
        log_sum += std::log(ratio);
        const double stream_ms = r.bytes / (std::max(*copy, *read) * 1e9) * 1e3;
        log_bound += std::log(r.cublas_ms / stream_ms);
        log_floor += std::log(r.cublas_ms / (stream_ms + *empty * 1e-3));
        pct_min = std::min(pct_min, 100.0 * gbps / *copy);
        pct_sum += 100.0 * gbps / *copy;
        ++n;
      }
      read_floor.Add(r, *copy);
    }
    read_floor.Print(table, set);
    if (n > 0) {
      std::fprintf(table, "%s: geomean ratio %.3f over %d rows; ours %%copy mean %.1f min %.1f\n",
                   set.c_str(), std::exp(log_sum / n), n, pct_sum / n, pct_min);
      std::fprintf(table,
                   "%s: memory bound: a kernel at max(copy, read) rate would show geomean %.3f "
                   "against cuBLAS (%.3f with an empty launch's time added)\n",
                   set.c_str(), std::exp(log_bound / n), std::exp(log_floor / n));
    }
  }
  std::fflush(stdout);
  if (failures > 0) std::fprintf(stderr, "gemm_bench: %d row(s) failed or mismatched\n", failures);
  return failures > 0 ? 1 : 0;
}
