// Stream and packed-stream chaos clients (see chaos_clients.h).
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/chaos/chaos_clients.h"
#include "tests/chaos/chaos_util.h"

namespace gemm::testing {

void JudgeStreamAnswer(const ChaosEnv& env, const std::string& kind, const Expected& e, bool timed,
                       const v1::GemmResponse& r, int allowed_extra) {
  std::string wrong;
  const int code = r.has_error() ? r.error().code() : 0;
  if (!r.has_error()) {
    wrong = CheckOutputs(e, r.outputs());
  } else if (!((timed && code == static_cast<int>(grpc::StatusCode::DEADLINE_EXCEEDED)) ||
               code == static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED) ||
               (allowed_extra != 0 && code == allowed_extra))) {
    wrong = CheckRefusal(e, code, r.error().message());
  }
  env.ledger->Count(absl::StrCat(kind, " answer ", CodeName(code)));
  if (!wrong.empty())
    env.ledger->Fail(kind + ": wrong answer", absl::StrCat(r.request_id(), ": ", wrong));
}

namespace {

enum class StreamMode { kNormal, kSlowReader, kCancel, kDeadline, kAbandon };

const char* ModeName(StreamMode m) {
  switch (m) {
    case StreamMode::kNormal:
      return "normal";
    case StreamMode::kSlowReader:
      return "slow reader";
    case StreamMode::kCancel:
      return "cancelled";
    case StreamMode::kDeadline:
      return "stream deadline";
    case StreamMode::kAbandon:
      return "abandoned";
  }
  return "?";
}

struct Sent {
  Expected expected;
  bool timed = false;
};

// Whether a stream that ended with `s` in `mode` may leave requests unanswered, and whether `s`
// is a status such a stream may end with.
bool StreamEndAllowed(StreamMode mode, const grpc::Status& s, bool all_answered) {
  if (s.ok()) return all_answered;
  switch (mode) {
    case StreamMode::kCancel:
      return s.error_code() == grpc::StatusCode::CANCELLED;
    case StreamMode::kAbandon:
      // A server may also end a stream whose answers are not read.
      return s.error_code() == grpc::StatusCode::CANCELLED ||
             s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
    case StreamMode::kDeadline:
      return s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    default:
      return false;
  }
}

template <class M>
void StreamEpisode(const ChaosEnv& env, v1::GemmService::Stub* stub, Rng& rng,
                   const std::string& prefix, bool cut_only) {
  const auto mode = cut_only
                        ? (Uniform(rng, 0, 1) == 0 ? StreamMode::kCancel : StreamMode::kDeadline)
                        : static_cast<StreamMode>(Uniform(rng, 0, 4));
  // Streams that are cut short carry many requests, so that the cut comes while the server is
  // still reading them.
  const bool cut = mode == StreamMode::kCancel || mode == StreamMode::kDeadline;
  const int n = cut ? Uniform(rng, 100, 200) : Uniform(rng, 4, 40);
  std::map<std::string, Sent> pending;
  std::vector<v1::GemmRequest> requests;
  for (int i = 0; i < n; ++i) {
    const std::string id = absl::StrCat(prefix, "-", i);
    // Abandoned streams ask for large answers, so that answers the server keeps show.
    const Size size = mode == StreamMode::kAbandon ? Size::kLarge
                      : cut                        ? Size::kTiny
                                                   : RandomSize(rng);
    Sent& sent = pending[id];
    requests.push_back(RandomRequest(rng, id, size, 8, &sent.expected));
    // A request with a timeout_us, or on a stream with a deadline, may expire.
    const bool timeout = Uniform(rng, 0, 6) == 0;
    if (timeout) requests.back().set_timeout_us(Uniform(rng, 1, 5000));
    sent.timed = timeout || mode == StreamMode::kDeadline;
  }
  const std::vector<typename M::In> messages = M::Messages(std::move(requests), rng);
  grpc::ClientContext ctx;
  const int deadline_ms = cut_only ? Uniform(rng, 5, 40) : Uniform(rng, 20, 200);
  ctx.set_deadline(mode == StreamMode::kDeadline ? DeadlineIn(absl::Milliseconds(deadline_ms))
                                                 : DeadlineIn(absl::Seconds(120)));
  const int cancel_after = Uniform(rng, 0, cut_only ? 1 : 3);
  const int abandon_ms = Uniform(rng, 200, 1500);
  auto stream = M::Open(stub, &ctx);
  std::thread writer([&] {
    for (const auto& m : messages) {
      if (!stream->Write(m)) break;
    }
    if (mode != StreamMode::kAbandon) stream->WritesDone();
  });
  if (mode == StreamMode::kAbandon) {
    absl::SleepFor(absl::Milliseconds(abandon_ms));
    ctx.TryCancel();
  }
  const std::string kind = M::kName;
  int answered = 0;
  bool cancelled = false;
  std::map<std::string, std::string> answers;  // request id -> its answer's code
  typename M::Out out;
  while (true) {
    if (mode == StreamMode::kSlowReader) absl::SleepFor(absl::Milliseconds(Uniform(rng, 1, 8)));
    if (!stream->Read(&out)) break;
    M::ForEach(out, [&](const v1::GemmResponse& r) {
      const std::string code = CodeName(r.has_error() ? r.error().code() : 0);
      auto it = pending.find(r.request_id());
      if (it == pending.end()) {
        auto first = answers.find(r.request_id());
        env.ledger->Fail(
            kind + ": answered twice or unasked",
            absl::StrCat("answer ", code, " to '", r.request_id(), "' (", ModeName(mode),
                         "), first answer: ", first == answers.end() ? "none" : first->second));
        return;
      }
      JudgeStreamAnswer(env, kind, it->second.expected, it->second.timed, r, 0);
      answers[r.request_id()] = code;
      pending.erase(it);
      ++answered;
    });
    // A packed message may carry several answers: cancel once `cancel_after` have come.
    if (mode == StreamMode::kCancel && !cancelled && answered >= cancel_after) {
      ctx.TryCancel();
      cancelled = true;
    }
  }
  writer.join();
  const grpc::Status s = stream->Finish();
  env.ledger->Count(absl::StrCat(kind, " ", ModeName(mode), " ended ", CodeName(s.error_code())));
  if (!StreamEndAllowed(mode, s, pending.empty())) {
    env.ledger->Fail(
        absl::StrCat(kind, " ", ModeName(mode), ": ended ", CodeName(s.error_code()),
                     pending.empty() ? "" : " with requests unanswered"),
        absl::StrCat(prefix, " ended ", CodeName(s.error_code()), " '", s.error_message(),
                     "' with ", pending.size(), " of ", n, " requests unanswered"));
  }
}

}  // namespace

void RunStreamClient(const ChaosEnv& env, int client, bool packed, int ops, bool cut_only) {
  Rng rng = ClientRng(env, client);
  auto conn = OwnConnection(env.target);
  for (int op = 0; op < ops && !env.ServerDied(); ++op) {
    const std::string prefix = absl::StrCat(packed ? "p" : "s", client, "-", op);
    if (packed) {
      StreamEpisode<PackedMessages>(env, conn->stub(), rng, prefix, cut_only);
    } else {
      StreamEpisode<SingleMessages>(env, conn->stub(), rng, prefix, cut_only);
    }
  }
}

}  // namespace gemm::testing
