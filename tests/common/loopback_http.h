// Test helper: raw HTTP exchanges with a server on 127.0.0.1 over plain POSIX sockets (no curl
// dependency), for the tests of the Prometheus /metrics endpoint and tests that read a metric.
// Blocking; thread-compatible.
#pragma once

#include <string>

namespace gemm::testing {

// A TCP socket connected to 127.0.0.1:`port` with a 10 s receive timeout, or -1. The caller
// closes it.
int ConnectLoopback(int port);

// Sends `request` verbatim to 127.0.0.1:`port` and returns everything the server answers until
// it closes the connection; "" when it cannot connect or send.
std::string LoopbackExchange(int port, const std::string& request);

// GET `path` (HTTP/1.1) from 127.0.0.1:`port`: the whole response, status line and headers
// included; "" on failure.
std::string LoopbackGet(int port, const std::string& path);

// The value of Prometheus series `series` (a metric name with its labels, e.g.
// `gemm_rpcs_total{method="Gemm",code="OK"}`) in a scrape of 127.0.0.1:`port`/metrics; -1 when
// the scrape fails or does not hold the series.
double ScrapeMetric(int port, const std::string& series);

}  // namespace gemm::testing
