// Start-up kernel qualification of one GPU in gemm_qualify children (see qualification.h).
#include "server/gpu/qualification.h"

#include <limits.h>
#include <unistd.h>

#include <charconv>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "gemm/qualification.h"
#include "server/core/qualification.h"

namespace gemm::gpu {
namespace {

// "gemm_qualify" in the directory of the running executable.
std::string DefaultBinary() {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "gemm_qualify";
  std::string path(self, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "gemm_qualify" : path.substr(0, slash + 1) + "gemm_qualify";
}

// Runs the qualification in gemm_qualify children; every string the child needs is made before
// fork (the forked body only formats an integer on the stack and execs).
absl::StatusOr<core::QualificationReport> RunChildren(const std::string& binary, int device,
                                                      const DeviceQualificationOptions& options) {
  const std::string dev = std::to_string(device);
  const char* force = options.force_mismatch ? "--force_mismatch" : nullptr;
  core::ChildBody body = [&](int first, int fd) {
    dup2(fd, STDOUT_FILENO);
    char first_s[16] = {};
    std::to_chars(first_s, first_s + sizeof(first_s) - 1, first);
    const char* argv[] = {binary.c_str(), dev.c_str(), first_s, force, nullptr};
    execv(binary.c_str(), const_cast<char* const*>(argv));
    _exit(127);  // not found: the parent sees no variants, and nothing qualifies
  };
  return core::Qualify(
      body, {.case_deadline = options.case_deadline, .total_deadline = options.total_deadline});
}

// Every native variant of `kind` unusable because the child never reported: `why`.
void MarkNotRun(kernel::KernelKind kind, const std::string& why, DeviceQualification& out) {
  for (const std::string& name : kernel::NativeVariantNames(kind)) {
    out.verdicts.push_back({.name = name, .usable = false, .detail = why, .reason = "not_run"});
  }
}

}  // namespace

DeviceQualification QualifyDevice(int device, kernel::KernelKind kind,
                                  const DeviceQualificationOptions& options) {
  const std::string binary = options.binary.empty() ? DefaultBinary() : options.binary;
  const std::string where =
      absl::StrCat("device ", device, " qualification (", kernel::KernelName(kind), "): ");
  DeviceQualification out;
  const size_t expected = kernel::NativeVariantNames(kind).size();
  absl::StatusOr<core::QualificationReport> report = RunChildren(binary, device, options);
  if (!report.ok() || report->cases.empty()) {
    const std::string why =
        !report.ok()
            ? report.status().ToString()
            : absl::StrCat(
                  binary, " ran no case (",
                  report->log.empty() ? "not found or failed to start" : report->log.back(), ")");
    GEMM_LOG(ERROR) << "!!! " << where << "could not run: " << why
                    << "; every native kernel variant is served through cublaslt";
    MarkNotRun(kind, why, out);
    out.summary = absl::StrCat(kernel::KernelName(kind), ": 0 of ", expected,
                               " variants qualified (", why, ")");
    return out;
  }
  for (const std::string& line : report->log) GEMM_LOG(INFO) << where << line;
  // Only variants of the selected family that the child announced and passed.
  out.usable_variants = report->UsableMask() & kernel::AllVariants(kind);
  int usable = 0;
  for (const core::VariantVerdict& v : report->variants) {
    out.verdicts.push_back({v.name, v.usable, v.detail, v.reason});
    usable += v.usable ? 1 : 0;
    if (!v.usable) {
      GEMM_LOG(ERROR) << "!!! device " << device << ": kernel variant " << v.name
                      << " is UNUSABLE (" << v.reason << ", served through cublaslt): " << v.detail;
    }
  }
  if (kind == kernel::KernelKind::kCublasLt) {
    out.cublaslt_ok = report->cases.size() == 1 && report->cases[0].passed;
    out.cublaslt_wrong = report->cases.size() == 1 && report->cases[0].reason == "mismatch";
  }
  out.summary = absl::StrCat(kernel::KernelName(kind), ": ", usable, " of ", expected,
                             " variants qualified in ", report->children, " child process(es)");
  return out;
}

}  // namespace gemm::gpu
