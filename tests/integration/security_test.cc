// Integration: the real gemm_server with TLS, mutual TLS and bearer tokens, against certificates
// this test makes with openssl. A plaintext client or one trusting another CA cannot talk to a
// TLS server; with mutual TLS a client without a certificate or with another CA's cannot either;
// no token is UNAUTHENTICATED, an infer token releasing is PERMISSION_DENIED, another tenant's
// matrix is NOT_FOUND and an admin may do all; a certificate rewritten while the server runs is
// what the next new connection gets; the plaintext health port answers health checks and nothing
// else; a tenant over its max_calls gets RESOURCE_EXHAUSTED while
// another tenant keeps being served; tokens without TLS stop the server at start.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"

namespace gemm::testing {
namespace {

using client::ChannelSecurity;
using client::GemmClient;

constexpr char kAdminToken[] = "admin-token-0123456789";
constexpr char kAliceToken[] = "alice-token-0123456789";  // infer, weights
constexpr char kDaveToken[] = "dave-token-01234567890";   // infer, weights (another tenant)
constexpr char kBobToken[] = "bob-token-012345678901";    // infer
constexpr char kCarolToken[] = "carol-token-0123456789";  // infer, one call at a time
constexpr char kErinToken[] = "erin-token-01234567890";   // infer, one call at a time

// Runs `command` in a shell; true on exit status 0.
bool Shell(const std::string& command) { return std::system(command.c_str()) == 0; }

// A directory of certificates made with openssl: CAs "ca" and "other", a server certificate for
// 127.0.0.1 signed by each, client certificates "alice" (by ca) and "mallory" (by other).
class Certs {
 public:
  Certs() : dir_(absl::StrCat(::testing::TempDir(), "/gemm_certs_", getpid())) {}
  ~Certs() { Shell("rm -rf '" + dir_ + "'"); }

  bool Make() {
    std::string script = absl::StrCat("set -e; mkdir -p '", dir_, "'; cd '", dir_, "'\n",
                                      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > "
                                      "san.ext\n");
    for (const char* ca : {"ca", "other"}) {
      absl::StrAppend(&script, "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 ",
                      "-nodes -days 2 -subj /CN=", ca, "-test-ca -keyout ", ca, ".key -out ", ca,
                      ".pem 2>/dev/null\n");
    }
    absl::StrAppend(&script, Leaf("server", "ca", "/CN=localhost", true),
                    Leaf("server_other", "other", "/CN=localhost", true),
                    Leaf("alice", "ca", "/O=gemm-test/CN=alice", false),
                    Leaf("mallory", "other", "/O=gemm-test/CN=mallory", false));
    return Shell("bash -c \"" + script + "\" >/dev/null");
  }
  std::string Path(const std::string& name) const { return absl::StrCat(dir_, "/", name); }

 private:
  // Commands making `name`.pem/.key signed by `ca`, with the server SAN when `server`.
  static std::string Leaf(const std::string& name, const std::string& ca,
                          const std::string& subject, bool server) {
    return absl::StrCat("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj ",
                        subject, " -keyout ", name, ".key -out ", name, ".csr 2>/dev/null\n",
                        "openssl x509 -req -days 2 -in ", name, ".csr -CA ", ca, ".pem -CAkey ", ca,
                        ".key -CAcreateserial -out ", name, ".pem",
                        server ? " -extfile san.ext" : "", " 2>/dev/null\n");
  }
  std::string dir_;
};

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new Certs();
    ASSERT_TRUE(certs_->Make()) << "openssl could not make the test certificates";
    std::ofstream(certs_->Path("tokens")) << kAdminToken << " admin name=root\n"
                                          << kAliceToken << " infer,weights name=alice\n"
                                          << kDaveToken << " infer,weights name=dave\n"
                                          << kBobToken << " infer name=bob\n"
                                          << kCarolToken << " infer name=carol max_calls=1\n"
                                          << kErinToken << " infer name=erin max_calls=1\n";
    std::ofstream(certs_->Path("subjects")) << "CN=alice,O=gemm-test infer name=alice-cert\n";
  }
  static void TearDownTestSuite() { delete certs_; }

  static std::vector<std::string> TlsFlags() {
    return {"--backend=cpu", "--cpu_workers=1", "--tls_cert=" + certs_->Path("server.pem"),
            "--tls_key=" + certs_->Path("server.key")};
  }
  static ChannelSecurity Trusting(const std::string& ca, const std::string& token = "") {
    return {.tls_ca_file = certs_->Path(ca + ".pem"), .token = token};
  }
  // A client of `server` with `security`.
  static std::unique_ptr<GemmClient> Client(const ServerProcess& server,
                                            const ChannelSecurity& security) {
    auto c = GemmClient::Create({.target = server.target(), .security = security});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  // A server with TLS and the tokens file; its own client() is the admin's.
  static std::unique_ptr<ServerProcess> TokenServer() {
    std::vector<std::string> flags = TlsFlags();
    flags.push_back("--auth_tokens_file=" + certs_->Path("tokens"));
    auto s = ServerProcess::Start(flags, absl::Seconds(20), "", 0,
                                  {.security = Trusting("ca", kAdminToken)});
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // Registers a 2x4 matrix as the owner of `client`; its handle.
  static std::string Register(GemmClient& client) {
    v1::MatrixHeader header;
    header.set_rows(4);
    header.set_cols(4);
    auto info = client.RegisterMatrix(header, std::string(4 * 4 * 2, '\0'));
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->handle() : "";
  }

  static Certs* certs_;
};

Certs* SecurityTest::certs_ = nullptr;

v1::GemmRequest SmallGemm(const std::string& b_handle = "") {
  v1::GemmRequest r;
  v1::Problem* p = r.mutable_problem();
  p->set_m(2);
  p->set_n(4);
  p->set_k(4);
  p->set_a(std::string(2 * 4 * 2, '\0'));
  if (b_handle.empty()) {
    p->set_b(std::string(4 * 4 * 2, '\0'));
  } else {
    p->set_b_handle(b_handle);
  }
  return r;
}

TEST_F(SecurityTest, TlsServerTakesOnlyClientsTrustingItsCa) {
  auto server =
      ServerProcess::Start(TlsFlags(), absl::Seconds(20), "", 0, {.security = Trusting("ca")});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE((*server)->client().GetServerInfo().ok());
  EXPECT_FALSE(Client(**server, {})->GetServerInfo().ok()) << "plaintext client";
  EXPECT_FALSE(Client(**server, Trusting("other"))->GetServerInfo().ok()) << "another CA";
}

TEST_F(SecurityTest, PlaintextHealthPortServesOnlyHealth) {
  const int health_port = ServerProcess::FreePort();
  std::vector<std::string> flags = TlsFlags();
  flags.push_back(absl::StrCat("--health_port=", health_port));
  auto server = ServerProcess::Start(flags, absl::Seconds(20), "", 0, {.security = Trusting("ca")});
  ASSERT_TRUE(server.ok()) << server.status();
  auto probe = GemmClient::Create({.target = absl::StrCat("127.0.0.1:", health_port)});
  ASSERT_TRUE(probe.ok());
  EXPECT_TRUE((*probe)->WaitForServing(absl::Seconds(10)).ok());
  EXPECT_EQ((*probe)->GetServerInfo().status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(SecurityTest, MutualTlsRefusesClientsWithoutACertificateOrWithAnotherCasOne) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_client_ca=" + certs_->Path("ca.pem"));
  const ChannelSecurity alice = {.tls_ca_file = certs_->Path("ca.pem"),
                                 .tls_cert_file = certs_->Path("alice.pem"),
                                 .tls_key_file = certs_->Path("alice.key")};
  auto server = ServerProcess::Start(flags, absl::Seconds(20), "", 0, {.security = alice});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE((*server)->client().GetServerInfo().ok());
  EXPECT_FALSE(Client(**server, Trusting("ca"))->GetServerInfo().ok()) << "no certificate";
  ChannelSecurity mallory = alice;
  mallory.tls_cert_file = certs_->Path("mallory.pem");
  mallory.tls_key_file = certs_->Path("mallory.key");
  EXPECT_FALSE(Client(**server, mallory)->GetServerInfo().ok()) << "another CA's certificate";
}

TEST_F(SecurityTest, CertificateSubjectStandsForAToken) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_client_ca=" + certs_->Path("ca.pem"));
  flags.push_back("--auth_cert_roles=" + certs_->Path("subjects"));
  const ChannelSecurity alice = {.tls_ca_file = certs_->Path("ca.pem"),
                                 .tls_cert_file = certs_->Path("alice.pem"),
                                 .tls_key_file = certs_->Path("alice.key")};
  auto server = ServerProcess::Start(flags, absl::Seconds(20), "", 0, {.security = alice});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE((*server)->client().GetServerInfo().ok());
  const absl::Status release = (*server)->client().ReleaseMatrix("mat-1");
  EXPECT_EQ(release.code(), absl::StatusCode::kPermissionDenied) << release;
}

TEST_F(SecurityTest, TokensRolesAndOwnership) {
  auto server = TokenServer();
  ASSERT_NE(server, nullptr);
  auto anonymous = Client(*server, Trusting("ca"));
  const absl::Status none = anonymous->GetServerInfo().status();
  EXPECT_EQ(none.code(), absl::StatusCode::kUnauthenticated) << none;
  EXPECT_NE(std::string(none.message()).find("'infer'"), std::string::npos) << none;
  EXPECT_TRUE(anonymous->WaitForServing(absl::Seconds(10)).ok()) << "health stays open";

  auto alice = Client(*server, Trusting("ca", kAliceToken));
  auto bob = Client(*server, Trusting("ca", kBobToken));
  auto dave = Client(*server, Trusting("ca", kDaveToken));
  const std::string handle = Register(*alice);
  ASSERT_FALSE(handle.empty());

  const absl::Status bob_release = bob->ReleaseMatrix(handle);
  EXPECT_EQ(bob_release.code(), absl::StatusCode::kPermissionDenied) << bob_release;
  EXPECT_NE(std::string(bob_release.message()).find("'weights'"), std::string::npos);
  EXPECT_EQ(dave->ReleaseMatrix(handle).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(dave->ListMatrices()->empty());
  EXPECT_TRUE(bob->ListMatrices()->empty());
  EXPECT_EQ(alice->ListMatrices()->size(), 1u);
  EXPECT_TRUE(bob->Gemm(SmallGemm(handle)).ok()) << "a handle one was given may be used";
  const absl::Status shm = alice->UnregisterSharedMemory("r");
  EXPECT_EQ(shm.code(), absl::StatusCode::kPermissionDenied) << shm;

  GemmClient& admin = server->client();
  ASSERT_EQ(admin.ListMatrices()->size(), 1u);
  EXPECT_TRUE(admin.ReleaseMatrix(handle).ok());
  EXPECT_EQ(admin.UnregisterSharedMemory("none").code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(admin.Gemm(SmallGemm()).ok());
}

TEST_F(SecurityTest, TenantOverItsCallsIsRefusedWhileAnotherIsServed) {
  auto server = TokenServer();
  ASSERT_NE(server, nullptr);
  auto carol = Client(*server, Trusting("ca", kCarolToken));
  auto erin = Client(*server, Trusting("ca", kErinToken));
  {
    // Carol's open stream holds her one call; one answer proves the server has it.
    grpc::ClientContext context;
    auto stream = carol->stub()->GemmStream(&context);
    ASSERT_TRUE(stream->Write(SmallGemm()));
    v1::GemmResponse answer;
    ASSERT_TRUE(stream->Read(&answer));
    const absl::Status over = carol->Gemm(SmallGemm()).status();
    EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted) << over;
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(erin->Gemm(SmallGemm()).ok());
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  EXPECT_TRUE(carol->Gemm(SmallGemm()).ok()) << "the ended stream gave its call back";
}

TEST_F(SecurityTest, RewrittenCertificateIsServedToTheNextConnection) {
  const std::string cert = certs_->Path("live.pem"), key = certs_->Path("live.key");
  ASSERT_TRUE(Shell(absl::StrCat("cp ", certs_->Path("server.pem"), " ", cert, " && cp ",
                                 certs_->Path("server.key"), " ", key)));
  auto server = ServerProcess::Start({"--backend=cpu", "--cpu_workers=1", "--tls_cert=" + cert,
                                      "--tls_key=" + key, "--tls_reload_s=1"},
                                     absl::Seconds(20), "", 0, {.security = Trusting("ca")});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_FALSE(Client(**server, Trusting("other"))->GetServerInfo().ok());
  ASSERT_TRUE(Shell(absl::StrCat("cp ", certs_->Path("server_other.key"), " ", key, ".new && cp ",
                                 certs_->Path("server_other.pem"), " ", cert, ".new && mv ", key,
                                 ".new ", key, " && mv ", cert, ".new ", cert)));
  bool rotated = false;
  for (int i = 0; i < 100 && !rotated; ++i) {  // the server looks once a second
    rotated = Client(**server, Trusting("other"))->GetServerInfo().ok();
    if (!rotated) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(rotated) << "a new connection still got the old certificate after 10 s";
  EXPECT_FALSE(Client(**server, Trusting("ca"))->GetServerInfo().ok());
}

TEST_F(SecurityTest, TokensWithoutTlsStopTheServerAtStart) {
  auto server = ServerProcess::Start(
      {"--backend=cpu", "--auth_tokens_file=" + certs_->Path("tokens")}, absl::Seconds(10));
  ASSERT_FALSE(server.ok());
  EXPECT_NE(std::string(server.status().message()).find("exited during start-up"),
            std::string::npos)
      << server.status();
}

}  // namespace
}  // namespace gemm::testing
