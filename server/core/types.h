// Domain types of a GEMM request as the server core sees it, independent of protobuf and CUDA.
// Operand bytes are borrowed (OperandBytes: one range, or the pieces a message arrived in) from the
// wire message, which the service layer keeps alive until the request completes; resident B
// matrices are shared, reference-counted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/core/operand_bytes.h"

namespace gemm::core {

class SharedMemoryRegion;  // server/core/shared_memory_registry.h

enum class DType : int { kBF16 = 0, kFP32 = 1 };
enum class BLayout : int { kKN = 0, kNK = 1 };  // B is [K,N] / B is [N,K] (row-major)
enum class Priority : int { kNormal = 0, kHigh = 1 };

// Bytes per element of `t`.
inline constexpr int64_t DTypeBytes(DType t) { return t == DType::kBF16 ? 2 : 4; }
// "bf16" / "fp32".
const char* DTypeName(DType t);
// "kn" / "nk".
const char* BLayoutName(BLayout l);

// Where an operand's bytes live: in the request message, or in a registered shared-memory
// region, page-locked (device copies read/write it in place) or not, or in a client's GPU memory
// mapped through CUDA IPC (device addresses: only device copies may touch them), or page-locked
// by the backend (Backend::PinMessageOperands): its own copy of the message's bytes, or the
// message's buffers themselves when they were received into page-locked memory.
enum class HostMemory : int {
  kMessage = 0,
  kShared = 1,
  kSharedPinned = 2,
  kSharedDevice = 3,
  kPinned = 4
};

// Whether device copies read and write memory of kind `where` in place (no staging).
inline bool CopiedInPlace(HostMemory where) {
  return where == HostMemory::kSharedPinned || where == HostMemory::kSharedDevice ||
         where == HostMemory::kPinned;
}

// A matrix kept on the server for use as B. Backends subclass it to hold their storage.
class ResidentMatrix {
 public:
  struct Desc {
    std::string handle;
    std::string name;
    int64_t rows = 0;
    int64_t cols = 0;
    BLayout layout = BLayout::kKN;  // kKN: rows=K, cols=N; kNK: rows=N, cols=K
    std::vector<int> devices;       // where it lives; {-1} for host memory
    std::string owner;              // Caller::name of the caller that registered it
  };
  virtual ~ResidentMatrix() = default;
  const Desc& desc() const { return desc_; }
  // rows*cols*2; the registry admits rows and cols of at most kMaxDimLimit, so it fits.
  int64_t bytes() const { return desc_.rows * desc_.cols * 2; }
  int64_t k() const { return desc_.layout == BLayout::kKN ? desc_.rows : desc_.cols; }
  int64_t n() const { return desc_.layout == BLayout::kKN ? desc_.cols : desc_.rows; }
  // Blocks until the backend's copy of the bytes is in place (a backend may copy them to its
  // devices after MatrixUpload::Finish); the copy's error if it failed. Default: OK at once.
  virtual absl::Status WaitReady() const { return absl::OkStatus(); }

 protected:
  explicit ResidentMatrix(Desc desc) : desc_(std::move(desc)) {}

 private:
  Desc desc_;
};

// One GEMM: D[M,N] = alpha * A[M,K] · op(B) + beta * C, repeated `count` times for a batch.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  int64_t count = 1;      // >1: equal-shape batch, operands back to back
  OperandBytes a;         // BF16, count*M*K elements
  OperandBytes b;         // BF16 inline: count*K*N or K*N (shared) elements; empty when resident
  bool b_shared = false;  // inline b holds one matrix used by every batch entry
  std::string b_handle;   // resident B (resolved into `b_resident` by validation)
  std::shared_ptr<const ResidentMatrix> b_resident;
  BLayout b_layout = BLayout::kKN;
  bool b_layout_explicit = false;  // the client named a layout (checked against a resident B)
  float alpha = 1.0f;
  float beta = 0.0f;
  OperandBytes c;  // out_dtype, count*M*N elements, or empty
  DType out_dtype = DType::kBF16;
  // D goes here (a registered shared-memory range) instead of into Output.data; empty: into the
  // response. Backends write exactly count*M*N elements of out_dtype.
  absl::Span<char> d_dest;
  // Where the host bytes of a, b, c and d_dest live.
  HostMemory a_mem = HostMemory::kMessage, b_mem = HostMemory::kMessage,
             c_mem = HostMemory::kMessage, d_mem = HostMemory::kMessage;
  // The GPU whose memory holds the operands in a client's GPU memory (kSharedDevice; all on one
  // GPU), or -1 when none is: the problem runs on that GPU (the copy kernel reads and writes
  // them there).
  int operand_device = -1;
};

// What a request asks for.
enum class WorkKind : int { kSingle = 0, kBatch = 1, kGroup = 2 };

struct GemmRequest {
  std::string request_id;
  WorkKind kind = WorkKind::kSingle;
  std::vector<Problem> problems;  // 1 for kSingle/kBatch, >=1 for kGroup
  Priority priority = Priority::kNormal;
  absl::Time deadline = absl::InfiniteFuture();
  std::string kernel;  // "" = server's choice
  // Shared-memory regions the operands or `d_dest` point into: kept mapped while the request
  // lives.
  std::vector<std::shared_ptr<const SharedMemoryRegion>> regions;
};

// Whether `r` is an expert group (a mixture-of-experts step): a group whose every problem is one
// GEMM (count 1) against a resident B, without C, all with one output dtype and one alpha.
// Expert groups of different requests can be run together, the rows of the problems that share
// a matrix stacked into one.
bool IsExpertGroup(const GemmRequest& r);

// The devices problem `p` may run on: the GPU of its operands in GPU memory, else its resident B's
// devices, or empty for any device (inline B, or a matrix in host memory, {-1}). Validation has
// checked that a resident B lives on the operands' GPU.
std::vector<int> ProblemDevices(const Problem& p);

// The devices every resident matrix of `r` lives on: nullopt when none constrains it (any
// device), empty when no device holds them all.
std::optional<std::vector<int>> CommonDevices(const GemmRequest& r);

// One result matrix, [count,M,N] or [M,N].
struct Output {
  std::vector<int64_t> shape;
  DType dtype = DType::kBF16;
  std::string data;  // D's bytes; empty when D went to `d_dest` or is `held` elsewhere
  // D's bytes left in a buffer of the backend instead of `data` (e.g. its page-locked staging):
  // valid while `held_owner` lives. The response is sent from them, and the owner is dropped once
  // the answer is written or the call ends.
  absl::string_view held;
  std::shared_ptr<const void> held_owner;

  // D's bytes wherever they are (`held` or `data`).
  absl::string_view bytes() const { return held_owner != nullptr ? held : absl::string_view(data); }
};

// Where a request's time went.
struct Timing {
  absl::Duration queue;
  absl::Duration copy_in;
  absl::Duration compute;
  absl::Duration copy_out;
  absl::Duration total;
  // Host time spent planning and enqueuing the GPU work of the unit this request ran in
  // (includes copying request bytes into staging).
  absl::Duration launch;
  // From the unit's GPU work finishing (stream callback) to this request's answer going out.
  absl::Duration completion;
  int64_t batch_rows = 0;
  int batch_requests = 1;
  int device = -1;
  // The GPU phases were not timed for this request's unit (the CUDA backend times every n-th
  // unit): copy_in and copy_out hold only host time, compute is zero.
  bool gpu_timing_skipped = false;
};

struct GemmResult {
  std::vector<Output> outputs;
  Timing timing;
  std::string kernel;
};

// Called exactly once per request with its result or error.
using DoneCallback = std::function<void(absl::StatusOr<GemmResult>)>;

// A request in flight through batcher and backend. Owned by shared_ptr; immutable after
// submission except for `timing` fields written by the one component that holds it.
struct WorkItem {
  GemmRequest request;
  absl::Time arrival;
  DoneCallback done;
  // Returns true once the client has cancelled (checked before running). May be empty.
  std::function<bool()> cancelled;
  // Opaque keep-alive for the memory `request` borrows (e.g. the wire message).
  std::shared_ptr<const void> keep_alive;
  // Where the answer goes (e.g. the stream the request came on), or null. A backend answers the
  // items of one group that finish together on one thread inside one AnswerBatch, so that the
  // group's answers can leave in one message.
  const void* answer_group = nullptr;
};

}  // namespace gemm::core
