// Workload description of a load-generator run and its parsers: the shape mix (shapes and their
// weights), how B travels (inline or resident, in the messages or shared memory), output dtype,
// priority, deadline, unary or streaming RPCs, channels; and the sweep lists of --concurrency /
// --rate ("1:64:x2").
//
// A workload file holds one `key = value` per line (`#` starts a comment); the keys are the
// loadgen flag names without dashes (see docs/loadgen.md), e.g.
//   shapes = 16x4096x4096@3, 128x4096x4096@1
//   b = resident
//   output_dtype = bf16
// Flags given on the command line override the file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gemm::loadgen {

// Where B comes from in a request.
enum class BSource { kInline, kResident };

// One entry of the shape mix.
struct ShapeSpec {
  int64_t m = 0, n = 0, k = 0;
  double weight = 1.0;  // relative frequency in the mix (> 0)
  // "MxNxK" (weight omitted).
  std::string Name() const;
  // Floating-point operations of one request: 2*M*N*K.
  double Flops() const { return 2.0 * static_cast<double>(m) * n * k; }
};

// What every request of a run looks like.
struct WorkloadSpec {
  std::vector<ShapeSpec> shapes;  // at least one
  BSource b_source = BSource::kInline;
  bool b_nk = false;           // B layout [N,K] (PyTorch weight) instead of [K,N]
  bool output_fp32 = false;    // output dtype FP32 instead of BF16
  bool priority_high = false;  // PRIORITY_HIGH instead of PRIORITY_NORMAL
  int64_t deadline_us = 0;     // per-request deadline (0: none)
  bool streaming = false;      // GemmStream (or GemmStreamPacked) instead of unary Gemm
  // Streaming over GemmStreamPacked: the requests queued on a stream while its previous write was
  // out go in one message.
  bool packed = false;
  int channels = 1;             // gRPC channels per target
  int streams_per_channel = 1;  // GemmStream streams per channel (streaming only)
  // Closed loop: each caller is a thread making blocking calls through gRPC's synchronous API
  // (one GemmStream per caller when streaming) instead of callbacks on gRPC's threads.
  bool sync_callers = false;
  std::string kernel;  // GemmRequest.kernel ("" = server's choice)
  // A (and inline B) read from, and D written into, a POSIX shared-memory region registered on
  // every target (same host only): the gRPC messages carry references, not matrices.
  bool shared_memory = false;
  // With shared_memory: >= 0 puts the region in GPU memory of this device instead, exported to
  // the servers through CUDA IPC (A and D then never cross PCIe); -1: host shared memory.
  int shm_device = -1;
  // Mixture-of-experts steps (> 0): every request is a ProblemGroup of `experts_per_request`
  // problems of the drawn shape, each against a different one of `experts` resident matrices
  // (the shape's B registered `experts` times). Resident B, unary RPCs, no --shm.
  int experts = 0;
  int experts_per_request = 0;

  // Bytes of one request's operands (A and inline B) for shape `s`.
  int64_t RequestBytes(const ShapeSpec& s) const;
  // Bytes of one response's output for shape `s`.
  int64_t ResponseBytes(const ShapeSpec& s) const;
  // One-line description, e.g. "64x64x64@1 b=inline layout=kn out=bf16 prio=normal unary ch=1".
  std::string Describe() const;
};

// Parses "MxNxK[@weight]" entries separated by commas, e.g. "16x4096x4096@3,128x4096x4096".
absl::StatusOr<std::vector<ShapeSpec>> ParseShapes(absl::string_view text);

// Parses a sweep: a single value "8", a list "1,2,8", or a range "start:end:step" where step is
// "xF" (multiply by F > 1) or "+D" / "D" (add D > 0); the end is included when reached. Values
// must be > 0. At most 1000 points.
absl::StatusOr<std::vector<double>> ParseSweep(absl::string_view text);

// Parses a workload file's text into key -> value (keys lower-cased, '-' read as '_').
// Unknown keys are the caller's to reject.
absl::StatusOr<std::map<std::string, std::string>> ParseKeyValueText(absl::string_view text);

// Parsers of single values shared by flags and workload files.
absl::StatusOr<BSource> ParseBSource(absl::string_view text);    // inline|resident
absl::StatusOr<bool> ParseLayoutNk(absl::string_view text);      // kn|nk
absl::StatusOr<bool> ParseOutputFp32(absl::string_view text);    // bf16|fp32
absl::StatusOr<bool> ParsePriorityHigh(absl::string_view text);  // normal|high
// unary|stream|packed: sets `w->streaming` and `w->packed`.
absl::Status ParseRpc(absl::string_view text, WorkloadSpec* w);
absl::StatusOr<bool> ParseSyncCallers(absl::string_view text);  // callback|sync
// "E:T" (E experts, T of them per request, 1 <= T <= E) or "" / "0" (off): sets `w->experts`
// and `w->experts_per_request`.
absl::Status ParseExperts(absl::string_view text, WorkloadSpec* w);

}  // namespace gemm::loadgen
