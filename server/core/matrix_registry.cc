// Resident matrix registry.
#include "server/core/matrix_registry.h"

#include <algorithm>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/core/checked_math.h"

namespace gemm::core {

MatrixRegistration::MatrixRegistration(MatrixRegistry* registry, ResidentMatrix::Desc desc,
                                       std::unique_ptr<MatrixUpload> upload)
    : registry_(registry), desc_(std::move(desc)), upload_(std::move(upload)) {}

MatrixRegistration::~MatrixRegistration() {
  if (!finished_) registry_->Unreserve(desc_.owner, desc_.rows * desc_.cols * 2);
}

absl::Status MatrixRegistration::Append(int64_t offset, absl::string_view data) {
  if (finished_) return absl::FailedPreconditionError("upload already finished");
  const int64_t total = desc_.rows * desc_.cols * 2;
  if (offset != received_) {
    return absl::InvalidArgumentError(absl::StrCat("chunk.offset: is ", offset, " but ", received_,
                                                   " bytes were received so far"));
  }
  if (received_ + static_cast<int64_t>(data.size()) > total) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk.data: ", data.size(), " bytes at offset ", offset,
                     " overrun the matrix size rows*cols*2 = ", total));
  }
  if (auto s = upload_->Append(data); !s.ok()) return s;
  received_ += data.size();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const ResidentMatrix>> MatrixRegistration::Finish() {
  if (finished_) return absl::FailedPreconditionError("upload already finished");
  const int64_t total = desc_.rows * desc_.cols * 2;
  if (received_ != total) {
    return absl::InvalidArgumentError(
        absl::StrCat("stream ended after ", received_, " of ", total, " bytes (rows*cols*2)"));
  }
  auto m = upload_->Finish();
  if (!m.ok()) return m.status();
  finished_ = true;
  std::shared_ptr<const ResidentMatrix> shared = std::move(*m);
  registry_->Publish(shared);
  return shared;
}

MatrixRegistry::MatrixRegistry(Backend* backend, int64_t max_resident_bytes)
    : backend_(backend), max_bytes_(max_resident_bytes) {}

absl::StatusOr<std::unique_ptr<MatrixRegistration>> MatrixRegistry::Begin(ResidentMatrix::Desc desc,
                                                                          int64_t max_dim,
                                                                          const Caller& caller) {
  for (auto [name, v] : {std::pair{"rows", desc.rows}, {"cols", desc.cols}}) {
    if (v < 1) {
      return absl::InvalidArgumentError(absl::StrCat("header.", name, ": must be >= 1, got ", v));
    }
    if (v > max_dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("header.", name, ": ", v, " exceeds the limit ", max_dim, " (--max_dim)"));
    }
  }
  const std::optional<int64_t> product = CheckedProduct(desc.rows, desc.cols, int64_t{2});
  if (!product.has_value()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("header: a ", desc.rows, "x", desc.cols,
                     " BF16 matrix does not fit in 64-bit byte counts (--max_resident_bytes)"));
  }
  const int64_t bytes = *product;
  {
    absl::MutexLock lock(&mu_);
    if (bytes > max_bytes_ - bytes_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("matrix of ", bytes, " bytes does not fit: ", bytes_, " of ", max_bytes_,
                       " resident bytes in use (--max_resident_bytes)"));
    }
    int64_t& owned = owner_bytes_[caller.name];
    const int64_t owner_cap = CapOrMax(caller.limits.max_resident_bytes);
    if (bytes > owner_cap - owned) {
      if (owned == 0) owner_bytes_.erase(caller.name);
      return absl::ResourceExhaustedError(absl::StrCat(
          "matrix of ", bytes, " bytes does not fit: caller '", caller.name, "' holds ", owned,
          " of its ", owner_cap, " resident bytes (max_resident_bytes in the tokens file)"));
    }
    owned += bytes;
    bytes_ += bytes;
    desc.owner = caller.name;
    desc.handle =
        absl::StrFormat("mat-%d-%016x", next_id_++, absl::Uniform<uint64_t>(absl::BitGen()));
  }
  auto upload = backend_->BeginUpload(desc);
  if (!upload.ok()) {
    Unreserve(desc.owner, bytes);
    return upload.status();
  }
  return std::unique_ptr<MatrixRegistration>(
      new MatrixRegistration(this, std::move(desc), std::move(*upload)));
}

absl::StatusOr<std::shared_ptr<const ResidentMatrix>> MatrixRegistry::Lookup(
    const std::string& handle) const {
  absl::MutexLock lock(&mu_);
  auto it = matrices_.find(handle);
  if (it == matrices_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no resident matrix '", handle, "' (unknown or released)"));
  }
  return it->second;
}

absl::Status MatrixRegistry::Release(const std::string& handle, const Caller& caller) {
  std::shared_ptr<const ResidentMatrix> m;
  {
    absl::MutexLock lock(&mu_);
    auto it = matrices_.find(handle);
    if (it == matrices_.end() || !caller.Owns(it->second->desc().owner)) {
      return absl::NotFoundError(absl::StrCat("handle: no resident matrix '", handle, "'",
                                              caller.admin ? "" : " of this caller"));
    }
    m = std::move(it->second);
    matrices_.erase(it);
    bytes_ -= m->bytes();
    ReturnOwnerBytesLocked(m->desc().owner, m->bytes());
  }
  return absl::OkStatus();  // `m` drops here; in-flight requests keep their own references
}

std::vector<MatrixRegistry::Entry> MatrixRegistry::List(const Caller& caller) const {
  std::vector<Entry> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [h, m] : matrices_) {
      if (caller.Owns(m->desc().owner)) out.push_back({m, m.use_count() - 2});
    }
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    return a.matrix->desc().handle < b.matrix->desc().handle;
  });
  return out;
}

int64_t MatrixRegistry::resident_bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

void MatrixRegistry::Unreserve(const std::string& owner, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  bytes_ -= bytes;
  ReturnOwnerBytesLocked(owner, bytes);
}

void MatrixRegistry::ReturnOwnerBytesLocked(const std::string& owner, int64_t bytes) {
  auto it = owner_bytes_.find(owner);
  if (it != owner_bytes_.end() && (it->second -= bytes) <= 0) owner_bytes_.erase(it);
}

void MatrixRegistry::Publish(std::shared_ptr<const ResidentMatrix> m) {
  absl::MutexLock lock(&mu_);
  matrices_[m->desc().handle] = std::move(m);
}

}  // namespace gemm::core
