// Stable names in the matrix registry: a registration under a chosen handle is found by it;
// the same content again is idempotent (same matrix, no bytes counted twice); other content is
// ALREADY_EXISTS unless replacing (a holder keeps the old copy); generated-handle names and
// unprintable names are refused; ContentHash does not depend on how the bytes are split.
#include <gtest/gtest.h>

#include <thread>

#include "absl/synchronization/notification.h"
#include "server/core/matrix_registry.h"
#include "server/cpu/cpu_backend.h"

namespace gemm::core {
namespace {

class MatrixNamingTest : public ::testing::Test {
 protected:
  MatrixNamingTest() : backend_(*cpu::CreateCpuBackend({})), registry_(backend_.get(), 1 << 20) {}

  absl::StatusOr<std::shared_ptr<const ResidentMatrix>> Register(const MatrixNaming& naming,
                                                                 char fill, int64_t rows = 2) {
    auto reg = registry_.Begin({.name = "w", .rows = rows, .cols = 4}, 1024, naming);
    if (!reg.ok()) return reg.status();
    const std::string bytes(rows * 4 * 2, fill);
    if (auto s = (*reg)->Append(0, bytes); !s.ok()) return s;
    return (*reg)->Finish();
  }

  std::unique_ptr<Backend> backend_;
  MatrixRegistry registry_;
};

TEST_F(MatrixNamingTest, ChosenHandleIsTheName) {
  auto m = Register({.handle = "llama/q_proj"}, 'a');
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->desc().handle, "llama/q_proj");
  EXPECT_EQ(*registry_.Lookup("llama/q_proj"), *m);
}

TEST_F(MatrixNamingTest, SameContentAgainIsIdempotent) {
  auto first = Register({.handle = "w"}, 'a');
  auto again = Register({.handle = "w"}, 'a');
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(registry_.resident_bytes(), 16);
  EXPECT_EQ(registry_.List().size(), 1u);
}

TEST_F(MatrixNamingTest, OtherContentIsAlreadyExistsUnlessReplacing) {
  auto first = Register({.handle = "w"}, 'a');
  ASSERT_TRUE(first.ok());
  auto other = Register({.handle = "w"}, 'b');
  EXPECT_EQ(other.status().code(), absl::StatusCode::kAlreadyExists) << other.status();
  EXPECT_NE(other.status().message().find("header.replace"), std::string::npos);
  EXPECT_EQ(registry_.resident_bytes(), 16);       // the refused copy's reservation went back
  auto shape = Register({.handle = "w"}, 'a', 3);  // refused before any byte is sent
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kAlreadyExists);
  auto replaced = Register({.handle = "w", .replace = true}, 'b', 3);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_NE(*replaced, *first);
  EXPECT_EQ((*first)->desc().rows, 2);  // the holder's old copy
  EXPECT_EQ(*registry_.Lookup("w"), *replaced);
  EXPECT_EQ(registry_.resident_bytes(), 24);
}

TEST_F(MatrixNamingTest, RepositoryWeightsArePinned) {
  ASSERT_TRUE(Register({.handle = "r", .repository = true}, 'a').ok());
  EXPECT_TRUE(Register({.handle = "r"}, 'a').ok());  // the same content: idempotent
  auto replace = Register({.handle = "r", .replace = true}, 'b');
  EXPECT_EQ(replace.status().code(), absl::StatusCode::kFailedPrecondition) << replace.status();
  EXPECT_EQ(registry_.Release("r").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(registry_.Remove("r").ok());
  EXPECT_EQ(registry_.resident_bytes(), 0);
}

TEST_F(MatrixNamingTest, RefusesReservedAndUnprintableNames) {
  for (const std::string bad : {std::string("mat-1-2"), std::string("a b"), std::string("\x01"),
                                std::string(MatrixRegistry::kMaxHandleBytes + 1, 'x')}) {
    auto m = Register({.handle = bad}, 'a');
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(m.status().message().find("header.handle"), std::string::npos);
  }
  EXPECT_EQ(registry_.resident_bytes(), 0);
}

// A backend whose matrices are in place only once `ready` is notified (as the CUDA backend's,
// copied to the GPU after the upload finished).
class SlowCopyBackend : public Backend {
 public:
  class Matrix : public ResidentMatrix {
   public:
    Matrix(Desc d, absl::Notification* ready) : ResidentMatrix(std::move(d)), ready_(ready) {}
    absl::Status WaitReady() const override {
      ready_->WaitForNotification();
      return absl::OkStatus();
    }

   private:
    absl::Notification* ready_;
  };
  class Upload : public MatrixUpload {
   public:
    Upload(ResidentMatrix::Desc d, absl::Notification* ready)
        : desc_(std::move(d)), ready_(ready) {}
    absl::Status Append(absl::string_view) override { return absl::OkStatus(); }
    absl::StatusOr<std::shared_ptr<ResidentMatrix>> Finish() override {
      return std::make_shared<Matrix>(desc_, ready_);
    }

   private:
    ResidentMatrix::Desc desc_;
    absl::Notification* ready_;
  };
  std::string Name() const override { return "slow"; }
  BackendDescription Describe() const override { return {}; }
  std::vector<int> Devices() const override { return {-1}; }
  absl::Status Start(WorkSource*) override { return absl::OkStatus(); }
  void Stop() override {}
  absl::StatusOr<std::unique_ptr<MatrixUpload>> BeginUpload(ResidentMatrix::Desc d) override {
    return std::make_unique<Upload>(std::move(d), next_ready);
  }
  absl::Notification* next_ready = nullptr;
};

TEST(PublishWhenReadyTest, ReplacementServesOnlyOnceInPlace) {
  SlowCopyBackend backend;
  MatrixRegistry registry(&backend, 1 << 20);
  auto put = [&registry](char fill) {
    auto reg = registry.Begin({.rows = 1, .cols = 4}, 16,
                              {.handle = "w", .replace = true, .publish_when_ready = true});
    EXPECT_TRUE(reg.ok()) << reg.status();
    EXPECT_TRUE((*reg)->Append(0, std::string(8, fill)).ok());
    return (*reg)->Finish();
  };
  absl::Notification first_ready, second_ready;
  first_ready.Notify();
  backend.next_ready = &first_ready;
  auto first = put('a');
  ASSERT_TRUE(first.ok()) << first.status();
  backend.next_ready = &second_ready;
  std::thread replace([&] { EXPECT_TRUE(put('b').ok()); });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(*registry.Lookup("w"), *first);  // the copy is not in place yet
  second_ready.Notify();
  replace.join();
  EXPECT_NE(*registry.Lookup("w"), *first);
}

TEST(ContentHashTest, SplitDoesNotMatter) {
  std::string bytes(1000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  ContentHash whole;
  whole.Update(bytes);
  for (size_t step : {1, 3, 8, 13, 999}) {
    ContentHash parts;
    for (size_t at = 0; at < bytes.size(); at += step) parts.Update(bytes.substr(at, step));
    EXPECT_EQ(parts.Digest(), whole.Digest()) << step;
  }
  ContentHash other;
  other.Update(bytes.substr(0, 999) + "x");
  EXPECT_NE(other.Digest(), whole.Digest());
  ContentHash shorter;
  shorter.Update(bytes.substr(0, 999));
  EXPECT_NE(shorter.Digest(), whole.Digest());
}

}  // namespace
}  // namespace gemm::core
