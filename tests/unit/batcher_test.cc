// Tests of the dynamic batcher with an injected FakeClock: coalescing, max delay, idle dispatch,
// row bound, priorities, deadlines, cancellation (and the sweeper that answers them while no
// device asks for work), queue bound, device affinity, shutdown, and exactly-once completion
// under concurrency (real clock).
#include "server/core/batcher.h"

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/core/fake_clock.h"
#include "server/core/metrics.h"

namespace gemm::core {
namespace {

using ::testing::Test;

class TestMatrix : public ResidentMatrix {
 public:
  explicit TestMatrix(std::vector<int> devices, int64_t k = 64, int64_t n = 64)
      : ResidentMatrix(Desc{.handle = "m",
                            .name = "m",
                            .rows = k,
                            .cols = n,
                            .layout = BLayout::kKN,
                            .devices = std::move(devices)}) {}
};

// Records how (and how often) each item was completed by the batcher.
struct Outcome {
  absl::Mutex mu;
  std::vector<absl::Status> statuses ABSL_GUARDED_BY(mu);
  int calls() {
    absl::MutexLock l(&mu);
    return static_cast<int>(statuses.size());
  }
  absl::StatusCode code() {
    absl::MutexLock l(&mu);
    return statuses.empty() ? absl::StatusCode::kOk : statuses.back().code();
  }
  std::string message() {
    absl::MutexLock l(&mu);
    return statuses.empty() ? "" : std::string(statuses.back().message());
  }
};

class BatcherTest : public Test {
 protected:
  static constexpr absl::Duration kDelay = absl::Microseconds(200);

  // Options left at the default delay get kDelay, so the cases do not move with the default.
  void Make(Batcher::Options options = {}) {
    if (options.max_queue_delay == Batcher::Options{}.max_queue_delay) {
      options.max_queue_delay = kDelay;
    }
    auto b = Batcher::Create(options, &clock_);
    ASSERT_TRUE(b.ok()) << b.status();
    batcher_ = std::move(*b);
  }

  // A single problem of `m` rows against resident `matrix` (or inline B when null).
  std::shared_ptr<WorkItem> Item(int64_t m, std::shared_ptr<const ResidentMatrix> matrix,
                                 Priority priority = Priority::kNormal,
                                 absl::Time deadline = absl::InfiniteFuture()) {
    auto item = std::make_shared<WorkItem>();
    item->request.request_id = absl::StrCat("r", next_id_++);
    item->request.priority = priority;
    item->request.deadline = deadline;
    Problem p;
    p.m = m;
    p.n = 64;
    p.k = 64;
    if (matrix) {
      p.b_resident = std::move(matrix);
    } else {
      p.b = inline_b_;
    }
    item->request.problems.push_back(std::move(p));
    auto outcome = std::make_shared<Outcome>();
    outcomes_[item->request.request_id] = outcome;
    item->done = [outcome](absl::StatusOr<GemmResult> r) {
      absl::MutexLock l(&outcome->mu);
      outcome->statuses.push_back(r.status());
    };
    return item;
  }

  // An expert group: one problem of `m` rows per (m, matrix) pair (a mixture-of-experts step).
  std::shared_ptr<WorkItem> GroupItem(
      const std::vector<std::pair<int64_t, std::shared_ptr<const ResidentMatrix>>>& members) {
    auto item = Item(members[0].first, members[0].second);
    item->request.kind = WorkKind::kGroup;
    for (size_t i = 1; i < members.size(); ++i) {
      Problem p = item->request.problems[0];
      p.m = members[i].first;
      p.b_resident = members[i].second;
      item->request.problems.push_back(std::move(p));
    }
    return item;
  }

  Outcome& OutcomeOf(const std::shared_ptr<WorkItem>& item) {
    return *outcomes_.at(item->request.request_id);
  }

  // Waits (real time, at most 10 s) until `n` Next() calls are asleep on the clock and at least
  // `min_wait_calls` waits went to sleep in all; whether that happened. The batcher's sweeper
  // thread sleeps on the clock too whenever it has nothing to sweep (one waiter more, and never
  // two), so n + 1 waiters mean n callers asleep.
  bool AwaitCallers(int n, int64_t min_wait_calls = 0) {
    return clock_.AwaitWaiters(n + 1, min_wait_calls);
  }

  // Waits (real time, at most 10 s) until the batcher has answered `item`; whether it did.
  bool AwaitAnswer(const std::shared_ptr<WorkItem>& item) {
    for (int i = 0; i < 2000 && OutcomeOf(item).calls() == 0; ++i) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    return OutcomeOf(item).calls() > 0;
  }

  void SubmitOk(const std::shared_ptr<WorkItem>& item) { ASSERT_TRUE(batcher_->Submit(item).ok()); }

  // Runs Next(device) on a thread.
  std::future<std::optional<Batch>> AsyncNext(int device) {
    return std::async(std::launch::async, [this, device] { return batcher_->Next(device); });
  }

  static bool Ready(std::future<std::optional<Batch>>& f,
                    absl::Duration wait = absl::Milliseconds(50)) {
    return f.wait_for(absl::ToChronoMilliseconds(wait)) == std::future_status::ready;
  }

  // Next(device) expected to return without the clock moving (nullopt after 10 s otherwise).
  std::optional<Batch> NextAtOnce(int device) {
    auto f = AsyncNext(device);
    if (!ReadySoon(f)) return std::nullopt;
    return f.get();
  }

  // Whether `f` finishes within 10 s; if not, shuts the batcher down so that the test fails
  // instead of hanging on the future.
  bool ReadySoon(std::future<std::optional<Batch>>& f) {
    if (Ready(f, absl::Seconds(10))) return true;
    batcher_->Shutdown();
    return false;
  }

  std::string inline_b_ = std::string(64 * 64 * 2, '\0');
  FakeClock clock_;
  std::unique_ptr<Batcher> batcher_;
  std::map<std::string, std::shared_ptr<Outcome>> outcomes_;
  int next_id_ = 0;
  std::shared_ptr<const ResidentMatrix> w_ = std::make_shared<TestMatrix>(std::vector<int>{-1});
};

TEST_F(BatcherTest, CreateRejectsBadOptions) {
  Batcher::Options o;
  o.max_batch_rows = 0;
  EXPECT_EQ(Batcher::Create(o, &clock_).status().code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.queue_capacity = 0;
  EXPECT_EQ(Batcher::Create(o, &clock_).status().code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.max_queue_delay = absl::Microseconds(-1);
  EXPECT_EQ(Batcher::Create(o, &clock_).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Batcher::Create({}, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(BatcherTest, CoalescesSixteenRequestsIntoOneBatchOf256Rows) {
  Batcher::Options o;
  o.max_batch_rows = 256;
  Make(o);
  std::vector<std::shared_ptr<WorkItem>> items;
  for (int i = 0; i < 16; ++i) {
    items.push_back(Item(16, w_));
    SubmitOk(items.back());
  }
  EXPECT_EQ(batcher_->QueueDepth(), 16);
  // Full: released at once, no clock advance needed.
  std::optional<Batch> b = batcher_->Next(0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->items.size(), 16u);
  EXPECT_EQ(b->rows, 256);
  EXPECT_EQ(b->released, clock_.Now());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b->items[i], items[i]) << "FIFO order";
  EXPECT_EQ(batcher_->QueueDepth(), 0);
  for (auto& it : items) EXPECT_EQ(OutcomeOf(it).calls(), 0);
}

TEST_F(BatcherTest, RespectsMaxBatchRows) {
  Batcher::Options o;
  o.max_batch_rows = 100;
  Make(o);
  // 30+30+30 = 90; the 4th (30) does not fit, the 5th (10) does.
  std::vector<std::shared_ptr<WorkItem>> items = {Item(30, w_), Item(30, w_), Item(30, w_),
                                                  Item(30, w_), Item(10, w_)};
  for (auto& it : items) SubmitOk(it);
  std::optional<Batch> b = batcher_->Next(-1);
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->items.size(), 4u);
  EXPECT_EQ(b->rows, 100);
  EXPECT_EQ(b->items[3], items[4]);
  // The skipped one leads the next batch, released after the delay (alone).
  auto f = AsyncNext(-1);
  ASSERT_TRUE(AwaitCallers(1));
  EXPECT_FALSE(Ready(f, absl::ZeroDuration()));
  clock_.Advance(kDelay);
  b = f.get();
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->items.size(), 1u);
  EXPECT_EQ(b->items[0], items[3]);
}

TEST_F(BatcherTest, OversizedRequestRunsAlone) {
  Batcher::Options o;
  o.max_batch_rows = 64;
  Make(o);
  auto big = Item(1000, w_);
  auto small = Item(8, w_);
  SubmitOk(big);
  SubmitOk(small);
  std::optional<Batch> b = batcher_->Next(-1);
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->items.size(), 1u);
  EXPECT_EQ(b->items[0], big);
  EXPECT_EQ(b->rows, 1000);
}

TEST_F(BatcherTest, PartialBatchReleasedOnlyAfterMaxDelay) {
  Make();
  auto a = Item(16, w_);
  auto b = Item(16, w_);
  SubmitOk(a);
  clock_.Advance(absl::Microseconds(50));
  SubmitOk(b);
  auto f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  // 199us after the first arrived: still waiting.
  clock_.Advance(absl::Microseconds(149));
  EXPECT_FALSE(Ready(f));
  // A third one arrives and joins.
  auto c = Item(16, w_);
  SubmitOk(c);
  EXPECT_FALSE(Ready(f));
  clock_.Advance(absl::Microseconds(1));  // 200us after `a`
  std::optional<Batch> got = f.get();
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->items.size(), 3u);
  EXPECT_EQ(got->rows, 48);
  EXPECT_EQ(got->released - a->arrival, kDelay);
}

TEST_F(BatcherTest, ZeroDelayReleasesAtOnce) {
  Batcher::Options o;
  o.max_queue_delay = absl::ZeroDuration();
  Make(o);
  SubmitOk(Item(16, w_));
  SubmitOk(Item(16, w_));
  std::optional<Batch> b = batcher_->Next(0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->items.size(), 2u);  // what is queued still coalesces
}

TEST_F(BatcherTest, IdleDeviceTakesALoneRequestAtOnce) {
  Make();
  batcher_->DeviceIdle(0, 0);  // nothing handed out yet, nothing in flight
  auto a = Item(16, w_);
  SubmitOk(a);
  auto f = AsyncNext(0);
  ASSERT_TRUE(ReadySoon(f));  // the clock never moves: no waiting
  std::optional<Batch> b = f.get();
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->items.size(), 1u);
  EXPECT_EQ(b->items[0], a);
  EXPECT_EQ(b->released, a->arrival);
}

TEST_F(BatcherTest, IdleDeviceWaitingForWorkTakesTheFirstArrivalAtOnce) {
  Make();
  batcher_->DeviceIdle(0, 0);
  auto f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  auto a = Item(16, w_);
  SubmitOk(a);
  ASSERT_TRUE(ReadySoon(f));
  std::optional<Batch> b = f.get();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->items[0], a);
}

TEST_F(BatcherTest, BusyDeviceGathersUntilItReportsIdle) {
  Make();
  batcher_->DeviceIdle(0, 0);
  SubmitOk(Item(16, w_));
  ASSERT_TRUE(NextAtOnce(0).has_value());  // batch 1: the device is busy with it now
  auto b = Item(16, w_);
  auto c = Item(16, w_);
  SubmitOk(b);
  auto f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  EXPECT_FALSE(Ready(f));  // waits for company while the device works
  SubmitOk(c);
  EXPECT_FALSE(Ready(f));
  batcher_->DeviceIdle(0, 1);  // batch 1 done: release what has gathered, before the delay
  ASSERT_TRUE(ReadySoon(f));
  std::optional<Batch> got = f.get();
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->items.size(), 2u);
  EXPECT_EQ(got->items[0], b);
  EXPECT_EQ(got->items[1], c);
  EXPECT_LT(got->released - b->arrival, kDelay);
}

TEST_F(BatcherTest, StaleIdleReportIsIgnored) {
  Make();
  batcher_->DeviceIdle(0, 0);
  SubmitOk(Item(16, w_));
  ASSERT_TRUE(NextAtOnce(0).has_value());  // batch 1 handed out after the report
  batcher_->DeviceIdle(0, 0);              // a report sent before batch 1 was counted
  auto b = Item(16, w_);
  SubmitOk(b);
  auto f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  EXPECT_FALSE(Ready(f));
  clock_.Advance(kDelay);  // only the delay releases it
  std::optional<Batch> got = f.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->items[0], b);
  EXPECT_EQ(got->released - b->arrival, kDelay);
}

TEST_F(BatcherTest, IdleReportsAreIgnoredWhenDispatchWhenIdleIsOff) {
  Batcher::Options o;
  o.dispatch_when_idle = false;
  Make(o);
  batcher_->DeviceIdle(0, 0);
  auto a = Item(16, w_);
  SubmitOk(a);
  auto f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  EXPECT_FALSE(Ready(f));
  clock_.Advance(kDelay);
  std::optional<Batch> got = f.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->released - a->arrival, kDelay);
}

TEST_F(BatcherTest, IdleDeviceTakesWhatABusyDeviceIsGathering) {
  Make();
  batcher_->DeviceIdle(0, 0);
  SubmitOk(Item(16, w_));
  ASSERT_TRUE(NextAtOnce(0).has_value());  // device 0 is busy
  auto a = Item(16, w_);                   // runnable anywhere
  SubmitOk(a);
  auto on0 = AsyncNext(0);  // gathers a batch around `a`
  ASSERT_TRUE(AwaitCallers(1));
  EXPECT_FALSE(Ready(on0));
  // Device 1 is idle and not reported: it respects device 0's gathering.
  auto on1 = AsyncNext(1);
  ASSERT_TRUE(AwaitCallers(2));
  EXPECT_FALSE(Ready(on1));
  // Once device 1 reports itself idle it takes `a` at once.
  batcher_->DeviceIdle(1, 0);
  ASSERT_TRUE(ReadySoon(on1));
  std::optional<Batch> got = on1.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->items[0], a);
  EXPECT_FALSE(Ready(on0));
  batcher_->Shutdown();
  EXPECT_FALSE(on0.get().has_value());
}

TEST_F(BatcherTest, HighPriorityOvertakesNormal) {
  Batcher::Options o;
  o.enable_batching = false;
  Make(o);
  auto n1 = Item(16, nullptr, Priority::kNormal);
  auto n2 = Item(16, nullptr, Priority::kNormal);
  auto h1 = Item(16, nullptr, Priority::kHigh);
  auto h2 = Item(16, nullptr, Priority::kHigh);
  SubmitOk(n1);
  SubmitOk(n2);
  SubmitOk(h1);
  SubmitOk(h2);
  std::vector<std::shared_ptr<WorkItem>> order;
  for (int i = 0; i < 4; ++i) {
    std::optional<Batch> b = batcher_->Next(-1);
    ASSERT_TRUE(b.has_value());
    ASSERT_EQ(b->items.size(), 1u);
    order.push_back(b->items[0]);
  }
  EXPECT_EQ(order, (std::vector<std::shared_ptr<WorkItem>>{h1, h2, n1, n2}));
}

TEST_F(BatcherTest, HighPriorityArrivalPreemptsAWaitingBatch) {
  Make();
  auto n = Item(16, w_, Priority::kNormal);
  SubmitOk(n);
  auto f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));  // waiting for company for `n`
  auto h = Item(16, nullptr, Priority::kHigh);
  SubmitOk(h);
  std::optional<Batch> b = f.get();  // no clock advance needed
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->items.size(), 1u);
  EXPECT_EQ(b->items[0], h);
  EXPECT_EQ(batcher_->QueueDepth(), 1);
}

TEST_F(BatcherTest, CoalescingGathersOtherPriorityToo) {
  Batcher::Options o;
  o.max_batch_rows = 32;
  Make(o);
  auto n = Item(16, w_, Priority::kNormal);
  auto h = Item(16, w_, Priority::kHigh);
  SubmitOk(n);
  SubmitOk(h);
  std::optional<Batch> b = batcher_->Next(0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->items, (std::vector<std::shared_ptr<WorkItem>>{h, n}));
}

TEST_F(BatcherTest, ExpiredRequestsAnsweredDeadlineExceededWithoutRunning) {
  Batcher::Options o;
  o.enable_batching = false;
  Make(o);
  auto expiring = Item(16, nullptr, Priority::kHigh, clock_.Now() + absl::Microseconds(10));
  auto fine = Item(16, nullptr);
  SubmitOk(expiring);
  SubmitOk(fine);
  clock_.Advance(absl::Microseconds(11));
  std::optional<Batch> b = batcher_->Next(-1);
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->items.size(), 1u);
  EXPECT_EQ(b->items[0], fine);
  ASSERT_TRUE(AwaitAnswer(expiring));  // by this Next() or by the sweeper
  EXPECT_EQ(OutcomeOf(expiring).calls(), 1);
  EXPECT_EQ(OutcomeOf(expiring).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(OutcomeOf(expiring).message(), "deadline exceeded after 11us in queue");
  EXPECT_EQ(OutcomeOf(fine).calls(), 0);
}

TEST_F(BatcherTest, DeadlineExactlyNowStillRuns) {
  Make();
  auto item = Item(16, nullptr, Priority::kNormal, clock_.Now() + absl::Microseconds(10));
  SubmitOk(item);
  clock_.Advance(absl::Microseconds(10));
  std::optional<Batch> b = batcher_->Next(-1);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->items[0], item);
}

TEST_F(BatcherTest, ExpiredItemAnsweredWhileACallerThatCannotRunItWaits) {
  Make();
  // Only device 1 may run this; the caller asks for device 0 and waits for work meanwhile.
  auto on1 = std::make_shared<TestMatrix>(std::vector<int>{1});
  auto item = Item(16, on1, Priority::kNormal, clock_.Now() + absl::Microseconds(500));
  SubmitOk(item);
  auto f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  clock_.Advance(absl::Microseconds(501));
  // The sweeper answers the item just after its deadline; Next(0) goes on waiting.
  for (int i = 0; i < 1000 && OutcomeOf(item).calls() == 0; ++i)
    absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(OutcomeOf(item).calls(), 1);
  EXPECT_EQ(OutcomeOf(item).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(batcher_->QueueDepth(), 0);
  EXPECT_FALSE(Ready(f, absl::ZeroDuration()));
  batcher_->Shutdown();
  EXPECT_FALSE(f.get().has_value());
}

TEST_F(BatcherTest, IdleCallerDoesNotSpin) {
  Make();
  ASSERT_TRUE(AwaitCallers(0));  // the sweeper is asleep
  const int64_t before = clock_.WaitCalls();
  auto on1 = std::make_shared<TestMatrix>(std::vector<int>{1});
  auto item = Item(16, on1, Priority::kNormal, clock_.Now() + absl::Microseconds(10));
  SubmitOk(item);  // wakes the sweeper, which sleeps again until just after the deadline
  auto f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1, before + 2));
  const int64_t calls = clock_.WaitCalls();
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(clock_.WaitCalls(), calls);
  // At the deadline itself the item is not expired yet, and nobody wakes.
  clock_.Advance(absl::Microseconds(10));
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(OutcomeOf(item).calls(), 0);
  EXPECT_EQ(clock_.WaitCalls(), calls);
  clock_.Advance(absl::Microseconds(1));
  for (int i = 0; i < 1000 && OutcomeOf(item).calls() == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(OutcomeOf(item).code(), absl::StatusCode::kDeadlineExceeded);
  batcher_->Shutdown();
  EXPECT_FALSE(f.get().has_value());
}

TEST_F(BatcherTest, CoalescedBatchReleasedByMemberDeadline) {
  Make();
  // The batch would wait 200us for company, but a member's deadline is in 50us.
  auto a = Item(16, w_);
  auto b = Item(16, w_, Priority::kNormal, clock_.Now() + absl::Microseconds(50));
  SubmitOk(a);
  SubmitOk(b);
  auto f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  clock_.Advance(absl::Microseconds(50));
  std::optional<Batch> got = f.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->items.size(), 2u);
  EXPECT_EQ(OutcomeOf(b).calls(), 0);
}

TEST_F(BatcherTest, CancelledRequestsDropped) {
  Batcher::Options o;
  o.enable_batching = false;
  Make(o);
  auto cancelled = Item(16, nullptr);
  cancelled->cancelled = [] { return true; };
  auto fine = Item(16, nullptr);
  fine->cancelled = [] { return false; };
  SubmitOk(cancelled);
  SubmitOk(fine);
  std::optional<Batch> b = batcher_->Next(-1);
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->items.size(), 1u);
  EXPECT_EQ(b->items[0], fine);
  EXPECT_EQ(OutcomeOf(cancelled).calls(), 1);
  EXPECT_EQ(OutcomeOf(cancelled).code(), absl::StatusCode::kCancelled);
}

TEST_F(BatcherTest, CancelledRequestsSweptWhileWaiting) {
  Batcher::Options o;
  o.sweep_interval = absl::Milliseconds(1);
  Make(o);
  auto on1 = std::make_shared<TestMatrix>(std::vector<int>{1});
  auto item = Item(16, on1);
  std::atomic<bool> cancel{false};
  item->cancelled = [&cancel] { return cancel.load(); };
  SubmitOk(item);
  auto f = AsyncNext(0);  // cannot run it; sweeps it
  ASSERT_TRUE(AwaitCallers(1));
  cancel = true;
  clock_.Advance(absl::Milliseconds(1));
  for (int i = 0; i < 1000 && OutcomeOf(item).calls() == 0; ++i)
    absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(OutcomeOf(item).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(batcher_->QueueDepth(), 0);
  batcher_->Shutdown();
  EXPECT_FALSE(f.get().has_value());
}

// With no Next() call in progress (every device busy), the sweeper answers a request just after
// its deadline, not when a device next asks for work.
TEST_F(BatcherTest, SweeperAnswersAnExpiredRequestWhileNoCallerWaits) {
  Make();
  batcher_->DeviceIdle(0, 0);
  SubmitOk(Item(16, nullptr));
  ASSERT_TRUE(NextAtOnce(0).has_value());  // the only device is busy with this from now on
  auto item = Item(16, w_, Priority::kNormal, clock_.Now() + absl::Milliseconds(300));
  SubmitOk(item);
  clock_.Advance(absl::Milliseconds(300));  // at the deadline itself it has not expired
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(OutcomeOf(item).calls(), 0);
  clock_.Advance(absl::Microseconds(1));
  ASSERT_TRUE(AwaitAnswer(item));
  EXPECT_EQ(OutcomeOf(item).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(OutcomeOf(item).message(), "deadline exceeded after 300001us in queue");
  EXPECT_EQ(batcher_->QueueDepth(), 0);
}

// A request cancelled while queued leaves within one sweep interval, with no Next() call waiting.
TEST_F(BatcherTest, SweeperAnswersACancelledRequestWhileNoCallerWaits) {
  Batcher::Options o;
  o.sweep_interval = absl::Milliseconds(10);
  Make(o);
  auto item = Item(16, w_);
  std::atomic<bool> cancel{false};
  item->cancelled = [&cancel] { return cancel.load(); };
  SubmitOk(item);
  cancel = true;
  clock_.Advance(absl::Milliseconds(10));
  ASSERT_TRUE(AwaitAnswer(item));
  EXPECT_EQ(OutcomeOf(item).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(batcher_->QueueDepth(), 0);
}

TEST_F(BatcherTest, FullQueueAnswersUnavailableAtOnce) {
  Batcher::Options o;
  o.queue_capacity = 3;
  Make(o);
  for (int i = 0; i < 3; ++i) SubmitOk(Item(16, w_));
  auto extra = Item(16, w_);
  absl::Status s = batcher_->Submit(extra);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "queue full: 3 requests queued (--queue_capacity)");
  EXPECT_EQ(OutcomeOf(extra).calls(), 0);
  EXPECT_EQ(batcher_->QueueDepth(), 3);
  // Room again once they are taken.
  clock_.Advance(kDelay);
  std::optional<Batch> b = batcher_->Next(-1);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->items.size(), 3u);
  EXPECT_TRUE(batcher_->Submit(extra).ok());
}

TEST_F(BatcherTest, SubmitAllQueuesAMessageForAnIdleCallerToTakeWhole) {
  Make();
  batcher_->DeviceIdle(0, 0);
  auto f = AsyncNext(0);  // idle and waiting: takes the first arrival at once
  ASSERT_TRUE(AwaitCallers(1));
  std::vector<std::shared_ptr<WorkItem>> message;
  for (int i = 0; i < 4; ++i) message.push_back(Item(16, w_));
  const std::vector<absl::Status> statuses = batcher_->SubmitAll(message);
  ASSERT_EQ(statuses.size(), 4u);
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  ASSERT_TRUE(ReadySoon(f));
  std::optional<Batch> b = f.get();
  ASSERT_TRUE(b.has_value());
  // Queued under one lock: the caller woken by the first sees all four.
  ASSERT_EQ(b->items.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b->items[i], message[i]) << i;
  EXPECT_EQ(b->rows, 64);
}

TEST_F(BatcherTest, SubmitAllRefusesWhatDoesNotFitAndQueuesTheRest) {
  Batcher::Options o;
  o.queue_capacity = 3;
  Make(o);
  SubmitOk(Item(16, w_));
  std::vector<std::shared_ptr<WorkItem>> message;
  for (int i = 0; i < 4; ++i) message.push_back(Item(16, w_));
  message[1]->done = nullptr;  // malformed: refused on its own, takes no room
  const std::vector<absl::Status> statuses = batcher_->SubmitAll(message);
  ASSERT_EQ(statuses.size(), 4u);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0];
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInvalidArgument) << statuses[1];
  EXPECT_TRUE(statuses[2].ok()) << statuses[2];
  EXPECT_EQ(statuses[3].code(), absl::StatusCode::kUnavailable) << statuses[3];
  EXPECT_EQ(statuses[3].message(), "queue full: 3 requests queued (--queue_capacity)");
  EXPECT_EQ(batcher_->QueueDepth(), 3);
  EXPECT_EQ(OutcomeOf(message[3]).calls(), 0);  // refused items are the caller's to answer
  clock_.Advance(kDelay);
  std::optional<Batch> b = batcher_->Next(-1);
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->items.size(), 3u);
  EXPECT_EQ(b->items[1], message[0]);
  EXPECT_EQ(b->items[2], message[2]);
}

TEST_F(BatcherTest, SubmitAllAfterShutdownRefusesEverything) {
  Make();
  batcher_->Shutdown();
  const std::vector<absl::Status> statuses = batcher_->SubmitAll({Item(16, w_), Item(16, w_)});
  ASSERT_EQ(statuses.size(), 2u);
  for (const absl::Status& s : statuses) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_EQ(s.message(), "server shutting down");
  }
  EXPECT_EQ(batcher_->QueueDepth(), 0);
}

TEST_F(BatcherTest, OperandsInGpuMemoryRunOnlyOnTheirGpu) {
  Batcher::Options o;
  o.enable_batching = false;
  Make(o);
  auto a = Item(16, nullptr);  // inline B, A in a client's GPU memory on GPU 1
  a->request.problems[0].operand_device = 1;
  auto b = Item(16, nullptr);  // anywhere
  SubmitOk(a);
  SubmitOk(b);
  std::optional<Batch> g = batcher_->Next(0);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->items[0], b);  // device 0 skips `a`
  auto f0 = AsyncNext(0);
  EXPECT_FALSE(Ready(f0));
  g = batcher_->Next(1);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->items[0], a);
  batcher_->Shutdown();
  EXPECT_FALSE(f0.get().has_value());
}

TEST_F(BatcherTest, DeviceAffinity) {
  Batcher::Options o;
  o.enable_batching = false;
  Make(o);
  auto on1 = std::make_shared<TestMatrix>(std::vector<int>{1});
  auto on02 = std::make_shared<TestMatrix>(std::vector<int>{0, 2});
  auto a = Item(16, on1);
  auto b = Item(16, on02);
  auto c = Item(16, nullptr);  // inline: anywhere
  SubmitOk(a);
  SubmitOk(b);
  SubmitOk(c);
  // Device 0 skips `a` (lives on 1) and gets `b`, then `c`.
  std::optional<Batch> g = batcher_->Next(0);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->items[0], b);
  g = batcher_->Next(0);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->items[0], c);
  // Nothing left for device 0 or 2.
  auto f0 = AsyncNext(0);
  auto f2 = AsyncNext(2);
  EXPECT_FALSE(Ready(f0));
  EXPECT_FALSE(Ready(f2));
  g = batcher_->Next(1);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->items[0], a);
  batcher_->Shutdown();
  EXPECT_FALSE(f0.get().has_value());
  EXPECT_FALSE(f2.get().has_value());
}

TEST_F(BatcherTest, AnyDeviceCallerTakesEverything) {
  Make();
  auto on3 = std::make_shared<TestMatrix>(std::vector<int>{3});
  auto a = Item(16, on3);
  SubmitOk(a);
  batcher_->Shutdown();  // no delay waiting
  std::optional<Batch> g = batcher_->Next(-1);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->items[0], a);
}

TEST_F(BatcherTest, GroupOnDisjointDevicesRefused) {
  Make();
  auto item = Item(16, std::make_shared<TestMatrix>(std::vector<int>{0}));
  item->request.kind = WorkKind::kGroup;
  Problem p2 = item->request.problems[0];
  p2.b_resident = std::make_shared<TestMatrix>(std::vector<int>{1});
  item->request.problems.push_back(p2);
  EXPECT_EQ(batcher_->Submit(item).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(OutcomeOf(item).calls(), 0);
}

TEST_F(BatcherTest, ShutdownDrainsThenReturnsNullopt) {
  Make();
  auto a = Item(16, w_);
  auto other = std::make_shared<TestMatrix>(std::vector<int>{-1});
  auto b = Item(16, other);
  SubmitOk(a);
  SubmitOk(b);
  batcher_->Shutdown();
  EXPECT_EQ(batcher_->Submit(Item(16, w_)).message(), "server shutting down");
  // No max-delay waiting after shutdown: both come out without advancing the clock.
  std::optional<Batch> g1 = batcher_->Next(0);
  std::optional<Batch> g2 = batcher_->Next(0);
  ASSERT_TRUE(g1.has_value());
  ASSERT_TRUE(g2.has_value());
  EXPECT_EQ(g1->items[0], a);
  EXPECT_EQ(g2->items[0], b);
  EXPECT_FALSE(batcher_->Next(0).has_value());
  EXPECT_FALSE(batcher_->Next(1).has_value());
}

TEST_F(BatcherTest, ShutdownWakesWaitingCallers) {
  Make();
  auto idle = AsyncNext(0);
  auto a = Item(16, w_);
  SubmitOk(a);
  // One caller takes `a` into a batch that waits for company; the other idles.
  auto waiting = AsyncNext(1);
  ASSERT_TRUE(AwaitCallers(2));
  batcher_->Shutdown();
  std::optional<Batch> g1 = idle.get();
  std::optional<Batch> g2 = waiting.get();
  EXPECT_EQ(g1.has_value() + g2.has_value(), 1);
  EXPECT_EQ((g1 ? g1 : g2)->items[0], a);
}

TEST_F(BatcherTest, DestructorAnswersLeftovers) {
  Make();
  auto a = Item(16, w_);
  SubmitOk(a);
  batcher_.reset();
  EXPECT_EQ(OutcomeOf(a).calls(), 1);
  EXPECT_EQ(OutcomeOf(a).code(), absl::StatusCode::kUnavailable);
}

TEST_F(BatcherTest, NonCoalescibleRequestsRunAlone) {
  Batcher::Options o;
  o.max_batch_rows = 1024;
  Make(o);
  auto inline1 = Item(16, nullptr);
  auto inline2 = Item(16, nullptr);
  auto batched = Item(16, w_);
  batched->request.kind = WorkKind::kBatch;
  batched->request.problems[0].count = 4;
  auto batched2 = Item(16, w_);
  batched2->request.kind = WorkKind::kBatch;
  batched2->request.problems[0].count = 4;
  auto bf16 = Item(16, w_);
  auto fp32 = Item(16, w_);
  fp32->request.problems[0].out_dtype = DType::kFP32;
  auto other_kernel = Item(16, w_);
  other_kernel->request.kernel = "cublaslt";
  auto scaled = Item(16, w_);
  scaled->request.problems[0].alpha = 2.0f;
  for (auto& it : {inline1, inline2, batched, batched2, bf16, fp32, other_kernel, scaled}) {
    SubmitOk(it);
  }
  batcher_->Shutdown();  // release partial batches without waiting
  std::vector<size_t> sizes;
  std::vector<int64_t> rows;
  while (std::optional<Batch> b = batcher_->Next(0)) {
    sizes.push_back(b->items.size());
    rows.push_back(b->rows);
  }
  EXPECT_EQ(sizes, std::vector<size_t>(8, 1));
  EXPECT_EQ(rows, (std::vector<int64_t>{16, 16, 64, 64, 16, 16, 16, 16}));
}

TEST_F(BatcherTest, DifferentMatricesNotCoalesced) {
  Make();
  auto other = std::make_shared<TestMatrix>(std::vector<int>{-1});
  SubmitOk(Item(16, w_));
  SubmitOk(Item(16, other));
  SubmitOk(Item(16, w_));
  batcher_->Shutdown();
  std::optional<Batch> b = batcher_->Next(0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->items.size(), 2u);
  b = batcher_->Next(0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->items.size(), 1u);
}

TEST_F(BatcherTest, ExpertGroupsCoalesceWhateverMatricesTheyName) {
  Batcher::Options o;
  o.max_batch_rows = 64;
  Make(o);
  auto w2 = std::make_shared<TestMatrix>(std::vector<int>{-1});
  auto w3 = std::make_shared<TestMatrix>(std::vector<int>{-1});
  auto a = GroupItem({{1, w_}, {2, w2}});
  auto b = GroupItem({{3, w2}, {1, w3}});
  auto single = Item(16, w2);  // a single problem: its own key, not the experts'
  auto c = GroupItem({{4, w3}});
  for (auto& it : {a, b, single, c}) SubmitOk(it);
  // Not full (11 of 64 rows): waits for company until the delay.
  auto next = AsyncNext(0);
  EXPECT_FALSE(Ready(next));
  clock_.Advance(kDelay);
  ASSERT_TRUE(Ready(next, absl::Seconds(5)));
  std::optional<Batch> batch = next.get();
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->items.size(), 3u);
  EXPECT_EQ(batch->items[0], a);
  EXPECT_EQ(batch->items[1], b);
  EXPECT_EQ(batch->items[2], c);
  EXPECT_EQ(batch->rows, 11);
  batch = batcher_->Next(0);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->items.size(), 1u);
  EXPECT_EQ(batch->items[0], single);
}

TEST_F(BatcherTest, ExpertGroupsCoalesceOnlyWhenEveryProblemIsAResidentGemm) {
  Batcher::Options o;
  o.max_batch_rows = 1024;
  Make(o);
  auto w2 = std::make_shared<TestMatrix>(std::vector<int>{-1});
  auto plain = GroupItem({{1, w_}, {2, w2}});
  auto plain2 = GroupItem({{5, w2}});
  auto with_inline = GroupItem({{1, w_}, {2, nullptr}});  // one inline B
  auto with_c = GroupItem({{1, w_}, {2, w2}});
  with_c->request.problems[1].c = "cc";
  auto mixed_dtype = GroupItem({{1, w_}, {2, w2}});
  mixed_dtype->request.problems[1].out_dtype = DType::kFP32;
  auto mixed_alpha = GroupItem({{1, w_}, {2, w2}});
  mixed_alpha->request.problems[0].alpha = 0.5f;
  auto fp32 = GroupItem({{1, w_}, {2, w2}});  // a different key: FP32 expert groups
  for (auto& p : fp32->request.problems) p.out_dtype = DType::kFP32;
  auto batched = GroupItem({{1, w_}});
  batched->request.problems[0].count = 2;
  for (auto& it : {plain, with_inline, with_c, mixed_dtype, mixed_alpha, fp32, batched, plain2}) {
    SubmitOk(it);
  }
  batcher_->Shutdown();  // release partial batches without waiting
  std::vector<size_t> sizes;
  while (std::optional<Batch> b = batcher_->Next(0)) sizes.push_back(b->items.size());
  // plain + plain2 together; every other one alone.
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 1, 1, 1, 1, 1, 1}));
}

TEST_F(BatcherTest, ExpertGroupsKeepDeviceAffinity) {
  Make();
  auto on0 = std::make_shared<TestMatrix>(std::vector<int>{0});
  auto on1 = std::make_shared<TestMatrix>(std::vector<int>{1});
  auto g0 = GroupItem({{1, on0}, {1, w_}});
  auto g1 = GroupItem({{1, on1}});
  auto g0b = GroupItem({{2, on0}});
  for (auto& it : {g0, g1, g0b}) SubmitOk(it);
  batcher_->Shutdown();
  std::optional<Batch> b = batcher_->Next(1);
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->items.size(), 1u);
  EXPECT_EQ(b->items[0], g1);
  b = batcher_->Next(0);
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->items.size(), 2u);
  EXPECT_EQ(b->items[0], g0);
  EXPECT_EQ(b->items[1], g0b);
}

TEST_F(BatcherTest, BatchingDisabled) {
  Batcher::Options o;
  o.enable_batching = false;
  Make(o);
  SubmitOk(Item(16, w_));
  SubmitOk(Item(16, w_));
  // Released at once (no waiting) and alone.
  std::optional<Batch> b = batcher_->Next(0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->items.size(), 1u);
}

TEST_F(BatcherTest, OtherCallersServeTheQueueWhileOneWaitsForCompany) {
  Make();
  auto a = Item(16, w_);
  SubmitOk(a);
  auto waiting = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  // A second caller does not queue up behind the coalescing batch: it takes the inline item.
  auto x = Item(16, nullptr);
  SubmitOk(x);
  std::optional<Batch> g = batcher_->Next(0);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->items[0], x);
  EXPECT_FALSE(Ready(waiting));
  clock_.Advance(kDelay);
  std::optional<Batch> w = waiting.get();
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->items[0], a);
}

// The request that fills a gathered batch wakes its gatherer, which releases it at once.
TEST_F(BatcherTest, RequestThatFillsAGatheredBatchReleasesIt) {
  Batcher::Options o;
  o.max_batch_rows = 64;
  Make(o);
  SubmitOk(Item(16, w_));
  auto gatherer = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  SubmitOk(Item(16, w_));
  SubmitOk(Item(16, w_));
  EXPECT_FALSE(Ready(gatherer));
  SubmitOk(Item(16, w_));  // 64 rows
  ASSERT_TRUE(ReadySoon(gatherer));
  std::optional<Batch> got = gatherer.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->rows, 64);
  // One that does not fit wakes the gatherer too: the batch cannot grow any more.
  SubmitOk(Item(48, w_));
  auto second = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  SubmitOk(Item(32, w_));  // 48 + 32 > 64
  ASSERT_TRUE(ReadySoon(second));
  got = second.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->rows, 48);
}

// A member whose deadline comes before the gathered batch would leave wakes the gatherer, which
// then releases the batch at that deadline.
TEST_F(BatcherTest, LateArrivalWithAnEarlierDeadlineMovesTheRelease) {
  Make();
  ASSERT_TRUE(AwaitCallers(0));  // the sweeper is asleep
  const int64_t before = clock_.WaitCalls();
  SubmitOk(Item(16, w_));  // the sweeper wakes and sleeps again until its next sweep
  auto gatherer = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1, before + 2));
  auto urgent = Item(16, w_, Priority::kNormal, clock_.Now() + absl::Microseconds(20));
  const int64_t calls = clock_.WaitCalls();
  SubmitOk(urgent);
  // The gatherer (and the sweeper) woke for the earlier deadline and went back to sleep.
  if (!AwaitCallers(1, calls + 2)) {
    batcher_->Shutdown();  // so that the unfinished future does not block the test's end
    FAIL() << "the gatherer did not wake for the earlier deadline";
  }
  clock_.Advance(absl::Microseconds(20));
  ASSERT_TRUE(ReadySoon(gatherer));
  std::optional<Batch> got = gatherer.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->items.size(), 2u);
  EXPECT_EQ(OutcomeOf(urgent).calls(), 0);
}

// A request of another key, while one caller gathers, goes to a caller waiting for work at once.
TEST_F(BatcherTest, RequestOfAnotherKeyWakesACallerWaitingForWork) {
  Make();
  auto a = Item(16, w_);
  SubmitOk(a);
  auto gatherer = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  auto other = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(2));
  auto x = Item(16, nullptr);
  SubmitOk(x);
  ASSERT_TRUE(ReadySoon(other));
  std::optional<Batch> got = other.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->items[0], x);
  EXPECT_FALSE(Ready(gatherer));
  clock_.Advance(kDelay);
  got = gatherer.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->items[0], a);
}

TEST_F(BatcherTest, ReportsQueueDepthAndDropsToMetrics) {
  auto metrics = Metrics::Create(0);
  ASSERT_TRUE(metrics.ok());
  Batcher::Options o;
  o.queue_capacity = 2;
  o.metrics = metrics->get();
  Make(o);
  auto expiring = Item(16, nullptr, Priority::kNormal, clock_.Now());
  SubmitOk(expiring);
  SubmitOk(Item(16, nullptr));
  EXPECT_FALSE(batcher_->Submit(Item(16, nullptr)).ok());
  std::string text = (*metrics)->Serialize();
  EXPECT_NE(text.find("gemm_queue_depth 2"), std::string::npos) << text;
  EXPECT_NE(text.find("gemm_batcher_dropped_total{reason=\"queue_full\"} 1"), std::string::npos);
  clock_.Advance(absl::Microseconds(1));
  ASSERT_TRUE(batcher_->Next(-1).has_value());
  ASSERT_TRUE(AwaitAnswer(expiring));  // by this Next() or by the sweeper
  text = (*metrics)->Serialize();
  EXPECT_NE(text.find("gemm_queue_depth 0"), std::string::npos) << text;
  EXPECT_NE(text.find("gemm_batcher_dropped_total{reason=\"deadline\"} 1"), std::string::npos);
}

TEST_F(BatcherTest, CountsReleasedBatchesByReason) {
  auto metrics = Metrics::Create(0);
  ASSERT_TRUE(metrics.ok());
  Batcher::Options o;
  o.max_batch_rows = 32;
  o.metrics = metrics->get();
  Make(o);
  SubmitOk(Item(16, nullptr));  // inline B: cannot coalesce
  ASSERT_TRUE(NextAtOnce(0).has_value());
  SubmitOk(Item(16, w_));
  SubmitOk(Item(16, w_));  // 32 rows: full
  ASSERT_TRUE(NextAtOnce(0).has_value());
  batcher_->DeviceIdle(0, 2);  // both batches done
  SubmitOk(Item(16, w_));
  ASSERT_TRUE(NextAtOnce(0).has_value());  // idle
  SubmitOk(Item(16, w_));
  auto f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  clock_.Advance(kDelay);
  ASSERT_TRUE(f.get().has_value());  // delay
  SubmitOk(Item(16, w_, Priority::kNormal, clock_.Now() + absl::Microseconds(10)));
  f = AsyncNext(0);
  ASSERT_TRUE(AwaitCallers(1));
  clock_.Advance(absl::Microseconds(10));
  ASSERT_TRUE(f.get().has_value());  // the member's deadline, before the delay
  SubmitOk(Item(16, w_));
  batcher_->Shutdown();
  ASSERT_TRUE(NextAtOnce(0).has_value());  // shutdown
  const std::string text = (*metrics)->Serialize();
  for (const char* reason : {"alone", "full", "idle", "delay", "deadline", "shutdown"}) {
    EXPECT_NE(text.find(absl::StrCat("gemm_batches_released_total{reason=\"", reason, "\"} 1")),
              std::string::npos)
        << reason << "\n"
        << text;
  }
}

// Many submitters and pullers on the real clock: every item is handed out or answered exactly
// once, and batches respect the row bound and device affinity.
TEST(BatcherStressTest, ExactlyOnceUnderConcurrency) {
  Batcher::Options o;
  o.max_queue_delay = absl::Microseconds(100);
  o.max_batch_rows = 128;
  o.queue_capacity = 256;
  auto created = Batcher::Create(o, RealClock::Get());
  ASSERT_TRUE(created.ok());
  Batcher& batcher = **created;

  constexpr int kSubmitters = 6;
  constexpr int kPerSubmitter = 3000;
  constexpr int kTotal = kSubmitters * kPerSubmitter;
  std::vector<std::atomic<int>> handed(kTotal), completed(kTotal);
  std::atomic<int> rejected{0};
  std::vector<std::shared_ptr<const ResidentMatrix>> mats = {
      std::make_shared<TestMatrix>(std::vector<int>{-1}),
      std::make_shared<TestMatrix>(std::vector<int>{0}),
      std::make_shared<TestMatrix>(std::vector<int>{1}),
      std::make_shared<TestMatrix>(std::vector<int>{0, 1})};
  std::atomic<bool> bad_batch{false};

  std::vector<std::thread> pullers;
  for (int device : {0, 0, 1, 1, -1}) {
    pullers.emplace_back([&, device] {
      while (std::optional<Batch> b = batcher.Next(device)) {
        int64_t rows = 0;
        for (auto& item : b->items) {
          const Problem& p = item->request.problems[0];
          rows += p.m;
          if (device >= 0 && p.b_resident != nullptr) {
            const auto& devs = p.b_resident->desc().devices;
            if (devs[0] != -1 && std::find(devs.begin(), devs.end(), device) == devs.end()) {
              bad_batch = true;
            }
          }
          handed[std::stoi(item->request.request_id)]++;
        }
        if (b->items.size() > 1 && rows > o.max_batch_rows) bad_batch = true;
      }
    });
  }
  std::vector<std::thread> submitters;
  for (int s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&, s] {
      for (int i = 0; i < kPerSubmitter; ++i) {
        const int id = s * kPerSubmitter + i;
        auto item = std::make_shared<WorkItem>();
        item->request.request_id = std::to_string(id);
        item->request.priority = id % 3 == 0 ? Priority::kHigh : Priority::kNormal;
        if (id % 7 == 0) item->request.deadline = absl::Now() + absl::Microseconds(id % 300);
        if (id % 11 == 0) item->cancelled = [] { return true; };
        Problem p;
        p.m = 1 + id % 40;
        if (id % 5 == 0) {
          p.b = "inline";
        } else {
          p.b_resident = mats[id % mats.size()];
        }
        item->request.problems.push_back(std::move(p));
        item->done = [&completed, id](absl::StatusOr<GemmResult>) { completed[id]++; };
        while (true) {
          absl::Status st = batcher.Submit(item);
          if (st.ok()) break;
          rejected++;
          absl::SleepFor(absl::Microseconds(50));
        }
      }
    });
  }
  for (auto& t : submitters) t.join();
  batcher.Shutdown();
  for (auto& t : pullers) t.join();
  EXPECT_EQ(batcher.QueueDepth(), 0);
  created->reset();  // joins the sweeper: every drop it made has been answered

  EXPECT_FALSE(bad_batch);
  int handed_total = 0, completed_total = 0;
  for (int i = 0; i < kTotal; ++i) {
    ASSERT_EQ(handed[i] + completed[i], 1) << "item " << i;
    handed_total += handed[i];
    completed_total += completed[i];
  }
  EXPECT_GT(handed_total, 0);
  EXPECT_GE(completed_total, kTotal / 11 / 2);  // at least the cancelled ones, mostly
}

}  // namespace
}  // namespace gemm::core
