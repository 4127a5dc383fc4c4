// Integration: a client that sends many requests with large answers and does not read them. The
// server stops reading its stream once the answers it holds reach the per-stream cap (or the
// server-wide cap), so its resident memory stays bounded; once the client reads, every request is
// answered, also answers larger than the cap (they go alone).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// 2048x2048 FP32 answers (16 MiB each) from 8 KiB of operands.
constexpr int64_t kDim = 2048;
constexpr int64_t kAnswerBytes = kDim * kDim * 4;

// Resident set size of process `pid` in bytes (0 if unreadable).
int64_t Rss(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    int64_t kib = 0;
    if (line.rfind("VmRSS:", 0) == 0 &&
        absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line.substr(6)), " kB"),
                         &kib)) {
      return kib * 1024;
    }
  }
  return 0;
}

// One stream: writes `requests` requests with 16 MiB answers from a thread; reads nothing until
// Drain().
class UnreadStream {
 public:
  UnreadStream(client::GemmClient& c, int requests, const HostProblem& p)
      : stream_(c.stub()->GemmStream(&ctx_)), requests_(requests) {
    writer_ = std::thread([this, p] {
      v1::GemmRequest req;
      FillProto(p, req.mutable_problem());
      for (int i = 0; i < requests_; ++i) {
        req.set_request_id(absl::StrCat(i));
        if (!stream_->Write(req)) return;
        written_++;
      }
      stream_->WritesDone();
    });
  }
  // Reads every answer; returns how many arrived right (every request answered once, with a
  // result of the right size; the first one checked against the reference).
  int Drain(const HostProblem& p) {
    v1::GemmResponse r;
    std::set<std::string> seen;
    int good = 0;
    while (stream_->Read(&r)) {
      const bool right = r.error().code() == 0 && r.outputs_size() == 1 &&
                         static_cast<int64_t>(r.outputs(0).data().size()) == kAnswerBytes &&
                         seen.insert(r.request_id()).second &&
                         (seen.size() > 1 || OutputError(p, r.outputs(0)) <= Tolerance(p));
      good += right ? 1 : 0;
    }
    writer_.join();
    status_ = stream_->Finish();
    return good;
  }
  void Cancel() { ctx_.TryCancel(); }
  int written() const { return written_.load(); }
  const grpc::Status& status() const { return status_; }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::GemmRequest, v1::GemmResponse>> stream_;
  const int requests_;
  std::atomic<int> written_{0};
  std::thread writer_;
  grpc::Status status_;
};

// Starts a server with `flags`, opens `streams` streams of `requests` each that do not read for
// a few seconds, and returns the server's largest RSS growth meanwhile; then reads everything and
// checks every request was answered.
int64_t GrowthWhileUnread(const std::vector<std::string>& flags, int streams, int requests,
                          int64_t stop_above) {
  auto server = ServerProcess::Start(flags);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return -1;
  ServerProcess& s = **server;
  absl::BitGen gen;
  const HostProblem p = RandomProblem(kDim, kDim, 1, false, /*fp32=*/true, 1, 0, gen);
  v1::GemmRequest warm;  // one answer of this size, so the baseline has the buffers it needs
  FillProto(p, warm.mutable_problem());
  EXPECT_TRUE(s.client().Gemm(warm).ok());
  const int64_t baseline = Rss(s.pid());
  std::vector<std::unique_ptr<UnreadStream>> open;
  for (int i = 0; i < streams; ++i) {
    open.push_back(std::make_unique<UnreadStream>(s.client(), requests, p));
  }
  int64_t growth = 0;
  const absl::Time end = absl::Now() + absl::Seconds(4);
  while (absl::Now() < end && growth <= stop_above) {
    growth = std::max(growth, Rss(s.pid()) - baseline);
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (growth > stop_above) {
    for (auto& o : open) o->Cancel();  // unbounded: no need to watch it take the host
  }
  for (auto& o : open) {
    const int good = o->Drain(p);
    if (growth <= stop_above) {
      EXPECT_TRUE(o->status().ok()) << o->status().error_message();
      EXPECT_EQ(o->written(), requests);
      EXPECT_EQ(good, requests);
    }
  }
  EXPECT_EQ(s.Stop(SIGTERM), 0);
  ::testing::Test::RecordProperty("rss_growth_mib", static_cast<int>(growth / kMiB));
  return growth;
}

TEST(StreamBackpressureTest, PerStreamCapBoundsTheServerWhileTheClientDoesNotRead) {
  // An 8 MiB cap, under one answer: the stream holds one answer at a time (each still goes);
  // 80 answers are 1.25 GiB.
  const int64_t growth = GrowthWhileUnread(
      {"--backend=cpu", absl::StrCat("--max_stream_answer_bytes=", 8 * kMiB)}, 1, 80, 512 * kMiB);
  EXPECT_LT(growth, 256 * kMiB) << "the server grew by " << growth / kMiB << " MiB";
}

TEST(StreamBackpressureTest, ServerCapBoundsAllStreamsTogether) {
  // Streams may hold 1 GiB each, the server 40 MiB in all; three streams of 30 answers.
  const int64_t growth = GrowthWhileUnread({"--backend=cpu", "--max_stream_answer_bytes=1073741824",
                                            absl::StrCat("--max_answer_bytes=", 40 * kMiB)},
                                           3, 30, 768 * kMiB);
  EXPECT_LT(growth, 384 * kMiB) << "the server grew by " << growth / kMiB << " MiB";
}

}  // namespace
}  // namespace gemm::testing
