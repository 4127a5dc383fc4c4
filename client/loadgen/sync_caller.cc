// Blocking closed-loop callers.
#include "client/loadgen/sync_caller.h"

#include <chrono>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/loadgen/window_recorder.h"

namespace gemm::loadgen {

struct SyncCaller::Stream {
  v1::GemmService::Stub* stub = nullptr;
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::GemmRequest, v1::GemmResponse>> rw;
  v1::GemmRequest wire;

  // Half-closes and finishes an open stream.
  void Close() {
    if (rw == nullptr) return;
    rw->WritesDone();
    (void)rw->Finish();
    rw.reset();
    ctx.reset();
  }
};

void SyncCaller::Run(int caller, const std::atomic<bool>& stop) {
  const int endpoint = caller % issuer_.endpoints();
  Stream stream;
  stream.stub = issuer_.stub(endpoint);
  stream.wire.set_priority(workload_.priority_high ? v1::PRIORITY_HIGH : v1::PRIORITY_NORMAL);
  stream.wire.set_timeout_us(workload_.deadline_us);
  stream.wire.set_kernel(workload_.kernel);
  v1::GemmResponse resp;
  while (!stop.load(std::memory_order_relaxed)) {
    Call* c = issuer_.NewCall(endpoint);
    dispatcher_.ClaimOne();
    c->intended_ns = NowNs();
    const grpc::Status status =
        workload_.streaming ? CallOnStream(*c, stream, &resp) : CallUnary(*c, &resp);
    const bool ok = status.ok() && !resp.has_error();
    complete_(c, status, status.ok() ? &resp : nullptr);
    if (!ok && error_backoff_ms_ > 0) {
      std::this_thread::sleep_for(
          std::chrono::microseconds(static_cast<int64_t>(error_backoff_ms_ * 1e3)));
    }
  }
  stream.Close();
}

grpc::Status SyncCaller::CallUnary(const Call& c, v1::GemmResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(issuer_.Deadline());
  return issuer_.stub(c.endpoint)->Gemm(&ctx, issuer_.templates(c.endpoint)[c.tmpl], resp);
}

grpc::Status SyncCaller::CallOnStream(const Call& c, Stream& stream, v1::GemmResponse* resp) {
  if (stream.rw == nullptr) {
    stream.ctx = std::make_unique<grpc::ClientContext>();
    stream.rw = stream.stub->GemmStream(stream.ctx.get());
  }
  stream.wire.set_request_id(c.id);
  // NOTE: as in CallStream, the shared read-only template Problem is borrowed, not copied.
  stream.wire.unsafe_arena_set_allocated_problem(
      const_cast<v1::Problem*>(&issuer_.templates(c.endpoint)[c.tmpl].problem()));
  const bool wrote = stream.rw->Write(stream.wire);
  stream.wire.unsafe_arena_release_problem();
  grpc::Status status;
  if (wrote && stream.rw->Read(resp)) {
    if (resp->request_id() == c.id) return grpc::Status::OK;
    stream.ctx->TryCancel();
    status = grpc::Status(
        grpc::StatusCode::INTERNAL,
        absl::StrCat("answer to request ", resp->request_id(), " while waiting for ", c.id));
  }
  const grpc::Status finish = stream.rw->Finish();
  if (status.ok()) {
    status = finish.ok()
                 ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream closed by the server")
                 : finish;
  }
  stream.rw.reset();
  stream.ctx.reset();
  return status;
}

}  // namespace gemm::loadgen
