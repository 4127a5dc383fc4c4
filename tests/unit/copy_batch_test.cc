// CPU unit test of MergeAdjacentCopies (server/gpu/copy_batch.cc): which copies merge, what the
// merged copy covers, and that what it copies is byte for byte what the separate copies did.
#include "server/gpu/copy_batch.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gemm::gpu {
namespace {

// Runs `copies` on the host (cudaMemcpy2D semantics).
void Apply(const std::vector<Copy2D>& copies) {
  for (const Copy2D& c : copies) {
    for (size_t r = 0; r < c.rows; ++r) {
      std::memcpy(static_cast<char*>(c.dst) + r * c.dpitch,
                  static_cast<const char*>(c.src) + r * c.spitch, c.width);
    }
  }
}

Copy2D Linear(char* dst, const char* src, size_t bytes) {
  return {dst, bytes, src, bytes, bytes, 1};
}

TEST(MergeAdjacentCopies, StackedRowsBecomeOneCopyWithTheSameBytes) {
  std::string src(4096, '\0'), merged(4096, '#'), separate(4096, '#');
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 7 + 3);
  // Three parts back to back on both sides (one of them 2D with equal pitches), then a gap.
  auto make = [&](std::string& dst) {
    return std::vector<Copy2D>{Linear(dst.data(), src.data(), 256),
                               {dst.data() + 256, 128, src.data() + 256, 128, 128, 4},
                               Linear(dst.data() + 768, src.data() + 768, 256),
                               Linear(dst.data() + 2048, src.data() + 2048, 512)};
  };
  std::vector<Copy2D> copies = make(merged);
  EXPECT_EQ(MergeAdjacentCopies(copies), 2u);
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].dst, merged.data());
  EXPECT_EQ(copies[0].src, src.data());
  EXPECT_EQ(copies[0].width, 1024u);
  EXPECT_EQ(copies[0].rows, 1u);
  EXPECT_EQ(copies[1].width, 512u);
  Apply(copies);
  Apply(make(separate));
  EXPECT_EQ(merged, separate);
  EXPECT_EQ(merged[1024], '#');  // the gap stays untouched
}

TEST(MergeAdjacentCopies, KeepsPitchedGappedEmptyAndOneSidedNeighboursApart) {
  std::vector<char> s(8192), d(8192);
  std::vector<Copy2D> copies = {
      Linear(d.data(), s.data(), 256),
      // continues on the source side only
      Linear(d.data() + 512, s.data() + 256, 256),
      // pitched (rows 256 bytes apart, 128 wide): never merged
      {d.data() + 768, 256, s.data() + 512, 256, 128, 2},
      Linear(d.data() + 1024, s.data() + 768, 0),  // empty
      Linear(d.data() + 1024, s.data() + 768, 64),
      // continues on the destination side only
      Linear(d.data() + 1088, s.data() + 900, 64),
  };
  const std::vector<Copy2D> before = copies;
  EXPECT_EQ(MergeAdjacentCopies(copies), 0u);
  ASSERT_EQ(copies.size(), before.size());
  for (size_t i = 0; i < copies.size(); ++i) {
    EXPECT_EQ(copies[i].dst, before[i].dst) << i;
    EXPECT_EQ(copies[i].width, before[i].width) << i;
    EXPECT_EQ(copies[i].rows, before[i].rows) << i;
  }
  std::vector<Copy2D> none;
  EXPECT_EQ(MergeAdjacentCopies(none), 0u);
}

}  // namespace
}  // namespace gemm::gpu
