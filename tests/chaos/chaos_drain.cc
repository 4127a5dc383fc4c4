// Drain clients (see chaos_drain.h).
#include "tests/chaos/chaos_drain.h"

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "tests/chaos/chaos_util.h"

namespace gemm::testing {
namespace {

constexpr int kUnavailable = static_cast<int>(grpc::StatusCode::UNAVAILABLE);

// How long a client goes on after the signal before it gives up on the server ending its calls.
constexpr absl::Duration kGiveUp = absl::Seconds(60);

struct Sent {
  Expected expected;
  bool before_signal = false;
};

}  // namespace

DrainClients::DrainClients(const ChaosEnv& env, int streams, int unary) : env_(env) {
  for (int i = 0; i < streams; ++i) threads_.emplace_back([this, i] { RunStream(i, i % 2 == 1); });
  for (int i = 0; i < unary; ++i) threads_.emplace_back([this, i] { RunUnary(100 + i); });
}

DrainClients::~DrainClients() { Join(); }

bool DrainClients::WaitFlowing(int64_t answers, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (answers_.load() < answers) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

void DrainClients::Join() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void DrainClients::RunStream(int client, bool packed) {
  auto conn = OwnConnection(env_.target);
  if (packed) {
    StreamCall<PackedMessages>(client, conn->stub());
  } else {
    StreamCall<SingleMessages>(client, conn->stub());
  }
}

template <class M>
void DrainClients::StreamCall(int client, v1::GemmService::Stub* stub) {
  Rng rng = ClientRng(env_, 1000 + client);
  const std::string kind = absl::StrCat("drain ", M::kName);
  grpc::ClientContext ctx;
  auto stream = M::Open(stub, &ctx);
  std::mutex mu;
  std::map<std::string, Sent> pending;
  std::atomic<bool> draining{false};  // an UNAVAILABLE answer came: stop sending
  std::thread writer([&] {
    absl::Time give_up = absl::InfiniteFuture();
    for (int burst = 0; !draining && absl::Now() < give_up; ++burst) {
      if (signal_sent_ && give_up == absl::InfiniteFuture()) give_up = absl::Now() + kGiveUp;
      std::vector<v1::GemmRequest> requests;
      for (int i = 0; i < 4; ++i) {
        const std::string id = absl::StrCat("d", client, "-", burst, "-", i);
        Expected e;
        requests.push_back(RandomRequest(rng, id, Size::kSmall, 0, &e));
        std::lock_guard<std::mutex> l(mu);
        pending[id] = {std::move(e), !signal_sent_};
      }
      bool ok = true;
      for (const auto& m : M::Messages(std::move(requests), rng)) ok = ok && stream->Write(m);
      if (!ok) break;
      absl::SleepFor(absl::Milliseconds(2));
    }
    stream->WritesDone();
  });
  typename M::Out out;
  while (stream->Read(&out)) {
    M::ForEach(out, [&](const v1::GemmResponse& r) {
      Sent sent;
      {
        std::lock_guard<std::mutex> l(mu);
        auto it = pending.find(r.request_id());
        if (it == pending.end()) {
          env_.ledger->Fail(kind + ": answered twice or unasked", r.request_id());
          return;
        }
        sent = std::move(it->second);
        pending.erase(it);
      }
      if (r.has_error() && r.error().code() == kUnavailable) draining = true;
      JudgeStreamAnswer(env_, kind, sent.expected, false, r, kUnavailable);
      ++answers_;
    });
  }
  writer.join();
  const grpc::Status s = stream->Finish();
  int lost_before = 0;
  for (const auto& [id, sent] : pending) lost_before += sent.before_signal ? 1 : 0;
  env_.ledger->Count(absl::StrCat(kind, " ended ", CodeName(s.error_code())));
  if (!pending.empty()) {
    env_.ledger->Fail(
        kind + ": requests lost",
        absl::StrCat("client ", client, " ended ", CodeName(s.error_code()), " '",
                     s.error_message(), "' with ", pending.size(), " requests unanswered (",
                     lost_before, " sent before the signal): lost"));
  }
}

void DrainClients::RunUnary(int client) {
  Rng rng = ClientRng(env_, 1000 + client);
  auto conn = OwnConnection(env_.target);
  const std::string kind = "drain unary";
  absl::Time give_up = absl::InfiniteFuture();
  for (int op = 0; absl::Now() < give_up; ++op) {
    if (signal_sent_ && give_up == absl::InfiniteFuture()) give_up = absl::Now() + kGiveUp;
    Expected e;
    const std::string id = absl::StrCat("du", client, "-", op);
    const Size size = op % 4 == 0 ? Size::kLarge : Size::kSmall;  // some still running at the end
    const v1::GemmRequest request = RandomRequest(rng, id, size, 0, &e);
    const bool before_signal = !signal_sent_;
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(120)));
    v1::GemmResponse response;
    const grpc::Status s = conn->stub()->Gemm(&ctx, request, &response);
    env_.ledger->Count(absl::StrCat(kind, " ", CodeName(s.error_code())));
    if (s.ok()) {
      ++answers_;
      if (auto wrong = CheckOutputs(e, response.outputs()); !wrong.empty()) {
        env_.ledger->Fail(kind + ": wrong answer", absl::StrCat(id, ": ", wrong));
      }
      continue;
    }
    // A call started after the signal may meet gRPC's own shutdown (CANCELLED for one still
    // arriving); one started before it must be answered or refused as UNAVAILABLE.
    if (before_signal && s.error_code() != grpc::StatusCode::UNAVAILABLE) {
      env_.ledger->Fail(kind + ": request lost",
                        absl::StrCat(id, " (sent before the signal): ", CodeName(s.error_code()),
                                     " '", s.error_message(), "'"));
    }
    if (signal_sent_) return;  // the server no longer takes calls
  }
}

}  // namespace gemm::testing
