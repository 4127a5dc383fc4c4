// grpc_echo_server: the transport's ceiling. Serves GemmService's wire contract (GetServerInfo,
// RegisterMatrix, RegisterSharedMemory, GemmStreamPacked, Gemm and the releases) but answers every
// request without computing anything: a response with the request's id and an output of D's shape
// and no data (with shared memory, the caller's D slot is left as it is). gemm_loadgen pointed at
// it (with --verify_fraction=0) measures what gRPC and the load generator alone carry on a
// machine, a rate no server can pass there. --answer=inline answers on the gRPC thread that read
// the message; --answer=thread hands each message to one answering thread first (the one hand-off
// a real server needs at least).
#include <grpcpp/grpcpp.h>
#include <grpcpp/server_builder.h>
#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "gemm/v1/gemm_service.grpc.pb.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "Address to listen on");
ABSL_FLAG(int, port, 50400, "Port to listen on");
ABSL_FLAG(std::string, answer, "inline",
          "inline (answer on the gRPC thread that read the message) or thread (hand each message "
          "to one answering thread)");

namespace {

namespace v1 = ::gemm::v1;

// One thread running queued tasks in order (--answer=thread).
class Answerer {
 public:
  Answerer() : thread_([this] { Run(); }) {}
  ~Answerer() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  // Queues `task` to run on the answering thread.
  void Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> l(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      cv_.wait(l, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      l.unlock();
      task();
      l.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

// The answer to `request`: its id, one output of D's shape and no data.
void Answer(const v1::GemmRequest& request, v1::GemmResponse* response) {
  response->set_request_id(request.request_id());
  v1::Output* out = response->add_outputs();
  out->add_shape(request.problem().m());
  out->add_shape(request.problem().n());
  out->set_dtype(v1::DTYPE_BF16);
  response->mutable_timing()->set_batch_requests(1);
  response->set_kernel("echo");
}

// GemmStreamPacked: one response message per request message, one write in flight at a time.
class EchoStream final : public grpc::ServerBidiReactor<v1::GemmRequestPack, v1::GemmResponsePack> {
 public:
  explicit EchoStream(Answerer* answerer) : answerer_(answerer) { StartRead(&in_); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::unique_lock<std::mutex> l(mu_);
      reads_done_ = true;
      MaybeFinishLocked(l);
      return;
    }
    auto pack = std::make_shared<v1::GemmRequestPack>();
    pack->Swap(&in_);
    {
      std::lock_guard<std::mutex> l(mu_);
      ++in_flight_;
    }
    StartRead(&in_);
    if (answerer_ == nullptr) {
      Reply(*pack);
    } else {
      answerer_->Post([this, pack] { Reply(*pack); });
    }
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> l(mu_);
    writing_.reset();
    if (!ok) broken_ = true;
    if (!broken_ && !ready_.empty()) {
      StartWriteLocked();
      return;
    }
    MaybeFinishLocked(l);
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> l(mu_);
    broken_ = true;
  }

  void OnDone() override { delete this; }

 private:
  void Reply(const v1::GemmRequestPack& pack) {
    auto out = std::make_unique<v1::GemmResponsePack>();
    for (const v1::GemmRequest& r : pack.requests()) Answer(r, out->add_responses());
    std::unique_lock<std::mutex> l(mu_);
    --in_flight_;
    if (broken_) {
      MaybeFinishLocked(l);
      return;
    }
    if (out->responses_size() > 0) ready_.push_back(std::move(out));
    if (writing_ == nullptr && !ready_.empty()) {
      StartWriteLocked();
      return;
    }
    MaybeFinishLocked(l);
  }

  void StartWriteLocked() {
    writing_ = std::move(ready_.front());
    ready_.pop_front();
    StartWrite(writing_.get());
  }

  // Finishes the call once reads are over (or the stream broke) and nothing is left; unlocks.
  void MaybeFinishLocked(std::unique_lock<std::mutex>& l) {
    if (finished_ || in_flight_ > 0 || writing_ != nullptr) return;
    if (!reads_done_ && !broken_) return;
    if (!broken_ && !ready_.empty()) return;
    finished_ = true;
    l.unlock();
    Finish(grpc::Status::OK);
  }

  Answerer* const answerer_;
  v1::GemmRequestPack in_;
  std::mutex mu_;
  std::deque<std::unique_ptr<v1::GemmResponsePack>> ready_;
  std::unique_ptr<v1::GemmResponsePack> writing_;
  int in_flight_ = 0;
  bool reads_done_ = false;
  bool broken_ = false;
  bool finished_ = false;
};

// RegisterMatrix: reads every chunk, keeps nothing, answers with a handle.
class EchoRegister final : public grpc::ServerReadReactor<v1::RegisterMatrixChunk> {
 public:
  EchoRegister(v1::MatrixInfo* info, std::string handle) : info_(info) {
    info_->set_handle(std::move(handle));
    StartRead(&chunk_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    if (chunk_.has_header()) {
      const v1::MatrixHeader& h = chunk_.header();
      info_->set_name(h.name());
      info_->set_rows(h.rows());
      info_->set_cols(h.cols());
      info_->set_dtype(v1::DTYPE_BF16);
      info_->set_layout(h.layout());
      info_->set_bytes(h.rows() * h.cols() * 2);
      info_->add_devices(0);
    }
    StartRead(&chunk_);
  }
  void OnDone() override { delete this; }

 private:
  v1::MatrixInfo* const info_;
  v1::RegisterMatrixChunk chunk_;
};

class EchoService final : public v1::GemmService::CallbackService {
 public:
  explicit EchoService(Answerer* answerer) : answerer_(answerer) {}

  grpc::ServerBidiReactor<v1::GemmRequestPack, v1::GemmResponsePack>* GemmStreamPacked(
      grpc::CallbackServerContext* /*context*/) override {
    return new EchoStream(answerer_);
  }

  grpc::ServerUnaryReactor* Gemm(grpc::CallbackServerContext* context,
                                 const v1::GemmRequest* request,
                                 v1::GemmResponse* response) override {
    Answer(*request, response);
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerReadReactor<v1::RegisterMatrixChunk>* RegisterMatrix(
      grpc::CallbackServerContext* /*context*/, v1::MatrixInfo* response) override {
    std::lock_guard<std::mutex> l(mu_);
    return new EchoRegister(response, absl::StrCat("echo-", ++handles_));
  }

  grpc::ServerUnaryReactor* RegisterSharedMemory(grpc::CallbackServerContext* context,
                                                 const v1::RegisterSharedMemoryRequest* request,
                                                 v1::SharedMemoryInfo* response) override {
    response->set_name(request->name());
    response->set_key(request->key());
    response->set_offset(request->offset());
    response->set_byte_size(request->byte_size());
    response->set_pinned(false);  // nothing is mapped: no copies ever touch the region
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* ReleaseMatrix(grpc::CallbackServerContext* context,
                                          const v1::ReleaseMatrixRequest* /*request*/,
                                          v1::ReleaseMatrixResponse* /*response*/) override {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* UnregisterSharedMemory(
      grpc::CallbackServerContext* context, const v1::UnregisterSharedMemoryRequest* /*request*/,
      v1::UnregisterSharedMemoryResponse* /*response*/) override {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const v1::GetServerInfoRequest* /*request*/,
                                          v1::ServerInfo* response) override {
    response->set_version("grpc_echo_server");
    response->set_backend("echo");
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  Answerer* const answerer_;
  std::mutex mu_;
  int handles_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Blocked before gRPC starts its threads, so that they inherit the mask and sigwait below
  // receives the signal.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  const std::string mode = absl::GetFlag(FLAGS_answer);
  if (mode != "inline" && mode != "thread") {
    std::fprintf(stderr, "--answer must be inline or thread, not '%s'\n", mode.c_str());
    return 2;
  }
  std::unique_ptr<Answerer> answerer;
  if (mode == "thread") answerer = std::make_unique<Answerer>();
  EchoService service(answerer.get());
  grpc::ServerBuilder builder;
  const std::string address =
      absl::StrCat(absl::GetFlag(FLAGS_host), ":", absl::GetFlag(FLAGS_port));
  builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  builder.SetMaxReceiveMessageSize(1 << 30);
  builder.SetMaxSendMessageSize(1 << 30);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    std::fprintf(stderr, "could not listen on %s\n", address.c_str());
    return 1;
  }
  std::printf("grpc_echo_server on %s, answering %s\n", address.c_str(), mode.c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  server->Shutdown();
  return 0;
}
