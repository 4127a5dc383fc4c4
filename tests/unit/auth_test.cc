// The service layer's caller tables and authorizer: the tokens file format (roles, names,
// limits, errors naming file and line but never the token), the method -> role table, the
// UNAUTHENTICATED / PERMISSION_DENIED answers naming the missing role, certificate subjects
// standing for tokens, and a tokens file read again when it changes (no network).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/grpc/auth_table.h"
#include "server/grpc/authorizer.h"

namespace gemm::service {
namespace {

constexpr char kAdminToken[] = "admin-token-0123456789";
constexpr char kInferToken[] = "infer-token-0123456789";
constexpr char kWeightsToken[] = "weights-token-01234567";

// A file named per process and test (ctest runs the tests of one binary side by side), removed
// at the end.
class TempFile {
 public:
  explicit TempFile(const std::string& tag)
      : path_(absl::StrCat(::testing::TempDir(), "/auth_", tag, "_", getpid())) {}
  ~TempFile() { std::remove(path_.c_str()); }
  // Replaces the contents (a new file renamed over the old, as a Secret update does).
  void Write(const std::string& text) const {
    const std::string next = path_ + ".next";
    std::ofstream(next) << text;
    std::rename(next.c_str(), path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Tokens() {
  return absl::StrCat("# token roles limits\n", kAdminToken, " admin name=root\n", kInferToken,
                      " infer name=bob max_calls=2\n\n", kWeightsToken,
                      " infer,weights max_resident_bytes=4096\n");
}

Presented Bearer(const std::string& token) { return {.authorization = "Bearer " + token}; }

TEST(CallerTableTest, ParsesRolesNamesAndLimits) {
  auto table = ParseCallerTable(Tokens(), "tokens", IdentityKind::kToken);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->size(), 3u);
  const KnownCaller& bob = table->at(kInferToken);
  EXPECT_EQ(bob.caller.name, "bob");
  EXPECT_FALSE(bob.caller.admin);
  EXPECT_EQ(bob.caller.limits.max_calls, 2);
  EXPECT_TRUE(bob.Has(kRoleInfer));
  EXPECT_FALSE(bob.Has(kRoleWeights));
  EXPECT_TRUE(table->at(kAdminToken).Has(kRoleWeights)) << "admin holds every role";
  const KnownCaller& unnamed = table->at(kWeightsToken);
  EXPECT_EQ(unnamed.caller.name.rfind("token-", 0), 0u) << unnamed.caller.name;
  EXPECT_EQ(unnamed.caller.name.find(kWeightsToken), std::string::npos);
  EXPECT_EQ(unnamed.caller.limits.max_resident_bytes, 4096);
}

TEST(CallerTableTest, ErrorsNameTheLineAndNeverTheToken) {
  const std::string secret = "a-secret-token-that-must-not-leak";
  for (const std::string& line :
       {secret + " root", secret + " infer max_calls=-1", secret + " infer colour=blue",
        std::string("short infer"), secret + "\n" + secret + " infer"}) {
    auto table = ParseCallerTable("# header\n" + line + "\n", "tokens.txt", IdentityKind::kToken);
    ASSERT_FALSE(table.ok()) << line;
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(table.status().message().find("tokens.txt:"), std::string::npos) << table.status();
    EXPECT_EQ(table.status().message().find(secret), std::string::npos) << table.status();
  }
}

TEST(CallerTableTest, QuotedCertificateSubjects) {
  auto table = ParseCallerTable("\"CN=alice,O=Example Inc\" infer,weights\nCN=bob infer\n",
                                "subjects", IdentityKind::kCertSubject);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->at("CN=alice,O=Example Inc").caller.name, "CN=alice,O=Example Inc");
  EXPECT_TRUE(table->contains("CN=bob"));
}

TEST(RequiredRoleTest, EveryMethodHasItsRoleAndUnknownOnesNeedAdmin) {
  for (const char* m :
       {"Gemm", "GemmStream", "GemmStreamPacked", "GetServerInfo", "ListMatrices"}) {
    EXPECT_EQ(RequiredRole(m), kRoleInfer) << m;
  }
  EXPECT_EQ(RequiredRole("RegisterMatrix"), kRoleWeights);
  EXPECT_EQ(RequiredRole("ReleaseMatrix"), kRoleWeights);
  for (const char* m :
       {"RegisterSharedMemory", "UnregisterSharedMemory", "ListSharedMemory", "SomethingNew"}) {
    EXPECT_EQ(RequiredRole(m), kRoleAdmin) << m;
  }
}

TEST(AuthorizerTest, WithoutFilesEveryoneIsAnAnonymousAdmin) {
  auto auth = Authorizer::Create({});
  ASSERT_TRUE(auth.ok());
  EXPECT_FALSE((*auth)->enabled());
  auto caller = (*auth)->Authorize({}, "RegisterSharedMemory");
  ASSERT_TRUE(caller.ok());
  EXPECT_TRUE(caller->admin);
}

TEST(AuthorizerTest, UnauthenticatedAndPermissionDeniedNameTheRole) {
  TempFile file("roles");
  file.Write(Tokens());
  auto auth = Authorizer::Create({.tokens_file = file.path()});
  ASSERT_TRUE(auth.ok()) << auth.status();
  auto none = (*auth)->Authorize({}, "Gemm");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(none.status().message().find("'infer'"), std::string::npos) << none.status();
  auto unknown = (*auth)->Authorize(Bearer("not-a-known-token-at-all"), "Gemm");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kUnauthenticated);
  auto malformed = (*auth)->Authorize({.authorization = kInferToken}, "Gemm");
  EXPECT_EQ(malformed.status().code(), absl::StatusCode::kUnauthenticated);
  auto denied = (*auth)->Authorize(Bearer(kInferToken), "ReleaseMatrix");
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.status().message().find("'weights'"), std::string::npos) << denied.status();
  EXPECT_TRUE((*auth)->Authorize(Bearer(kInferToken), "Gemm").ok());
  EXPECT_TRUE((*auth)->Authorize(Bearer(kAdminToken), "RegisterSharedMemory").ok());
  auto weights = (*auth)->Authorize(Bearer(kWeightsToken), "RegisterSharedMemory");
  EXPECT_EQ(weights.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(AuthorizerTest, CertificateSubjectStandsForATokenButATokenWins) {
  TempFile tokens("tok"), subjects("subj");
  tokens.Write(Tokens());
  subjects.Write("CN=alice,O=gemm-test infer\n");
  auto auth =
      Authorizer::Create({.tokens_file = tokens.path(), .cert_roles_file = subjects.path()});
  ASSERT_TRUE(auth.ok()) << auth.status();
  auto alice = (*auth)->Authorize({.cert_subject = "CN=alice,O=gemm-test"}, "Gemm");
  ASSERT_TRUE(alice.ok()) << alice.status();
  EXPECT_EQ(alice->name, "CN=alice,O=gemm-test");
  EXPECT_EQ(
      (*auth)->Authorize({.cert_subject = "CN=alice,O=gemm-test"}, "ReleaseMatrix").status().code(),
      absl::StatusCode::kPermissionDenied);
  EXPECT_EQ((*auth)->Authorize({.cert_subject = "CN=mallory"}, "Gemm").status().code(),
            absl::StatusCode::kUnauthenticated);
  auto both = (*auth)->Authorize({.authorization = absl::StrCat("Bearer ", kAdminToken),
                                  .cert_subject = "CN=alice,O=gemm-test"},
                                 "ReleaseMatrix");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->name, "root");
}

TEST(AuthorizerTest, TokensFileIsReadAgainWhenItChangesAndABrokenOneIsIgnored) {
  TempFile file("reload");
  file.Write(Tokens());
  auto auth =
      Authorizer::Create({.tokens_file = file.path(), .reload_check = absl::ZeroDuration()});
  ASSERT_TRUE(auth.ok()) << auth.status();
  ASSERT_TRUE((*auth)->Authorize(Bearer(kInferToken), "Gemm").ok());
  file.Write(absl::StrCat(kAdminToken, " admin\n"));  // bob's token revoked
  EXPECT_EQ((*auth)->Authorize(Bearer(kInferToken), "Gemm").status().code(),
            absl::StatusCode::kUnauthenticated);
  file.Write(absl::StrCat(kAdminToken, " admin\n", kInferToken, " infer,weights\n"));
  EXPECT_TRUE((*auth)->Authorize(Bearer(kInferToken), "ReleaseMatrix").ok());
  file.Write("this line has no-such-role\n");  // broken: the table in force stays
  EXPECT_TRUE((*auth)->Authorize(Bearer(kInferToken), "ReleaseMatrix").ok());
}

TEST(AuthorizerTest, BadFileFailsCreate) {
  TempFile file("bad");
  file.Write("x-token-with-enough-chars bogus\n");
  auto auth = Authorizer::Create({.tokens_file = file.path()});
  EXPECT_EQ(auth.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Authorizer::Create({.tokens_file = file.path() + ".missing"}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gemm::service
