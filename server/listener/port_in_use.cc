// PortInUse: a trial bind() on every address the host resolves to.
#include "server/listener/port_in_use.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gemm::server {

bool PortInUse(const std::string& host, int port) {
  if (port <= 0) return false;
  absl::string_view name = host;
  if (absl::StartsWith(name, "[") && absl::EndsWith(name, "]")) {
    name = name.substr(1, name.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  const std::string node(name);
  if (getaddrinfo(node.empty() ? nullptr : node.c_str(), absl::StrCat(port).c_str(), &hints,
                  &addresses) != 0) {
    return false;
  }
  bool in_use = false;
  for (const addrinfo* a = addresses; a != nullptr && !in_use; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // NOTE: SO_REUSEADDR, as gRPC's listener has it: connections of an earlier server still in
    // TIME_WAIT do not count, a socket listening on the port does.
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    in_use = bind(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EADDRINUSE;
    close(fd);
  }
  freeaddrinfo(addresses);
  return in_use;
}

}  // namespace gemm::server
