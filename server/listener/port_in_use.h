// Whether another socket already listens on the address the gRPC server is to listen on, so that
// start-up can refuse a taken port with a clear message.
#pragma once

#include <string>

namespace gemm::server {

// Whether a fresh socket (SO_REUSEADDR, no SO_REUSEPORT) cannot bind `host`:`port` because the
// address is in use (EADDRINUSE) for any address `host` resolves to. `host` as given to --host:
// an IPv4 or IPv6 literal (brackets allowed) or a name; "0.0.0.0" or "[::]" for every interface.
// False for port 0 and for hosts that do not resolve (the listener reports those itself).
bool PortInUse(const std::string& host, int port);

}  // namespace gemm::server
