// The weight repository over the CPU backend's registry: a scan loads every tensor by name with
// the right content (hash of the BF16 bytes, conversion included), rescans load new files,
// replace changed tensors (a request holding the old copy keeps it) and remove deleted ones;
// clients cannot release repository weights; a malformed file at start is an error, on a rescan
// it keeps the tensors loaded before.
#include "server/core/weight_repository.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/bf16.h"
#include "common/npy.h"
#include "server/cpu/cpu_backend.h"
#include "tests/common/weight_files.h"

namespace gemm::core {
namespace {

using gemm::testing::Bf16Bytes;
using gemm::testing::F32Bytes;
using gemm::testing::SafetensorsFile;

uint64_t HashOf(const std::string& bytes) {
  ContentHash h;
  h.Update(bytes);
  return h.Digest();
}

class WeightRepositoryTest : public ::testing::Test {
 protected:
  WeightRepositoryTest()
      : backend_(*cpu::CreateCpuBackend({})), registry_(backend_.get(), 1 << 24) {}

  std::unique_ptr<WeightRepository> Make(int64_t chunk_bytes = 4096) {
    auto repo = WeightRepository::Create({.paths = {folder_}, .chunk_bytes = chunk_bytes},
                                         &registry_, 4096);
    EXPECT_TRUE(repo.ok()) << repo.status();
    return std::move(*repo);
  }

  // The content hash the registry holds for `name`, or 0.
  uint64_t HashHeld(const std::string& name) {
    for (const auto& e : registry_.List()) {
      if (e.matrix->desc().handle == name) return e.content_hash;
    }
    return 0;
  }

  std::vector<float> Values(int n, float scale) {
    std::vector<float> v(n);
    for (int i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 97) + 0.3f;
    return v;
  }

  std::string folder_ = gemm::testing::FreshFolder("weight_repository_test");
  std::unique_ptr<Backend> backend_;
  MatrixRegistry registry_;
};

TEST_F(WeightRepositoryTest, LoadsEveryTensorByNameWithItsContent) {
  const std::vector<float> a = Values(64 * 40, 0.25f), b = Values(3 * 5, -1.5f);
  const std::vector<float> c = Values(7 * 3000, 0.001f);  // spans several read chunks
  gemm::testing::WriteBytes(folder_ + "/layer.safetensors",
                            SafetensorsFile({{"a", "BF16", {64, 40}, Bf16Bytes(a)},
                                             {"b", "F32", {3, 5}, F32Bytes(b)},
                                             {"c", "F32", {7, 3000}, F32Bytes(c)},
                                             {"bias", "F32", {5}, F32Bytes(Values(5, 1))}}));
  ASSERT_TRUE(WriteNpy(folder_ + "/proj.npy", {4, 6}, Values(24, 2.0f)).ok());
  auto repo = Make();
  const WeightRepository::ScanReport report = repo->Scan();
  EXPECT_TRUE(report.errors.empty()) << report.errors[0];
  EXPECT_EQ(report.stats.added, 4);
  EXPECT_EQ(report.stats.skipped, 1);
  EXPECT_EQ(report.stats.tensors, 4);
  EXPECT_EQ(HashHeld("layer/a"), HashOf(Bf16Bytes(a)));
  EXPECT_EQ(HashHeld("layer/b"), HashOf(Bf16Bytes(b)));
  EXPECT_EQ(HashHeld("layer/c"), HashOf(Bf16Bytes(c)));
  EXPECT_EQ(HashHeld("proj"), HashOf(Bf16Bytes(Values(24, 2.0f))));
  auto m = registry_.Lookup("layer/c");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->desc().layout, BLayout::kNK);
  EXPECT_EQ((*m)->n(), 7);
  EXPECT_EQ((*m)->k(), 3000);
}

TEST_F(WeightRepositoryTest, RescanAddsReplacesAndRemoves) {
  gemm::testing::WriteBytes(folder_ + "/w.safetensors",
                            SafetensorsFile({{"x", "BF16", {2, 2}, Bf16Bytes({1, 2, 3, 4})},
                                             {"y", "BF16", {2, 2}, Bf16Bytes({5, 6, 7, 8})}}));
  auto repo = Make();
  ASSERT_EQ(repo->Scan().stats.added, 2);
  EXPECT_EQ(repo->Scan().stats.bytes_read, 0);  // nothing changed: nothing read
  auto held = registry_.Lookup("w/x");          // a request in flight on the old copy
  ASSERT_TRUE(held.ok());
  // x changes, y stays the same, z is new; v.npy is new.
  std::filesystem::remove(folder_ + "/w.safetensors");
  gemm::testing::WriteBytes(folder_ + "/w.safetensors",
                            SafetensorsFile({{"x", "BF16", {2, 2}, Bf16Bytes({9, 9, 9, 9})},
                                             {"y", "BF16", {2, 2}, Bf16Bytes({5, 6, 7, 8})},
                                             {"z", "BF16", {1, 2}, Bf16Bytes({1, 1})}}));
  ASSERT_TRUE(WriteNpy(folder_ + "/v.npy", {1, 1}, {3}).ok());
  auto report = repo->Scan();
  EXPECT_TRUE(report.errors.empty());
  EXPECT_EQ(report.stats.replaced, 1);
  EXPECT_EQ(report.stats.added, 2);
  EXPECT_EQ(report.stats.tensors, 4);
  EXPECT_EQ(HashHeld("w/x"), HashOf(Bf16Bytes({9, 9, 9, 9})));
  EXPECT_NE(*registry_.Lookup("w/x"), *held);
  EXPECT_EQ((*held)->desc().handle, "w/x");  // the old copy lives while held
  // The file goes: its tensors are removed.
  std::filesystem::remove(folder_ + "/w.safetensors");
  report = repo->Scan();
  EXPECT_EQ(report.stats.removed, 3);
  EXPECT_EQ(registry_.Lookup("w/y").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(registry_.Lookup("v").ok());
  held = absl::NotFoundError("dropped");
  EXPECT_EQ(registry_.resident_bytes(), 2);
}

TEST_F(WeightRepositoryTest, ClientsCannotReleaseRepositoryWeights) {
  gemm::testing::WriteBytes(folder_ + "/w.safetensors",
                            SafetensorsFile({{"x", "BF16", {2, 2}, Bf16Bytes({1, 2, 3, 4})}}));
  ASSERT_EQ(Make()->Scan().stats.added, 1);
  const absl::Status s = registry_.Release("w/x");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("--allow_release_repository_weights"), std::string::npos);
  MatrixRegistry lenient(backend_.get(), 1 << 20, /*release_repository=*/true);
  auto repo = WeightRepository::Create({.paths = {folder_}}, &lenient, 4096);
  ASSERT_EQ((*repo)->Scan().stats.added, 1);
  EXPECT_TRUE(lenient.Release("w/x").ok());
}

TEST_F(WeightRepositoryTest, MalformedFileIsAnErrorAndKeepsWhatWasLoaded) {
  gemm::testing::WriteBytes(folder_ + "/w.safetensors",
                            SafetensorsFile({{"x", "BF16", {2, 2}, Bf16Bytes({1, 2, 3, 4})}}));
  auto repo = Make();
  ASSERT_EQ(repo->Scan().stats.added, 1);
  std::filesystem::remove(folder_ + "/w.safetensors");
  gemm::testing::WriteBytes(folder_ + "/w.safetensors", std::string(3, 'x'));
  auto report = repo->Scan();
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("w.safetensors"), std::string::npos) << report.errors[0];
  EXPECT_EQ(report.stats.failed, 1);
  EXPECT_TRUE(registry_.Lookup("w/x").ok());
}

TEST_F(WeightRepositoryTest, MissingPathIsAnErrorThatRemovesNothing) {
  gemm::testing::WriteBytes(folder_ + "/w.npy", "");
  ASSERT_TRUE(WriteNpy(folder_ + "/w.npy", {1, 2}, {1, 2}).ok());
  auto repo = Make();
  ASSERT_EQ(repo->Scan().stats.added, 1);
  std::filesystem::rename(folder_, folder_ + ".away");
  auto report = repo->Scan();
  EXPECT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.stats.removed, 0);
  EXPECT_TRUE(registry_.Lookup("w").ok());
  std::filesystem::rename(folder_ + ".away", folder_);
}

TEST_F(WeightRepositoryTest, SameNameFromTwoFilesIsAnError) {
  std::filesystem::create_directories(folder_ + "/a");
  std::filesystem::create_directories(folder_ + "/b");
  ASSERT_TRUE(WriteNpy(folder_ + "/a/w.npy", {1, 2}, {1, 2}).ok());
  ASSERT_TRUE(WriteNpy(folder_ + "/b/w.npy", {1, 2}, {3, 4}).ok());
  auto repo = Make();
  auto report = repo->Scan();
  EXPECT_EQ(report.stats.added, 1);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("b/w.npy"), std::string::npos) << report.errors[0];
  EXPECT_NE(report.errors[0].find("a/w.npy too"), std::string::npos) << report.errors[0];
  EXPECT_EQ(HashHeld("w"), HashOf(Bf16Bytes({1, 2})));
  EXPECT_EQ(repo->Scan().stats.added, 0);  // still refused, not swapped back and forth
  EXPECT_EQ(HashHeld("w"), HashOf(Bf16Bytes({1, 2})));
}

}  // namespace
}  // namespace gemm::core
