// The inline path's bytes in one process (gRPC over loopback, GemmEngine over a fake one-device
// backend, no GPU): a large inline operand reaches the backend as the pieces gRPC received it in
// (not copied into one string), and answers are sent from a buffer the backend keeps
// (core::Output::held, as the GPU backend's staging would be): the client receives the buffer's
// bytes, and every buffer is released once its answer is written (unary, packed stream) or
// dropped (a stream the client cancels before its answers are ready).
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gemm/v1/gemm_service.grpc.pb.h"
#include "gtest/gtest.h"
#include "server/core/engine.h"
#include "server/grpc/gemm_service.h"
#include "tests/unit/loopback_service.h"
#include "tests/unit/one_device_backend.h"

namespace gemm {
namespace {

namespace v1 = ::gemm::v1;

// An answer buffer that counts how many were made and released.
struct HeldBuffer {
  HeldBuffer(std::string bytes, std::atomic<int>* made, std::atomic<int>* released)
      : bytes(std::move(bytes)), released(released) {
    made->fetch_add(1);
  }
  ~HeldBuffer() { released->fetch_add(1); }
  const std::string bytes;
  std::atomic<int>* const released;
};

// D's bytes of a request of `m` rows and 4 columns (BF16): each byte is m.
std::string Answer(int64_t m) { return std::string(m * 4 * 2, static_cast<char>(m)); }

// Answers every item from a HeldBuffer once `gate` opens; remembers the A of the last item.
class HeldAnswerBackend : public testing::OneDeviceBackend {
 public:
  HeldAnswerBackend(absl::Notification* gate, std::atomic<int>* taken, std::atomic<int>* made,
                    std::atomic<int>* released)
      : gate_(gate), taken_(taken), made_(made), released_(released) {}

  // The A of the last request run, and how many pieces it came in.
  std::string last_a(size_t* pieces) {
    absl::MutexLock lock(&mu_);
    *pieces = a_pieces_;
    return a_;
  }

 protected:
  void RunBatch(const core::Batch& b) override {
    taken_->fetch_add(static_cast<int>(b.items.size()));
    gate_->WaitForNotification();
    for (const auto& item : b.items) {
      const core::Problem& p = item->request.problems[0];
      {
        absl::MutexLock lock(&mu_);
        a_pieces_ = p.a.pieces().size();
        a_.clear();
        for (absl::string_view piece : p.a.pieces()) a_.append(piece.data(), piece.size());
      }
      auto buffer = std::make_shared<HeldBuffer>(Answer(p.m), made_, released_);
      core::GemmResult r;
      r.outputs.push_back(core::Output{.shape = {p.m, p.n}, .held = buffer->bytes});
      r.outputs.back().held_owner = std::move(buffer);
      item->done(std::move(r));
    }
  }

 private:
  absl::Notification* const gate_;
  std::atomic<int>* const taken_;
  std::atomic<int>* const made_;
  std::atomic<int>* const released_;
  absl::Mutex mu_;
  std::string a_ ABSL_GUARDED_BY(mu_);
  size_t a_pieces_ ABSL_GUARDED_BY(mu_) = 0;
};

class InlineBytesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = std::make_unique<HeldAnswerBackend>(&gate_, &taken_, &made_, &released_);
    backend_ = backend.get();
    auto e = core::GemmEngine::Create({}, std::move(backend));
    ASSERT_TRUE(e.ok()) << e.status();
    engine_ = std::move(*e);
    const absl::Status started = loopback_.Start(engine_.get());
    ASSERT_TRUE(started.ok()) << started;
    stub_ = loopback_.stub.get();
  }

  void TearDown() override { ShutDown(); }

  // Ends every call and runs or drops every request (once).
  void ShutDown() {
    if (!gate_.HasBeenNotified()) gate_.Notify();
    if (shut_down_) return;
    shut_down_ = true;
    loopback_.Shutdown();
    if (engine_ != nullptr) engine_->Shutdown();
  }

  // A request of m x 4 x 4 with inline A and B.
  static v1::GemmRequest Request(const std::string& id, int64_t m) {
    v1::GemmRequest r;
    r.set_request_id(id);
    v1::Problem* p = r.mutable_problem();
    p->set_m(m);
    p->set_n(4);
    p->set_k(4);
    std::string a(m * 4 * 2, '\0');
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>(i * 31 + 7);
    p->set_a(std::move(a));
    p->set_b(std::string(4 * 4 * 2, '\1'));
    return r;
  }

  // Whether `counter` reaches `want` within 10 s.
  static bool Reaches(const std::atomic<int>& counter, int want) {
    const absl::Time end = absl::Now() + absl::Seconds(10);
    while (counter.load() < want && absl::Now() < end) absl::SleepFor(absl::Milliseconds(5));
    return counter.load() == want;
  }

  absl::Notification gate_;
  bool shut_down_ = false;
  std::atomic<int> taken_{0};
  std::atomic<int> made_{0};
  std::atomic<int> released_{0};
  HeldAnswerBackend* backend_ = nullptr;  // owned by engine_
  std::unique_ptr<core::GemmEngine> engine_;
  testing::LoopbackService loopback_;
  v1::GemmService::Stub* stub_ = nullptr;
};

TEST_F(InlineBytesTest, UnaryAnswerCarriesTheHeldBytesAndReleasesThem) {
  gate_.Notify();
  grpc::ClientContext ctx;
  v1::GemmResponse response;
  const grpc::Status s = stub_->Gemm(&ctx, Request("u", 3), &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).data(), Answer(3));
  EXPECT_TRUE(Reaches(released_, 1)) << released_.load() << " of 1 buffers released";
}

TEST_F(InlineBytesTest, LargeInlineOperandReachesTheBackendInTheReceivedPieces) {
  gate_.Notify();
  const v1::GemmRequest request = Request("large", 1 << 15);  // A: 256 KiB
  grpc::ClientContext ctx;
  v1::GemmResponse response;
  const grpc::Status s = stub_->Gemm(&ctx, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  size_t pieces = 0;
  EXPECT_EQ(backend_->last_a(&pieces), request.problem().a());
  EXPECT_GT(pieces, 1u) << "A was copied into one string";
}

TEST_F(InlineBytesTest, PackedStreamAnswersCarryTheHeldBytesAndReleaseThem) {
  gate_.Notify();
  grpc::ClientContext ctx;
  auto stream = stub_->GemmStreamPacked(&ctx);
  v1::GemmRequestPack pack;
  for (int m = 1; m <= 5; ++m) *pack.add_requests() = Request(absl::StrCat("r", m), m);
  ASSERT_TRUE(stream->Write(pack));
  ASSERT_TRUE(stream->WritesDone());
  int answered = 0;
  v1::GemmResponsePack in;
  while (stream->Read(&in)) {
    for (const v1::GemmResponse& r : in.responses()) {
      ASSERT_EQ(r.outputs_size(), 1) << r.error().message();
      EXPECT_EQ(r.outputs(0).data(), Answer(r.outputs(0).shape(0))) << r.request_id();
      ++answered;
    }
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(answered, 5);
  EXPECT_TRUE(Reaches(released_, 5)) << released_.load() << " of 5 buffers released";
}

TEST_F(InlineBytesTest, CancelledStreamReleasesAnswersReadyAfterIt) {
  grpc::ClientContext ctx;
  auto stream = stub_->GemmStreamPacked(&ctx);
  v1::GemmRequestPack pack;
  for (int m = 1; m <= 5; ++m) *pack.add_requests() = Request(absl::StrCat("r", m), m);
  ASSERT_TRUE(stream->Write(pack));
  ASSERT_TRUE(Reaches(taken_, 1)) << "the backend took no request";
  ctx.TryCancel();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The answers are made now, for a call that is over (the requests still queued may be dropped
  // without running); every buffer made is released.
  gate_.Notify();
  ShutDown();
  EXPECT_GE(made_.load(), 1);
  EXPECT_TRUE(Reaches(released_, made_.load()))
      << released_.load() << " of " << made_.load() << " buffers released";
}

}  // namespace
}  // namespace gemm
