// Minimal leveled logging to stderr (Debian 12's Abseil predates absl/log). Thread-safe: each
// call writes one whole line. Use GEMM_LOG(INFO) << ...; levels INFO, WARNING, ERROR.
#pragma once

#include <sstream>
#include <string>

namespace gemm::log_internal {

// Writes "<level> <UTC time> <file>:<line>] <message>\n" to stderr in one write.
void Emit(const char* level, const char* file, int line, const std::string& message);

class Line {
 public:
  Line(const char* level, const char* file, int line) : level_(level), file_(file), line_(line) {}
  ~Line() { Emit(level_, file_, line_, stream_.str()); }
  std::ostream& stream() { return stream_; }

 private:
  const char* level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

}  // namespace gemm::log_internal

#define GEMM_LOG(level) ::gemm::log_internal::Line(#level, __FILE__, __LINE__).stream()
