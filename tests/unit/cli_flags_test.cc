// The command-line helper names flag files relative to the source tree: no build directory or
// absolute path reaches --help.
#include "common/cli_flags.h"

#include <gtest/gtest.h>

namespace gemm {
namespace {

TEST(CliFlagsTest, SourcePathsAreRelativeToTheTree) {
  // This file as the compiler named it: absolute, or relative to the build directory.
  const std::string self = SourceRelativePath(__FILE__);
  EXPECT_EQ(self, "tests/unit/cli_flags_test.cc");
  EXPECT_EQ(SourceRelativePath("../client/gemm_cli.cc"), "client/gemm_cli.cc");
  EXPECT_EQ(SourceRelativePath("./absl/flags/parse.cc"), "absl/flags/parse.cc");
  EXPECT_EQ(SourceRelativePath("/build/abseil-cpp-x/absl/flags/parse.cc"), "absl/flags/parse.cc");
  EXPECT_EQ(SourceRelativePath("/elsewhere/tool/main.cc"), "main.cc");
}

}  // namespace
}  // namespace gemm
