// Helpers of the CUDA backend tests: a fake WorkSource the test feeds batches into by hand,
// WorkItems whose results can be awaited, resident-matrix registration and the float64 check.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/bf16.h"
#include "common/reference_gemm.h"
#include "server/core/backend.h"
#include "server/core/types.h"

namespace gemm::gpu::testing {

// WorkSource fed by the test: Push() queues a batch (any device may take it unless `device` is
// given); Shutdown() makes Next() return nullopt once drained. Thread-safe.
class FakeSource : public core::WorkSource {
 public:
  // Called at the start of every Next() (set before the backend starts).
  std::function<void()> before_next;
  // Batches handed out so far.
  std::atomic<int64_t> pulled{0};
  // DeviceIdle reports so far, and the batch count of the last one per device (0-7).
  std::atomic<int64_t> idle_reports{0};
  std::array<std::atomic<uint64_t>, 8> last_idle_taken{};

  void Push(core::Batch batch, int device = -1) {
    absl::MutexLock lock(&mu_);
    batch.released = absl::Now();
    queue_.push_back({device, std::move(batch)});
  }
  void Shutdown() {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
  }
  void DeviceIdle(int device, uint64_t batches_taken) override {
    if (device >= 0 && device < 8) last_idle_taken[device].store(batches_taken);
    idle_reports.fetch_add(1);
  }
  std::optional<core::Batch> Next(int device) override {
    if (before_next) before_next();
    absl::MutexLock lock(&mu_);
    while (true) {
      for (auto it = queue_.begin(); it != queue_.end(); ++it) {
        if (it->first < 0 || it->first == device) {
          core::Batch b = std::move(it->second);
          queue_.erase(it);
          pulled.fetch_add(1);
          return b;
        }
      }
      if (shutdown_) return std::nullopt;
      cv_.WaitWithTimeout(&mu_, absl::Milliseconds(2));
    }
  }

 private:
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::deque<std::pair<int, core::Batch>> queue_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

// The result of one WorkItem, filled by its done callback.
struct Outcome {
  absl::Notification done;
  absl::StatusOr<core::GemmResult> result = absl::UnknownError("not completed");
  int calls = 0;
};

// A WorkItem for `request` whose completion lands in `*out` (which must outlive it).
inline std::shared_ptr<core::WorkItem> MakeItem(core::GemmRequest request, Outcome* out) {
  auto item = std::make_shared<core::WorkItem>();
  item->request = std::move(request);
  item->arrival = absl::Now();
  item->done = [out](absl::StatusOr<core::GemmResult> r) {
    out->result = std::move(r);
    ++out->calls;
    out->done.Notify();
  };
  return item;
}

// A batch of the given items (rows = sum of M).
inline core::Batch MakeBatch(std::vector<std::shared_ptr<core::WorkItem>> items) {
  core::Batch b;
  for (const auto& it : items) {
    for (const auto& p : it->request.problems) b.rows += p.m * p.count;
  }
  b.items = std::move(items);
  return b;
}

// Host operands of one problem (owned; the Problem's views point into them).
struct HostOperands {
  std::string a, b, c;
};

// Fills `p`'s inline operands with fresh random data kept in `ops`.
inline void FillRandom(core::Problem& p, HostOperands& ops, absl::BitGen& gen, bool with_c) {
  const int64_t b_mats = p.b_shared ? 1 : p.count;
  ops.a = RandomBf16Bytes(p.count * p.m * p.k, gen);
  if (p.b_resident == nullptr) ops.b = RandomBf16Bytes(b_mats * p.k * p.n, gen);
  if (with_c) {
    if (p.out_dtype == core::DType::kBF16) {
      ops.c = RandomBf16Bytes(p.count * p.m * p.n, gen);
    } else {
      std::vector<float> f(p.count * p.m * p.n);
      for (float& x : f) x = absl::Uniform(gen, -1.0f, 1.0f);
      ops.c.assign(reinterpret_cast<const char*>(f.data()), f.size() * 4);
    }
  }
  p.a = ops.a;
  if (p.b_resident == nullptr) p.b = ops.b;
  p.c = ops.c;
}

// Relative Frobenius error of entry `e` of output `out` against a float64 reference, with
// `b_bytes` the B the problem used (inline or the resident matrix's host copy).
inline double CheckEntry(const core::Problem& p, const core::Output& out, int64_t e,
                         absl::string_view b_bytes) {
  const int64_t es = core::DTypeBytes(p.out_dtype);
  const int64_t mn = p.m * p.n;
  RefProblem rp{p.m, p.n, p.k, p.b_layout == core::BLayout::kNK, p.alpha, p.c.empty() ? 0 : p.beta};
  std::string a_scratch, c_scratch;  // operands that arrived in pieces
  absl::string_view a = p.a.Range(e * p.m * p.k * 2, p.m * p.k * 2, &a_scratch);
  absl::string_view b = b_bytes;
  if (p.b_resident == nullptr && !p.b_shared) b = b_bytes.substr(e * p.k * p.n * 2, p.k * p.n * 2);
  std::vector<float> c;
  if (!p.c.empty()) {
    c = DecodeOutput(p.c.Range(e * mn * es, mn * es, &c_scratch),
                     p.out_dtype == core::DType::kFP32);
  }
  std::vector<double> ref = ReferenceGemm(rp, a, b, c);
  if (static_cast<int64_t>(out.bytes().size()) != p.count * mn * es) return INFINITY;
  std::vector<float> got =
      DecodeOutput(out.bytes().substr(e * mn * es, mn * es), p.out_dtype == core::DType::kFP32);
  return RelativeError(got, ref);
}

// Tolerance of a relative Frobenius error for the output dtype (BF16 rounding ~ 2^-9).
inline double Tolerance(core::DType t) { return t == core::DType::kBF16 ? 8e-3 : 1e-4; }

// Uploads `bytes` as a resident matrix through the backend (rows x cols BF16).
inline absl::StatusOr<std::shared_ptr<core::ResidentMatrix>> Register(
    core::Backend& backend, const std::string& handle, int64_t rows, int64_t cols,
    core::BLayout layout, absl::string_view bytes, std::vector<int> devices = {}) {
  core::ResidentMatrix::Desc desc;
  desc.handle = handle;
  desc.name = handle;
  desc.rows = rows;
  desc.cols = cols;
  desc.layout = layout;
  desc.devices = std::move(devices);
  auto up = backend.BeginUpload(desc);
  if (!up.ok()) return up.status();
  // Several chunks, as a client stream would deliver them.
  const size_t chunk = 4 << 20;
  for (size_t off = 0; off < bytes.size(); off += chunk) {
    absl::Status st = (*up)->Append(bytes.substr(off, chunk));
    if (!st.ok()) return st;
  }
  return (*up)->Finish();
}

}  // namespace gemm::gpu::testing
