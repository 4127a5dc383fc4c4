// Ledger and connections of the chaos clients (see chaos_clients.h).
#include "absl/strings/str_cat.h"
#include "tests/chaos/chaos_clients.h"

namespace gemm::testing {

void Ledger::Count(const std::string& outcome) {
  absl::MutexLock lock(&mu_);
  ++counts_[outcome];
}

void Ledger::Fail(const std::string& kind, const std::string& what) {
  absl::MutexLock lock(&mu_);
  Failures& f = failures_[kind];
  ++f.count;
  if (f.examples.size() < 3) f.examples.push_back(what);
}

int64_t Ledger::failures() const {
  absl::MutexLock lock(&mu_);
  int64_t n = 0;
  for (const auto& [kind, f] : failures_) n += f.count;
  return n;
}

std::string Ledger::Report() const {
  absl::MutexLock lock(&mu_);
  std::string out = "outcomes:\n";
  for (const auto& [what, n] : counts_) absl::StrAppend(&out, "  ", what, ": ", n, "\n");
  absl::StrAppend(&out, "broken properties:", failures_.empty() ? " none\n" : "\n");
  for (const auto& [kind, f] : failures_) {
    absl::StrAppend(&out, "  ", kind, ": ", f.count, ", e.g.\n");
    for (const auto& e : f.examples) absl::StrAppend(&out, "    ", e, "\n");
  }
  return out;
}

std::unique_ptr<client::GemmClient> OwnConnection(const std::string& target) {
  auto c = client::GemmClient::Create(
      {.target = target, .channel_args = {{"grpc.use_local_subchannel_pool", 1}}});
  return c.ok() ? std::move(*c) : nullptr;
}

Rng ClientRng(const ChaosEnv& env, int client) { return Rng(env.seed * 1000003 + client); }

}  // namespace gemm::testing
