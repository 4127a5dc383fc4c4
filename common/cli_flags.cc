// Abseil flags set up for the project's binaries: help filter, file names, exit statuses.
#include "common/cli_flags.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace gemm {
namespace {

// The source tree's root as the compiler named this file (with "common/cli_flags.cc" cut off):
// "/src/gemm-service/" or, for a build with relative paths, "../".
absl::string_view SourceRoot() {
  absl::string_view self = __FILE__;
  absl::ConsumeSuffix(&self, "common/cli_flags.cc");
  return self;
}

}  // namespace

std::string SourceRelativePath(absl::string_view path) {
  const absl::string_view root = SourceRoot();
  if (!root.empty()) absl::ConsumePrefix(&path, root);
  while (absl::ConsumePrefix(&path, "./") || absl::ConsumePrefix(&path, "../")) {
  }
  if (absl::StartsWith(path, "/")) {
    // Outside the tree: a library's own sources ("<where it was built>/absl/flags/parse.cc").
    const size_t library = path.rfind("/absl/");
    path.remove_prefix(library != absl::string_view::npos ? library + 1 : path.rfind('/') + 1);
  }
  return std::string(path);
}

std::vector<char*> ParseCommandLine(int argc, char** argv, const CommandLineUsage& usage) {
  absl::FlagsUsageConfig config;
  config.normalize_filename = SourceRelativePath;
  config.contains_help_flags = usage.help_files ? usage.help_files : [](absl::string_view path) {
    return !absl::StartsWith(path, "absl/");
  };
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage.usage);
  namespace fi = absl::flags_internal;
  // NOTE: absl::ParseCommandLine ends --help with exit status 1; parsing without the usage flags
  // and handling them here makes an asked-for help a success.
  std::vector<char*> positional = fi::ParseCommandLineImpl(
      argc, argv, fi::ArgvListAction::kRemoveParsedArgs, fi::UsageFlagsAction::kIgnoreUsage,
      fi::OnUndefinedFlag::kAbortIfUndefined);
  if (fi::HandleUsageFlags(std::cout, absl::ProgramUsageMessage()) != -1) {
    std::cout.flush();
    std::exit(0);
  }
  return positional;
}

}  // namespace gemm

// NOTE: Abseil reports a usage error through this hook and then exits with status 1; exiting
// here first gives the conventional status 2 (the message is already on stderr).
extern "C" void ABSL_INTERNAL_C_SYMBOL(AbslInternalReportFatalUsageError)(absl::string_view) {
  std::fputs("Try --help.\n", stderr);
  std::exit(gemm::kUsageErrorExit);
}
