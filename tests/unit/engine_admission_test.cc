// GemmEngine admission: a request takes the bytes it holds (operands in the message plus its
// response) from the server-wide in-flight budget until its answer has been handed over, is
// refused RESOURCE_EXHAUSTED naming --max_in_flight_bytes while they do not fit, and gives them
// back also when the queue refuses it. Limits that make no sense stop the engine from starting.
// Every admitted request is offered to the backend to pin its message's operands once, before
// it is queued; a refused one never is.
#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/core/engine.h"

namespace gemm::core {
namespace {

// One device (0) whose worker, once `go` is notified, takes batches and keeps their items until
// the test answers them (AnswerOldest).
class HoldingBackend : public Backend {
 public:
  std::string Name() const override { return "holding"; }
  BackendDescription Describe() const override {
    BackendDescription d;
    d.name = "holding";
    d.devices.resize(1);
    return d;
  }
  std::vector<int> Devices() const override { return {0}; }
  absl::Status Start(WorkSource* source) override {
    thread_ = std::thread([this, source] {
      go.WaitForNotification();
      while (std::optional<Batch> b = source->Next(0)) {
        absl::MutexLock lock(&mu_);
        for (auto& item : b->items) held_.push_back(std::move(item));
      }
    });
    return absl::OkStatus();
  }
  void Stop() override {
    if (!go.HasBeenNotified()) go.Notify();
    thread_.join();
    while (AnswerOldest()) {
    }
  }
  absl::StatusOr<std::unique_ptr<MatrixUpload>> BeginUpload(ResidentMatrix::Desc) override {
    return absl::UnimplementedError("no resident matrices");
  }
  // Marks A as pinned (nothing is copied) and counts the calls.
  void PinMessageOperands(WorkItem* item) override {
    for (Problem& p : item->request.problems) p.a_mem = HostMemory::kPinned;
    pin_calls.fetch_add(1);
  }

  // Waits until `n` items are held.
  void AwaitHeld(size_t n) {
    absl::MutexLock lock(&mu_);
    const auto enough = [this, n]()
                            ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return held_.size() >= n; };
    mu_.Await(absl::Condition(&enough));
  }

  // Answers the oldest held item with one output of its response's size; false when none.
  bool AnswerOldest() {
    std::shared_ptr<WorkItem> item;
    {
      absl::MutexLock lock(&mu_);
      if (held_.empty()) return false;
      item = std::move(held_.front());
      held_.pop_front();
    }
    GemmResult r;
    for (const Problem& p : item->request.problems) {
      r.outputs.push_back({.shape = {p.m, p.n}, .dtype = p.out_dtype});
    }
    item->done(std::move(r));
    return true;
  }

  // Whether the oldest held item's problems were all pinned before the worker took it; false
  // when none is held.
  bool OldestWasPinned() {
    absl::MutexLock lock(&mu_);
    if (held_.empty()) return false;
    for (const Problem& p : held_.front()->request.problems) {
      if (p.a_mem != HostMemory::kPinned) return false;
    }
    return true;
  }

  absl::Notification go;
  std::atomic<int> pin_calls{0};

 private:
  absl::Mutex mu_;
  std::deque<std::shared_ptr<WorkItem>> held_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

class EngineAdmissionTest : public ::testing::Test {
 protected:
  // An engine with an in-flight budget of `budget` bytes on a 1 GiB host.
  void Make(int64_t budget, int64_t queue_capacity = 64) {
    auto backend = std::make_unique<HoldingBackend>();
    backend_ = backend.get();
    GemmEngine::Options o;
    o.limits.max_in_flight_bytes = budget;
    o.batcher.queue_capacity = queue_capacity;
    o.batcher.max_queue_delay = absl::ZeroDuration();
    o.usable_memory = UsableMemory{int64_t{1} << 30, "test"};
    auto e = GemmEngine::Create(o, std::move(backend));
    ASSERT_TRUE(e.ok()) << e.status();
    engine_ = std::move(*e);
  }

  // A single FP32-output problem with inline operands: holds 2*M*K + 2*K*N + 4*M*N bytes.
  std::shared_ptr<WorkItem> Item(int64_t m, int64_t n, int64_t k) {
    auto item = std::make_shared<WorkItem>();
    operands_.push_back(std::make_unique<std::string>(m * k * 2, '\1'));
    const std::string& a = *operands_.back();
    operands_.push_back(std::make_unique<std::string>(k * n * 2, '\1'));
    const std::string& b = *operands_.back();
    item->request.problems.push_back(
        {.m = m, .n = n, .k = k, .a = a, .b = b, .out_dtype = DType::kFP32});
    item->done = [this](absl::StatusOr<GemmResult> r) {
      absl::MutexLock lock(&mu_);
      answers_.push_back(r.status());
    };
    return item;
  }

  ~EngineAdmissionTest() override {
    if (engine_ != nullptr) engine_->Shutdown();
  }

  HoldingBackend* backend_ = nullptr;
  std::unique_ptr<GemmEngine> engine_;
  std::vector<std::unique_ptr<std::string>> operands_;
  absl::Mutex mu_;
  std::vector<absl::Status> answers_ ABSL_GUARDED_BY(mu_);
};

// 16x16x1 FP32: 32 + 32 bytes in, 1024 out.
constexpr int64_t kSmallHeld = 32 + 32 + 16 * 16 * 4;

TEST_F(EngineAdmissionTest, ResponsesCountAgainstTheBudgetUntilAnswered) {
  Make(4096);
  backend_->go.Notify();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine_->Submit(Item(16, 16, 1)).ok());
  EXPECT_EQ(engine_->in_flight_bytes(), 3 * kSmallHeld);
  // A fourth small request asks for a response the budget has no room for.
  const absl::Status busy = engine_->Submit(Item(16, 16, 1));
  EXPECT_EQ(busy.code(), absl::StatusCode::kResourceExhausted) << busy;
  EXPECT_NE(busy.message().find("--max_in_flight_bytes"), std::string::npos) << busy;
  EXPECT_EQ(engine_->in_flight_bytes(), 3 * kSmallHeld);
  // Once an answer is handed over its bytes are back.
  backend_->AwaitHeld(1);
  ASSERT_TRUE(backend_->AnswerOldest());
  EXPECT_EQ(engine_->in_flight_bytes(), 2 * kSmallHeld);
  EXPECT_TRUE(engine_->Submit(Item(16, 16, 1)).ok());
  backend_->AwaitHeld(3);
  while (backend_->AnswerOldest()) {
  }
  EXPECT_EQ(engine_->in_flight_bytes(), 0);
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(answers_.size(), 4u);
}

TEST_F(EngineAdmissionTest, RequestLargerThanTheWholeBudgetIsRefused) {
  Make(4096);
  backend_->go.Notify();
  // 1 KiB + 1 KiB of operands and a 4 KiB response: each under its own limit (lowered to the
  // budget), together over the whole budget.
  const absl::Status s = engine_->Submit(Item(32, 32, 16));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("never"), std::string::npos) << s;
  EXPECT_NE(s.message().find("--max_in_flight_bytes"), std::string::npos) << s;
  EXPECT_EQ(engine_->in_flight_bytes(), 0);
}

TEST_F(EngineAdmissionTest, ResponseOverItsLimitIsRefusedWhateverTheRequestSize) {
  Make(4096);
  backend_->go.Notify();
  // 64 bytes of operands asking for a 16 KiB response.
  const absl::Status s = engine_->Submit(Item(64, 64, 1));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("--max_response_bytes"), std::string::npos) << s;
  EXPECT_EQ(engine_->in_flight_bytes(), 0);
}

TEST_F(EngineAdmissionTest, QueueRefusalGivesTheBytesBack) {
  Make(4096, /*queue_capacity=*/1);  // the worker does not pull yet: the queue fills
  std::vector<std::shared_ptr<WorkItem>> items = {Item(16, 16, 1), Item(16, 16, 1)};
  const std::vector<absl::Status> s = engine_->SubmitAll(items);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].ok()) << s[0];
  EXPECT_EQ(s[1].code(), absl::StatusCode::kUnavailable) << s[1];
  EXPECT_EQ(engine_->in_flight_bytes(), kSmallHeld);
  backend_->go.Notify();
  backend_->AwaitHeld(1);
  ASSERT_TRUE(backend_->AnswerOldest());
  EXPECT_EQ(engine_->in_flight_bytes(), 0);
}

TEST_F(EngineAdmissionTest, CreateResolvesLimitsAndRefusesNonsense) {
  GemmEngine::Options o;
  o.usable_memory = UsableMemory{int64_t{8} << 30, "test"};
  auto e = GemmEngine::Create(o, std::make_unique<HoldingBackend>());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*e)->limits().max_in_flight_bytes, int64_t{2} << 30);  // 25% of 8 GiB
  ASSERT_FALSE((*e)->limit_notes().empty());
  EXPECT_NE((*e)->limit_notes()[0].find("25% of 8.0 GiB host memory (test)"), std::string::npos)
      << (*e)->limit_notes()[0];
  (*e)->Shutdown();

  o.limits.max_dim = int64_t{1} << 32;
  auto bad = GemmEngine::Create(o, std::make_unique<HoldingBackend>());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--max_dim"), std::string::npos) << bad.status();
}

TEST_F(EngineAdmissionTest, AdmittedRequestsArePinnedOnceBeforeQueuingAndRefusedOnesNever) {
  Make(4096);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine_->Submit(Item(16, 16, 1)).ok());
  EXPECT_EQ(backend_->pin_calls.load(), 3);
  // Refused by the budget: not offered.
  EXPECT_EQ(engine_->Submit(Item(16, 16, 1)).code(), absl::StatusCode::kResourceExhausted);
  // Refused by validation (A's size does not match its shape): not offered.
  std::shared_ptr<WorkItem> bad = Item(2, 2, 1);
  bad->request.problems[0].a = "x";
  EXPECT_EQ(engine_->Submit(bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend_->pin_calls.load(), 3);
  backend_->go.Notify();
  backend_->AwaitHeld(3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(backend_->OldestWasPinned()) << i;
    ASSERT_TRUE(backend_->AnswerOldest());
  }
}

}  // namespace
}  // namespace gemm::core
