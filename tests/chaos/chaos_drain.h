// Clients that keep sending while the server is told to stop (SIGTERM), and the judgement of
// what the stop must not lose. Stream clients (GemmStream and GemmStreamPacked) send bursts of
// requests without pause and read every answer; unary clients send one request after another.
// A stream client stops sending and half-closes once an answer says UNAVAILABLE (the server is
// draining); a unary client stops at its first UNAVAILABLE after the signal.
// Every request written on a stream must get its own answer: right, or UNAVAILABLE for one the
// server read while draining. A stream that ends (with any status) while requests written on it
// are unanswered has lost them; so has a unary call started before the signal that ends in any
// error but UNAVAILABLE.
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "tests/chaos/chaos_clients.h"

namespace gemm::testing {

class DrainClients {
 public:
  // Starts `streams` stream clients (alternately single and packed) and `unary` unary clients.
  DrainClients(const ChaosEnv& env, int streams, int unary);
  // Joins the clients (see Join()).
  ~DrainClients();

  // Blocks until the clients together have had `answers` answers, or `timeout` passed; false
  // then.
  bool WaitFlowing(int64_t answers, absl::Duration timeout);
  // Marks the signal as sent: requests written from now on are sent after it.
  void SignalSent() { signal_sent_ = true; }
  // Waits for every client to finish (the server ends their calls; each gives up 60 s after the
  // signal).
  void Join();

 private:
  void RunStream(int client, bool packed);
  void RunUnary(int client);
  template <class M>
  void StreamCall(int client, v1::GemmService::Stub* stub);

  const ChaosEnv env_;
  std::atomic<bool> signal_sent_{false};
  std::atomic<int64_t> answers_{0};
  std::vector<std::thread> threads_;
};

}  // namespace gemm::testing
