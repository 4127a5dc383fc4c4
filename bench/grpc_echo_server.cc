// grpc_echo_server: the transport's ceiling. Serves GemmService's wire contract (GetServerInfo,
// RegisterMatrix, RegisterSharedMemory, GemmStreamPacked, Gemm and the releases) but answers every
// request without computing anything: a response with the request's id and one output of D's shape
// and dtype per problem, carrying D's real size in bytes (--answer_data=d: M*N*2 for BF16, M*N*4
// for FP32, times the batch count) or none (--answer_data=empty; with shared memory the caller's D
// slot is always left as it is). The answer bytes are built once per size and shared by every
// answer (no per-byte work per request), and the gRPC port takes the same transport flags as
// gemm_server. gemm_loadgen pointed at it (with --verify_fraction=0) measures what gRPC and the
// load generator alone carry on a machine with the same payloads both ways, a rate no server can
// pass there. Requests are parsed as gemm_server parses them (operands left in gRPC's buffers).
// --answer=inline answers on the gRPC thread that read the message (gRPC runs its callbacks
// on several threads); --answer=thread hands each message to a pool of --answer_threads answering
// threads first (the one hand-off a real server needs at least). At exit it prints how many
// distinct threads answered.
#include <grpcpp/grpcpp.h>
#include <grpcpp/server_builder.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "common/transport_flags.h"
#include "gemm/v1/gemm_service.grpc.pb.h"
#include "server/grpc/received_message.h"
#include "server/grpc/response_wire.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "Address to listen on");
ABSL_FLAG(int, port, 50400, "Port to listen on");
ABSL_FLAG(std::string, answer, "inline",
          "inline (answer on the gRPC thread that read the message) or thread (hand each message "
          "to the answering threads)");
ABSL_FLAG(int, answer_threads, 4, "Answering threads of --answer=thread. Default 4.");
ABSL_FLAG(std::string, answer_data, "d",
          "d (each output carries D's real size in bytes, zeros) or empty (no output data). "
          "Default d.");
ABSL_FLAG(int64_t, max_message_bytes, (int64_t{1} << 30) + (int64_t{16} << 20),
          "Largest message received or sent, bytes. Default 1 GiB + 16 MiB (gemm_server's).");

namespace {

namespace v1 = ::gemm::v1;
using gemm::service::OutgoingResponse;

// Threads that answered at least once.
std::atomic<int> g_answering_threads{0};

void CountAnsweringThread() {
  thread_local bool counted = false;
  if (!counted) {
    counted = true;
    g_answering_threads.fetch_add(1, std::memory_order_relaxed);
  }
}

// Threads running queued tasks (--answer=thread).
class Answerers {
 public:
  explicit Answerers(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
  }
  ~Answerers() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  // Queues `task` to run on an answering thread.
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
  std::vector<std::thread> threads_;
};

// Answer bytes of each size, zeros, made once and shared by every answer of that size.
class AnswerBytes {
 public:
  explicit AnswerBytes(bool with_data) : with_data_(with_data) {}
  // `bytes` bytes of zeros (an empty slice without data).
  grpc::Slice For(int64_t bytes) {
    if (!with_data_ || bytes <= 0) return grpc::Slice();
    std::lock_guard<std::mutex> l(mu_);
    auto it = slices_.find(bytes);
    if (it == slices_.end()) {
      grpc::Slice zeros(static_cast<size_t>(bytes));
      std::memset(const_cast<uint8_t*>(zeros.begin()), 0, zeros.size());
      it = slices_.emplace(bytes, std::move(zeros)).first;
    }
    return it->second;
  }

 private:
  const bool with_data_;
  std::mutex mu_;
  std::map<int64_t, grpc::Slice> slices_;
};

// Adds to `out` the output of problem `p` repeated `count` times.
void AddOutput(const v1::Problem& p, int64_t count, bool batch, AnswerBytes& bytes,
               OutgoingResponse* out) {
  v1::Output* o = out->message.add_outputs();
  if (batch) o->add_shape(count);
  o->add_shape(p.m());
  o->add_shape(p.n());
  const bool fp32 = p.output_dtype() == v1::DTYPE_FP32;
  o->set_dtype(fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16);
  // Overflow-safe for any shape a client can name: the product is checked against the limit.
  const int64_t elements = p.m() > 0 && p.n() > 0 && count > 0 ? p.m() * p.n() : 0;
  const int64_t limit = absl::GetFlag(FLAGS_max_message_bytes);
  int64_t size = 0;
  if (elements > 0 && elements <= limit / (fp32 ? 4 : 2) / count) {
    size = elements * (fp32 ? 4 : 2) * count;
  }
  out->data.push_back(p.has_d_shm() ? grpc::Slice() : bytes.For(size));
}

// The answer to `request`: its id and, per problem, an output of D's shape and dtype.
OutgoingResponse Answer(const v1::GemmRequest& request, AnswerBytes& bytes) {
  CountAnsweringThread();
  OutgoingResponse out;
  out.message.set_request_id(request.request_id());
  switch (request.work_case()) {
    case v1::GemmRequest::kBatch:
      AddOutput(request.batch().problem(), request.batch().count(), true, bytes, &out);
      break;
    case v1::GemmRequest::kGroup:
      for (const v1::Problem& p : request.group().problems()) AddOutput(p, 1, false, bytes, &out);
      break;
    default:
      AddOutput(request.problem(), 1, false, bytes, &out);
  }
  out.message.mutable_timing()->set_batch_requests(1);
  out.message.set_kernel("echo");
  return out;
}

// GemmStreamPacked: one response message per request message, one write in flight at a time.
class EchoStream final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  EchoStream(Answerers* answerers, AnswerBytes* bytes) : answerers_(answerers), bytes_(bytes) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::unique_lock<std::mutex> l(mu_);
      reads_done_ = true;
      MaybeFinishLocked(l);
      return;
    }
    // Parsed as the server parses it: the operands stay in gRPC's buffers (never read here).
    auto pack = std::make_shared<gemm::service::Received<v1::GemmRequestPack>>();
    const absl::Status parsed = pack->Parse(in_, "GemmStreamPacked message");
    in_.Clear();
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!parsed.ok()) {
        broken_ = true;
        status_ = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(parsed.message()));
      } else {
        ++in_flight_;
      }
    }
    if (!parsed.ok()) {
      std::unique_lock<std::mutex> l(mu_);
      MaybeFinishLocked(l);
      return;
    }
    StartRead(&in_);
    if (answerers_ == nullptr) {
      Reply(pack->message);
    } else {
      answerers_->Post([this, pack] { Reply(pack->message); });
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
    std::vector<OutgoingResponse> answers;
    answers.reserve(pack.requests_size());
    for (const v1::GemmRequest& r : pack.requests()) answers.push_back(Answer(r, *bytes_));
    std::vector<OutgoingResponse*> order;
    for (OutgoingResponse& a : answers) order.push_back(&a);
    absl::StatusOr<grpc::ByteBuffer> out = gemm::service::SerializeResponsePack(order);
    std::unique_lock<std::mutex> l(mu_);
    --in_flight_;
    if (!out.ok()) {
      broken_ = true;
      status_ = grpc::Status(grpc::StatusCode::INTERNAL, std::string(out.status().message()));
    }
    if (broken_) {
      MaybeFinishLocked(l);
      return;
    }
    if (!order.empty()) ready_.push_back(std::make_unique<grpc::ByteBuffer>(*std::move(out)));
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
    const grpc::Status status = status_;
    l.unlock();
    Finish(status);
  }

  Answerers* const answerers_;
  AnswerBytes* const bytes_;
  grpc::ByteBuffer in_;
  std::mutex mu_;
  std::deque<std::unique_ptr<grpc::ByteBuffer>> ready_;
  std::unique_ptr<grpc::ByteBuffer> writing_;
  grpc::Status status_;
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

// Gemm and GemmStreamPacked take and give raw bytes: answers are serialized with their data as
// shared slices (server/grpc/response_wire.h).
// The other methods are typed (GemmStream is not served).
using RawEchoService = v1::GemmService::WithRawCallbackMethod_Gemm<
    v1::GemmService::WithRawCallbackMethod_GemmStreamPacked<
        v1::GemmService::WithCallbackMethod_RegisterMatrix<
            v1::GemmService::WithCallbackMethod_ReleaseMatrix<
                v1::GemmService::WithCallbackMethod_GetServerInfo<
                    v1::GemmService::WithCallbackMethod_RegisterSharedMemory<
                        v1::GemmService::WithCallbackMethod_UnregisterSharedMemory<
                            v1::GemmService::Service>>>>>>>;

class EchoService final : public RawEchoService {
 public:
  EchoService(Answerers* answerers, AnswerBytes* bytes) : answerers_(answerers), bytes_(bytes) {}

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* GemmStreamPacked(
      grpc::CallbackServerContext* /*context*/) override {
    return new EchoStream(answerers_, bytes_);
  }

  grpc::ServerUnaryReactor* Gemm(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override {
    auto* reactor = context->DefaultReactor();
    gemm::service::Received<v1::GemmRequest> in;
    if (absl::Status s = in.Parse(*request, "Gemm"); !s.ok()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(s.message())));
      return reactor;
    }
    OutgoingResponse answer = Answer(in.message, *bytes_);
    absl::StatusOr<grpc::ByteBuffer> out = gemm::service::SerializeResponse(answer);
    if (!out.ok()) {
      reactor->Finish(
          grpc::Status(grpc::StatusCode::INTERNAL, std::string(out.status().message())));
      return reactor;
    }
    *response = *std::move(out);
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
  Answerers* const answerers_;
  AnswerBytes* const bytes_;
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
  const std::string data = absl::GetFlag(FLAGS_answer_data);
  const int64_t max_message = absl::GetFlag(FLAGS_max_message_bytes);
  if (mode != "inline" && mode != "thread") {
    std::fprintf(stderr, "--answer must be inline or thread, not '%s'\n", mode.c_str());
    return 2;
  }
  if (data != "d" && data != "empty") {
    std::fprintf(stderr, "--answer_data must be d or empty, not '%s'\n", data.c_str());
    return 2;
  }
  if (absl::GetFlag(FLAGS_answer_threads) < 1 || max_message < 1 || max_message > INT32_MAX) {
    std::fprintf(stderr, "--answer_threads must be >= 1 and --max_message_bytes in [1, 2^31)\n");
    return 2;
  }
  absl::StatusOr<std::vector<gemm::ChannelArg>> transport =
      gemm::TransportChannelArgs(gemm::TransportOptionsFromFlags());
  if (!transport.ok()) {
    std::fprintf(stderr, "%s\n", transport.status().ToString().c_str());
    return 2;
  }
  std::unique_ptr<Answerers> answerers;
  if (mode == "thread")
    answerers = std::make_unique<Answerers>(absl::GetFlag(FLAGS_answer_threads));
  AnswerBytes bytes(data == "d");
  EchoService service(answerers.get(), &bytes);
  grpc::ServerBuilder builder;
  const std::string address =
      absl::StrCat(absl::GetFlag(FLAGS_host), ":", absl::GetFlag(FLAGS_port));
  builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_message));
  builder.SetMaxSendMessageSize(static_cast<int>(max_message));
  for (const gemm::ChannelArg& a : *transport) {
    builder.AddChannelArgument(a.name, std::get<int>(a.value));
  }
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    std::fprintf(stderr, "could not listen on %s\n", address.c_str());
    return 1;
  }
  std::printf("grpc_echo_server on %s, answering %s with %s data, %zu transport settings\n",
              address.c_str(), mode.c_str(), data.c_str(), transport->size());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  server->Shutdown();
  std::printf("grpc_echo_server: answered on %d threads\n", g_answering_threads.load());
  return 0;
}
