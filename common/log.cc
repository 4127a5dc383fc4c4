// stderr logging sink.
#include "common/log.h"

#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gemm::log_internal {

void Emit(const char* level, const char* file, int line, const std::string& message) {
  const char* base = std::strrchr(file, '/');
  std::string out =
      absl::StrCat(level[0] == 'I'   ? "I"
                   : level[0] == 'W' ? "W"
                                     : "E",
                   absl::FormatTime(" %Y-%m-%dT%H:%M:%E6SZ ", absl::Now(), absl::UTCTimeZone()),
                   base ? base + 1 : file, ":", line, "] ", message, "\n");
  (void)!write(STDERR_FILENO, out.data(), out.size());
}

}  // namespace gemm::log_internal
