// A minimal HTTP/1.1 server for the Prometheus scrape endpoint (GET /metrics): one thread serves
// every open connection at once (poll), every connection closed after one answer. A client gets
// 2 s to send its request and 5 s to take the answer; at most 64 connections are kept, a new one
// past that taking the place of the oldest that is still silent. It replaces prometheus-cpp's
// CivetWeb exposer: libcivetweb creates its threads with a fixed 100 KiB stack, and glibc refuses
// such threads (EINVAL) once the process's static TLS (cuBLASLt + OpenBLAS + ours, ~190 KiB) does
// not fit in it, so the endpoint never started in CUDA builds. Our thread has the default stack.
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace gemm::core {

class MetricsHttpServer {
 public:
  // Binds `host`:`port` ("" or "0.0.0.0" = all interfaces, otherwise a dotted IPv4 address;
  // `port` 0 = an ephemeral port, see port()), listens, and starts the serving thread. `render`
  // returns the body of a scrape; it is called on the serving thread, one scrape at a time.
  // INVALID_ARGUMENT for a bad host or port, UNAVAILABLE when the socket cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& host, int port, std::function<std::string()> render);

  // Stops the serving thread (an unfinished connection is dropped) and closes the sockets.
  // Returns promptly: it does not wait for a slow client.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The port the server listens on (the one the kernel chose when started with port 0).
  int port() const { return port_; }

 private:
  MetricsHttpServer(int listen_fd, int wake_fd, int port, std::function<std::string()> render);

  struct Connection;

  // The serving thread: accepts and answers connections until the wake fd fires.
  void Serve();
  // Accepts every pending connection into `connections`; false when the process is out of
  // descriptors or memory (accepting should pause).
  bool AcceptAll(std::list<Connection>& connections);
  // Reads or writes what `c` is ready for; false when it is done with (answered, failed, or
  // closed by the client) and must be closed.
  bool Progress(Connection& c);

  const int listen_fd_;
  const int wake_fd_;  // eventfd; written by the destructor to stop Serve()
  const int port_;
  const std::function<std::string()> render_;
  std::thread thread_;
};

}  // namespace gemm::core
