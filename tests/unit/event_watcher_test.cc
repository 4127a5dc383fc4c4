// EventWatcher with fake events (no GPU): every watched event's callback runs exactly once, only
// after the event completed, with the query's result; Stop() waits for every watched event.
#include "server/gpu/event_watcher.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace gemm::gpu {
namespace {

// A fake event: 0 pending, 1 done, 2 failed. Passed around as a cudaEvent_t.
struct FakeEvent {
  std::atomic<int> state{0};
  std::atomic<int> calls{0};
  std::atomic<bool> seen_pending_in_callback{false};
  std::atomic<int> result{-1};
};

cudaEvent_t AsEvent(FakeEvent* e) { return reinterpret_cast<cudaEvent_t>(e); }

cudaError_t FakeQuery(cudaEvent_t event) {
  const int s = reinterpret_cast<FakeEvent*>(event)->state.load();
  return s == 0 ? cudaErrorNotReady : s == 1 ? cudaSuccess : cudaErrorLaunchFailure;
}

void Record(void* arg, cudaError_t result) {
  auto* e = static_cast<FakeEvent*>(arg);
  if (e->state.load() == 0) e->seen_pending_in_callback = true;
  e->result = static_cast<int>(result);
  e->calls.fetch_add(1);
}

TEST(EventWatcher, EveryCallbackRunsOnceAfterItsEventCompletesInAnyOrder) {
  constexpr int kEvents = 200;
  std::vector<std::unique_ptr<FakeEvent>> events;
  for (int i = 0; i < kEvents; ++i) events.push_back(std::make_unique<FakeEvent>());
  EventWatcher watcher(-1, "test-poll", &FakeQuery);
  for (auto& e : events) watcher.Watch(AsEvent(e.get()), &Record, e.get());
  // Complete them in a random order, some while others are still being watched.
  std::vector<int> order(kEvents);
  for (int i = 0; i < kEvents; ++i) order[i] = i;
  absl::BitGen gen;
  for (int i = kEvents - 1; i > 0; --i) std::swap(order[i], order[absl::Uniform(gen, 0, i + 1)]);
  for (int i : order) {
    events[i]->state = 1;
    if (i % 16 == 0) absl::SleepFor(absl::Microseconds(50));
  }
  watcher.Stop();
  for (int i = 0; i < kEvents; ++i) {
    EXPECT_EQ(events[i]->calls.load(), 1) << "event " << i;
    EXPECT_FALSE(events[i]->seen_pending_in_callback.load()) << "event " << i;
    EXPECT_EQ(events[i]->result.load(), static_cast<int>(cudaSuccess)) << "event " << i;
  }
}

TEST(EventWatcher, AFailedQueryReachesTheCallbackAndTheOthersStillComplete) {
  FakeEvent ok, failed;
  EventWatcher watcher(-1, "test-poll", &FakeQuery);
  watcher.Watch(AsEvent(&failed), &Record, &failed);
  watcher.Watch(AsEvent(&ok), &Record, &ok);
  failed.state = 2;
  absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(ok.calls.load(), 0) << "called back before its event completed";
  ok.state = 1;
  watcher.Stop();
  EXPECT_EQ(failed.calls.load(), 1);
  EXPECT_EQ(failed.result.load(), static_cast<int>(cudaErrorLaunchFailure));
  EXPECT_EQ(ok.calls.load(), 1);
  EXPECT_EQ(ok.result.load(), static_cast<int>(cudaSuccess));
}

TEST(EventWatcher, StopWaitsUntilEveryWatchedEventCompleted) {
  FakeEvent late;
  EventWatcher watcher(-1, "test-poll", &FakeQuery);
  watcher.Watch(AsEvent(&late), &Record, &late);
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    watcher.Stop();
    stopped = true;
  });
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_FALSE(stopped.load()) << "Stop() returned with an event still pending";
  EXPECT_EQ(late.calls.load(), 0);
  late.state = 1;
  stopper.join();
  EXPECT_TRUE(stopped.load());
  EXPECT_EQ(late.calls.load(), 1);
}

TEST(EventWatcher, PollsALongUnitSparselyAndAShortOneOften) {
  EXPECT_EQ(EventWatcher::PollInterval(absl::ZeroDuration()), absl::Microseconds(2));
  EXPECT_EQ(EventWatcher::PollInterval(absl::Microseconds(80)), absl::Microseconds(10));
  EXPECT_EQ(EventWatcher::PollInterval(absl::Milliseconds(10)), absl::Microseconds(50));
  // A 30 ms event: at most one query per 50 us once it is older than 400 us (about 1100 in all
  // with the ramp); every-2-us polling would make up to 15000. Slow machines only query less.
  FakeEvent slow;
  static std::atomic<int> queries{0};
  queries = 0;
  auto counting = [](cudaEvent_t e) {
    queries.fetch_add(1);
    return FakeQuery(e);
  };
  EventWatcher watcher(-1, "test-poll", counting);
  watcher.Watch(AsEvent(&slow), &Record, &slow);
  absl::SleepFor(absl::Milliseconds(30));
  const int seen = queries.load();
  EXPECT_GT(seen, 0);
  EXPECT_LT(seen, 2000);
  slow.state = 1;
  const absl::Time done = absl::Now();
  while (slow.calls.load() == 0 && absl::Now() - done < absl::Seconds(5)) {
    absl::SleepFor(absl::Microseconds(10));
  }
  EXPECT_EQ(slow.calls.load(), 1);
  watcher.Stop();
}

}  // namespace
}  // namespace gemm::gpu
