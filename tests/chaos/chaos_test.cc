// Chaos: many clients at once against one CPU-backend server, mixing unary calls, streams and
// packed streams with random cancels, deadlines, slow readers and abandoned streams, garbage
// messages and shared-memory regions unregistered while in use (chaos_clients.h), in two equal
// rounds; then clients that keep sending while the server gets SIGTERM (chaos_drain.h).
// Asserts: the server never dies and exits 0 after the signal; every answer that arrives is
// exactly right (float64 reference, outputs of exactly M*N*dtype bytes) and every refusal the one
// its request must get; open descriptors return to their idle count after each round, and
// resident memory to near its idle size, without growing from one round to the next; no request
// is lost to the signal.
// The choices come from one seed, printed first; CHAOS_SEED=<n> repeats them (thread timing
// still varies). Nothing is timed: the load is a fixed number of operations.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <random>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/chaos/chaos_clients.h"
#include "tests/chaos/chaos_drain.h"
#include "tests/chaos/process_stats.h"
#include "tests/integration/server_process.h"

namespace gemm::testing {
namespace {

// Descriptors the server may hold beyond its idle count once every client has gone.
constexpr int kFdSlack = 4;
// Resident memory the server may keep beyond its idle size after a round (allocator caches),
// and may gain from one round to the next (a leak of what the round pinned shows as more).
constexpr int64_t kRssSlack = int64_t{160} << 20;
constexpr int64_t kRssGrowth = int64_t{64} << 20;

uint64_t Seed() {
  uint64_t seed = 0;
  const char* env = std::getenv("CHAOS_SEED");
  if (env == nullptr || !absl::SimpleAtoi(env, &seed)) seed = std::random_device()();
  return seed;
}

// One round: every kind of client on its own thread, a fixed number of operations each.
void RunRound(const ChaosEnv& env, int round) {
  const int base = round * 100;
  std::vector<std::function<void()>> clients = {
      [&] { RunHogClient(env, base + 0, 300); },
      [&] { RunHogClient(env, base + 1, 300); },
      [&] { RunUnaryClient(env, base + 2, 600); },
      [&] { RunUnaryClient(env, base + 3, 600); },
      [&] { RunStreamClient(env, base + 4, false, 60); },
      [&] { RunStreamClient(env, base + 5, false, 60); },
      [&] { RunStreamClient(env, base + 6, true, 60); },
      [&] { RunStreamClient(env, base + 7, true, 60); },
      [&] { RunStreamClient(env, base + 10, false, 80, /*cut_only=*/true); },
      [&] { RunStreamClient(env, base + 11, true, 80, /*cut_only=*/true); },
      [&] { RunStreamClient(env, base + 12, false, 80, /*cut_only=*/true); },
      [&] { RunStreamClient(env, base + 13, true, 80, /*cut_only=*/true); },
      [&] { RunGarbageClient(env, base + 8, 200); },
      [&] { RunSharedMemoryClient(env, base + 9, 120); },
  };
  std::vector<std::thread> threads;
  for (auto& c : clients) threads.emplace_back(c);
  for (auto& t : threads) t.join();
}

// Waits (up to 30 s) for the server's descriptors to come back to `idle_fds` + kFdSlack once the
// clients have gone, then samples it.
ProcessStats Settle(pid_t pid, int idle_fds) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ProcessStats s = ReadProcessStats(pid);
  while (s.fds > idle_fds + kFdSlack && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
    s = ReadProcessStats(pid);
  }
  absl::SleepFor(absl::Seconds(1));
  return ReadProcessStats(pid);
}

std::string Describe(const ProcessStats& s) {
  return absl::StrCat(s.rss_bytes >> 20, " MiB resident, ", s.fds, " descriptors");
}

TEST(ChaosTest, ManyClientsStayCorrectAndSigtermLosesNothing) {
  const uint64_t seed = Seed();
  std::cout << "chaos seed " << seed << " (repeat with CHAOS_SEED=" << seed << ")" << std::endl;
  auto server = ServerProcess::Start(
      {"--backend=cpu", "--cpu_workers=1", "--drain_timeout_s=20", "--queue_capacity=1000000"});
  ASSERT_TRUE(server.ok()) << server.status();
  ServerProcess& s = **server;
  const pid_t pid = s.pid();
  Ledger ledger;
  std::atomic<bool> died{false}, stop_watching{false};
  absl::Time died_at;  // written by the watchdog before `died`
  const ChaosEnv env{.target = s.target(), .seed = seed, .ledger = &ledger, .server_died = &died};
  // Watches the server from start to SIGTERM, so that clients stop once it has died.
  std::thread watchdog([&] {
    while (!stop_watching && ProcessAlive(pid)) absl::SleepFor(absl::Milliseconds(100));
    if (stop_watching) return;
    died_at = absl::Now();
    died = true;
  });
  absl::Cleanup join_watchdog = [&] {
    stop_watching = true;
    watchdog.join();
  };

  // Warm-up: every path once, both workers through a large GEMM (their BLAS buffers).
  {
    std::vector<std::thread> warm;
    for (int i = 0; i < 4; ++i) warm.emplace_back([&, i] { RunUnaryClient(env, 900 + i, 3); });
    for (auto& t : warm) t.join();
    RunStreamClient(env, 904, false, 1);
    RunStreamClient(env, 905, true, 1);
    RunSharedMemoryClient(env, 906, 1);
  }
  const ProcessStats idle = Settle(pid, ReadProcessStats(pid).fds);
  std::cout << "idle: " << Describe(idle) << std::endl;

  std::vector<ProcessStats> after;
  for (int round = 1; round <= 2; ++round) {
    const absl::Time start = absl::Now();
    RunRound(env, round);
    if (!ProcessAlive(pid)) {
      while (!died) absl::SleepFor(absl::Milliseconds(20));  // the watchdog notes when
      FAIL() << "the server died " << died_at - start << " into round " << round << ": exit "
             << s.Stop(SIGKILL) << "\n"
             << ledger.Report();
    }
    after.push_back(Settle(pid, idle.fds));
    std::cout << "round " << round << " took " << absl::Now() - start
              << "; after it: " << Describe(after.back()) << std::endl;
    EXPECT_LE(after.back().fds, idle.fds + kFdSlack) << "descriptors after round " << round;
    EXPECT_LE(after.back().rss_bytes, idle.rss_bytes + kRssSlack) << "memory after round " << round;
  }
  EXPECT_LE(after[1].rss_bytes, after[0].rss_bytes + kRssGrowth)
      << "resident memory grew from round 1 to round 2";

  // SIGTERM while clients keep sending: nothing may be lost.
  {
    DrainClients drain(env, /*streams=*/4, /*unary=*/2);
    EXPECT_TRUE(drain.WaitFlowing(200, absl::Seconds(60))) << "the drain load did not flow";
    stop_watching = true;
    drain.SignalSent();
    const int code = s.Stop(SIGTERM, absl::Seconds(60));
    drain.Join();
    EXPECT_EQ(code, 0) << "exit status after SIGTERM (-1: still running after 60 s)";
  }
  std::cout << ledger.Report();
  EXPECT_EQ(ledger.failures(), 0) << ledger.Report();
}

}  // namespace
}  // namespace gemm::testing
