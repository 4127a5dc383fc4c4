// The accept guard: keeps the gRPC listener accepting when the process runs out of descriptors,
// and holds client connections under a cap.
//
// NOTE: gRPC 1.51 (what Debian 12 ships) stops a listening socket for good on an accept4()
// error it does not expect (iomgr's tcp_server_posix on_read retries EINTR and re-arms on EAGAIN
// and ECONNABORTED; anything else, EMFILE included, logs "Failed accept4" and ends the
// listener's read loop), so one EMFILE with many idle connections left the server unable to
// accept ever again; and it has no option to cap incoming connections. accept_guard.cc therefore
// defines accept4() in the server executable; the dynamic linker binds libgrpc's calls
// (grpc_accept4 -> accept4@plt) to it ahead of libc's, and it calls libc's. Once installed it
//  - sheds the pending connection when the process is out of descriptors (EMFILE, ENFILE):
//    closes a spare descriptor kept for this, accepts and closes the connection, reopens the
//    spare, and goes on until the backlog is empty, then reports EAGAIN so that gRPC re-arms
//    the listener;
//  - closes at once a connection to the capped port while as many connections accepted on it as
//    the cap are open (counted by open_connections.h: accepted and not yet closed); other
//    listeners (the /metrics one) are not capped;
//  - retries the per-connection errors Linux reports from accept4 (ECONNABORTED, EPROTO, ...)
//    and turns a shortage of memory (ENOBUFS, ENOMEM) into EAGAIN.
// Shed connections are counted (ConnectionsShed) and logged at most every 10 s. Every accept4()
// in the process goes through the guard (the /metrics listener's too).
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace gemm::server {

// Turns the guard on for every accept4() in the process, keeping one spare descriptor open for
// shedding, and starts counting open connections (up to the open-file limit in force now). Call
// once, before the gRPC server starts. FAILED_PRECONDITION when called twice or when libc's
// accept4 or close cannot be found, UNAVAILABLE when the spare cannot be opened.
absl::Status InstallAcceptGuard();

// Closes at once every connection accepted on a listener bound to `port` (the gRPC port) while
// `max_connections` connections accepted on it are open; `max_connections` <= 0 (the default):
// no cap, only the descriptor limit sheds. Connections accepted before the call count too.
// Thread-safe.
void SetConnectionCap(int64_t max_connections, int port);

struct ShedConnections {
  int64_t max_connections = 0;     // closed at once for the connection cap
  int64_t out_of_descriptors = 0;  // shed while the process was out of descriptors
};

// Connections shed since start. Thread-safe.
ShedConnections ConnectionsShed();

}  // namespace gemm::server
