// Kernel qualification in child processes (see qualification.h): the line protocol, the child's
// case loop and the parent's supervision (deadlines, kill, restart after a failure, verdicts).
#include "server/core/qualification.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace gemm::core {
namespace {

// One line on the pipe: no embedded newlines.
void WriteLine(int fd, std::string line) {
  std::replace(line.begin(), line.end(), '\n', ' ');
  line += '\n';
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone: nothing to report to
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// What the parent learned about one case.
struct CaseRecord {
  std::string name;
  std::vector<int> variants;
  enum { kPending, kPassed, kFailed } state = kPending;
  std::string detail;
  std::string reason;  // kFailureReasons, when failed
};

// The parent's state across children.
struct Supervision {
  std::map<int, std::string> variant_names;
  std::map<int, CaseRecord> cases;
  int total_cases = -1;   // announced by the child; -1 until then
  int current = -1;       // case started and not finished in the running child
  int first_failed = -1;  // first case that failed in the running child
  std::vector<std::string> log;

  void Fail(int index, std::string why, const char* reason) {
    CaseRecord& c = cases[index];
    c.state = CaseRecord::kFailed;
    c.detail = std::move(why);
    c.reason = reason;
    log.push_back(absl::StrCat("case ", index, " (", c.name, "): FAILED: ", c.detail));
    if (first_failed < 0) first_failed = index;
    if (current == index) current = -1;
  }
  void Parse(absl::string_view line);
};

// The reason word of a failed result line, from the status the child wrote (Status::ToString
// starts with the code's name).
const char* ReasonOfStatusText(absl::string_view status_text) {
  if (absl::StartsWith(status_text, "DATA_LOSS")) return "mismatch";
  if (absl::StartsWith(status_text, "UNIMPLEMENTED")) return "refused";
  return "error";
}

void Supervision::Parse(absl::string_view line) {
  std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(' ', 3));
  int index = 0;
  if (f.size() < 2 || !absl::SimpleAtoi(f[1], &index) || index < 0) return;
  if (f[0] == "cases") {
    total_cases = index;
  } else if (f[0] == "variant" && f.size() >= 3) {
    variant_names[index] = std::string(f[2]);
  } else if (f[0] == "case" && f.size() >= 3) {
    CaseRecord& c = cases[index];
    c.name = f.size() >= 4 ? std::string(f[3]) : std::string();
    c.variants.clear();
    for (absl::string_view v : absl::StrSplit(f[2], ',', absl::SkipEmpty())) {
      int vi = 0;
      if (absl::SimpleAtoi(v, &vi)) c.variants.push_back(vi);
    }
    current = index;
  } else if (f[0] == "result" && f.size() >= 3) {
    const std::string detail = f.size() >= 4 ? std::string(f[3]) : std::string();
    if (f[2] == "ok") {
      CaseRecord& c = cases[index];
      c.state = CaseRecord::kPassed;
      c.detail = detail;
      log.push_back(absl::StrCat("case ", index, " (", c.name, "): passed: ", detail));
      if (current == index) current = -1;
    } else {
      Fail(index, detail, ReasonOfStatusText(detail));
    }
  }
}

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  if (WIFEXITED(status)) return absl::StrCat("exit status ", WEXITSTATUS(status));
  return "ended";
}

// Reads the child's lines until EOF or a deadline; kills it on a deadline. Returns the child's
// wait status.
int Supervise(pid_t pid, int fd, const QualificationOptions& options, absl::Time total_end,
              Supervision& s) {
  std::string buf;
  absl::Time case_end = std::min(absl::Now() + options.case_deadline, total_end);
  for (;;) {
    const absl::Duration left = case_end - absl::Now();
    const int wait_ms = static_cast<int>(std::max<int64_t>(absl::ToInt64Milliseconds(left), 0));
    pollfd p{fd, POLLIN, 0};
    const int r = wait_ms == 0 ? 0 : poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      kill(pid, SIGKILL);
      const bool total = case_end >= total_end;
      const std::string why =
          total ? absl::StrCat("timed out: qualification deadline (",
                               absl::FormatDuration(options.total_deadline), ") passed")
                : absl::StrCat("timed out after ", absl::FormatDuration(options.case_deadline),
                               " (child killed)");
      if (s.current >= 0) {
        s.Fail(s.current, why, "timeout");
      } else {
        s.log.push_back(absl::StrCat("child stalled between cases: ", why));
      }
      break;
    }
    char chunk[4096];
    const ssize_t n = r < 0 ? -1 : read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child exited (or exec'd nothing)
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      const int before = s.current;
      s.Parse(absl::string_view(buf.data(), nl));
      buf.erase(0, nl + 1);
      if (s.current != before && s.current >= 0) {
        case_end = std::min(absl::Now() + options.case_deadline, total_end);
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (s.current >= 0) {
    s.Fail(s.current, absl::StrCat("child died in the case: ", DescribeExit(status)), "crashed");
  }
  return status;
}

absl::StatusOr<pid_t> StartChild(const ChildBody& body, int first_case, int* read_fd) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("qualification: pipe failed, errno ", errno));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(absl::StrCat("qualification: fork failed, errno ", errno));
  }
  if (pid == 0) {
    close(fds[0]);
    body(first_case, fds[1]);
    _exit(0);
  }
  close(fds[1]);
  *read_fd = fds[0];
  return pid;
}

QualificationReport Verdicts(Supervision& s) {
  QualificationReport report;
  report.log = std::move(s.log);
  const int last = s.variant_names.empty() ? -1 : s.variant_names.rbegin()->first;
  for (int v = 0; v <= last; ++v) {
    VariantVerdict out;
    out.name = s.variant_names.contains(v) ? s.variant_names[v] : absl::StrCat("variant ", v);
    int passed = 0;
    std::string failure;
    for (const auto& [index, c] : s.cases) {
      if (std::find(c.variants.begin(), c.variants.end(), v) == c.variants.end()) continue;
      if (c.state == CaseRecord::kPassed) ++passed;
      if (c.state != CaseRecord::kPassed && failure.empty()) {
        failure = absl::StrCat("case '", c.name,
                               "': ", c.state == CaseRecord::kFailed ? c.detail : "never finished");
        out.reason = c.state == CaseRecord::kFailed ? c.reason : "not_run";
      }
    }
    const bool all_ran = s.total_cases >= 0 && static_cast<int>(s.cases.size()) >= s.total_cases;
    if (failure.empty() && !all_ran) failure = "qualification ended before every case ran";
    if (failure.empty() && passed == 0) failure = "no qualification case runs it";
    out.usable = failure.empty();
    if (!out.usable && out.reason.empty()) out.reason = "not_run";
    out.detail = out.usable ? absl::StrCat("passed ", passed, " cases") : failure;
    report.variants.push_back(std::move(out));
  }
  for (const auto& [index, c] : s.cases) {
    const bool passed = c.state == CaseRecord::kPassed;
    report.cases.push_back({c.name, passed,
                            passed                           ? ""
                            : c.state == CaseRecord::kFailed ? c.reason
                                                             : "not_run"});
  }
  return report;
}

}  // namespace

void WriteVariant(int fd, int index, const std::string& name) {
  WriteLine(fd, absl::StrCat("variant ", index, " ", name));
}

void WriteCase(int fd, int index, const CaseSpec& spec) {
  WriteLine(fd,
            absl::StrCat("case ", index, " ", absl::StrJoin(spec.variants, ","), " ", spec.name));
}

void WriteResult(int fd, int index, const absl::Status& status, const std::string& detail) {
  WriteLine(fd, status.ok()
                    ? absl::StrCat("result ", index, " ok ", detail)
                    : absl::StrCat("result ", index, " fail ", status.ToString(), ": ", detail));
}

void RunCases(std::span<const std::string> variant_names, std::span<const CaseSpec> cases,
              const CaseRunner& runner, int first_case, int fd) {
  WriteLine(fd, absl::StrCat("cases ", cases.size()));
  for (size_t v = 0; v < variant_names.size(); ++v) {
    WriteVariant(fd, static_cast<int>(v), variant_names[v]);
  }
  for (int i = std::max(first_case, 0); i < static_cast<int>(cases.size()); ++i) {
    WriteCase(fd, i, cases[i]);
    std::string detail;
    const absl::Status st = runner(i, &detail);
    WriteResult(fd, i, st, detail);
    if (!st.ok()) return;  // the context may be poisoned: the parent starts a fresh child
  }
}

uint64_t QualificationReport::UsableMask() const {
  uint64_t mask = 0;
  for (size_t i = 0; i < variants.size() && i < 64; ++i) {
    if (variants[i].usable) mask |= uint64_t{1} << i;
  }
  return mask;
}

absl::StatusOr<QualificationReport> Qualify(const ChildBody& body,
                                            const QualificationOptions& options) {
  const absl::Time total_end = absl::Now() + options.total_deadline;
  Supervision s;
  int children = 0;
  int first = 0;
  for (;;) {
    int fd = -1;
    absl::StatusOr<pid_t> pid = StartChild(body, first, &fd);
    if (!pid.ok()) return pid.status();
    ++children;
    s.first_failed = -1;
    s.current = -1;
    const size_t cases_before = s.cases.size();
    const int status = Supervise(*pid, fd, options, total_end, s);
    close(fd);
    if (s.first_failed < 0) {
      if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        s.log.push_back(absl::StrCat("qualification child ", DescribeExit(status)));
      }
      break;  // ran to the end (or stopped without starting a case: nothing more to learn)
    }
    if (s.cases.size() == cases_before && s.first_failed < first) break;  // no progress
    first = s.first_failed + 1;
    if (s.total_cases >= 0 && first >= s.total_cases) break;
    if (absl::Now() >= total_end) break;
  }
  QualificationReport report = Verdicts(s);
  report.children = children;
  return report;
}

}  // namespace gemm::core
