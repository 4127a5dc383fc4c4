// Tests of common/status_macros.h: GEMM_RETURN_IF_ERROR and GEMM_ASSIGN_OR_RETURN return the
// first error unchanged, evaluate their expression exactly once, leave the target untouched on
// error, move values (move-only types work), and can be used several times in one scope.
#include "common/status_macros.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace {

// Returns `st` and counts the calls in `*calls`.
absl::Status Counted(absl::Status st, int* calls) {
  ++*calls;
  return st;
}

// Returns `v` (or `st` when not OK) and counts the calls in `*calls`.
absl::StatusOr<int> CountedValue(absl::StatusOr<int> v, int* calls) {
  ++*calls;
  return v;
}

absl::Status TwoChecks(absl::Status first, absl::Status second, int* reached) {
  int calls = 0;
  GEMM_RETURN_IF_ERROR(Counted(first, &calls));
  ++*reached;
  GEMM_RETURN_IF_ERROR(Counted(second, &calls));
  ++*reached;
  return absl::OkStatus();
}

TEST(StatusMacros, ReturnIfErrorPassesOkAndReturnsTheFirstError) {
  int reached = 0;
  EXPECT_TRUE(TwoChecks(absl::OkStatus(), absl::OkStatus(), &reached).ok());
  EXPECT_EQ(reached, 2);

  reached = 0;
  const absl::Status st =
      TwoChecks(absl::InvalidArgumentError("m: must be > 0"), absl::InternalError("x"), &reached);
  EXPECT_EQ(st, absl::InvalidArgumentError("m: must be > 0"));
  EXPECT_EQ(reached, 0);

  reached = 0;
  EXPECT_EQ(TwoChecks(absl::OkStatus(), absl::NotFoundError("id 7"), &reached),
            absl::NotFoundError("id 7"));
  EXPECT_EQ(reached, 1);
}

TEST(StatusMacros, ReturnIfErrorEvaluatesOnce) {
  int calls = 0;
  auto f = [&]() -> absl::Status {
    GEMM_RETURN_IF_ERROR(Counted(absl::OkStatus(), &calls));
    GEMM_RETURN_IF_ERROR(Counted(absl::UnavailableError("down"), &calls));
    return absl::OkStatus();
  };
  EXPECT_EQ(f(), absl::UnavailableError("down"));
  EXPECT_EQ(calls, 2);
}

TEST(StatusMacros, ReturnIfErrorInAStatusOrFunction) {
  auto f = [](absl::Status st) -> absl::StatusOr<std::string> {
    GEMM_RETURN_IF_ERROR(st);
    return std::string("ok");
  };
  EXPECT_EQ(*f(absl::OkStatus()), "ok");
  EXPECT_EQ(f(absl::ResourceExhaustedError("full")).status(), absl::ResourceExhaustedError("full"));
}

// Declares new variables, assigns an existing one, several uses in one scope.
absl::StatusOr<int> Sum(absl::StatusOr<int> a, absl::StatusOr<int> b, int* calls, int* last) {
  GEMM_ASSIGN_OR_RETURN(const int x, CountedValue(a, calls));
  GEMM_ASSIGN_OR_RETURN(*last, CountedValue(b, calls));
  return x + *last;
}

TEST(StatusMacros, AssignOrReturnAssignsValues) {
  int calls = 0, last = -1;
  EXPECT_EQ(*Sum(2, 3, &calls, &last), 5);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(last, 3);
}

TEST(StatusMacros, AssignOrReturnReturnsTheErrorAndLeavesTheTargetAlone) {
  int calls = 0, last = -1;
  EXPECT_EQ(Sum(absl::OutOfRangeError("a"), 3, &calls, &last).status(), absl::OutOfRangeError("a"));
  EXPECT_EQ(calls, 1);  // stopped at the first error
  EXPECT_EQ(last, -1);

  calls = 0;
  EXPECT_EQ(Sum(2, absl::DataLossError("b"), &calls, &last).status(), absl::DataLossError("b"));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(last, -1);  // not assigned on error
}

TEST(StatusMacros, AssignOrReturnInAStatusFunction) {
  int value = 0;
  auto f = [&](absl::StatusOr<int> v) -> absl::Status {
    GEMM_ASSIGN_OR_RETURN(value, std::move(v));
    return absl::OkStatus();
  };
  EXPECT_TRUE(f(41).ok());
  EXPECT_EQ(value, 41);
  EXPECT_EQ(f(absl::AbortedError("stop")), absl::AbortedError("stop"));
  EXPECT_EQ(value, 41);
}

TEST(StatusMacros, AssignOrReturnMovesMoveOnlyValues) {
  auto make = [](bool ok) -> absl::StatusOr<std::unique_ptr<int>> {
    if (!ok) return absl::FailedPreconditionError("no");
    return std::make_unique<int>(9);
  };
  auto f = [&](bool ok) -> absl::StatusOr<int> {
    GEMM_ASSIGN_OR_RETURN(std::unique_ptr<int> p, make(ok));
    std::unique_ptr<int> q;
    GEMM_ASSIGN_OR_RETURN(q, make(ok));
    return *p + *q;
  };
  EXPECT_EQ(*f(true), 18);
  EXPECT_EQ(f(false).status(), absl::FailedPreconditionError("no"));
}

}  // namespace
