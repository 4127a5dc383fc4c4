// Unary chaos clients: plain, short deadlines and cancels, and large GEMMs (see chaos_clients.h).
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "tests/chaos/chaos_clients.h"
#include "tests/chaos/chaos_util.h"

namespace gemm::testing {
namespace {

// A unary Gemm through the callback API, cancelled after `cancel_after` (when not infinite).
grpc::Status CallGemm(v1::GemmService::Stub* stub, const v1::GemmRequest& request,
                      v1::GemmResponse* response, absl::Duration deadline,
                      absl::Duration cancel_after) {
  grpc::ClientContext ctx;
  ctx.set_deadline(DeadlineIn(deadline));
  absl::Notification done;
  grpc::Status status;
  stub->async()->Gemm(&ctx, &request, response, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  if (cancel_after != absl::InfiniteDuration() &&
      !done.WaitForNotificationWithTimeout(cancel_after)) {
    ctx.TryCancel();
  }
  done.WaitForNotification();
  return status;
}

}  // namespace

void RunUnaryClient(const ChaosEnv& env, int client, int ops) {
  Rng rng = ClientRng(env, client);
  auto conn = OwnConnection(env.target);
  for (int op = 0; op < ops && !env.ServerDied(); ++op) {
    Expected e;
    const std::string id = absl::StrCat("u", client, "-", op);
    const v1::GemmRequest request = RandomRequest(rng, id, RandomSize(rng), 8, &e);
    const int mode = Uniform(rng, 0, 9);  // 0-5 plain, 6-7 short deadline, 8-9 cancelled
    const absl::Duration deadline =
        mode == 6 || mode == 7 ? absl::Milliseconds(Uniform(rng, 1, 30)) : absl::Seconds(60);
    const absl::Duration cancel =
        mode >= 8 ? absl::Milliseconds(Uniform(rng, 0, 20)) : absl::InfiniteDuration();
    v1::GemmResponse response;
    const grpc::Status s = CallGemm(conn->stub(), request, &response, deadline, cancel);
    const auto code = s.error_code();
    std::string wrong;
    if (s.ok()) {
      wrong = CheckOutputs(e, response.outputs());
    } else if (code == grpc::StatusCode::INVALID_ARGUMENT) {
      wrong = CheckRefusal(e, code, s.error_message());
    } else if (!((code == grpc::StatusCode::DEADLINE_EXCEEDED && (mode == 6 || mode == 7)) ||
                 (code == grpc::StatusCode::CANCELLED && mode >= 8) ||
                 code == grpc::StatusCode::RESOURCE_EXHAUSTED)) {
      wrong = absl::StrCat("unexpected status ", CodeName(code), " '", s.error_message(), "'");
    }
    env.ledger->Count(absl::StrCat("unary ", CodeName(code)));
    if (!wrong.empty())
      env.ledger->Fail("unary: wrong answer or status", absl::StrCat(id, ": ", wrong));
  }
}

void RunHogClient(const ChaosEnv& env, int client, int ops) {
  Rng rng = ClientRng(env, client);
  auto conn = OwnConnection(env.target);
  for (int op = 0; op < ops && !env.ServerDied(); ++op) {
    const HostProblem p = RandomHostProblem(rng, Uniform(rng, 384, 512), Uniform(rng, 384, 512),
                                            Uniform(rng, 384, 512));
    v1::GemmRequest request;
    request.set_request_id(absl::StrCat("h", client, "-", op));
    FillProto(p, request.mutable_problem());
    const bool cancel = Uniform(rng, 0, 4) == 0;
    v1::GemmResponse response;
    const grpc::Status s =
        CallGemm(conn->stub(), request, &response, absl::Seconds(120),
                 cancel ? absl::Milliseconds(Uniform(rng, 0, 200)) : absl::InfiniteDuration());
    env.ledger->Count(absl::StrCat("hog ", CodeName(s.error_code())));
    std::string wrong;
    if (s.ok()) {
      wrong = response.outputs_size() == 1 ? CheckOutputRows(p, response.outputs(0), rng, 4)
                                           : "not one output";
    } else if (!(cancel && s.error_code() == grpc::StatusCode::CANCELLED) &&
               s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
      wrong = absl::StrCat("unexpected status ", CodeName(s.error_code()), " '", s.error_message(),
                           "'");
    }
    if (!wrong.empty()) {
      env.ledger->Fail("hog: wrong answer or status",
                       absl::StrCat(request.request_id(), ": ", wrong));
    }
  }
}

}  // namespace gemm::testing
