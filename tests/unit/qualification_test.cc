// Tests of the child-process kernel qualification (server/core/qualification.h) with fake case
// runners: one that never returns and one that leaves a sticky error make qualification fail
// within its deadline and mark exactly their variants unusable, the other variants stay usable,
// and no case ever runs in the calling (server) process.
#include "server/core/qualification.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace gemm::core {
namespace {

// Incremented by every fake runner call: stays 0 in the parent when cases run only in children.
std::atomic<int> g_cases_run_here{0};

const std::vector<std::string> kVariants = {"v.a", "v.b", "v.c"};
const std::vector<CaseSpec> kCases = {
    {"a only", {0}}, {"b and c", {1, 2}}, {"c again", {2}}, {"a again", {0}}};

// A child body running kCases with `runner`.
ChildBody Body(CaseRunner runner) {
  return [runner](int first, int fd) { RunCases(kVariants, kCases, runner, first, fd); };
}

QualificationOptions Fast() {
  return {.case_deadline = absl::Milliseconds(500), .total_deadline = absl::Seconds(20)};
}

TEST(QualificationTest, PassingCasesMakeEveryVariantUsableInOneChild) {
  auto report = Qualify(Body([](int i, std::string* d) {
                          ++g_cases_run_here;
                          *d = absl::StrCat("pid ", getpid(), " case ", i);
                          return absl::OkStatus();
                        }),
                        Fast());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->children, 1);
  ASSERT_EQ(report->variants.size(), 3u);
  EXPECT_EQ(report->UsableMask(), 0b111u);
  EXPECT_EQ(report->variants[2].name, "v.c");
  EXPECT_EQ(report->variants[2].detail, "passed 2 cases");
  // The cases ran in another process: never here, and under another pid.
  EXPECT_EQ(g_cases_run_here.load(), 0);
  ASSERT_EQ(report->log.size(), 4u);
  EXPECT_FALSE(absl::StrContains(report->log[0], absl::StrCat("pid ", getpid(), " ")))
      << report->log[0];
}

TEST(QualificationTest, RunnerThatNeverReturnsFailsWithinTheCaseDeadline) {
  const absl::Time start = absl::Now();
  auto report = Qualify(Body([](int i, std::string*) {
                          ++g_cases_run_here;
                          if (i == 1) {
                            for (;;) pause();  // a kernel stuck on a barrier
                          }
                          return absl::OkStatus();
                        }),
                        Fast());
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_LT(took, absl::Seconds(10));  // bounded: the hang costs one case deadline
  EXPECT_EQ(report->children, 2);      // a fresh child ran the cases after the hung one
  EXPECT_TRUE(report->variants[0].usable);
  EXPECT_FALSE(report->variants[1].usable);
  EXPECT_FALSE(report->variants[2].usable);
  EXPECT_TRUE(absl::StrContains(report->variants[1].detail, "timed out"))
      << report->variants[1].detail;
  EXPECT_EQ(report->variants[1].reason, "timeout");
  EXPECT_EQ(report->variants[0].reason, "");
  EXPECT_TRUE(absl::StrContains(report->variants[1].detail, "b and c"));
  EXPECT_EQ(report->UsableMask(), 0b001u);
  EXPECT_EQ(g_cases_run_here.load(), 0);
}

TEST(QualificationTest, StickyErrorPoisonsOnlyItsChild) {
  auto report = Qualify(Body([](int i, std::string* d) {
                          ++g_cases_run_here;
                          // Like a CUDA sticky error: once raised, every later call in the same
                          // process fails too (the cuBLASLt reference included).
                          static bool poisoned = false;
                          if (i == 2) poisoned = true;
                          if (poisoned) {
                            *d = "illegal instruction";
                            return absl::InternalError("cudaErrorIllegalInstruction");
                          }
                          return absl::OkStatus();
                        }),
                        Fast());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->children, 2);
  EXPECT_TRUE(report->variants[0].usable);  // "a again" ran in a fresh, clean child
  EXPECT_TRUE(report->variants[1].usable);
  EXPECT_FALSE(report->variants[2].usable);
  EXPECT_TRUE(absl::StrContains(report->variants[2].detail, "cudaErrorIllegalInstruction"));
  EXPECT_EQ(report->variants[2].reason, "error");
  EXPECT_EQ(g_cases_run_here.load(), 0);
}

TEST(QualificationTest, CrashingChildMarksItsCaseUnusable) {
  auto report = Qualify(Body([](int i, std::string*) {
                          if (i == 0) abort();
                          return absl::OkStatus();
                        }),
                        Fast());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->variants[0].usable);
  EXPECT_TRUE(absl::StrContains(report->variants[0].detail, "signal"))
      << report->variants[0].detail;
  EXPECT_EQ(report->variants[0].reason, "crashed");
  EXPECT_TRUE(report->variants[1].usable);
}

TEST(QualificationTest, TotalDeadlineLeavesUnreachedVariantsUnusable) {
  QualificationOptions o{.case_deadline = absl::Seconds(30),
                         .total_deadline = absl::Milliseconds(400)};
  const absl::Time start = absl::Now();
  auto report = Qualify(Body([](int, std::string*) {
                          for (;;) pause();
                          return absl::OkStatus();
                        }),
                        o);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(report->UsableMask(), 0u);
  EXPECT_TRUE(absl::StrContains(report->variants[0].detail, "deadline"))
      << report->variants[0].detail;
  EXPECT_FALSE(report->variants[0].reason.empty());
}

TEST(QualificationTest, WrongNumbersAndRefusalsGetTheirOwnReason) {
  auto report = Qualify(Body([](int i, std::string* d) {
                          *d = "max diff 3";
                          if (i == 1) return absl::DataLossError("does not match cublaslt");
                          if (i == 2) return absl::UnimplementedError("variant not allowed");
                          return absl::OkStatus();
                        }),
                        Fast());
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->cases.size(), 4u);
  EXPECT_TRUE(report->cases[0].passed);
  EXPECT_EQ(report->cases[1].reason, "mismatch");
  EXPECT_EQ(report->cases[2].reason, "refused");
  EXPECT_EQ(report->variants[1].reason, "mismatch");
}

TEST(QualificationTest, ChildThatReportsNothingQualifiesNothing) {
  auto report = Qualify([](int, int) { _exit(3); }, Fast());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->variants.empty());
  EXPECT_TRUE(report->cases.empty());
  EXPECT_EQ(report->UsableMask(), 0u);
  ASSERT_FALSE(report->log.empty());
  EXPECT_TRUE(absl::StrContains(report->log.back(), "exit status 3")) << report->log.back();
}

}  // namespace
}  // namespace gemm::core
