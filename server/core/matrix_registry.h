// Registry of resident matrices: handles -> backend-stored matrices, the chunked upload protocol
// of RegisterMatrix (header first, consecutive offsets, exact total), the resident-bytes cap and
// ownership: each matrix belongs to the caller that registered it, whose own resident bytes are
// capped too; other callers (unless admin) neither list nor release it, while any caller may use
// a handle it was given as B. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/backend.h"
#include "server/core/caller.h"
#include "server/core/types.h"

namespace gemm::core {

class MatrixRegistry;

// One RegisterMatrix stream in progress. Destroying it before Finish() abandons the upload and
// returns its reservation. Not thread-safe (one stream, one reader).
class MatrixRegistration {
 public:
  ~MatrixRegistration();
  // Appends a chunk whose byte offset must equal the bytes received so far.
  absl::Status Append(int64_t offset, absl::string_view data);
  // Completes the upload (all bytes must have arrived) and publishes the matrix.
  absl::StatusOr<std::shared_ptr<const ResidentMatrix>> Finish();

 private:
  friend class MatrixRegistry;
  MatrixRegistration(MatrixRegistry* registry, ResidentMatrix::Desc desc,
                     std::unique_ptr<MatrixUpload> upload);
  MatrixRegistry* registry_;
  ResidentMatrix::Desc desc_;
  std::unique_ptr<MatrixUpload> upload_;
  int64_t received_ = 0;
  bool finished_ = false;
};

class MatrixRegistry {
 public:
  // `backend` stores the bytes and must outlive the registry.
  MatrixRegistry(Backend* backend, int64_t max_resident_bytes);

  // Validates the header of a new matrix (INVALID_ARGUMENT naming the field), reserves its bytes
  // against the cap and the caller's own cap (RESOURCE_EXHAUSTED) and starts the backend upload.
  // The matrix belongs to `caller`.
  absl::StatusOr<std::unique_ptr<MatrixRegistration>> Begin(ResidentMatrix::Desc desc,
                                                            int64_t max_dim,
                                                            const Caller& caller = {});

  // The matrix for `handle`, or NOT_FOUND (unknown or released).
  absl::StatusOr<std::shared_ptr<const ResidentMatrix>> Lookup(const std::string& handle) const;

  // Forgets `handle` (NOT_FOUND if unknown, or owned by another caller and `caller` is no admin:
  // the answer does not tell another tenant's handle from an unknown one). Requests already
  // holding it finish; its storage is freed when the last of them drops it.
  absl::Status Release(const std::string& handle, const Caller& caller = {});

  struct Entry {
    std::shared_ptr<const ResidentMatrix> matrix;
    int64_t in_flight = 0;  // requests holding it now
  };
  // The resident matrices `caller` owns (all of them for an admin), ordered by handle.
  std::vector<Entry> List(const Caller& caller = {}) const;

  // Bytes reserved or held by resident matrices.
  int64_t resident_bytes() const;

 private:
  friend class MatrixRegistration;
  // Returns `bytes` reserved for a matrix of `owner`.
  void Unreserve(const std::string& owner, int64_t bytes);
  void Publish(std::shared_ptr<const ResidentMatrix> m);
  // Takes `bytes` off what `owner` holds (forgetting owners that hold nothing).
  void ReturnOwnerBytesLocked(const std::string& owner, int64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Backend* const backend_;
  const int64_t max_bytes_;
  mutable absl::Mutex mu_;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<std::string, int64_t> owner_bytes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const ResidentMatrix>> matrices_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace gemm::core
