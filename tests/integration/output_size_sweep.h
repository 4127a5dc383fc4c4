// Tiny-output sweep, shared by the CPU and CUDA backend tests: every M and N in 1..9 with K in
// {1, 7, 64} and both output dtypes, on every request path of a running gemm_server (unary Gemm,
// GemmStream, GemmStreamPacked, shared-memory operands and outputs, requests coalesced against a
// resident weight, heterogeneous groups, batches). Every answer must hold exactly its output's
// bytes (M*N*dtype, times the count of a batch) in Output.data, or write exactly them into a
// region and nothing after them, and match the float64 reference. Operands are fresh random
// values (never all zero) per case.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/gemm_client.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {

// Starts gemm_server --backend=`backend` with the batching flags the coalesced path needs: the
// rows of one weight's requests (M = 1..9, 45 rows) fill a batch, and a batch is released only
// when full (no idle dispatch; the 2 s delay only bounds a failure). Requests that cannot coalesce
// (an inline B, batches, groups with an inline B) are never delayed. GEMM_SERVER_BINARY overrides
// the build-tree binary (e.g. a copy on another machine).
absl::StatusOr<std::unique_ptr<ServerProcess>> StartSweepServer(const std::string& backend);

// A region registered with the server whose bytes this process reads and writes: host shared
// memory, or (in the GPU tests) device memory exported through CUDA IPC. Thread-safe for
// disjoint ranges.
class SweepRegion {
 public:
  virtual ~SweepRegion() = default;
  // The name requests use in SharedMemoryRef.region.
  virtual const std::string& name() const = 0;
  // Copies `bytes` to `offset` (visible to the server when this returns).
  virtual absl::Status Write(int64_t offset, absl::string_view bytes) = 0;
  // The `bytes` bytes at `offset` (after every server write of an answered request).
  virtual absl::StatusOr<std::string> Read(int64_t offset, int64_t bytes) = 0;
};

// Creates a POSIX shared-memory object of `bytes` bytes and registers it with `client`'s server
// as region `name`; unregisters and removes it when destroyed.
absl::StatusOr<std::unique_ptr<SweepRegion>> RegisterHostRegion(client::GemmClient& client,
                                                                const std::string& name,
                                                                int64_t bytes);

// Bytes OutputSizeSweep::SharedMemory needs its region to hold.
int64_t SweepRegionBytes();

// Fails the running test with the first failures a sweep found and their count.
void ExpectNoFailures(const std::vector<std::string>& failures);

// The sweep over one server. Each path returns its failures (empty: every request answered once,
// right), each naming the case. Paths may run one after another on the same server.
class OutputSizeSweep {
 public:
  // Registers one resident [N,K] weight (B_LAYOUT_NK) per swept N and K on `client`'s server.
  static absl::StatusOr<std::unique_ptr<OutputSizeSweep>> Create(client::GemmClient* client);
  // Releases the weights (errors ignored: the server may be gone).
  ~OutputSizeSweep();

  // Unary Gemm, one problem per request, from several threads.
  std::vector<std::string> Unary();
  // Every case on one GemmStream, answers read while requests are written.
  std::vector<std::string> Stream();
  // Every case on one GemmStreamPacked, in packs of 1, 8 and 27 requests.
  std::vector<std::string> Packed();
  // Operands from `region` with D in the response, and D written into `region` (the bytes after
  // it must stay untouched), alternately.
  std::vector<std::string> SharedMemory(SweepRegion& region);
  // For each weight and dtype, one request of each M from its own thread, coalesced into one
  // batch (the answers' batch_requests and batch_rows must say 9 and 45).
  std::vector<std::string> Coalesced();
  // One group per M and K: every N and both dtypes, odd N against the resident weight.
  std::vector<std::string> Grouped();
  // Batches of 2 or 3 with per-entry, shared or resident B.
  std::vector<std::string> Batched();

 private:
  struct Weight {
    int64_t n = 0, k = 0;
    std::string handle, bytes;
  };
  explicit OutputSizeSweep(client::GemmClient* client) : client_(client) {}
  // The resident weight of shape [n, k].
  const Weight& WeightFor(int64_t n, int64_t k) const;

  client::GemmClient* client_;
  std::vector<Weight> weights_;
};

// Fixture of the sweep's tests: one server and one sweep for the whole suite. A suite's
// SetUpTestSuite calls StartSuite; a test whose suite has no server is skipped.
class OutputSizeSweepTest : public ::testing::Test {
 protected:
  // Starts the server of `backend` (StartSweepServer) and creates the sweep over it.
  static void StartSuite(const std::string& backend);
  // Stops the server with SIGTERM (it must exit 0).
  static void TearDownTestSuite();
  // Skips the test when its suite has no server (StartSuite failed or was not called).
  void SetUp() override;

  static ServerProcess* server_;
  static OutputSizeSweep* sweep_;
};

}  // namespace gemm::testing
