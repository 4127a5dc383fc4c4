// The client connections the accept guard let in that are still open, counted per listening
// port, so that the connection cap counts connections, not descriptor numbers.
//
// NOTE: gRPC 1.51 has no option to cap incoming connections (GRPC_ARG_MAX_ALLOWED_INCOMING_
// CONNECTIONS came later) and tells the application nothing when it closes one. Like accept4()
// (accept_guard.h), close() is therefore defined in the server executable, exported so that
// libgrpc's calls bind to it; it forgets a recorded connection before libc's close() frees its
// descriptor number. A descriptor closed some other way (dup2 onto it, close_range) would stay
// counted: nothing in the process closes sockets that way.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace gemm::server {

// Makes room to record connections on descriptors below `max_descriptors` (the open-file limit,
// at most 2^22) and starts recording. Call once, before the first connection is accepted.
// FAILED_PRECONDITION when called twice or when libc's close cannot be found.
absl::Status StartCountingConnections(int64_t max_descriptors);

// Records connection `fd`, just accepted on a listener bound to `port`, unless `cap` (> 0)
// connections accepted on `port` are open already (or `fd` is beyond the recorded range while
// `cap` > 0); then records nothing and returns false, and the caller closes `fd`. `cap` <= 0:
// no cap. Thread-safe and lock-free.
bool AdmitConnection(int fd, int port, int64_t cap);

// Connections accepted on `port` that are open now (0 before StartCountingConnections).
// Thread-safe.
int64_t OpenConnections(int port);

}  // namespace gemm::server
