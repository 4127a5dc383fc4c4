// The clients of the chaos test. Each runs on its own thread over its own connection, makes its
// choices from its own seeded generator, and records in a shared Ledger what came back and every
// broken property: a wrong answer, a refusal that is not the one the request must get, a request
// answered twice or never, a status no client should see.
//   unary:          Gemm with random deadlines (some too short to make) and random cancels
//   stream, packed: GemmStream / GemmStreamPacked episodes that end normally, are cancelled after
//                   some answers, run into a stream deadline, read slowly, or are abandoned (no
//                   reads, no half-close, cancelled later)
//   garbage:        bytes that are no message (grpc::GenericStub) on every kind of RPC
//   shared memory:  operands and outputs in a registered region that is unregistered while the
//                   requests using it are in flight
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/synchronization/mutex.h"
#include "client/gemm_client.h"
#include "tests/chaos/chaos_requests.h"

namespace gemm::testing {

// How a stream's messages carry requests and responses: one per message (GemmStream) or packed
// (GemmStreamPacked, 1 to 8 requests a message).
struct SingleMessages {
  using In = v1::GemmRequest;
  using Out = v1::GemmResponse;
  static constexpr const char* kName = "stream";
  static std::unique_ptr<grpc::ClientReaderWriter<In, Out>> Open(v1::GemmService::Stub* stub,
                                                                 grpc::ClientContext* ctx) {
    return stub->GemmStream(ctx);
  }
  static std::vector<In> Messages(std::vector<v1::GemmRequest> requests, Rng& /*rng*/) {
    return requests;
  }
  template <class F>
  static void ForEach(const Out& out, F f) {
    f(out);
  }
};

struct PackedMessages {
  using In = v1::GemmRequestPack;
  using Out = v1::GemmResponsePack;
  static constexpr const char* kName = "packed";
  static std::unique_ptr<grpc::ClientReaderWriter<In, Out>> Open(v1::GemmService::Stub* stub,
                                                                 grpc::ClientContext* ctx) {
    return stub->GemmStreamPacked(ctx);
  }
  static std::vector<In> Messages(std::vector<v1::GemmRequest> requests, Rng& rng) {
    std::vector<In> out;
    for (size_t i = 0; i < requests.size();) {
      In& pack = out.emplace_back();
      for (int n = absl::Uniform<int>(absl::IntervalClosed, rng, 1, 8);
           n > 0 && i < requests.size(); --n, ++i) {
        *pack.add_requests() = std::move(requests[i]);
      }
    }
    return out;
  }
  template <class F>
  static void ForEach(const Out& out, F f) {
    for (const auto& r : out.responses()) f(r);
  }
};

// Outcome counts and broken properties. Thread-safe.
class Ledger {
 public:
  // Counts one outcome, e.g. "unary ok".
  void Count(const std::string& outcome);
  // Records a broken property of kind `kind` (e.g. "unary: wrong answer"), `what` the details.
  void Fail(const std::string& kind, const std::string& what);
  int64_t failures() const;
  // The outcome counts, then each kind of broken property with its count and first examples.
  std::string Report() const;

 private:
  struct Failures {
    int64_t count = 0;
    std::vector<std::string> examples;
  };
  mutable absl::Mutex mu_;
  std::map<std::string, int64_t> counts_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Failures> failures_ ABSL_GUARDED_BY(mu_);
};

// What every client needs.
struct ChaosEnv {
  std::string target;  // the server
  uint64_t seed = 0;   // each client derives its own generator from it
  Ledger* ledger = nullptr;
  // Set once the server process has died: clients stop at their next operation.
  const std::atomic<bool>* server_died = nullptr;
  bool ServerDied() const { return server_died != nullptr && server_died->load(); }
};

// The generator of client number `client`, derived from the seed.
Rng ClientRng(const ChaosEnv& env, int client);

// A client with a connection of its own (not shared with the other clients' channels).
std::unique_ptr<client::GemmClient> OwnConnection(const std::string& target);

// Each runs `ops` operations (requests, stream episodes or region rounds) and returns.
void RunUnaryClient(const ChaosEnv& env, int client, int ops);
// Unary calls of large GEMMs (384-512 on a side) that keep the workers busy, so the other
// clients' requests wait in the queue when they are cancelled or expire; some are cancelled
// themselves.
void RunHogClient(const ChaosEnv& env, int client, int ops);
// `cut_only`: every episode is cancelled after at most one answer or runs into a 5-40 ms stream
// deadline while the server is still reading its 100-200 requests.
void RunStreamClient(const ChaosEnv& env, int client, bool packed, int ops, bool cut_only = false);
void RunGarbageClient(const ChaosEnv& env, int client, int ops);
void RunSharedMemoryClient(const ChaosEnv& env, int client, int ops);

// Judges one stream answer `r` to a request that expected `e` (and had a timeout_us when
// `timed`): right outputs, or an error it may get. `allowed_extra` is an extra error code the
// caller accepts (e.g. UNAVAILABLE while the server drains; OK for none).
void JudgeStreamAnswer(const ChaosEnv& env, const std::string& kind, const Expected& e, bool timed,
                       const v1::GemmResponse& r, int allowed_extra);

}  // namespace gemm::testing
