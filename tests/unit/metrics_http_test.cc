// Tests of MetricsHttpServer on loopback: what /metrics, HEAD, other paths, other methods and
// malformed requests get; that silent clients (a few, or more than the server keeps) cannot stall
// scrapes; bind errors; prompt shutdown.
#include "server/core/metrics_http.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/common/loopback_http.h"

namespace gemm::core {
namespace {

using ::gemm::testing::ConnectLoopback;
using ::gemm::testing::LoopbackExchange;

std::string Request(const std::string& method, const std::string& path) {
  return absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: localhost\r\n\r\n");
}

struct Reply {
  std::string status_line;
  std::string headers;  // lines after the status line, "\r\n"-separated
  std::string body;
  int64_t content_length = -1;
};

Reply Parse(const std::string& response) {
  Reply r;
  const size_t line_end = response.find("\r\n");
  const size_t head_end = response.find("\r\n\r\n");
  if (line_end == std::string::npos || head_end == std::string::npos) return r;
  r.status_line = response.substr(0, line_end);
  r.headers = response.substr(line_end + 2, head_end - line_end);
  r.body = response.substr(head_end + 4);
  const size_t cl = r.headers.find("Content-Length: ");
  if (cl != std::string::npos) {
    const size_t start = cl + sizeof("Content-Length: ") - 1;
    (void)absl::SimpleAtoi(r.headers.substr(start, r.headers.find("\r\n", start) - start),
                           &r.content_length);
  }
  return r;
}

class MetricsHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = MetricsHttpServer::Start("127.0.0.1", 0, [this] {
      return absl::StrCat("# TYPE scrapes counter\nscrapes ", ++scrapes_, "\n");
    });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    ASSERT_GT(server_->port(), 0);
  }

  Reply Send(const std::string& request) {
    return Parse(LoopbackExchange(server_->port(), request));
  }

  std::atomic<int> scrapes_{0};
  std::unique_ptr<MetricsHttpServer> server_;
};

TEST_F(MetricsHttpServerTest, GetMetrics) {
  const Reply r = Send(Request("GET", "/metrics"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_TRUE(
      absl::StrContains(r.headers, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"))
      << r.headers;
  EXPECT_TRUE(absl::StrContains(r.headers, "Connection: close\r\n")) << r.headers;
  EXPECT_EQ(r.body, "# TYPE scrapes counter\nscrapes 1\n");
  EXPECT_EQ(r.content_length, static_cast<int64_t>(r.body.size()));

  // Rendered afresh for every scrape; a query string is ignored; HTTP/1.0 is fine.
  const Reply again = Send("GET /metrics?name[]=scrapes HTTP/1.0\r\n\r\n");
  EXPECT_EQ(again.status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(again.body, "# TYPE scrapes counter\nscrapes 2\n");
}

TEST_F(MetricsHttpServerTest, HeadHasLengthButNoBody) {
  const Reply r = Send(Request("HEAD", "/metrics"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(r.content_length,
            static_cast<int64_t>(sizeof("# TYPE scrapes counter\nscrapes 1\n")) - 1);
  EXPECT_EQ(r.body, "");
}

TEST_F(MetricsHttpServerTest, OtherPathsAreNotFound) {
  for (const char* path : {"/", "/other", "/metricsx", "/metrics/"}) {
    const Reply r = Send(Request("GET", path));
    EXPECT_EQ(r.status_line, "HTTP/1.1 404 Not Found") << path;
    EXPECT_EQ(r.content_length, static_cast<int64_t>(r.body.size())) << path;
  }
  EXPECT_EQ(scrapes_.load(), 0);
}

TEST_F(MetricsHttpServerTest, OtherMethodsAreNotAllowed) {
  const Reply r = Send(Request("POST", "/metrics"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 405 Method Not Allowed");
  EXPECT_TRUE(absl::StrContains(r.headers, "Allow: GET, HEAD\r\n")) << r.headers;
  EXPECT_EQ(Send(Request("DELETE", "/")).status_line, "HTTP/1.1 405 Method Not Allowed");
}

TEST_F(MetricsHttpServerTest, MalformedRequestsAreBad) {
  for (const std::string request :
       {"garbage\r\n\r\n", "GET /metrics\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
        "GET /metrics SPDY/3\r\n\r\n", "get /metrics HTTP/1.1\r\n\r\n",
        "GET  /metrics HTTP/1.1\r\n\r\n"}) {
    EXPECT_EQ(Send(request).status_line, "HTTP/1.1 400 Bad Request") << request;
  }
  // A head that never ends is cut off at the cap.
  const std::string huge = absl::StrCat("GET /metrics HTTP/1.1\r\nX: ", std::string(32 << 10, 'x'));
  EXPECT_EQ(Send(huge).status_line, "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(scrapes_.load(), 0);
}

TEST(MetricsHttpServerAloneTest, LargeBodyIsWrittenWhole) {
  auto server = MetricsHttpServer::Start("127.0.0.1", 0, [] { return std::string(8 << 20, 'm'); });
  ASSERT_TRUE(server.ok()) << server.status();
  const Reply r = Parse(LoopbackExchange((*server)->port(), Request("GET", "/metrics")));
  EXPECT_EQ(r.content_length, 8 << 20);
  EXPECT_EQ(r.body.size(), size_t{8} << 20);
}

TEST_F(MetricsHttpServerTest, SilentClientDoesNotBlockScrapes) {
  const int silent = ConnectLoopback(server_->port());
  ASSERT_GE(silent, 0);
  const absl::Time start = absl::Now();
  const Reply r = Send(Request("GET", "/metrics"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));  // the silent one is dropped after ~2 s
  // The server closed the silent connection without an answer.
  char c;
  EXPECT_EQ(recv(silent, &c, 1, 0), 0);
  close(silent);
}

// Whether `fd` is still open at the server's end: nothing to read yet, and no end of stream.
bool StillOpen(int fd) {
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Connections are served side by side: a scrape is answered while six clients that connected
// first say nothing (all six still waiting for their read timeout), not after them.
TEST_F(MetricsHttpServerTest, ScrapeIsAnsweredWhileSixClientsStaySilent) {
  std::vector<int> silent;
  for (int i = 0; i < 6; ++i) {
    silent.push_back(ConnectLoopback(server_->port()));
    ASSERT_GE(silent.back(), 0);
  }
  absl::SleepFor(absl::Milliseconds(50));  // let the server take them
  const absl::Time start = absl::Now();
  const Reply r = Send(Request("GET", "/metrics"));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_LT(took, absl::Seconds(1));
  for (int fd : silent) {
    EXPECT_TRUE(StillOpen(fd)) << "a silent connection was dropped before the scrape was answered";
    close(fd);
  }
}

// More silent clients than the server keeps connections for: the oldest silent ones make room,
// and a scrape is still answered at once.
TEST_F(MetricsHttpServerTest, ScrapeIsAnsweredPastTheConnectionCap) {
  std::vector<int> silent;
  for (int i = 0; i < 200; ++i) {
    silent.push_back(ConnectLoopback(server_->port()));
    ASSERT_GE(silent.back(), 0);
  }
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time start = absl::Now();
  const Reply r = Send(Request("GET", "/metrics"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  for (int fd : silent) close(fd);
}

TEST_F(MetricsHttpServerTest, BindingATakenPortFails) {
  auto second = MetricsHttpServer::Start("127.0.0.1", server_->port(), [] { return ""; });
  ASSERT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  const std::string message(second.status().message());
  EXPECT_TRUE(absl::StrContains(message, absl::StrCat("127.0.0.1:", server_->port()))) << message;
  EXPECT_TRUE(absl::StrContains(message, "Address already in use")) << message;
}

TEST(MetricsHttpServerAloneTest, RejectsBadHostAndPort) {
  auto render = [] { return std::string(); };
  auto bad_host = MetricsHttpServer::Start("not-an-ip", 0, render);
  EXPECT_EQ(bad_host.status().code(), absl::StatusCode::kInvalidArgument) << bad_host.status();
  EXPECT_TRUE(absl::StrContains(bad_host.status().message(), "not-an-ip"));
  EXPECT_EQ(MetricsHttpServer::Start("127.0.0.1", -1, render).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MetricsHttpServer::Start("127.0.0.1", 65536, render).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MetricsHttpServerAloneTest, AllInterfaces) {
  for (const char* host : {"", "0.0.0.0"}) {
    auto server = MetricsHttpServer::Start(host, 0, [] { return std::string("x 1\n"); });
    ASSERT_TRUE(server.ok()) << server.status();
    EXPECT_EQ(Parse(LoopbackExchange((*server)->port(), Request("GET", "/metrics"))).body, "x 1\n");
  }
}

TEST(MetricsHttpServerAloneTest, DestructorReturnsPromptly) {
  auto server = MetricsHttpServer::Start("127.0.0.1", 0, [] { return std::string(); });
  ASSERT_TRUE(server.ok()) << server.status();
  const int silent =
      ConnectLoopback((*server)->port());  // the thread is now waiting for its request
  ASSERT_GE(silent, 0);
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time start = absl::Now();
  server->reset();
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
  close(silent);
}

}  // namespace
}  // namespace gemm::core
