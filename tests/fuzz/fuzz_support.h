// What the fuzz targets share: FUZZ_CHECK (a broken property aborts, which libFuzzer records as a
// crash with its input), a Backend that keeps uploads in memory and checks the upload contract
// the registry promises it, and real POSIX shared-memory objects for the registry targets.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/posix_shm.h"
#include "server/core/backend.h"

// Aborts with `what` (and the condition) when `cond` is false.
#define FUZZ_CHECK(cond, what)                                                                  \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n  %s\n", __FILE__, __LINE__, #cond, \
                   std::string(what).c_str());                                                  \
      std::abort();                                                                             \
    }                                                                                           \
  } while (0)

namespace gemm::fuzz {

// A resident matrix whose bytes stay in host memory as uploaded.
class FuzzMatrix final : public core::ResidentMatrix {
 public:
  FuzzMatrix(Desc desc, std::string bytes)
      : ResidentMatrix(std::move(desc)), stored(std::move(bytes)) {}
  const std::string stored;
};

// Keeps the bytes of an upload; checks they arrive in order and completely.
class FuzzUpload final : public core::MatrixUpload {
 public:
  explicit FuzzUpload(core::ResidentMatrix::Desc desc) : desc_(std::move(desc)) {}
  absl::Status Append(absl::string_view data) override {
    FUZZ_CHECK(!finished_, "Append after Finish");
    FUZZ_CHECK(static_cast<int64_t>(bytes_.size() + data.size()) <= desc_.rows * desc_.cols * 2,
               absl::StrCat("upload overrun: ", bytes_.size(), " + ", data.size()));
    bytes_.append(data.data(), data.size());
    return absl::OkStatus();
  }
  absl::StatusOr<std::shared_ptr<core::ResidentMatrix>> Finish() override {
    FUZZ_CHECK(!finished_, "Finish twice");
    FUZZ_CHECK(static_cast<int64_t>(bytes_.size()) == desc_.rows * desc_.cols * 2,
               absl::StrCat("Finish after ", bytes_.size(), " bytes"));
    finished_ = true;
    return std::make_shared<FuzzMatrix>(desc_, std::move(bytes_));
  }

 private:
  core::ResidentMatrix::Desc desc_;
  std::string bytes_;
  bool finished_ = false;
};

// A backend that runs nothing: it stores uploads (FuzzUpload) and cannot page-lock memory.
class FuzzBackend final : public core::Backend {
 public:
  std::string Name() const override { return "fuzz"; }
  core::BackendDescription Describe() const override { return {.name = "fuzz"}; }
  std::vector<int> Devices() const override { return {-1}; }
  absl::Status Start(core::WorkSource* /*source*/) override { return absl::OkStatus(); }
  void Stop() override {}
  absl::StatusOr<std::unique_ptr<core::MatrixUpload>> BeginUpload(
      core::ResidentMatrix::Desc desc) override {
    desc.devices = {-1};
    return std::make_unique<FuzzUpload>(std::move(desc));
  }
};

// The byte at `offset` of every object FuzzShmObjects creates.
inline char ShmPattern(int64_t offset) {
  return static_cast<char>((static_cast<uint64_t>(offset) * 131 + 7) & 0xff);
}

// Real POSIX shared-memory objects of the sizes given, named "<prefix><index>" with a prefix
// unique to this process, filled with ShmPattern. They are unlinked when this is destroyed.
class FuzzShmObjects {
 public:
  explicit FuzzShmObjects(const std::vector<int64_t>& sizes)
      : prefix_(absl::StrCat("/gemm_fuzz_", getpid(), "_")) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      auto shm = PosixShm::Create(absl::StrCat(prefix_, i), sizes[i]);
      FUZZ_CHECK(shm.ok(), shm.status().ToString());
      for (int64_t j = 0; j < sizes[i]; ++j) (*shm)->data()[j] = ShmPattern(j);
      objects_.push_back(std::move(*shm));
    }
  }
  // What every key of these objects starts with.
  const std::string& prefix() const { return prefix_; }
  size_t count() const { return objects_.size(); }
  const std::string& key(size_t i) const { return objects_[i]->key(); }
  int64_t size(size_t i) const { return objects_[i]->size(); }

 private:
  std::string prefix_;
  std::vector<std::unique_ptr<PosixShm>> objects_;
};

}  // namespace gemm::fuzz
