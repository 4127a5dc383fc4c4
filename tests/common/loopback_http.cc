// Raw loopback HTTP for tests: see loopback_http.h.
#include "tests/common/loopback_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gemm::testing {

int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  timeval tv{.tv_sec = 10, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string LoopbackExchange(int port, const std::string& request) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  std::string response;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    char buf[65536];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return response;
}

std::string LoopbackGet(int port, const std::string& path) {
  return LoopbackExchange(port, absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
}

double ScrapeMetric(int port, const std::string& series) {
  const std::string text = LoopbackGet(port, "/metrics");
  const size_t at = text.find(absl::StrCat("\n", series, " "));
  if (at == std::string::npos) return -1;
  const size_t start = at + series.size() + 2;
  double value = -1;
  if (!absl::SimpleAtod(text.substr(start, text.find('\n', start) - start), &value)) return -1;
  return value;
}

}  // namespace gemm::testing
