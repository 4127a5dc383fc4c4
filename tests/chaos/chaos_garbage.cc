// The chaos client that sends bytes that are no message (see chaos_clients.h).
#include <grpcpp/generic/generic_stub.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tests/chaos/chaos_clients.h"
#include "tests/chaos/chaos_util.h"

namespace gemm::testing {
namespace {

constexpr const char* kService = "/gemm.v1.GemmService/";

// Bytes no gRPC method of the service can parse: an invalid wire type, or a field whose length
// runs past the end.
std::string Garbage(Rng& rng) {
  std::string g = Uniform(rng, 0, 1) == 0 ? std::string("\x0f", 1) : std::string("\x12\x7f");
  const int extra = Uniform(rng, 0, 40);
  for (int i = 0; i < extra; ++i) g.push_back(static_cast<char>(Uniform(rng, 0, 255)));
  return g;
}

// A call of any kind with raw messages: writes `messages`, half-closes, reads every response.
class RawCall final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  RawCall(grpc::GenericStub* stub, const std::string& method, std::vector<std::string> messages)
      : messages_(std::move(messages)) {
    ctx_.set_deadline(DeadlineIn(absl::Seconds(60)));
    stub->PrepareBidiStreamingCall(&ctx_, method, grpc::StubOptions(), this);
    StartRead(&in_);
    WriteNext();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) WriteNext();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    std::vector<grpc::Slice> slices;
    (void)in_.Dump(&slices);
    std::string bytes;
    for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    responses_.push_back(std::move(bytes));
    StartRead(&in_);
  }
  void OnDone(const grpc::Status& s) override {
    absl::MutexLock lock(&mu_);
    status_ = s;
    done_ = true;
  }
  // Waits for the end of the call; the responses read, and its status.
  grpc::Status Wait(std::vector<std::string>* responses) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    *responses = std::move(responses_);
    return status_;
  }

 private:
  void WriteNext() {
    if (next_ == messages_.size()) {
      StartWritesDone();
      return;
    }
    grpc::Slice slice(messages_[next_++]);
    out_ = grpc::ByteBuffer(&slice, 1);
    StartWrite(&out_);
  }

  grpc::ClientContext ctx_;
  std::vector<std::string> messages_;
  size_t next_ = 0;
  grpc::ByteBuffer out_, in_;
  std::vector<std::string> responses_;  // touched by the read chain, then by Wait()
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

void RunGarbageClient(const ChaosEnv& env, int client, int ops) {
  Rng rng = ClientRng(env, client);
  auto channel = grpc::CreateCustomChannel(env.target, grpc::InsecureChannelCredentials(), [] {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);
    return args;
  }());
  grpc::GenericStub stub(channel);
  for (int op = 0; op < ops && !env.ServerDied(); ++op) {
    static constexpr const char* kMethods[] = {"Gemm", "RegisterSharedMemory", "RegisterMatrix",
                                               "GemmStream", "GemmStreamPacked"};
    const std::string method = kMethods[Uniform(rng, 0, 4)];
    // On the streams, valid requests before and after the garbage.
    std::vector<std::string> messages = {Garbage(rng)};
    std::map<std::string, Expected> sent;
    if (method == "GemmStream" || method == "GemmStreamPacked") {
      messages.clear();
      for (int i = 0; i < 3; ++i) {
        if (i == 1) {
          messages.push_back(Garbage(rng));
          continue;
        }
        const std::string id = absl::StrCat("g", client, "-", op, "-", i);
        v1::GemmRequest r = RandomRequest(rng, id, Size::kTiny, 0, &sent[id]);
        v1::GemmRequestPack pack;
        *pack.add_requests() = r;
        messages.push_back(method == "GemmStream" ? r.SerializeAsString()
                                                  : pack.SerializeAsString());
      }
    }
    RawCall call(&stub, kService + method, messages);
    std::vector<std::string> responses;
    const grpc::Status s = call.Wait(&responses);
    for (const std::string& bytes : responses) {
      v1::GemmResponsePack pack;
      if (method == "GemmStream") {
        if (!pack.add_responses()->ParseFromString(bytes)) pack.Clear();
      } else if (!pack.ParseFromString(bytes)) {
        pack.Clear();
      }
      for (const auto& r : pack.responses()) {
        auto it = sent.find(r.request_id());
        if (it == sent.end()) continue;  // e.g. an answer to the garbage itself
        JudgeStreamAnswer(env, "garbage " + method, it->second, false, r, 0);
        sent.erase(it);
      }
    }
    env.ledger->Count(absl::StrCat("garbage ", method, " ", CodeName(s.error_code())));
    if (s.error_code() != grpc::StatusCode::INVALID_ARGUMENT || s.error_message().empty()) {
      env.ledger->Fail(
          absl::StrCat("garbage on ", method, ": not INVALID_ARGUMENT"),
          absl::StrCat(CodeName(s.error_code()), " '", s.error_message(),
                       "', expected INVALID_ARGUMENT saying the ", "message did not parse"));
    }
  }
}

}  // namespace gemm::testing
