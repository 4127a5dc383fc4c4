// Tests of DeviceSplit: when a group request is split by device, how its problems are assigned,
// that the parts reach the batcher callers of their devices, and that the original is answered
// exactly once (outputs in order, merged timing, first error, nothing after Abandon).
#include "server/core/device_split.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/core/batcher.h"
#include "server/core/fake_clock.h"

namespace gemm::core {
namespace {

class TestMatrix : public ResidentMatrix {
 public:
  explicit TestMatrix(std::vector<int> devices)
      : ResidentMatrix(Desc{.handle = "m",
                            .name = "m",
                            .rows = 64,
                            .cols = 64,
                            .layout = BLayout::kKN,
                            .devices = std::move(devices)}) {}
};

std::shared_ptr<const ResidentMatrix> On(std::vector<int> devices) {
  return std::make_shared<TestMatrix>(std::move(devices));
}

// What the original request was answered with.
struct Answers {
  int calls = 0;
  std::optional<absl::StatusOr<GemmResult>> last;
};

// A group request: one problem per entry, M = 10 + index, against the matrix given (inline B
// where null).
std::shared_ptr<WorkItem> Group(const std::vector<std::shared_ptr<const ResidentMatrix>>& bs,
                                Answers* answers) {
  auto item = std::make_shared<WorkItem>();
  item->request.request_id = "g";
  item->request.kind = WorkKind::kGroup;
  item->request.priority = Priority::kHigh;
  item->request.deadline = absl::FromUnixSeconds(2000000000);
  item->request.kernel = "k";
  for (size_t i = 0; i < bs.size(); ++i) {
    Problem p;
    p.m = 10 + static_cast<int64_t>(i);
    p.n = 64;
    p.k = 64;
    p.b_resident = bs[i];
    if (bs[i] == nullptr) p.b = "inline";
    item->request.problems.push_back(p);
  }
  item->cancelled = [] { return false; };
  item->done = [answers](absl::StatusOr<GemmResult> r) {
    ++answers->calls;
    answers->last = std::move(r);
  };
  return item;
}

// The M of each problem of `part`.
std::vector<int64_t> Ms(const WorkItem& part) {
  std::vector<int64_t> ms;
  for (const Problem& p : part.request.problems) ms.push_back(p.m);
  return ms;
}

// A result for `part`: one output per problem whose first dimension is the problem's M.
GemmResult ResultFor(const WorkItem& part, absl::Duration queue, int device) {
  GemmResult r;
  for (const Problem& p : part.request.problems) {
    r.outputs.push_back(Output{.shape = {p.m, p.n}});
  }
  r.timing.queue = queue;
  r.timing.batch_rows = 100;
  r.timing.batch_requests = device + 2;
  r.timing.device = device;
  r.kernel = "sm90_wgmma";
  return r;
}

TEST(DeviceSplitTest, NoSplitWhenOneDeviceHoldsEverything) {
  Answers a;
  auto both = On({0, 1});
  // Not a group; a group on one device; a replica on the other device's side; inline B only;
  // host-memory matrices.
  auto single = Group({On({1})}, &a);
  single->request.kind = WorkKind::kSingle;
  EXPECT_EQ(DeviceSplit::Make(single), nullptr);
  EXPECT_EQ(DeviceSplit::Make(Group({On({1}), On({1}), nullptr}, &a)), nullptr);
  EXPECT_EQ(DeviceSplit::Make(Group({both, On({1}), both}, &a)), nullptr);
  EXPECT_EQ(DeviceSplit::Make(Group({nullptr, nullptr}, &a)), nullptr);
  EXPECT_EQ(DeviceSplit::Make(Group({On({-1}), On({}), On({0})}, &a)), nullptr);
}

TEST(DeviceSplitTest, OnePartPerDeviceInOriginalOrder) {
  Answers a;
  auto item = Group({On({0}), On({1}), nullptr, On({0}), On({1})}, &a);
  auto split = DeviceSplit::Make(item);
  ASSERT_NE(split, nullptr);
  ASSERT_EQ(split->parts().size(), 2u);
  // Inline B joins the first part.
  EXPECT_EQ(Ms(*split->parts()[0]), (std::vector<int64_t>{10, 12, 13}));
  EXPECT_EQ(Ms(*split->parts()[1]), (std::vector<int64_t>{11, 14}));
  for (const auto& part : split->parts()) {
    EXPECT_EQ(part->request.request_id, "g");
    EXPECT_EQ(part->request.kind, WorkKind::kGroup);
    EXPECT_EQ(part->request.priority, Priority::kHigh);
    EXPECT_EQ(part->request.deadline, item->request.deadline);
    EXPECT_EQ(part->request.kernel, "k");
    ASSERT_TRUE(part->cancelled);
    EXPECT_EQ(part->keep_alive, item);
  }
}

TEST(DeviceSplitTest, ReplicatedMatricesJoinAPartThatIsThereAlready) {
  Answers a;
  // 0 and 2 can share device 0; 1 lives on 1 alone.
  auto split = DeviceSplit::Make(Group({On({0, 1}), On({1}), On({0})}, &a));
  ASSERT_NE(split, nullptr);
  ASSERT_EQ(split->parts().size(), 2u);
  EXPECT_EQ(Ms(*split->parts()[0]), (std::vector<int64_t>{10, 12}));
  EXPECT_EQ(Ms(*split->parts()[1]), (std::vector<int64_t>{11}));
}

TEST(DeviceSplitTest, AnswersOnceWithOutputsInOrderAndMergedTiming) {
  Answers a;
  auto split = DeviceSplit::Make(Group({On({0}), On({1}), On({0})}, &a));
  ASSERT_NE(split, nullptr);
  const auto& parts = split->parts();
  parts[1]->done(ResultFor(*parts[1], absl::Microseconds(70), 1));
  EXPECT_EQ(a.calls, 0);
  parts[0]->done(ResultFor(*parts[0], absl::Microseconds(30), 0));
  ASSERT_EQ(a.calls, 1);
  ASSERT_TRUE(a.last->ok()) << a.last->status();
  const GemmResult& r = **a.last;
  ASSERT_EQ(r.outputs.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.outputs[i].shape[0], 10 + i) << i;
  EXPECT_EQ(r.timing.queue, absl::Microseconds(70));
  EXPECT_EQ(r.timing.batch_rows, 200);
  EXPECT_EQ(r.timing.batch_requests, 3);
  EXPECT_EQ(r.timing.device, 0);
  EXPECT_EQ(r.kernel, "sm90_wgmma");
  EXPECT_FALSE(r.timing.gpu_timing_skipped);
}

// When one part's GPU phases were not timed, the merged answer says so (its maxima would be
// the timed part's alone).
TEST(DeviceSplitTest, MergedTimingIsUntimedWhenAPartWasUntimed) {
  Answers a;
  auto split = DeviceSplit::Make(Group({On({0}), On({1})}, &a));
  ASSERT_NE(split, nullptr);
  const auto& parts = split->parts();
  GemmResult timed = ResultFor(*parts[0], absl::Microseconds(30), 0);
  timed.timing.compute = absl::Microseconds(68);
  GemmResult untimed = ResultFor(*parts[1], absl::Microseconds(30), 1);
  untimed.timing.gpu_timing_skipped = true;
  parts[0]->done(std::move(timed));
  parts[1]->done(std::move(untimed));
  ASSERT_EQ(a.calls, 1);
  ASSERT_TRUE(a.last->ok()) << a.last->status();
  EXPECT_TRUE((*a.last)->timing.gpu_timing_skipped);
}

TEST(DeviceSplitTest, FirstErrorWinsAndIsAnsweredOnce) {
  Answers a;
  auto split = DeviceSplit::Make(Group({On({0}), On({1}), On({2})}, &a));
  ASSERT_NE(split, nullptr);
  const auto& parts = split->parts();
  ASSERT_EQ(parts.size(), 3u);
  parts[2]->done(absl::DeadlineExceededError("late"));
  parts[0]->done(ResultFor(*parts[0], absl::Microseconds(1), 0));
  parts[1]->done(absl::ResourceExhaustedError("full"));
  ASSERT_EQ(a.calls, 1);
  EXPECT_EQ(a.last->status().code(), absl::StatusCode::kDeadlineExceeded);
  // A part answering with the wrong number of outputs is an error too.
  Answers b;
  auto split2 = DeviceSplit::Make(Group({On({0}), On({1})}, &b));
  ASSERT_NE(split2, nullptr);
  split2->parts()[0]->done(GemmResult{});
  split2->parts()[1]->done(ResultFor(*split2->parts()[1], absl::Microseconds(1), 1));
  ASSERT_EQ(b.calls, 1);
  EXPECT_EQ(b.last->status().code(), absl::StatusCode::kInternal);
}

TEST(DeviceSplitTest, AbandonedSplitNeverAnswers) {
  Answers a;
  auto split = DeviceSplit::Make(Group({On({0}), On({1})}, &a));
  ASSERT_NE(split, nullptr);
  split->parts()[0]->done(ResultFor(*split->parts()[0], absl::Microseconds(1), 0));
  split->Abandon();
  split->parts()[1]->done(ResultFor(*split->parts()[1], absl::Microseconds(1), 1));
  EXPECT_EQ(a.calls, 0);
}

// The batcher refuses the original (its matrices share no device) and routes each part to the
// callers of its device.
TEST(DeviceSplitTest, PartsReachTheirDevicesThroughTheBatcher) {
  FakeClock clock;
  Batcher::Options o;
  o.max_queue_delay = absl::ZeroDuration();
  auto batcher = Batcher::Create(o, &clock);
  ASSERT_TRUE(batcher.ok()) << batcher.status();
  Answers a;
  auto item = Group({On({0}), On({1}), On({0})}, &a);
  EXPECT_EQ((*batcher)->Submit(item).code(), absl::StatusCode::kFailedPrecondition);
  auto split = DeviceSplit::Make(item);
  ASSERT_NE(split, nullptr);
  for (const auto& part : split->parts()) ASSERT_TRUE((*batcher)->Submit(part).ok());
  for (int device : {1, 0}) {
    std::optional<Batch> b = (*batcher)->Next(device);
    ASSERT_TRUE(b.has_value());
    ASSERT_EQ(b->items.size(), 1u);
    const WorkItem& part = *b->items[0];
    for (const Problem& p : part.request.problems) {
      EXPECT_EQ(p.b_resident->desc().devices, std::vector<int>{device});
    }
    b->items[0]->done(ResultFor(part, absl::Microseconds(5), device));
  }
  ASSERT_EQ(a.calls, 1);
  ASSERT_TRUE(a.last->ok());
  EXPECT_EQ((**a.last).outputs.size(), 3u);
  EXPECT_EQ((*batcher)->QueueDepth(), 0);
}

}  // namespace
}  // namespace gemm::core
