// Kernel qualification in a child process: native kernel variants are first run outside the
// server's own process, under deadlines the parent enforces, so a kernel that hangs or raises a
// sticky CUDA error can neither stall start-up nor poison the context that serves requests.
//
// The child (a helper binary the parent execs, or in tests any function run after fork) runs the
// cases in order and writes one line per event to a pipe (WriteVariant / WriteCase / WriteResult;
// RunCases does all of it for a CaseRunner). After a failed case it exits: its context may be
// poisoned. The parent (Qualify) reads the lines, kills the child when one case or the whole run
// overstays its deadline, starts a fresh child after the failed case, and ends with one verdict
// per variant: usable only when every case that runs it passed. No CUDA, no gRPC.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gemm::core {

// One case as the protocol knows it: a name and the variant indices it runs.
struct CaseSpec {
  std::string name;
  std::vector<int> variants;
};

// Runs case `index` of the child's list; OK when the kernel matched its reference. `*detail`
// gets a one-line summary either way. Called in the child only.
using CaseRunner = std::function<absl::Status(int index, std::string* detail)>;

// Child side: announces `variant_names` (index order) and runs `cases` from `first_case` on,
// writing the protocol to `fd`; returns after the last case or the first failure.
void RunCases(std::span<const std::string> variant_names, std::span<const CaseSpec> cases,
              const CaseRunner& runner, int first_case, int fd);

// Child side: the protocol lines, for children that run cases their own way.
void WriteVariant(int fd, int index, const std::string& name);
void WriteCase(int fd, int index, const CaseSpec& spec);
void WriteResult(int fd, int index, const absl::Status& status, const std::string& detail);

// The body of one child: runs the cases from `first_case` on, writing the protocol to `out_fd`.
// Called in a freshly forked child; it either execs (a helper binary) or returns (then the child
// exits with status 0).
using ChildBody = std::function<void(int first_case, int out_fd)>;

struct QualificationOptions {
  // The most one case may take before its child is killed. Default 30 s.
  absl::Duration case_deadline = absl::Seconds(30);
  // The most the whole qualification may take; cases not reached by then are unusable.
  // Default 120 s.
  absl::Duration total_deadline = absl::Seconds(120);
};

// Why a case or variant failed, as a short fixed word (a bounded metrics label): "timeout" (a
// deadline passed; the child was killed), "crashed" (the child died in the case), "mismatch"
// (the runner returned DATA_LOSS: wrong numbers), "refused" (UNIMPLEMENTED: the launcher chose
// another variant), "error" (any other failure status, e.g. a CUDA error), "not_run" (the case
// never finished: no child, or the run ended first).
inline constexpr const char* kFailureReasons[] = {"timeout", "crashed", "mismatch",
                                                  "refused", "error",   "not_run"};

// Verdict on one variant.
struct VariantVerdict {
  std::string name;
  bool usable = false;
  std::string detail;  // the cases it passed, or why it is unusable
  std::string reason;  // empty when usable, else one of kFailureReasons
};

// Outcome of one case.
struct CaseOutcome {
  std::string name;
  bool passed = false;
  std::string reason;  // empty when passed, else one of kFailureReasons
};

struct QualificationReport {
  std::vector<VariantVerdict> variants;  // index order, as the child announced them
  std::vector<CaseOutcome> cases;        // index order, the cases the child announced
  std::vector<std::string> log;          // one line per case: passed, failed, timed out, killed
  int children = 0;                      // child processes started
  // Bit i set when variant i is usable (variants past 63 are not represented).
  uint64_t UsableMask() const;
};

// Parent side: runs the qualification in child processes started by forking and calling `body`.
// Blocking; never runs a case in the calling process. Fails only when no child can be started
// (fork or pipe failure); every other failure becomes an unusable verdict.
absl::StatusOr<QualificationReport> Qualify(const ChildBody& body,
                                            const QualificationOptions& options);

}  // namespace gemm::core
