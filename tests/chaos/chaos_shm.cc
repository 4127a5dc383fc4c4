// The chaos client whose shared-memory region is unregistered under use (see chaos_clients.h).
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/posix_shm.h"
#include "tests/chaos/chaos_clients.h"
#include "tests/chaos/chaos_util.h"

namespace gemm::testing {
namespace {

constexpr int64_t kSlotBytes = 256 << 10;  // per request: A, B and D, 64 KiB apart
constexpr int kSlots = 4;

struct ShmCall {
  Expected expected;
  int64_t d_offset = 0, d_bytes = 0;
  v1::GemmRequest request;
  grpc::ClientContext ctx;
  v1::GemmResponse response;
  grpc::Status status;
  absl::Notification done;
};

// A request with A, B and D in `region` at slot `slot` of `shm` (C, when any, inline).
void PrepareShmCall(Rng& rng, const std::string& region, int slot, PosixShm& shm, ShmCall* c) {
  HostProblem p =
      RandomHostProblem(rng, Uniform(rng, 1, 64), Uniform(rng, 1, 64), Uniform(rng, 1, 64));
  const int64_t base = slot * kSlotBytes;
  c->d_offset = base + (128 << 10);
  c->d_bytes = p.m * p.n * (p.fp32 ? 4 : 2);
  std::memcpy(shm.data() + base, p.a.data(), p.a.size());
  std::memcpy(shm.data() + base + (64 << 10), p.b.data(), p.b.size());
  std::memset(shm.data() + c->d_offset, 0xff, 64 << 10);  // NaN until written
  v1::Problem* proto = c->request.mutable_problem();
  FillProto(p, proto);
  proto->clear_a();
  proto->clear_b();
  auto ref = [&](v1::SharedMemoryRef* r, int64_t offset, int64_t bytes) {
    r->set_region(region);
    r->set_offset(offset);
    r->set_byte_size(bytes);
  };
  ref(proto->mutable_a_shm(), base, p.a.size());
  ref(proto->mutable_b_shm(), base + (64 << 10), p.b.size());
  ref(proto->mutable_d_shm(), c->d_offset, c->d_bytes);
  c->expected.outputs.push_back({.entries = {std::move(p)}});
}

// "" when the answer of `c` is right: an output without data, D in its slot and nothing past it.
std::string CheckShmAnswer(const ShmCall& c, const PosixShm& shm) {
  if (c.response.outputs_size() != 1 || !c.response.outputs(0).data().empty()) {
    return "a d_shm answer carries data in the message";
  }
  const char* d = shm.data() + c.d_offset;
  for (int64_t i = c.d_bytes; i < (64 << 10); ++i) {
    if (d[i] != static_cast<char>(0xff)) return absl::StrCat("wrote past D (byte ", i, ")");
  }
  google::protobuf::RepeatedPtrField<v1::Output> outputs;
  *outputs.Add() = c.response.outputs(0);
  outputs[0].set_data(std::string(d, c.d_bytes));
  return CheckOutputs(c.expected, outputs);
}

}  // namespace

void RunSharedMemoryClient(const ChaosEnv& env, int client, int ops) {
  Rng rng = ClientRng(env, client);
  auto conn = OwnConnection(env.target);
  auto shm =
      PosixShm::Create(absl::StrCat("/gemm_chaos_", getpid(), "_", client), kSlots * kSlotBytes);
  if (!shm.ok()) {
    env.ledger->Fail("shared memory: setup", shm.status().ToString());
    return;
  }
  for (int op = 0; op < ops && !env.ServerDied(); ++op) {
    const std::string region = absl::StrCat("chaos-", client, "-", op);
    auto info = conn->RegisterSharedMemory(region, (*shm)->key(), 0, kSlots * kSlotBytes);
    if (!info.ok()) {
      env.ledger->Fail("shared memory: RegisterSharedMemory failed",
                       absl::StrCat(region, ": ", info.status().ToString()));
      continue;
    }
    std::vector<std::unique_ptr<ShmCall>> calls;
    for (int slot = 0, n = Uniform(rng, 1, kSlots); slot < n; ++slot) {
      auto& c = calls.emplace_back(std::make_unique<ShmCall>());
      PrepareShmCall(rng, region, slot, **shm, c.get());
      c->ctx.set_deadline(DeadlineIn(absl::Seconds(60)));
      conn->stub()->async()->Gemm(&c->ctx, &c->request, &c->response,
                                  [p = c.get()](grpc::Status s) {
                                    p->status = std::move(s);
                                    p->done.Notify();
                                  });
    }
    // Unregistered while its requests are in flight: each must finish right, or be refused
    // with NOT_FOUND if it came too late.
    absl::SleepFor(absl::Milliseconds(Uniform(rng, 0, 3)));
    if (auto s = conn->UnregisterSharedMemory(region); !s.ok()) {
      env.ledger->Fail("shared memory: UnregisterSharedMemory failed",
                       absl::StrCat(region, ": ", s.ToString()));
    }
    for (auto& c : calls) {
      c->done.WaitForNotification();
      const auto code = c->status.error_code();
      env.ledger->Count(absl::StrCat("shared memory ", CodeName(code)));
      std::string wrong;
      if (c->status.ok()) {
        wrong = CheckShmAnswer(*c, **shm);
      } else if (code != grpc::StatusCode::NOT_FOUND) {
        wrong = absl::StrCat(CodeName(code), " '", c->status.error_message(), "'");
      }
      if (!wrong.empty()) {
        env.ledger->Fail("shared memory: wrong answer or status",
                         absl::StrCat(region, ": ", wrong));
      }
    }
  }
}

}  // namespace gemm::testing
