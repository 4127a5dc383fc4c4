// The server's limits: derived from and clamped to the host's memory, values that make no sense
// refused naming their flag, the host's memory read from cgroup files, the in-flight budget,
// overflow-checked size arithmetic and the quoting of client strings in error messages.
#include "server/core/limits.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/core/checked_math.h"
#include "server/core/client_string.h"
#include "server/core/usable_memory.h"
#include "server/core/work_budget.h"

namespace gemm::core {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
const UsableMemory kHost16G{16 * kGiB, "physical RAM"};

TEST(ResolveLimitsTest, InFlightBudgetDefaultsToAQuarterOfHostMemoryAndSaysSo) {
  std::vector<std::string> notes;
  auto l = ResolveLimits(Limits{}, kHost16G, false, &notes);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->max_in_flight_bytes, 4 * kGiB);
  const std::string log = absl::StrJoin(notes, "\n");
  EXPECT_NE(log.find("25% of 16.0 GiB host memory (physical RAM) = 4.0 GiB"), std::string::npos)
      << log;
  EXPECT_EQ(l->max_request_bytes, kGiB);        // under the budget: unchanged
  EXPECT_EQ(l->max_resident_bytes, 64 * kGiB);  // resident matrices not in host memory
}

TEST(ResolveLimitsTest, FixedCapsAreLoweredToWhatASmallHostCanHold) {
  const UsableMemory host{2 * kGiB, "cgroup memory.max"};
  std::vector<std::string> notes;
  Limits asked;
  asked.max_in_flight_bytes = 8 * kGiB;  // more than half the host: lowered
  auto l = ResolveLimits(asked, host, /*resident_in_host_memory=*/true, &notes);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->max_in_flight_bytes, kGiB);  // 50% of 2 GiB
  EXPECT_EQ(l->max_request_bytes, kGiB);
  EXPECT_EQ(l->max_response_bytes, kGiB);
  EXPECT_EQ(l->max_resident_bytes, kGiB / 2);  // 25% of 2 GiB: the CPU backend holds them
  const std::string log = absl::StrJoin(notes, "\n");
  EXPECT_NE(log.find("--max_in_flight_bytes 8.0 GiB lowered to 50% of 2.0 GiB host memory "
                     "(cgroup memory.max) = 1.0 GiB"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("--max_resident_bytes 64.0 GiB lowered"), std::string::npos) << log;

  Limits small;
  small.max_in_flight_bytes = 0;
  auto tiny = ResolveLimits(small, UsableMemory{kGiB, "physical RAM"}, false, &notes);
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->max_in_flight_bytes, kGiB / 4);
  EXPECT_EQ(tiny->max_request_bytes, kGiB / 4);  // a request must fit the budget
  EXPECT_EQ(tiny->max_response_bytes, kGiB / 4);
}

TEST(ResolveLimitsTest, RefusesValuesThatMakeNoSenseNamingTheFlag) {
  struct Case {
    std::string flag;
    void (*set)(Limits*);
  };
  const std::vector<Case> cases = {
      {"--max_dim", [](Limits* l) { l->max_dim = int64_t{1} << 32; }},
      {"--max_dim", [](Limits* l) { l->max_dim = 0; }},
      {"--max_problems", [](Limits* l) { l->max_problems = 0; }},
      {"--max_message_bytes", [](Limits* l) { l->max_message_bytes = int64_t{4} << 30; }},
      {"--max_message_bytes", [](Limits* l) { l->max_message_bytes = 1000; }},
      {"--max_request_bytes", [](Limits* l) { l->max_request_bytes = -1; }},
      {"--max_response_bytes", [](Limits* l) { l->max_response_bytes = 0; }},
      {"--max_in_flight_bytes", [](Limits* l) { l->max_in_flight_bytes = -5; }},
      {"--max_resident_bytes", [](Limits* l) { l->max_resident_bytes = -1; }},
      {"--max_shared_memory_bytes", [](Limits* l) { l->max_shared_memory_bytes = -1; }},
  };
  for (const Case& c : cases) {
    Limits l;
    c.set(&l);
    std::vector<std::string> notes;
    auto r = ResolveLimits(l, kHost16G, false, &notes);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.flag;
    EXPECT_NE(r.status().message().find(c.flag), std::string::npos) << r.status();
  }
  std::vector<std::string> notes;
  EXPECT_FALSE(ResolveLimits(Limits{}, UsableMemory{0, "physical RAM"}, false, &notes).ok());
}

TEST(FormatBytesTest, PicksAUnit) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(64 << 10), "64.0 KiB");
  EXPECT_EQ(FormatBytes(int64_t{23} * kGiB + kGiB / 2), "23.5 GiB");
}

// A fake /proc/self/cgroup and cgroup tree under a temporary directory.
class UsableMemoryTest : public ::testing::Test {
 protected:
  UsableMemoryTest()
      : dir_(std::filesystem::temp_directory_path() /
             absl::StrCat("host_memory_test_", getpid(), "_",
                          ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::create_directories(dir_);
    files_.proc_self_cgroup = (dir_ / "cgroup").string();
    files_.cgroup_root = (dir_ / "fs").string();
  }
  ~UsableMemoryTest() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& relative, const std::string& text) {
    const std::filesystem::path p = dir_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }

  std::filesystem::path dir_;
  UsableMemoryFiles files_;
};

TEST_F(UsableMemoryTest, NoCgroupLimitMeansPhysicalRam) {
  Write("cgroup", "0::/user.slice/app\n");
  Write("fs/user.slice/app/memory.max", "max\n");
  const UsableMemory h = UsableMemoryFrom(16 * kGiB, files_);
  EXPECT_EQ(h.bytes, 16 * kGiB);
  EXPECT_EQ(h.source, "physical RAM");
}

TEST_F(UsableMemoryTest, CgroupV2LimitOfTheGroupOrAnAncestorWins) {
  Write("cgroup", "0::/kubepods/pod1/ctr\n");
  Write("fs/kubepods/pod1/ctr/memory.max", "max\n");
  Write("fs/kubepods/pod1/memory.max", absl::StrCat(3 * kGiB, "\n"));
  Write("fs/kubepods/memory.max", absl::StrCat(8 * kGiB, "\n"));
  const UsableMemory h = UsableMemoryFrom(16 * kGiB, files_);
  EXPECT_EQ(h.bytes, 3 * kGiB);
  EXPECT_EQ(h.source, "cgroup memory.max");
}

TEST_F(UsableMemoryTest, CgroupV2InAHybridMountUnderUnified) {
  Write("cgroup", "4:memory:/\n0::/svc\n");
  Write("fs/unified/svc/memory.max", absl::StrCat(kGiB, "\n"));
  EXPECT_EQ(UsableMemoryFrom(16 * kGiB, files_).bytes, kGiB);
}

TEST_F(UsableMemoryTest, CgroupV1MemoryControllerLimit) {
  Write("cgroup", "5:cpu,cpuacct:/docker/x\n4:memory:/docker/x\n");
  Write("fs/memory/memory.limit_in_bytes", absl::StrCat(2 * kGiB, "\n"));
  Write("fs/memory/docker/x/memory.limit_in_bytes", "9223372036854771712\n");  // unlimited
  const UsableMemory h = UsableMemoryFrom(16 * kGiB, files_);
  EXPECT_EQ(h.bytes, 2 * kGiB);
  EXPECT_EQ(h.source, "cgroup memory.limit_in_bytes");
}

TEST(DetectUsableMemoryTest, ReportsSomething) {
  const UsableMemory h = DetectUsableMemory();
  EXPECT_GT(h.bytes, 0);
  EXPECT_FALSE(h.source.empty());
}

TEST(WorkBudgetTest, AdmitsWhatFitsAndGivesBack) {
  WorkBudget budget(1000, "max_in_flight_bytes");
  ASSERT_TRUE(budget.Acquire(600).ok());
  const absl::Status busy = budget.Acquire(600);
  EXPECT_EQ(busy.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(busy.message().find("--max_in_flight_bytes"), std::string::npos) << busy;
  EXPECT_NE(busy.message().find("try again"), std::string::npos) << busy;
  ASSERT_TRUE(budget.Acquire(400).ok());
  EXPECT_EQ(budget.held(), 1000);
  budget.Release(600);
  EXPECT_TRUE(budget.Acquire(600).ok());
  budget.Release(1000);
  EXPECT_EQ(budget.held(), 0);
  const absl::Status never = budget.Acquire(1001);
  EXPECT_EQ(never.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(never.message().find("never"), std::string::npos) << never;
  EXPECT_EQ(budget.held(), 0);
}

TEST(CheckedMathTest, RefusesWhatDoesNotFit) {
  EXPECT_EQ(CheckedProduct(3, 4, 5), 60);
  const int64_t big = int64_t{1} << 32;
  EXPECT_FALSE(CheckedProduct(big, big, 2).has_value());  // 2^65
  EXPECT_FALSE(CheckedProduct(1125891317039105, 1125891317039105, 2).has_value());
  EXPECT_FALSE(CheckedProduct(big, big, 0).has_value());  // the partial product overflows first
  EXPECT_EQ(CheckedProduct(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_FALSE(CheckedAdd(std::numeric_limits<int64_t>::max(), 1).has_value());
  EXPECT_EQ(CheckedAdd(2, 3), 5);
}

TEST(QuoteClientStringTest, ShortStringsWholeLongOnesCut) {
  EXPECT_EQ(QuoteClientString("w1"), "'w1'");
  EXPECT_EQ(QuoteClientString(std::string("a\0z", 3)), "'a\\x00z'");
  const std::string huge(5'000'000, 'x');
  const std::string q = QuoteClientString(huge);
  EXPECT_LT(q.size(), 200u);
  EXPECT_EQ(q, absl::StrCat("'", std::string(kMaxQuotedClientBytes, 'x'), "...' (5000000 bytes)"));
}

}  // namespace
}  // namespace gemm::core
