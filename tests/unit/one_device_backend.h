// A fake backend for in-process tests of the service (no GPU): one device (0), one thread pulling
// its batches from the engine and handing each to the test's RunBatch; resident matrices are kept
// as their descriptions only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/core/backend.h"

namespace gemm::testing {

class DescriptionOnlyMatrix : public core::ResidentMatrix {
 public:
  explicit DescriptionOnlyMatrix(Desc desc) : ResidentMatrix(std::move(desc)) {}
};

class DescriptionOnlyUpload : public core::MatrixUpload {
 public:
  explicit DescriptionOnlyUpload(core::ResidentMatrix::Desc desc) : desc_(std::move(desc)) {}
  absl::Status Append(absl::string_view) override { return absl::OkStatus(); }
  absl::StatusOr<std::shared_ptr<core::ResidentMatrix>> Finish() override {
    return std::make_shared<DescriptionOnlyMatrix>(desc_);
  }

 private:
  core::ResidentMatrix::Desc desc_;
};

class OneDeviceBackend : public core::Backend {
 public:
  std::string Name() const override { return "fake"; }
  core::BackendDescription Describe() const override {
    core::BackendDescription d;
    d.name = "fake";
    d.devices.resize(1);
    return d;
  }
  std::vector<int> Devices() const override { return {0}; }
  absl::Status Start(core::WorkSource* source) override {
    thread_ = std::thread([this, source] {
      while (std::optional<core::Batch> b = source->Next(0)) RunBatch(*b);
    });
    return absl::OkStatus();
  }
  void Stop() override {
    if (thread_.joinable()) thread_.join();
  }
  absl::StatusOr<std::unique_ptr<core::MatrixUpload>> BeginUpload(
      core::ResidentMatrix::Desc desc) override {
    return std::make_unique<DescriptionOnlyUpload>(std::move(desc));
  }

 protected:
  // Answers every item of `batch` (on the backend's thread).
  virtual void RunBatch(const core::Batch& batch) = 0;

 private:
  std::thread thread_;
};

}  // namespace gemm::testing
