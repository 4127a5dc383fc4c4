// Resident matrix registry.
#include "server/core/matrix_registry.h"

#include <algorithm>
#include <cstring>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/core/checked_math.h"

namespace gemm::core {
namespace {

// INVALID_ARGUMENT naming `header.handle` unless `handle` is a name a registration may choose.
absl::Status CheckHandle(const std::string& handle) {
  if (handle.size() > MatrixRegistry::kMaxHandleBytes) {
    return absl::InvalidArgumentError(absl::StrCat("header.handle: ", handle.size(),
                                                   " bytes, more than the limit of ",
                                                   MatrixRegistry::kMaxHandleBytes));
  }
  for (char c : handle) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(
          "header.handle: only printable ASCII characters without spaces are allowed");
    }
  }
  if (absl::StartsWith(handle, "mat-")) {
    return absl::InvalidArgumentError(
        "header.handle: names starting with 'mat-' are reserved for generated handles");
  }
  return absl::OkStatus();
}

bool SameShape(const ResidentMatrix::Desc& a, const ResidentMatrix::Desc& b) {
  return a.rows == b.rows && a.cols == b.cols && a.layout == b.layout;
}

}  // namespace

void ContentHash::Mix(uint64_t word) {
  state_ = (state_ ^ word) * 0x9e3779b97f4a7c15ull;
  state_ ^= state_ >> 29;
}

void ContentHash::Update(absl::string_view data) {
  length_ += data.size();
  size_t i = 0;
  while (carried_ > 0 && carried_ < 8 && i < data.size()) carry_[carried_++] = data[i++];
  if (carried_ == 8) {
    uint64_t w;
    std::memcpy(&w, carry_, 8);
    Mix(w);
    carried_ = 0;
  }
  for (; i + 8 <= data.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    Mix(w);
  }
  while (i < data.size()) carry_[carried_++] = data[i++];
}

uint64_t ContentHash::Digest() const {
  ContentHash h = *this;
  uint64_t tail = 0;
  std::memcpy(&tail, h.carry_, h.carried_);
  h.Mix(tail);
  h.Mix(length_);
  return h.state_ ^ (h.state_ >> 32);
}

MatrixRegistration::MatrixRegistration(MatrixRegistry* registry, ResidentMatrix::Desc desc,
                                       MatrixNaming naming, bool admin,
                                       std::unique_ptr<MatrixUpload> upload)
    : registry_(registry),
      desc_(std::move(desc)),
      naming_(std::move(naming)),
      admin_(admin),
      upload_(std::move(upload)) {}

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
  hash_.Update(data);
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
  const std::shared_ptr<const ResidentMatrix> made = std::move(*m);
  if (naming_.publish_when_ready) {
    if (absl::Status s = made->WaitReady(); !s.ok()) return s;
  }
  auto held = registry_->Publish(made, hash_.Digest(), naming_, admin_);
  if (!held.ok()) return held.status();  // the destructor gives the reservation back
  if (*held != made) registry_->Unreserve(desc_.owner, total);  // the same content was there
  finished_ = true;
  return held;
}

MatrixRegistry::MatrixRegistry(Backend* backend, int64_t max_resident_bytes,
                               bool release_repository)
    : backend_(backend), max_bytes_(max_resident_bytes), release_repository_(release_repository) {}

absl::StatusOr<std::unique_ptr<MatrixRegistration>> MatrixRegistry::Begin(ResidentMatrix::Desc desc,
                                                                          int64_t max_dim,
                                                                          MatrixNaming naming,
                                                                          const Caller& caller) {
  if (!naming.handle.empty()) {
    if (absl::Status s = CheckHandle(naming.handle); !s.ok()) return s;
  }
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
    desc.owner = caller.name;
    if (auto it = matrices_.find(naming.handle); it != matrices_.end()) {
      if (!SameShape(it->second.matrix->desc(), desc) ||
          !caller.Owns(it->second.matrix->desc().owner)) {
        if (absl::Status s = CheckTakeover(it->second, desc, naming, caller.admin); !s.ok()) {
          if (owned == 0) owner_bytes_.erase(caller.name);
          return s;
        }
      }
    }
    owned += bytes;
    bytes_ += bytes;
    desc.handle = naming.handle.empty() ? absl::StrFormat("mat-%d-%016x", next_id_++,
                                                          absl::Uniform<uint64_t>(absl::BitGen()))
                                        : naming.handle;
  }
  auto upload = backend_->BeginUpload(desc);
  if (!upload.ok()) {
    Unreserve(desc.owner, bytes);
    return upload.status();
  }
  return std::unique_ptr<MatrixRegistration>(new MatrixRegistration(
      this, std::move(desc), std::move(naming), caller.admin, std::move(*upload)));
}

absl::StatusOr<std::shared_ptr<const ResidentMatrix>> MatrixRegistry::Lookup(
    const std::string& handle) const {
  absl::MutexLock lock(&mu_);
  auto it = matrices_.find(handle);
  if (it == matrices_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no resident matrix '", handle, "' (unknown or released)"));
  }
  return it->second.matrix;
}

absl::Status MatrixRegistry::Release(const std::string& handle, const Caller& caller) {
  return Forget(handle, caller, true);
}

absl::Status MatrixRegistry::Remove(const std::string& handle) { return Forget(handle, {}, false); }

absl::Status MatrixRegistry::Forget(const std::string& handle, const Caller& caller, bool client) {
  std::shared_ptr<const ResidentMatrix> m;
  {
    absl::MutexLock lock(&mu_);
    auto it = matrices_.find(handle);
    if (it == matrices_.end() || !caller.Owns(it->second.matrix->desc().owner)) {
      return absl::NotFoundError(absl::StrCat("handle: no resident matrix '", handle, "'",
                                              caller.admin ? "" : " of this caller"));
    }
    if (client && it->second.repository && !release_repository_) {
      return absl::FailedPreconditionError(
          absl::StrCat("handle: '", handle,
                       "' is a weight of the server's repository (--weights); clients "
                       "may not release it (--allow_release_repository_weights)"));
    }
    m = std::move(it->second.matrix);
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
    for (const auto& [h, held] : matrices_) {
      if (!held.repository && !caller.Owns(held.matrix->desc().owner)) continue;
      out.push_back({held.matrix, held.matrix.use_count() - 2, held.content_hash, held.repository});
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

absl::Status MatrixRegistry::CheckTakeover(const Held& held, const ResidentMatrix::Desc& desc,
                                           const MatrixNaming& naming, bool admin) const {
  const ResidentMatrix::Desc& now = held.matrix->desc();
  if (!held.repository && !admin && now.owner != desc.owner) {
    return absl::AlreadyExistsError(absl::StrCat(
        "header.handle: '", now.handle, "' names a matrix of another caller; choose another name"));
  }
  if (held.repository && !naming.repository && !release_repository_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "header.handle: '", now.handle,
        "' is a weight of the server's repository (--weights) "
        "with other content; clients may not replace it (--allow_release_repository_weights)"));
  }
  if (!naming.replace) {
    return absl::AlreadyExistsError(absl::StrCat(
        "header.handle: '", now.handle, "' holds other content (", now.rows, "x", now.cols, " ",
        BLayoutName(now.layout), "; this one is ", desc.rows, "x", desc.cols, " ",
        BLayoutName(desc.layout), "); set header.replace to swap it in"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const ResidentMatrix>> MatrixRegistry::Publish(
    std::shared_ptr<const ResidentMatrix> m, uint64_t hash, const MatrixNaming& naming,
    bool admin) {
  std::shared_ptr<const ResidentMatrix> old;  // dropped after the lock
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = matrices_.try_emplace(m->desc().handle);
  Held& held = it->second;
  if (!inserted) {
    const bool theirs = !held.repository && !admin && held.matrix->desc().owner != m->desc().owner;
    if (!theirs && held.content_hash == hash && SameShape(held.matrix->desc(), m->desc())) {
      held.repository = held.repository || naming.repository;
      return held.matrix;
    }
    if (absl::Status s = CheckTakeover(held, m->desc(), naming, admin); !s.ok()) return s;
    bytes_ -= held.matrix->bytes();
    ReturnOwnerBytesLocked(held.matrix->desc().owner, held.matrix->bytes());
    old = std::move(held.matrix);
  }
  held = Held{.matrix = m, .content_hash = hash, .repository = naming.repository};
  return m;
}

}  // namespace gemm::core
