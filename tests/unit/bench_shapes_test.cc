// CPU tests of gemm_bench's shape files: the parser (bench/bench_shapes.h) and the sets shipped
// in bench/shapes/, so that a malformed set fails here rather than on the GPU machine.
#include "bench_shapes.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace gemm::bench {
namespace {

// Writes `text` to a file of this process's own (ctest runs the tests of this binary side by
// side) and returns its path.
std::string WriteTemp(const std::string& text) {
  const std::string path =
      ::testing::TempDir() + "/shapes_test-" + std::to_string(getpid()) + ".txt";
  std::ofstream(path) << text;
  return path;
}

TEST(BenchShapes, GroupLinesNumberTheGroups) {
  auto shapes =
      LoadShapes(WriteTemp("# comment\n"
                           "group\n"
                           "16 4096 4096\n"
                           "8 4096 4096  # trailing comment\n"
                           "group\n"
                           "\n"
                           "1 128 256 3\n"));
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  ASSERT_EQ(shapes->size(), 3u);
  EXPECT_EQ((*shapes)[0].group, 0);  // a leading "group" line starts group 0
  EXPECT_EQ((*shapes)[1].group, 0);
  EXPECT_EQ((*shapes)[2].group, 1);
  EXPECT_EQ((*shapes)[2].batch, 3);
  EXPECT_EQ((*shapes)[2].k, 256);
}

TEST(BenchShapes, MalformedLinesNameTheLine) {
  auto bad = LoadShapes(WriteTemp("16 4096\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":1:"), std::string::npos) << bad.status();
  bad = LoadShapes(WriteTemp("1 1 1\ngroups 3 3\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":2:"), std::string::npos) << bad.status();
  EXPECT_FALSE(LoadShapes(WriteTemp("0 8 8\n")).ok());
  EXPECT_TRUE(absl::IsNotFound(LoadShapes("/nonexistent/shapes.txt").status()));
}

TEST(BenchShapes, ShippedSetsLoad) {
  for (const char* set : {"decode", "large", "batched", "grouped", "moe", "m_sweep"}) {
    auto shapes = LoadShapes(std::string(GEMM_SHAPES_DIR) + "/" + set + ".txt");
    ASSERT_TRUE(shapes.ok()) << set << ": " << shapes.status();
    EXPECT_FALSE(shapes->empty()) << set;
  }
  // The mixture-of-experts set: six groups (two Mixtral-like of 8 experts, two fine-grained of
  // 64, at most one launch's worth each, two batch-1 ones of 2 experts).
  auto moe = LoadShapes(std::string(GEMM_SHAPES_DIR) + "/moe.txt");
  ASSERT_TRUE(moe.ok());
  int members[6] = {0, 0, 0, 0, 0, 0};
  for (const Shape& s : *moe) {
    ASSERT_GE(s.group, 0);
    ASSERT_LT(s.group, 6);
    ++members[s.group];
    EXPECT_LE(s.m, 64) << "decode: every expert within one 64-row tile";
  }
  EXPECT_EQ(members[0], 8);
  EXPECT_EQ(members[1], 8);
  EXPECT_EQ(members[2], 64);
  EXPECT_EQ(members[3], 64);
  EXPECT_EQ(members[4], 2);
  EXPECT_EQ(members[5], 2);
}

// The M sweep: M = 1, 8, 24 and 16..512 in steps of 16, then 640..8192, against each of five
// weight shapes, one problem each.
TEST(BenchShapes, MSweepCoversEveryMForEveryWeightShape) {
  auto shapes = LoadShapes(std::string(GEMM_SHAPES_DIR) + "/m_sweep.txt");
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  std::set<int64_t> want_m = {1, 8, 24, 640, 768, 1024, 1536, 2048, 3072, 4096, 8192};
  for (int64_t m = 16; m <= 512; m += 16) want_m.insert(m);
  const std::set<std::pair<int64_t, int64_t>> want_nk = {
      {8192, 8192}, {28672, 8192}, {8192, 28672}, {4096, 14336}, {14336, 4096}};
  std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> got;
  for (const Shape& s : *shapes) {
    EXPECT_EQ(s.batch, 1);
    EXPECT_TRUE(got[std::make_pair(s.n, s.k)].insert(s.m).second) << "duplicate " << s.m;
  }
  ASSERT_EQ(got.size(), want_nk.size());
  for (const auto& [nk, ms] : got) {
    EXPECT_TRUE(want_nk.count(nk)) << nk.first << "x" << nk.second;
    EXPECT_EQ(ms, want_m) << nk.first << "x" << nk.second;
  }
  EXPECT_EQ(shapes->size(), want_m.size() * want_nk.size());
}

}  // namespace
}  // namespace gemm::bench
