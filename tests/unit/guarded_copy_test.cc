// RunGuarded / GuardedCopy (common/guarded_copy.h): reads and writes of a shared mapping whose
// object was shrunk under it return false instead of killing the process, on any thread and any
// number of times; bytes still backed copy as usual; a SIGBUS outside a guard still kills the
// process, and goes to a handler installed before the guard's.
#include "common/guarded_copy.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/shm_util.h"

namespace gemm {
namespace {

// An object of three pages mapped by the test, then shrunk to one: pages 1 and 2 of `map` have
// nothing behind them.
class ShrunkMapping : public ::testing::Test {
 protected:
  void SetUp() override {
    auto shm = testing::CreateTestShm("guard", 3 * page_);
    ASSERT_TRUE(shm.ok()) << shm.status();
    shm_ = std::move(*shm);
    std::memset(shm_->data(), 'x', 3 * page_);
    ASSERT_TRUE(testing::ResizeShm(shm_->key(), page_).ok());
  }
  char* backed() { return shm_->data(); }
  char* vanished() { return shm_->data() + 2 * page_; }

  const int64_t page_ = sysconf(_SC_PAGESIZE);
  std::unique_ptr<PosixShm> shm_;
};

TEST_F(ShrunkMapping, ReadAndWriteOfAVanishedPageReturnFalse) {
  std::string buf(100, 'y');
  EXPECT_FALSE(GuardedCopy(buf.data(), vanished(), buf.size()));
  EXPECT_FALSE(GuardedCopy(vanished(), buf.data(), buf.size()));
  // A copy that starts on a backed page and runs into a vanished one.
  std::vector<char> big(2 * page_);
  EXPECT_FALSE(GuardedCopy(big.data(), backed(), big.size()));
  // Again on the same thread: the guard is re-armed after a fault.
  EXPECT_FALSE(GuardedCopy(buf.data(), vanished(), buf.size()));
  // Backed bytes copy as usual, both ways.
  ASSERT_TRUE(GuardedCopy(buf.data(), backed(), buf.size()));
  EXPECT_EQ(buf, std::string(100, 'x'));
  ASSERT_TRUE(GuardedCopy(backed(), "abc", 3));
  EXPECT_EQ(std::string(backed(), 3), "abc");
  EXPECT_TRUE(GuardedCopy(nullptr, nullptr, 0));
}

TEST_F(ShrunkMapping, NestedGuardsReportToTheInnermost) {
  bool inner = true;
  bool after_inner = false;
  const bool outer = RunGuarded([&] {
    inner = RunGuarded([&] { (void)*static_cast<volatile char*>(vanished()); });
    after_inner = true;
  });
  EXPECT_TRUE(outer);
  EXPECT_FALSE(inner);
  EXPECT_TRUE(after_inner);
}

TEST_F(ShrunkMapping, EveryThreadHasItsOwnGuard) {
  constexpr int kThreads = 8, kRounds = 200;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      char buf[64];
      for (int i = 0; i < kRounds; ++i) {
        const bool fault = (i + t) % 2 == 0;
        const bool ok = GuardedCopy(buf, fault ? vanished() + i : backed() + i, sizeof(buf));
        if (ok == fault) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// NOTE: EXPECT_DEATH, not KilledBySignal(SIGBUS): under a sanitizer its handler, installed
// before the guard's, reports the fault and exits.
TEST_F(ShrunkMapping, FaultOutsideAGuardStillKillsTheProcess) {
  ASSERT_TRUE(RunGuarded([] {}));  // the handler is installed
  EXPECT_DEATH((void)*static_cast<volatile char*>(vanished()), "");
}

TEST_F(ShrunkMapping, SentSigbusInsideAGuardIsNotSwallowed) {
  EXPECT_DEATH(RunGuarded([] { raise(SIGBUS); }), "");
}

void ExitWith42(int) { _exit(42); }

TEST_F(ShrunkMapping, FaultOutsideAGuardGoesToTheEarlierHandler) {
  // A fresh process, so the guard is installed after this test's handler. It made its own
  // object (SetUp) and unlinks it: the mapping stays, shrunk.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        shm_unlink(shm_->key().c_str());
        signal(SIGBUS, ExitWith42);
        std::string buf(8, '\0');
        if (GuardedCopy(buf.data(), vanished(), buf.size())) _exit(1);  // guarded: reported
        (void)*static_cast<volatile char*>(vanished());                 // not: the earlier one
        _exit(2);
      },
      ::testing::ExitedWithCode(42), "");
}

}  // namespace
}  // namespace gemm
