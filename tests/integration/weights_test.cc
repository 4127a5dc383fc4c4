// The weight repository in a real server: a server started with --weights lists the
// repository's tensors by name once it serves and answers Gemm against them by name with the
// right product; clients cannot release them; a malformed file stops the start with a clear
// error; SIGHUP loads a new file; RegisterMatrix with a chosen handle is idempotent for the same
// content, ALREADY_EXISTS for other content unless replacing.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/npy.h"
#include "tests/common/weight_files.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"
#include "tests/integration/weights_fixture.h"

namespace gemm::testing {
namespace {

class WeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    weights_ = WriteTestRepository(folder_);
    auto s = ServerProcess::Start({"--backend=cpu", "--weights=" + folder_});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    ASSERT_TRUE(server_->client().WaitForServing(absl::Seconds(20)).ok());
  }

  std::vector<std::string> Names() {
    std::vector<std::string> names;
    auto list = server_->client().ListMatrices();
    EXPECT_TRUE(list.ok()) << list.status();
    if (list.ok()) {
      for (const auto& m : *list) names.push_back(m.handle());
    }
    return names;
  }

  std::string folder_ = FreshFolder("weights_test");
  std::vector<RepositoryWeight> weights_;
  std::unique_ptr<ServerProcess> server_;
  absl::BitGen gen_;
};

TEST_F(WeightsTest, ServesTheRepositoryByName) {
  auto list = server_->client().ListMatrices();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), weights_.size());
  for (size_t i = 0; i < weights_.size(); ++i) {
    EXPECT_EQ((*list)[i].handle(), weights_[i].name);
    EXPECT_TRUE((*list)[i].repository());
    EXPECT_EQ((*list)[i].layout(), v1::B_LAYOUT_NK);
    EXPECT_EQ((*list)[i].rows(), weights_[i].n);
    EXPECT_EQ((*list)[i].cols(), weights_[i].k);
  }
  for (const RepositoryWeight& w : weights_) {
    auto error = GemmByName(server_->client(), w, 7, gen_);
    ASSERT_TRUE(error.ok()) << w.name << ": " << error.status();
    EXPECT_LT(*error, 8e-3) << w.name;
  }
}

TEST_F(WeightsTest, ClientsCannotReleaseRepositoryWeights) {
  const absl::Status s = server_->client().ReleaseMatrix("proj");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(Names().size(), weights_.size());
}

TEST_F(WeightsTest, SighupLoadsNewFiles) {
  ASSERT_TRUE(WriteNpy(folder_ + "/extra.npy", {2, 16}, std::vector<float>(32, 0.5f)).ok());
  ASSERT_EQ(kill(server_->pid(), SIGHUP), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  std::vector<std::string> names;
  while (absl::Now() < deadline) {
    names = Names();
    if (std::find(names.begin(), names.end(), "extra") != names.end()) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "extra"), names.end());
  auto error = GemmByName(server_->client(),
                          {"extra", 2, 16, Bf16Bytes(std::vector<float>(32, 0.5f))}, 3, gen_);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_LT(*error, 8e-3);
}

TEST_F(WeightsTest, ChosenHandleIsIdempotent) {
  const std::string bytes = Bf16Bytes(std::vector<float>(4 * 16, 0.25f));
  v1::MatrixHeader header;
  header.set_handle("team/w");
  header.set_rows(4);
  header.set_cols(16);
  header.set_layout(v1::B_LAYOUT_NK);
  auto first = server_->client().RegisterMatrix(header, bytes);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->handle(), "team/w");
  auto again = server_->client().RegisterMatrix(header, bytes);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->content_hash(), first->content_hash());
  const std::string other = Bf16Bytes(std::vector<float>(4 * 16, -1.0f));
  EXPECT_EQ(server_->client().RegisterMatrix(header, other).status().code(),
            absl::StatusCode::kAlreadyExists);
  header.set_replace(true);
  EXPECT_TRUE(server_->client().RegisterMatrix(header, other).ok());
  header.set_handle("proj");  // a repository weight with other content
  EXPECT_EQ(server_->client().RegisterMatrix(header, other).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Names().size(), weights_.size() + 1);
}

TEST(WeightsStartTest, MalformedFileStopsTheStart) {
  const std::string folder = FreshFolder("weights_start_test");
  std::string bytes(16, '\0');
  bytes[7] = 0x10;  // a 2^60-byte header
  WriteBytes(folder + "/bad.safetensors", bytes);
  auto s = ServerProcess::Start({"--backend=cpu", "--weights=" + folder}, absl::Seconds(10));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("exited during start-up"), std::string::npos) << s.status();
}

}  // namespace
}  // namespace gemm::testing
