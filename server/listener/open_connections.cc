// Open connections per listening port (see open_connections.h) and the process's close().
#include "server/listener/open_connections.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "absl/base/attributes.h"
#include "absl/status/status.h"

extern "C" int __close(int fd);  // glibc's close, exported under this name too

namespace gemm::server {
namespace {

using CloseFn = int (*)(int);

// Most descriptors recorded: 2^22 ports of 2 bytes (8 MiB), far beyond usual open-file limits.
constexpr int64_t kMaxRecorded = int64_t{1} << 22;
// Listening ports counted (the gRPC port, the /metrics port, spares).
constexpr int kPorts = 8;

// The open connections accepted on one port; `port` 0: a free slot.
struct PortCount {
  std::atomic<int> port{0};
  std::atomic<int64_t> open{0};
};

// NOTE: constant-initialized: close() may run before any constructor of this file.
ABSL_CONST_INIT std::atomic<CloseFn> libc_close{nullptr};
ABSL_CONST_INIT std::atomic<std::atomic<uint16_t>*> port_of_fd{nullptr};  // 0: not recorded
ABSL_CONST_INIT std::atomic<int64_t> recorded_fds{0};                     // the size of port_of_fd
ABSL_CONST_INIT PortCount ports[kPorts];

// The slot counting `port`, claimed if `port` has none yet; null when all are taken.
PortCount* SlotFor(int port) {
  for (PortCount& slot : ports) {
    int seen = slot.port.load(std::memory_order_acquire);
    if (seen == 0 && slot.port.compare_exchange_strong(seen, port)) return &slot;
    if (seen == port) return &slot;
  }
  return nullptr;
}

// Takes one of `slot`'s open connections if fewer than `cap` (> 0; <= 0: no cap) are open.
bool TakeOne(PortCount& slot, int64_t cap) {
  int64_t open = slot.open.load(std::memory_order_relaxed);
  do {
    if (cap > 0 && open >= cap) return false;
  } while (!slot.open.compare_exchange_weak(open, open + 1, std::memory_order_relaxed));
  return true;
}

// Forgets connection `fd` if it was recorded.
void Forget(int fd) {
  std::atomic<uint16_t>* table = port_of_fd.load(std::memory_order_acquire);
  if (table == nullptr || fd < 0 || fd >= recorded_fds.load(std::memory_order_relaxed)) return;
  const int port = table[fd].exchange(0, std::memory_order_acq_rel);
  if (port == 0) return;
  if (PortCount* slot = SlotFor(port)) slot->open.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace

absl::Status StartCountingConnections(int64_t max_descriptors) {
  const auto libc = reinterpret_cast<CloseFn>(dlsym(RTLD_NEXT, "close"));
  if (libc == nullptr) {
    return absl::FailedPreconditionError("connection count: libc's close not found");
  }
  const int64_t size = std::clamp<int64_t>(max_descriptors, 1, kMaxRecorded);
  auto* table = new std::atomic<uint16_t>[size]();  // lives as long as the process
  std::atomic<uint16_t>* none = nullptr;
  if (!port_of_fd.compare_exchange_strong(none, table)) {
    delete[] table;
    return absl::FailedPreconditionError("connection count: started twice");
  }
  recorded_fds.store(size, std::memory_order_relaxed);
  libc_close.store(libc, std::memory_order_release);
  return absl::OkStatus();
}

bool AdmitConnection(int fd, int port, int64_t cap) {
  std::atomic<uint16_t>* table = port_of_fd.load(std::memory_order_acquire);
  PortCount* slot = port > 0 && port <= 0xffff ? SlotFor(port) : nullptr;
  if (table == nullptr || slot == nullptr || fd < 0 ||
      fd >= recorded_fds.load(std::memory_order_relaxed)) {
    return cap <= 0;  // cannot be counted: let it in only where nothing is capped
  }
  if (!TakeOne(*slot, cap)) return false;
  table[fd].store(static_cast<uint16_t>(port), std::memory_order_release);
  return true;
}

int64_t OpenConnections(int port) {
  for (const PortCount& slot : ports) {
    if (slot.port.load(std::memory_order_acquire) == port) {
      return slot.open.load(std::memory_order_relaxed);
    }
  }
  return 0;
}

}  // namespace gemm::server

// The process's close(): forgets a recorded connection, then closes with libc's close (the one
// the sanitizers intercept once known; glibc's own before).
extern "C" int close(int fd) {
  gemm::server::Forget(fd);
  const gemm::server::CloseFn libc = gemm::server::libc_close.load(std::memory_order_acquire);
  return libc != nullptr ? libc(fd) : __close(fd);
}
