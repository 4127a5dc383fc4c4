// GemmStreamPacked end to end in one process (gRPC over loopback, GemmEngine over a fake
// one-device backend, no GPU): the requests of one message are queued together and coalesced into
// one batch, and when the backend answers a batch inside one AnswerBatch (as the GPU executor
// does per unit) the answers for the stream leave in one message. A request that fails validation
// is answered with its error and the rest of its message still runs.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gemm/v1/gemm_service.grpc.pb.h"
#include "gtest/gtest.h"
#include "server/core/answer_batch.h"
#include "server/core/engine.h"
#include "server/grpc/gemm_service.h"
#include "tests/unit/loopback_service.h"
#include "tests/unit/one_device_backend.h"

namespace gemm {
namespace {

namespace v1 = ::gemm::v1;

// Each batch's items are answered with an output of shape {M, batch size}, inside one
// AnswerBatch when `answer_together`, else one after another.
class OneDeviceBackend : public testing::OneDeviceBackend {
 public:
  explicit OneDeviceBackend(bool answer_together) : answer_together_(answer_together) {}

 protected:
  void RunBatch(const core::Batch& b) override {
    std::optional<core::AnswerBatch> together;
    if (answer_together_) together.emplace();
    for (const auto& item : b.items) {
      core::GemmResult r;
      r.outputs.push_back(core::Output{
          .shape = {item->request.problems[0].m, static_cast<int64_t>(b.items.size())}});
      item->done(std::move(r));
    }
  }

 private:
  const bool answer_together_;
};

class StreamPackingTest : public ::testing::Test {
 protected:
  void Start(bool answer_together) {
    core::GemmEngine::Options o;
    o.batcher.max_queue_delay = absl::Seconds(1);  // a batch leaves when full or idle
    o.batcher.max_batch_rows = 8;
    auto e = core::GemmEngine::Create(o, std::make_unique<OneDeviceBackend>(answer_together));
    ASSERT_TRUE(e.ok()) << e.status();
    engine_ = std::move(*e);
    core::ResidentMatrix::Desc desc{
        .name = "w", .rows = 8, .cols = 8, .layout = core::BLayout::kNK, .devices = {0}};
    auto reg = engine_->registry().Begin(desc, 1024);
    ASSERT_TRUE(reg.ok()) << reg.status();
    ASSERT_TRUE((*reg)->Append(0, std::string(8 * 8 * 2, '\1')).ok());
    auto m = (*reg)->Finish();
    ASSERT_TRUE(m.ok()) << m.status();
    handle_ = (*m)->desc().handle;
    const absl::Status started = loopback_.Start(engine_.get());
    ASSERT_TRUE(started.ok()) << started;
    stub_ = loopback_.stub.get();
  }

  void TearDown() override {
    loopback_.Shutdown();
    if (engine_ != nullptr) engine_->Shutdown();
  }

  // A request of `m` rows against the resident matrix (N = K = 8).
  void Add(v1::GemmRequestPack* pack, const std::string& id, int64_t m) {
    v1::GemmRequest* r = pack->add_requests();
    r->set_request_id(id);
    v1::Problem* p = r->mutable_problem();
    p->set_m(m);
    p->set_n(8);
    p->set_k(8);
    p->set_a(std::string(m * 8 * 2, '\1'));
    p->set_b_handle(handle_);
  }

  // Sends `pack` on a new stream, half-closes, and returns the response messages received.
  std::vector<v1::GemmResponsePack> Exchange(const v1::GemmRequestPack& pack) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    auto stream = stub_->GemmStreamPacked(&ctx);
    EXPECT_TRUE(stream->Write(pack));
    EXPECT_TRUE(stream->WritesDone());
    std::vector<v1::GemmResponsePack> messages;
    v1::GemmResponsePack in;
    while (stream->Read(&in)) messages.push_back(in);
    const grpc::Status s = stream->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message();
    return messages;
  }

  // Every response of `messages` by request id (an id seen twice fails the test).
  static std::map<std::string, v1::GemmResponse> ById(
      const std::vector<v1::GemmResponsePack>& messages) {
    std::map<std::string, v1::GemmResponse> out;
    for (const auto& m : messages) {
      for (const auto& r : m.responses()) {
        EXPECT_TRUE(out.emplace(r.request_id(), r).second) << "answered twice: " << r.request_id();
      }
    }
    return out;
  }

  std::unique_ptr<core::GemmEngine> engine_;
  testing::LoopbackService loopback_;
  v1::GemmService::Stub* stub_ = nullptr;
  std::string handle_;
};

TEST_F(StreamPackingTest, MessageRunsAsOneBatchAndIsAnsweredInOneMessage) {
  Start(/*answer_together=*/true);
  v1::GemmRequestPack pack;
  for (int i = 0; i < 4; ++i) Add(&pack, absl::StrCat("r", i), 2);  // 8 rows: a full batch
  const std::vector<v1::GemmResponsePack> messages = Exchange(pack);
  ASSERT_EQ(messages.size(), 1u);
  ASSERT_EQ(messages[0].responses_size(), 4);
  for (int i = 0; i < 4; ++i) {
    const v1::GemmResponse& r = messages[0].responses(i);
    EXPECT_EQ(r.request_id(), absl::StrCat("r", i));
    EXPECT_FALSE(r.has_error()) << r.error().message();
    ASSERT_EQ(r.outputs_size(), 1);
    EXPECT_EQ(r.outputs(0).shape(1), 4) << "ran in a batch of " << r.outputs(0).shape(1);
  }
}

TEST_F(StreamPackingTest, InvalidRequestIsAnsweredAndTheRestOfItsMessageRuns) {
  Start(/*answer_together=*/true);
  v1::GemmRequestPack pack;
  Add(&pack, "a", 2);
  Add(&pack, "bad", 2);
  pack.mutable_requests(1)->mutable_problem()->set_a("short");
  Add(&pack, "b", 2);
  Add(&pack, "c", 4);
  const std::vector<v1::GemmResponsePack> messages = Exchange(pack);
  std::map<std::string, v1::GemmResponse> by_id = ById(messages);
  ASSERT_EQ(by_id.size(), 4u);
  EXPECT_EQ(by_id["bad"].error().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_NE(by_id["bad"].error().message(), "");
  for (const char* id : {"a", "b", "c"}) {
    EXPECT_FALSE(by_id[id].has_error()) << id << ": " << by_id[id].error().message();
    ASSERT_EQ(by_id[id].outputs_size(), 1) << id;
    EXPECT_EQ(by_id[id].outputs(0).shape(1), 3) << id;  // the three valid ones: one batch
  }
  // The batch's three answers leave together. (The error is found by validation when the message
  // is queued, so it may leave before them or with them.)
  int together = 0;
  for (const auto& m : messages) {
    int valid = 0;
    for (const auto& r : m.responses()) valid += r.request_id() != "bad";
    together = std::max(together, valid);
  }
  EXPECT_EQ(together, 3) << messages.size() << " messages";
}

TEST_F(StreamPackingTest, AnswersGivenOneByOneAllArriveOnce) {
  Start(/*answer_together=*/false);
  v1::GemmRequestPack pack;
  for (int i = 0; i < 4; ++i) Add(&pack, absl::StrCat("r", i), 2);
  const std::vector<v1::GemmResponsePack> messages = Exchange(pack);
  std::map<std::string, v1::GemmResponse> by_id = ById(messages);
  ASSERT_EQ(by_id.size(), 4u);
  for (const auto& [id, r] : by_id) EXPECT_FALSE(r.has_error()) << id;
}

}  // namespace
}  // namespace gemm
