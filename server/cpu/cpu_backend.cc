// CPU backend: worker threads pull batches and run each problem through cblas_sgemm; the source
// is told when no batch is running (WorkSource::DeviceIdle, device -1).
#include "server/cpu/cpu_backend.h"

#include <cblas.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/guarded_copy.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "server/core/shared_memory_registry.h"
#include "server/core/validation.h"
#include "server/cpu/cpu_gemm.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace gemm::cpu {
namespace {

constexpr char kKernelName[] = "cpu_openblas";

// A resident matrix kept as floats (decoded once at registration).
class CpuMatrix final : public core::ResidentMatrix {
 public:
  CpuMatrix(Desc desc, std::vector<float> data)
      : ResidentMatrix(std::move(desc)), data_(std::move(data)) {}
  const float* data() const { return data_.data(); }

 private:
  std::vector<float> data_;
};

class CpuUpload final : public core::MatrixUpload {
 public:
  explicit CpuUpload(core::ResidentMatrix::Desc desc) : desc_(std::move(desc)) {
    bytes_.reserve(desc_.rows * desc_.cols * 2);
  }
  absl::Status Append(absl::string_view data) override {
    bytes_.append(data.data(), data.size());
    return absl::OkStatus();
  }
  absl::StatusOr<std::shared_ptr<core::ResidentMatrix>> Finish() override {
    std::vector<float> f(desc_.rows * desc_.cols);
    DecodeBf16(bytes_, f.data());
    std::string().swap(bytes_);
    return std::make_shared<CpuMatrix>(desc_, std::move(f));
  }

 private:
  core::ResidentMatrix::Desc desc_;
  std::string bytes_;
};

// True when the byte range `d` and the bytes `s` share a byte.
bool Overlaps(absl::Span<char> d, const core::OperandBytes& s) {
  for (absl::string_view p : s.pieces()) {
    if (!d.empty() && d.data() < p.data() + p.size() && p.data() < d.data() + d.size()) return true;
  }
  return false;
}

// The error of `request`, whose operand `lost` of problem `index` vanished under the server.
absl::Status LostOperandError(const core::GemmRequest& request, size_t index, Operand lost) {
  const core::Problem& p = request.problems[index];
  const char* bytes = lost == Operand::kA   ? p.a.data()
                      : lost == Operand::kB ? p.b.data()
                      : lost == Operand::kC ? p.c.data()
                                            : p.d_dest.data();
  return core::SharedMemoryRegistry::ShrunkError(request, bytes);
}

class CpuBackend final : public core::Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options) : options_(options) {}
  ~CpuBackend() override { Stop(); }

  std::string Name() const override { return "cpu"; }

  core::BackendDescription Describe() const override {
    core::BackendDescription d;
    d.name = "cpu";
    core::DeviceDescription dev;
    dev.ordinal = -1;
    dev.name = absl::StrCat("host CPU (", std::thread::hardware_concurrency(), " threads)");
    dev.kernel = kKernelName;
    d.devices.push_back(dev);
    d.kernels.push_back({kKernelName, true, "float32 OpenBLAS sgemm, BF16 round-to-nearest-even"});
    return d;
  }

  std::vector<int> Devices() const override { return {-1}; }

  absl::Status Start(core::WorkSource* source) override {
    openblas_set_num_threads(options_.blas_threads);
    source->DeviceIdle(-1, 0);  // nothing taken, nothing running
    for (int i = 0; i < std::max(1, options_.workers); ++i) {
      threads_.emplace_back([this, source] {
        SetCurrentThreadName("gemm-cpu");
        while (auto batch = source->Next(-1)) {
          // NOTE: running_ before taken_, and taken_ read before running_ is checked, so an
          // idle report never counts a batch still running (see WorkSource::DeviceIdle).
          running_.fetch_add(1);
          taken_.fetch_add(1);
          Run(*batch);
          if (running_.fetch_sub(1) == 1) {
            const uint64_t taken = taken_.load();
            if (running_.load() == 0) source->DeviceIdle(-1, taken);
          }
        }
      });
    }
    return absl::OkStatus();
  }

  void Stop() override {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  absl::StatusOr<std::unique_ptr<core::MatrixUpload>> BeginUpload(
      core::ResidentMatrix::Desc desc) override {
    if (auto s = core::CheckMatrixDevices(desc.devices, Devices()); !s.ok()) return s;
    desc.devices = {-1};
    return std::make_unique<CpuUpload>(std::move(desc));
  }

 private:
  void Run(const core::Batch& batch) {
    for (const auto& item : batch.items) {
      RunItem(*item, batch);
    }
  }

  static void RunItem(core::WorkItem& item, const core::Batch& batch) {
    const absl::Time start = absl::Now();
    core::GemmResult result;
    result.kernel = kKernelName;
    absl::Duration decode;
    const core::GemmRequest& request = item.request;
    for (size_t i = 0; i < request.problems.size(); ++i) {
      const core::Problem& p = request.problems[i];
      core::Output out;
      if (std::optional<Operand> lost = RunProblem(p, request.kind, &out, &decode)) {
        // A client shrank a shared-memory object under this request: its error alone.
        item.done(LostOperandError(request, i, *lost));
        return;
      }
      result.outputs.push_back(std::move(out));
    }
    const absl::Time end = absl::Now();
    core::Timing& t = result.timing;
    t.queue = batch.released - item.arrival;
    t.copy_in = decode;
    t.compute = end - start - decode;
    t.total = end - item.arrival;
    t.batch_rows = batch.rows;
    t.batch_requests = static_cast<int>(batch.items.size());
    t.device = -1;
    item.done(std::move(result));
  }

  // Computes every entry of `p` into `*out` (shape, dtype, data unless D goes to p.d_dest),
  // adding B's decoding time to `*decode`. Returns the operand whose shared-memory bytes vanished
  // under it, or nullopt when done.
  static std::optional<Operand> RunProblem(const core::Problem& p, core::WorkKind kind,
                                           core::Output* out, absl::Duration* decode) {
    if (p.count > 1 || kind == core::WorkKind::kBatch) out->shape.push_back(p.count);
    out->shape.push_back(p.m);
    out->shape.push_back(p.n);
    out->dtype = p.out_dtype;
    const int64_t d_bytes = p.m * p.n * core::DTypeBytes(p.out_dtype);
    // D straight into the client's shared memory, or into the response. NOTE: a D range that
    // overlaps an input (shared memory) is computed aside and copied at the end: entry i's D
    // must not overwrite inputs of entries not computed yet (the GPU copies every input in
    // before any output out, so it needs no such care).
    const bool aliased =
        Overlaps(p.d_dest, p.a) || Overlaps(p.d_dest, p.b) || Overlaps(p.d_dest, p.c);
    char* d = p.d_dest.data();
    if (p.d_dest.empty() || aliased) {
      out->data.resize(d_bytes * p.count);
      d = out->data.data();
    }
    std::vector<float> b_tmp;
    std::string b_scratch;  // B's bytes when they arrived in pieces
    const float* b_float = nullptr;
    if (p.b_resident) {
      b_float = static_cast<const CpuMatrix&>(*p.b_resident).data();
    }
    for (int64_t i = 0; i < p.count; ++i) {
      if (!p.b_resident && (i == 0 || !p.b_shared)) {
        const absl::Time t0 = absl::Now();
        const int64_t kn = p.k * p.n;
        b_tmp.resize(kn);
        if (!DecodeBf16(p.b.Range((p.b_shared ? 0 : i) * kn * 2, kn * 2, &b_scratch),
                        b_tmp.data())) {
          return Operand::kB;
        }
        b_float = b_tmp.data();
        *decode += absl::Now() - t0;
      }
      if (auto lost = CpuGemm(p, i, b_float, d + i * d_bytes)) return lost;
    }
    if (aliased) {
      if (!GuardedCopy(p.d_dest.data(), out->data.data(), out->data.size())) return Operand::kD;
      std::string().swap(out->data);
    }
    return std::nullopt;
  }

  const CpuBackendOptions options_;
  std::vector<std::thread> threads_;
  // Batches taken from the source, and batches running now (for WorkSource::DeviceIdle).
  std::atomic<uint64_t> taken_{0};
  std::atomic<int> running_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<core::Backend>> CreateCpuBackend(const CpuBackendOptions& options) {
  if (options.workers < 1) return absl::InvalidArgumentError("cpu backend: workers must be >= 1");
  return std::make_unique<CpuBackend>(options);
}

}  // namespace gemm::cpu
