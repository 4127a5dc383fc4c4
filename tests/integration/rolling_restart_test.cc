// A rolling restart costs nothing: three gemm_server processes load the same weight repository;
// a client with round_robin over the three addresses (and the client library's retry of
// UNAVAILABLE) runs a verified load of Gemm calls by weight name while each server in turn is
// stopped with SIGTERM, waited for and started again on its port. Every call must succeed with
// the right product, and every replica must answer by name after its restart.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "tests/common/weight_files.h"
#include "tests/integration/server_process.h"
#include "tests/integration/weights_fixture.h"

namespace gemm::testing {
namespace {

constexpr int kReplicas = 3;
constexpr int kLoadThreads = 3;

// Calls Gemm against the repository's weights by name until stopped, counting the outcomes.
class VerifiedLoad {
 public:
  VerifiedLoad(client::GemmClient* client, const std::vector<RepositoryWeight>* weights)
      : client_(client), weights_(weights) {
    for (int t = 0; t < kLoadThreads; ++t) threads_.emplace_back([this, t] { Run(t); });
  }
  // Stops the threads and waits for them.
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  int64_t ok() const { return ok_.load(); }
  int64_t wrong() const { return wrong_.load(); }
  // The failed calls' statuses.
  std::vector<std::string> failures() {
    absl::MutexLock lock(&mu_);
    return failures_;
  }

 private:
  void Run(int thread) {
    absl::BitGen gen;
    for (int64_t i = thread; !stop_.load(); ++i) {
      const RepositoryWeight& w = (*weights_)[i % weights_->size()];
      absl::StatusOr<double> error = GemmByName(*client_, w, 4, gen);
      if (!error.ok()) {
        absl::MutexLock lock(&mu_);
        failures_.push_back(absl::StrCat(w.name, ": ", error.status().ToString()));
      } else if (!(*error < 8e-3)) {
        ++wrong_;
      } else {
        ++ok_;
      }
    }
  }

  client::GemmClient* const client_;
  const std::vector<RepositoryWeight>* const weights_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> ok_{0}, wrong_{0};
  absl::Mutex mu_;
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

TEST(RollingRestartTest, NoCallFailsWhileEachReplicaRestarts) {
  const std::string folder = FreshFolder("rolling_restart_test");
  const std::vector<RepositoryWeight> weights = WriteTestRepository(folder);
  const std::vector<std::string> flags = {"--backend=cpu", "--cpu_workers=1", "--weights=" + folder,
                                          "--drain_timeout_s=10"};
  std::vector<int> ports;
  std::vector<std::unique_ptr<ServerProcess>> servers;
  std::vector<std::string> addresses;
  for (int i = 0; i < kReplicas; ++i) {
    auto s = ServerProcess::Start(flags);
    ASSERT_TRUE(s.ok()) << s.status();
    ports.push_back((*s)->port());
    addresses.push_back(absl::StrCat("127.0.0.1:", (*s)->port()));
    servers.push_back(std::move(*s));
  }
  auto client = client::GemmClient::Create(
      {.target = absl::StrCat("ipv4:", absl::StrJoin(addresses, ",")), .lb_policy = "round_robin"});
  ASSERT_TRUE(client.ok()) << client.status();
  VerifiedLoad load(client->get(), &weights);
  absl::SleepFor(absl::Milliseconds(500));
  absl::BitGen gen;
  for (int i = 0; i < kReplicas; ++i) {
    const int64_t before = load.ok();
    EXPECT_EQ(servers[i]->Stop(SIGTERM, absl::Seconds(20)), 0) << "replica " << i;
    servers[i].reset();
    auto s = ServerProcess::Start(flags, absl::Seconds(30), "", 0, {}, ports[i]);
    ASSERT_TRUE(s.ok()) << "replica " << i << ": " << s.status();
    servers[i] = std::move(*s);
    for (const RepositoryWeight& w : weights) {
      auto error = GemmByName(servers[i]->client(), w, 2, gen);
      ASSERT_TRUE(error.ok()) << "replica " << i << ", " << w.name << ": " << error.status();
      EXPECT_LT(*error, 8e-3);
    }
    // The load kept going through the restart.
    const absl::Time until = absl::Now() + absl::Seconds(5);
    while (load.ok() < before + 20 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(20));
    EXPECT_GE(load.ok(), before + 20) << "replica " << i;
  }
  load.Stop();
  const std::vector<std::string> failures = load.failures();
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed calls, first: " << failures[0];
  EXPECT_EQ(load.wrong(), 0);
  EXPECT_GT(load.ok(), 100);
}

}  // namespace
}  // namespace gemm::testing
