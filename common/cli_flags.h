// Command-line parsing shared by the project's binaries: Abseil flags with a --help that lists
// the program's own flags (Abseil's built-in ones are under --helpfull), source file names shown
// relative to the source tree (no build paths), and every usage error (unknown flag, bad value)
// ending the process with exit status 2.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gemm {

// Exit status of a usage error (a bad flag or argument).
inline constexpr int kUsageErrorExit = 2;

struct CommandLineUsage {
  // What the program does and how it is called: the first lines of --help.
  std::string usage;
  // --help lists the flags defined in the source files this accepts (paths relative to the source
  // tree, e.g. "server/main.cc"). Unset: every file of the project, none of Abseil's.
  std::function<bool(absl::string_view path)> help_files;
};

// Parses argv into the Abseil flags and returns the positional arguments (argv[0] first).
// --help, --helpfull and friends print and exit 0; a usage error prints what is wrong and exits
// with kUsageErrorExit. Call once, first thing in main() (before any thread starts).
std::vector<char*> ParseCommandLine(int argc, char** argv, const CommandLineUsage& usage);

// `path` (a source file name as the compiler saw it) relative to the source tree: the build
// directory's "../" and absolute prefixes are dropped; a file from outside the tree keeps its
// path from its library's root ("absl/flags/parse.cc") or its base name.
std::string SourceRelativePath(absl::string_view path);

}  // namespace gemm
