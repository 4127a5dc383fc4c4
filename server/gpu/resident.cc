// Resident matrices and their uploads (see resident.h).
#include "server/gpu/resident.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "server/gpu/cuda_util.h"

namespace gemm::gpu {

TaskThread::TaskThread()
    : thread_([this] {
        SetCurrentThreadName("gemm-upload");
        Loop();
      }) {}

TaskThread::~TaskThread() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void TaskThread::Post(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

void TaskThread::Loop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](TaskThread* t)
               ABSL_NO_THREAD_SAFETY_ANALYSIS { return t->stop_ || !t->tasks_.empty(); },
          this));
      if (tasks_.empty()) return;  // stop_ and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

CudaResidentMatrix::~CudaResidentMatrix() {
  for (const Replica& r : replicas_) {
    if (r.ptr == nullptr) continue;
    cudaSetDevice(r.device->ordinal());
    absl::Status st = r.device->pool().FreeAsync(r.ptr, r.device->upload_stream());
    if (!st.ok()) {
      GEMM_LOG(ERROR) << "freeing resident matrix " << desc().handle << " on device "
                      << r.device->ordinal() << ": " << st;
    }
    r.device->pool().Release(r.alloc_bytes);
  }
}

const CudaResidentMatrix::Replica* CudaResidentMatrix::OnDevice(int device) const {
  for (const Replica& r : replicas_) {
    if (r.ordinal == device) return &r;
  }
  return nullptr;
}

absl::Status CudaResidentMatrix::WaitReady() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&ready_));
  return status_;
}

bool CudaResidentMatrix::ready() const {
  absl::MutexLock lock(&mu_);
  return ready_;
}

void CudaResidentMatrix::SetReady(absl::Status status) {
  absl::MutexLock lock(&mu_);
  status_ = std::move(status);
  ready_ = true;
}

namespace {

class CudaMatrixUpload final : public core::MatrixUpload {
 public:
  CudaMatrixUpload(core::ResidentMatrix::Desc desc,
                   std::vector<std::shared_ptr<DeviceContext>> devices, TaskThread* uploader)
      : desc_(std::move(desc)), devices_(std::move(devices)), uploader_(uploader) {
    host_ = std::make_shared<std::string>();
    host_->reserve(static_cast<size_t>(desc_.rows * desc_.cols * 2));
  }

  absl::Status Append(absl::string_view data) override {
    const int64_t total = desc_.rows * desc_.cols * 2;
    if (static_cast<int64_t>(host_->size() + data.size()) > total) {
      return absl::InvalidArgumentError(
          absl::StrCat("matrix ", desc_.handle, ": more than ", total, " bytes uploaded"));
    }
    host_->append(data.data(), data.size());
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<core::ResidentMatrix>> Finish() override {
    const int64_t row_bytes = desc_.cols * 2;
    if (static_cast<int64_t>(host_->size()) != desc_.rows * row_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("matrix ", desc_.handle, ": got ",
                                                     host_->size(), " bytes, expected ",
                                                     desc_.rows * row_bytes));
    }
    const int64_t pitch = RoundUp(row_bytes, 16);
    std::vector<CudaResidentMatrix::Replica> replicas;
    auto undo = [&replicas] {
      for (auto& r : replicas) {
        cudaSetDevice(r.device->ordinal());
        (void)r.device->pool().FreeAsync(r.ptr, r.device->upload_stream());
        r.device->pool().Release(r.alloc_bytes);
      }
    };
    desc_.devices.clear();
    for (const auto& dev : devices_) {
      absl::Status st = CudaStatus(cudaSetDevice(dev->ordinal()), "cudaSetDevice");
      if (!st.ok()) {
        undo();
        return st;
      }
      absl::StatusOr<void*> p = dev->pool().Allocate(desc_.rows * pitch, dev->upload_stream());
      if (!p.ok()) {
        undo();
        return p.status();
      }
      replicas.push_back({dev, dev->ordinal(), *p, pitch, desc_.rows * pitch});
      desc_.devices.push_back(dev->ordinal());
    }
    auto matrix = std::make_shared<CudaResidentMatrix>(desc_, replicas);
    // The task keeps the matrix (and so its memory) alive until the copy is done.
    uploader_->Post([matrix, host = host_, replicas, row_bytes, rows = desc_.rows]() mutable {
      absl::Status status;
      for (const auto& r : replicas) {
        absl::Status st = CudaStatus(cudaSetDevice(r.device->ordinal()), "cudaSetDevice");
        if (st.ok()) {
          st =
              CudaStatus(cudaMemcpy2DAsync(r.ptr, r.pitch_bytes, host->data(), row_bytes, row_bytes,
                                           rows, cudaMemcpyHostToDevice, r.device->upload_stream()),
                         "cudaMemcpy2DAsync(resident upload)");
        }
        if (st.ok()) {
          st = CudaStatus(cudaStreamSynchronize(r.device->upload_stream()),
                          "cudaStreamSynchronize(upload)");
        }
        if (!st.ok() && status.ok()) status = st;
      }
      if (!status.ok()) {
        GEMM_LOG(ERROR) << "upload of resident matrix " << matrix->desc().handle
                        << " failed: " << status;
      }
      host.reset();
      std::shared_ptr<CudaResidentMatrix> m = std::move(matrix);
      m->SetReady(status);  // after this, only requests and the registry keep it alive
    });
    host_.reset();
    return matrix;
  }

 private:
  core::ResidentMatrix::Desc desc_;
  std::vector<std::shared_ptr<DeviceContext>> devices_;
  TaskThread* uploader_;
  std::shared_ptr<std::string> host_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<core::MatrixUpload>> BeginCudaUpload(
    core::ResidentMatrix::Desc desc, std::vector<std::shared_ptr<DeviceContext>> devices,
    TaskThread* uploader) {
  if (desc.rows < 1 || desc.cols < 1) {
    return absl::InvalidArgumentError("resident matrix needs rows >= 1 and cols >= 1");
  }
  if (devices.empty()) return absl::FailedPreconditionError("no device to place the matrix on");
  const int64_t bytes = desc.rows * RoundUp(desc.cols * 2, 16);
  for (const auto& dev : devices) {
    if (!dev->pool().Fits(bytes)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("resident matrix of ", bytes, " bytes does not fit device ", dev->ordinal(),
                       "'s pool (", dev->pool().cap_bytes() - dev->pool().used_bytes(), " of ",
                       dev->pool().cap_bytes(), " bytes free)"));
    }
  }
  return std::unique_ptr<core::MatrixUpload>(
      new CudaMatrixUpload(std::move(desc), std::move(devices), uploader));
}

}  // namespace gemm::gpu
