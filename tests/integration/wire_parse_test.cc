// Integration: bytes that do not parse as a method's request message are answered
// INVALID_ARGUMENT naming the message, on every unary method, on both streams (after the requests
// before them are answered) and on RegisterMatrix, and the server goes on serving. The calls are
// made with grpc::GenericStub, which sends whatever bytes it is given.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

// Field 1, length-delimited, 127 bytes long, followed by fewer: no message parses from it.
const std::string kGarbage = std::string("\x0a\x7f", 2) + "not a message";

grpc::ByteBuffer ToBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string FromBuffer(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  (void)buffer.Dump(&slices);
  std::string out;
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// A unary call of `method` carrying `bytes`.
grpc::Status RawUnary(grpc::GenericStub& stub, const std::string& method,
                      const std::string& bytes) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::ByteBuffer request = ToBuffer(bytes), response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
    std::lock_guard<std::mutex> l(mu);
    status = std::move(s);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return done; });
  return status;
}

// A streaming call of `method` over raw bytes, one operation at a time (async API, waited on).
class RawStream {
 public:
  RawStream(grpc::GenericStub& stub, const std::string& method) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    call_ = stub.PrepareCall(&ctx_, method, &cq_);
    call_->StartCall(this);
    Wait();
  }
  ~RawStream() {
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) {
    }
  }
  bool Write(const std::string& bytes) {
    call_->Write(ToBuffer(bytes), this);
    return Wait();
  }
  bool WritesDone() {
    call_->WritesDone(this);
    return Wait();
  }
  // The next message, or nullopt once the server is done.
  std::optional<std::string> Read() {
    grpc::ByteBuffer in;
    call_->Read(&in, this);
    if (!Wait()) return std::nullopt;
    return FromBuffer(in);
  }
  grpc::Status Finish() {
    grpc::Status status;
    call_->Finish(&status, this);
    Wait();
    return status;
  }

 private:
  bool Wait() {
    void* tag;
    bool ok = false;
    cq_.Next(&tag, &ok);
    return ok;
  }
  grpc::ClientContext ctx_;
  grpc::CompletionQueue cq_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
};

class WireParseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = ServerProcess::Start({"--backend=cpu"});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = s->release();
    stub_ = new grpc::GenericStub(
        grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials()));
  }
  static void TearDownTestSuite() {
    delete stub_;
    stub_ = nullptr;
    if (server_ != nullptr) EXPECT_EQ(server_->Stop(SIGTERM), 0);
    delete server_;
    server_ = nullptr;
  }

  // A valid request with id `id` (4x8x16, inline operands).
  v1::GemmRequest Request(const std::string& id) {
    v1::GemmRequest req;
    req.set_request_id(id);
    FillProto(RandomProblem(4, 8, 16, false, false, 1, 0, gen_), req.mutable_problem());
    return req;
  }

  static ServerProcess* server_;
  static grpc::GenericStub* stub_;
  absl::BitGen gen_;
};
ServerProcess* WireParseTest::server_ = nullptr;
grpc::GenericStub* WireParseTest::stub_ = nullptr;

void ExpectNamesMessage(const grpc::Status& s, const std::string& where, const std::string& type) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << where << ": " << s.error_message();
  EXPECT_NE(s.error_message().find(where), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find(type), std::string::npos) << s.error_message();
}

TEST_F(WireParseTest, UnaryMethodsAnswerInvalidArgumentNamingTheMessage) {
  const std::pair<const char*, const char*> methods[] = {
      {"Gemm", "gemm.v1.GemmRequest"},
      {"ReleaseMatrix", "gemm.v1.ReleaseMatrixRequest"},
      {"ListMatrices", "gemm.v1.ListMatricesRequest"},
      {"GetServerInfo", "gemm.v1.GetServerInfoRequest"},
      {"RegisterSharedMemory", "gemm.v1.RegisterSharedMemoryRequest"},
      {"UnregisterSharedMemory", "gemm.v1.UnregisterSharedMemoryRequest"},
      {"ListSharedMemory", "gemm.v1.ListSharedMemoryRequest"},
  };
  for (const auto& [method, type] : methods) {
    SCOPED_TRACE(method);
    const grpc::Status s =
        RawUnary(*stub_, absl::StrCat("/gemm.v1.GemmService/", method), kGarbage);
    ExpectNamesMessage(s, method, type);
  }
  // Well-formed bytes still work through the same raw path.
  v1::GemmRequest ok = Request("fine");
  EXPECT_TRUE(RawUnary(*stub_, "/gemm.v1.GemmService/Gemm", ok.SerializeAsString()).ok());
  EXPECT_TRUE(server_->client().GetServerInfo().ok());
}

// GemmStream: a request, garbage, another request. The first is answered, the call ends
// INVALID_ARGUMENT naming message 2; the request after the garbage is not read.
TEST_F(WireParseTest, GemmStreamEndsInvalidArgumentAfterAnsweringTheRequestsBefore) {
  RawStream stream(*stub_, "/gemm.v1.GemmService/GemmStream");
  ASSERT_TRUE(stream.Write(Request("before").SerializeAsString()));
  ASSERT_TRUE(stream.Write(kGarbage));
  (void)stream.Write(Request("after").SerializeAsString());  // may find the call over
  (void)stream.WritesDone();
  std::vector<std::string> ids;
  while (std::optional<std::string> bytes = stream.Read()) {
    v1::GemmResponse r;
    ASSERT_TRUE(r.ParseFromString(*bytes));
    EXPECT_EQ(r.error().code(), 0) << r.error().message();
    ids.push_back(r.request_id());
  }
  ExpectNamesMessage(stream.Finish(), "GemmStream message 2", "gemm.v1.GemmRequest");
  EXPECT_EQ(ids, std::vector<std::string>{"before"});
  EXPECT_TRUE(server_->client().GetServerInfo().ok());
}

TEST_F(WireParseTest, GemmStreamPackedEndsInvalidArgumentAfterAnsweringTheRequestsBefore) {
  RawStream stream(*stub_, "/gemm.v1.GemmService/GemmStreamPacked");
  v1::GemmRequestPack first;
  *first.add_requests() = Request("a");
  *first.add_requests() = Request("b");
  ASSERT_TRUE(stream.Write(first.SerializeAsString()));
  ASSERT_TRUE(stream.Write(kGarbage));
  (void)stream.WritesDone();
  std::set<std::string> ids;
  while (std::optional<std::string> bytes = stream.Read()) {
    v1::GemmResponsePack pack;
    ASSERT_TRUE(pack.ParseFromString(*bytes));
    for (const auto& r : pack.responses()) {
      EXPECT_EQ(r.error().code(), 0) << r.error().message();
      EXPECT_TRUE(ids.insert(r.request_id()).second) << "answered twice: " << r.request_id();
    }
  }
  ExpectNamesMessage(stream.Finish(), "GemmStreamPacked message 2", "gemm.v1.GemmRequestPack");
  EXPECT_EQ(ids, (std::set<std::string>{"a", "b"}));
}

// RegisterMatrix: a header chunk, then garbage: the upload ends INVALID_ARGUMENT naming chunk 2
// and its reservation is given back (the same matrix then fits the cap).
TEST_F(WireParseTest, RegisterMatrixChunkThatDoesNotParseEndsTheUpload) {
  v1::RegisterMatrixChunk header;
  header.mutable_header()->set_rows(8);
  header.mutable_header()->set_cols(8);
  header.mutable_header()->set_dtype(v1::DTYPE_BF16);
  {
    RawStream upload(*stub_, "/gemm.v1.GemmService/RegisterMatrix");
    ASSERT_TRUE(upload.Write(header.SerializeAsString()));
    (void)upload.Write(kGarbage);
    (void)upload.WritesDone();
    EXPECT_FALSE(upload.Read().has_value());
    ExpectNamesMessage(upload.Finish(), "RegisterMatrix chunk 2", "gemm.v1.RegisterMatrixChunk");
  }
  auto list = server_->client().ListMatrices();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->empty());
}

}  // namespace
}  // namespace gemm::testing
