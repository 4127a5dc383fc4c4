// Registry of resident matrices: handles -> backend-stored matrices, the chunked upload protocol
// of RegisterMatrix (header first, consecutive offsets, exact total), the resident-bytes cap,
// stable names and ownership. A matrix registered under a name the client (or the weight
// repository) chose is found by that name; registering it again with the same content (a 64-bit
// content hash) is idempotent, with other content ALREADY_EXISTS unless replacing; the
// repository's matrices are pinned (clients may not release or replace them unless allowed) and
// listed to every caller. Every other matrix belongs to the caller that registered it, whose own
// resident bytes are capped too; other callers (unless admin) neither list, release nor take over
// its name, while any caller may use a handle it was given as B. Thread-safe.
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

// How a registration is named and kept.
struct MatrixNaming {
  // The handle to publish under (a stable name); empty: a generated one ("mat-<n>-<hex>").
  std::string handle;
  // When `handle` holds other content: swap it in (requests in flight finish on the old copy)
  // instead of ALREADY_EXISTS.
  bool replace = false;
  // Loaded from the weight repository: pinned (see MatrixRegistry::Release).
  bool repository = false;
  // Finish() waits for the backend's copy (ResidentMatrix::WaitReady) before publishing, so a
  // replaced matrix serves until its successor is in place. Only for callers that may block.
  bool publish_when_ready = false;
};

// A 64-bit hash of a byte stream fed in pieces of any size (the same bytes give the same hash
// however they are split). Not cryptographic.
class ContentHash {
 public:
  // Adds the next bytes.
  void Update(absl::string_view data);
  // The hash of everything added.
  uint64_t Digest() const;

 private:
  void Mix(uint64_t word);
  uint64_t state_ = 0x243f6a8885a308d3ull;
  uint64_t length_ = 0;
  char carry_[8] = {};
  int carried_ = 0;
};

// One RegisterMatrix stream in progress. Destroying it before Finish() abandons the upload and
// returns its reservation. Not thread-safe (one stream, one reader).
class MatrixRegistration {
 public:
  ~MatrixRegistration();
  // Appends a chunk whose byte offset must equal the bytes received so far.
  absl::Status Append(int64_t offset, absl::string_view data);
  // Completes the upload (all bytes must have arrived) and publishes the matrix under its
  // naming (see MatrixRegistry::Begin). For a name that already holds the same content, returns
  // that matrix and gives the new copy back.
  absl::StatusOr<std::shared_ptr<const ResidentMatrix>> Finish();
  // The content hash of the bytes appended so far.
  uint64_t content_hash() const { return hash_.Digest(); }

 private:
  friend class MatrixRegistry;
  MatrixRegistration(MatrixRegistry* registry, ResidentMatrix::Desc desc, MatrixNaming naming,
                     bool admin, std::unique_ptr<MatrixUpload> upload);
  MatrixRegistry* registry_;
  ResidentMatrix::Desc desc_;
  MatrixNaming naming_;
  bool admin_;  // the registering caller may take over other callers' names
  ContentHash hash_;
  std::unique_ptr<MatrixUpload> upload_;
  int64_t received_ = 0;
  bool finished_ = false;
};

class MatrixRegistry {
 public:
  // `backend` stores the bytes and must outlive the registry. `release_repository` lets clients
  // release and replace matrices of the weight repository.
  MatrixRegistry(Backend* backend, int64_t max_resident_bytes, bool release_repository = false);

  // Validates the header of a new matrix (INVALID_ARGUMENT naming the field) and its naming (a
  // handle of at most kMaxHandleBytes printable characters, not starting with the generated
  // handles' "mat-"; ALREADY_EXISTS when the name holds a matrix of another shape or layout and
  // `replace` is off, or one of another caller), reserves its bytes against the cap and the
  // caller's own cap (RESOURCE_EXHAUSTED) and starts the backend upload. The matrix belongs to
  // `caller`.
  absl::StatusOr<std::unique_ptr<MatrixRegistration>> Begin(ResidentMatrix::Desc desc,
                                                            int64_t max_dim,
                                                            MatrixNaming naming = {},
                                                            const Caller& caller = {});

  // The longest handle a client may choose.
  static constexpr size_t kMaxHandleBytes = 512;

  // The matrix for `handle`, or NOT_FOUND (unknown or released).
  absl::StatusOr<std::shared_ptr<const ResidentMatrix>> Lookup(const std::string& handle) const;

  // Forgets `handle` (NOT_FOUND if unknown, or owned by another caller and `caller` is no admin:
  // the answer does not tell another tenant's handle from an unknown one; FAILED_PRECONDITION
  // for a matrix of the weight repository unless releasing those is allowed). Requests already
  // holding it finish; its storage is freed when the last of them drops it.
  absl::Status Release(const std::string& handle, const Caller& caller = {});

  // Release() for the weight repository: also forgets its pinned matrices.
  absl::Status Remove(const std::string& handle);

  struct Entry {
    std::shared_ptr<const ResidentMatrix> matrix;
    int64_t in_flight = 0;  // requests holding it now
    uint64_t content_hash = 0;
    bool repository = false;  // loaded from the weight repository
  };
  // The resident matrices `caller` owns (all of them for an admin) and the weight repository's,
  // ordered by handle.
  std::vector<Entry> List(const Caller& caller = {}) const;

  // Bytes reserved or held by resident matrices.
  int64_t resident_bytes() const;

 private:
  friend class MatrixRegistration;
  struct Held {
    std::shared_ptr<const ResidentMatrix> matrix;
    uint64_t content_hash = 0;
    bool repository = false;
  };
  // Returns `bytes` reserved for a matrix of `owner`.
  void Unreserve(const std::string& owner, int64_t bytes);
  // Takes `bytes` off what `owner` holds (forgetting owners that hold nothing).
  void ReturnOwnerBytesLocked(const std::string& owner, int64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes `m` (its bytes reserved for its owner) under `naming`; returns what the name now
  // holds: `m`, or the matrix it already held with the same content (then `m`'s bytes are given
  // back by the caller). ALREADY_EXISTS / FAILED_PRECONDITION as Begin's naming rules.
  absl::StatusOr<std::shared_ptr<const ResidentMatrix>> Publish(
      std::shared_ptr<const ResidentMatrix> m, uint64_t hash, const MatrixNaming& naming,
      bool admin);
  // Checks that a registration by `desc.owner` (`admin` or not) under `naming` may take a name
  // now holding `held`.
  absl::Status CheckTakeover(const Held& held, const ResidentMatrix::Desc& desc,
                             const MatrixNaming& naming, bool admin) const;
  // Forgets `handle` for `caller`; `client` callers may not forget pinned ones.
  absl::Status Forget(const std::string& handle, const Caller& caller, bool client);

  Backend* const backend_;
  const int64_t max_bytes_;
  const bool release_repository_;
  mutable absl::Mutex mu_;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<std::string, int64_t> owner_bytes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Held> matrices_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gemm::core
