// GemmEngine with a fake backend of two devices (no GPU): a group over resident matrices placed on
// both devices is run as one part per device and answered once, outputs in order; when a part
// cannot be queued the request fails at Submit and is never answered from the parts.
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/core/engine.h"

namespace gemm::core {
namespace {

class FakeMatrix : public ResidentMatrix {
 public:
  explicit FakeMatrix(Desc desc) : ResidentMatrix(std::move(desc)) {}
};

class FakeUpload : public MatrixUpload {
 public:
  explicit FakeUpload(ResidentMatrix::Desc desc) : desc_(std::move(desc)) {}
  absl::Status Append(absl::string_view) override { return absl::OkStatus(); }
  absl::StatusOr<std::shared_ptr<ResidentMatrix>> Finish() override {
    return std::make_shared<FakeMatrix>(desc_);
  }

 private:
  ResidentMatrix::Desc desc_;
};

// Two devices, 0 and 1, each pulled by one thread once `go` is notified. A batch's items are
// answered with one output per problem whose shape is {device, M}; `ran` records the device and
// problem count of every item.
class TwoDeviceBackend : public Backend {
 public:
  std::string Name() const override { return "fake"; }
  BackendDescription Describe() const override {
    BackendDescription d;
    d.name = "fake";
    d.devices.resize(2);
    d.devices[0].ordinal = 0;
    d.devices[1].ordinal = 1;
    return d;
  }
  std::vector<int> Devices() const override { return {0, 1}; }
  absl::Status Start(WorkSource* source) override {
    for (int device : {0, 1}) {
      threads_.emplace_back([this, source, device] {
        go.WaitForNotification();
        while (std::optional<Batch> b = source->Next(device)) {
          for (const auto& item : b->items) {
            GemmResult r;
            for (const Problem& p : item->request.problems) {
              r.outputs.push_back(Output{.shape = {device, p.m}});
            }
            r.timing.device = device;
            {
              absl::MutexLock lock(&mu);
              ran.emplace_back(device, static_cast<int>(item->request.problems.size()));
            }
            item->done(std::move(r));
          }
        }
      });
    }
    return absl::OkStatus();
  }
  void Stop() override {
    if (!go.HasBeenNotified()) go.Notify();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  absl::StatusOr<std::unique_ptr<MatrixUpload>> BeginUpload(ResidentMatrix::Desc desc) override {
    return std::make_unique<FakeUpload>(std::move(desc));
  }

  absl::Notification go;
  absl::Mutex mu;
  std::vector<std::pair<int, int>> ran ABSL_GUARDED_BY(mu);

 private:
  std::vector<std::thread> threads_;
};

class EngineSplitTest : public ::testing::Test {
 protected:
  void Make(int64_t queue_capacity) {
    auto backend = std::make_unique<TwoDeviceBackend>();
    backend_ = backend.get();
    GemmEngine::Options o;
    o.batcher.max_queue_delay = absl::ZeroDuration();
    o.batcher.queue_capacity = queue_capacity;
    auto e = GemmEngine::Create(o, std::move(backend));
    ASSERT_TRUE(e.ok()) << e.status();
    engine_ = std::move(*e);
    for (int d : {0, 1}) {
      ResidentMatrix::Desc desc{.name = absl::StrCat("e", d),
                                .rows = 8,
                                .cols = 8,
                                .layout = BLayout::kNK,
                                .devices = {d}};
      auto reg = engine_->registry().Begin(desc, 1024);
      ASSERT_TRUE(reg.ok()) << reg.status();
      ASSERT_TRUE((*reg)->Append(0, std::string(8 * 8 * 2, '\1')).ok());
      auto m = (*reg)->Finish();
      ASSERT_TRUE(m.ok()) << m.status();
      handles_.push_back((*m)->desc().handle);
    }
  }

  // A group: problem i of M = i + 1 against the matrix on device `on[i]`.
  std::shared_ptr<WorkItem> Group(const std::vector<int>& on) {
    auto item = std::make_shared<WorkItem>();
    item->request.request_id = "g";
    item->request.kind = WorkKind::kGroup;
    for (size_t i = 0; i < on.size(); ++i) {
      Problem p;
      p.m = static_cast<int64_t>(i) + 1;
      p.n = 8;
      p.k = 8;
      a_.push_back(std::make_unique<std::string>(p.m * p.k * 2, '\1'));
      p.a = *a_.back();
      p.b_handle = handles_[on[i]];
      p.b_layout = BLayout::kNK;
      item->request.problems.push_back(p);
    }
    item->done = [this](absl::StatusOr<GemmResult> r) {
      absl::MutexLock lock(&mu_);
      ++answers_;
      last_ = std::move(r);
    };
    return item;
  }

  int Answers() {
    absl::MutexLock lock(&mu_);
    return answers_;
  }

  void TearDown() override {
    if (engine_ != nullptr) engine_->Shutdown();
  }

  TwoDeviceBackend* backend_ = nullptr;
  std::unique_ptr<GemmEngine> engine_;
  std::vector<std::string> handles_;
  std::vector<std::unique_ptr<std::string>> a_;
  absl::Mutex mu_;
  int answers_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::StatusOr<GemmResult>> last_ ABSL_GUARDED_BY(mu_);
};

TEST_F(EngineSplitTest, GroupAcrossDevicesRunsPerDeviceAndIsAnsweredOnce) {
  Make(16);
  backend_->go.Notify();
  ASSERT_TRUE(engine_->Submit(Group({0, 1, 1, 0})).ok());
  for (int i = 0; i < 1000 && Answers() == 0; ++i) absl::SleepFor(absl::Milliseconds(2));
  engine_->Shutdown();
  ASSERT_EQ(Answers(), 1);
  absl::MutexLock lock(&mu_);
  ASSERT_TRUE(last_->ok()) << last_->status();
  const GemmResult& r = **last_;
  ASSERT_EQ(r.outputs.size(), 4u);
  const int device_of[] = {0, 1, 1, 0};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r.outputs[i].shape, (std::vector<int64_t>{device_of[i], i + 1})) << i;
  }
  absl::MutexLock ran_lock(&backend_->mu);
  EXPECT_EQ(backend_->ran.size(), 2u);  // one part per device, two problems each
  for (const auto& [device, problems] : backend_->ran) EXPECT_EQ(problems, 2) << device;
}

TEST_F(EngineSplitTest, PartThatCannotBeQueuedFailsTheRequestWhichIsNeverAnswered) {
  Make(1);  // room for the first part only
  const absl::Status s = engine_->Submit(Group({0, 1}));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  backend_->go.Notify();  // the queued part runs now; its answer goes nowhere
  for (int i = 0; i < 1000; ++i) {
    {
      absl::MutexLock lock(&backend_->mu);
      if (!backend_->ran.empty()) break;
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  engine_->Shutdown();
  {
    absl::MutexLock lock(&backend_->mu);
    EXPECT_EQ(backend_->ran.size(), 1u);
  }
  EXPECT_EQ(Answers(), 0);
}

TEST_F(EngineSplitTest, GroupOnOneDeviceIsNotSplit) {
  Make(16);
  backend_->go.Notify();
  ASSERT_TRUE(engine_->Submit(Group({1, 1, 1})).ok());
  for (int i = 0; i < 1000 && Answers() == 0; ++i) absl::SleepFor(absl::Milliseconds(2));
  engine_->Shutdown();
  ASSERT_EQ(Answers(), 1);
  absl::MutexLock lock(&backend_->mu);
  ASSERT_EQ(backend_->ran.size(), 1u);
  EXPECT_EQ(backend_->ran[0], (std::pair<int, int>{1, 3}));
}

}  // namespace
}  // namespace gemm::core
