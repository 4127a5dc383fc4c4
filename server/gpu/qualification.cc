// Start-up kernel qualification of one GPU in gemm_qualify children (see qualification.h).
#include "server/gpu/qualification.h"

#include <limits.h>
#include <unistd.h>

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

}  // namespace

absl::StatusOr<DeviceQualification> QualifyDevice(int device, kernel::KernelKind kind,
                                                  const DeviceQualificationOptions& options) {
  const std::string binary = options.binary.empty() ? DefaultBinary() : options.binary;
  const std::string dev = std::to_string(device);
  const bool force = options.force_mismatch;
  // Runs in the forked child: exec the helper with its stdout on the pipe.
  core::ChildBody body = [&](int first, int fd) {
    dup2(fd, STDOUT_FILENO);
    const std::string first_s = std::to_string(first);
    const char* argv[] = {binary.c_str(), dev.c_str(), first_s.c_str(),
                          force ? "--force_mismatch" : nullptr, nullptr};
    execv(binary.c_str(), const_cast<char* const*>(argv));
    _exit(127);  // not found: the parent sees no variants, and nothing qualifies
  };
  absl::StatusOr<core::QualificationReport> report = core::Qualify(
      body, {.case_deadline = options.case_deadline, .total_deadline = options.total_deadline});
  if (!report.ok()) return report.status();
  DeviceQualification out;
  for (const std::string& line : report->log) {
    GEMM_LOG(INFO) << "device " << device << " qualification (" << kernel::KernelName(kind)
                   << "): " << line;
  }
  // Only variants of the selected family that the child announced and passed.
  out.usable_variants = report->UsableMask() & kernel::AllVariants(kind);
  int usable = 0;
  for (const core::VariantVerdict& v : report->variants) {
    out.verdicts.push_back({v.name, v.usable, v.detail});
    usable += v.usable ? 1 : 0;
    if (!v.usable) {
      GEMM_LOG(ERROR) << "!!! device " << device << ": kernel variant " << v.name
                      << " is UNUSABLE (served through cublaslt): " << v.detail;
    }
  }
  const size_t expected = kernel::NativeVariantNames(kind).size();
  if (kind == kernel::KernelKind::kCublasLt) {
    out.cublaslt_ok = !report->log.empty() &&
                      report->log.back().find("passed") != std::string::npos;
  }
  out.summary = absl::StrCat(kernel::KernelName(kind), ": ", usable, " of ", expected,
                             " variants qualified in ", report->children, " child process(es)",
                             report->variants.empty() && expected > 0
                                 ? absl::StrCat(" (", binary, " reported no variants)")
                                 : "");
  return out;
}

}  // namespace gemm::gpu
