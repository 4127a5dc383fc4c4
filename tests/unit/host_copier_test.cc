// Unit tests of HostCopier (server/gpu/host_copier.h): the bytes land where they should (random
// job sizes including 0 and odd ones, misaligned pointers, chunk-boundary sizes), nothing outside
// the destinations is written, several threads can copy at once, and construction/destruction
// with no work is clean; a job reading or writing a shared-memory page whose object was shrunk
// is reported by index and the other jobs are copied. CPU only.
#include "server/gpu/host_copier.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "tests/common/shm_util.h"

namespace gemm::gpu {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kChunk = HostCopier::kMinChunkBytes;
constexpr char kUntouched = static_cast<char>(0xA5);

// Source and destination arenas for a list of jobs; destinations are separated by guard bytes and
// start at odd offsets. `expected` is the destination arena after a plain serial memcpy.
struct Case {
  std::vector<char> src, dst, expected;
  std::vector<CopyJob> jobs;
};

Case MakeCase(const std::vector<size_t>& sizes, std::mt19937_64& rng) {
  Case c;
  size_t src_bytes = 0, dst_bytes = 0;
  std::vector<size_t> src_off, dst_off;
  for (size_t n : sizes) {
    src_bytes += rng() % 8;  // misalign
    dst_bytes += 64 + rng() % 8;
    src_off.push_back(src_bytes);
    dst_off.push_back(dst_bytes);
    src_bytes += n;
    dst_bytes += n;
  }
  dst_bytes += 64;
  c.src.resize(src_bytes);
  for (size_t i = 0; i + 8 <= src_bytes; i += 8) {
    const uint64_t w = rng();
    std::memcpy(&c.src[i], &w, 8);
  }
  for (size_t i = src_bytes / 8 * 8; i < src_bytes; ++i) c.src[i] = static_cast<char>(rng());
  c.dst.assign(dst_bytes, kUntouched);
  c.expected = c.dst;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0 && rng() % 2 == 0) {
      c.jobs.push_back({nullptr, nullptr, 0});  // pointers unused for an empty job
      continue;
    }
    c.jobs.push_back({&c.dst[dst_off[i]], &c.src[src_off[i]], sizes[i]});
    std::memcpy(&c.expected[dst_off[i]], &c.src[src_off[i]], sizes[i]);
  }
  return c;
}

// `count` sizes: 0, small odd, up to 1 MiB, and a few up to `large` bytes.
std::vector<size_t> RandomSizes(std::mt19937_64& rng, int count, size_t large) {
  std::vector<size_t> sizes;
  for (int i = 0; i < count; ++i) {
    switch (rng() % 5) {
      case 0:
        sizes.push_back(0);
        break;
      case 1:
        sizes.push_back(1 + rng() % 4099);
        break;
      case 2:
      case 3:
        sizes.push_back(rng() % kMiB);
        break;
      default:
        sizes.push_back(rng() % large);
        break;
    }
  }
  return sizes;
}

// Compares whole arenas, so a stray write outside a destination fails too. Reports the first
// differing offset rather than megabytes of bytes.
void ExpectCopied(const Case& c) {
  ASSERT_EQ(c.dst.size(), c.expected.size());
  size_t i = 0;
  while (i < c.dst.size() && c.dst[i] == c.expected[i]) ++i;
  EXPECT_EQ(i, c.dst.size()) << "first wrong byte at offset " << i << " of " << c.dst.size();
}

TEST(HostCopierTest, ConstructAndDestroyWithoutWork) {
  { HostCopier none(0); }
  { HostCopier one(1); }
  HostCopier many(8);
  EXPECT_EQ(many.threads(), 8);
  EXPECT_EQ(HostCopier(0).threads(), 0);
}

TEST(HostCopierTest, EmptyCallsAndEmptyJobs) {
  HostCopier copier(4);
  EXPECT_TRUE(copier.Copy({}).empty());
  std::vector<CopyJob> empty = {{nullptr, nullptr, 0}, {nullptr, nullptr, 0}};
  EXPECT_TRUE(copier.Copy(empty).empty());
}

TEST(HostCopierTest, SmallTotalIsCopied) {
  std::mt19937_64 rng(1);
  HostCopier copier(4);
  for (int round = 0; round < 20; ++round) {
    Case c = MakeCase(RandomSizes(rng, 1 + static_cast<int>(rng() % 8), 64 << 10), rng);
    EXPECT_TRUE(copier.Copy(c.jobs).empty());
    ExpectCopied(c);
  }
}

TEST(HostCopierTest, SizesAroundChunkBoundaries) {
  std::mt19937_64 rng(2);
  HostCopier copier(3);
  const std::vector<std::vector<size_t>> cases = {
      {kChunk},
      {kChunk - 1},
      {kChunk + 1},
      {2 * kChunk - 1},
      {2 * kChunk},
      {2 * kChunk + 1},
      {kChunk, kChunk},
      {kChunk - 1, kChunk + 1},
      {kChunk + 1, 0, kChunk - 1, 0},
      {1, 2 * kChunk, 1},
      {0, 0, 5 * kChunk + 4095, 0},
      {17 * kChunk + 3},
  };
  for (const auto& sizes : cases) {
    Case c = MakeCase(sizes, rng);
    EXPECT_TRUE(copier.Copy(c.jobs).empty());
    ExpectCopied(c);
  }
}

TEST(HostCopierTest, ManyRandomJobs) {
  std::mt19937_64 rng(3);
  HostCopier copier(5);
  for (int round = 0; round < 12; ++round) {
    Case c = MakeCase(RandomSizes(rng, 1 + static_cast<int>(rng() % 60), 9 * kMiB + 7), rng);
    EXPECT_TRUE(copier.Copy(c.jobs).empty());
    ExpectCopied(c);
  }
}

TEST(HostCopierTest, NoThreadsCopiesOnTheCaller) {
  std::mt19937_64 rng(4);
  HostCopier copier(0);
  Case c = MakeCase({3 * kChunk + 11, 0, 12345, kChunk}, rng);
  EXPECT_TRUE(copier.Copy(c.jobs).empty());
  ExpectCopied(c);
}

TEST(HostCopierTest, ConcurrentCallers) {
  HostCopier copier(3);  // fewer workers than callers: every call must still finish
  constexpr int kCallers = 6, kRounds = 6;
  std::vector<int> failures(kCallers, 0);
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&copier, &failures, t] {
      std::mt19937_64 rng(100 + t);
      for (int round = 0; round < kRounds; ++round) {
        // Half the calls large enough to be split, half small.
        const size_t large = round % 2 == 0 ? 6 * kMiB + 3 : 256 << 10;
        Case c = MakeCase(RandomSizes(rng, 1 + static_cast<int>(rng() % 40), large), rng);
        if (!copier.Copy(c.jobs).empty() || c.dst != c.expected) ++failures[t];
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int t = 0; t < kCallers; ++t) EXPECT_EQ(failures[t], 0) << "caller " << t;
}

TEST(HostCopierTest, SmallerChunksCopyTheSameBytes) {
  std::mt19937_64 rng(7);
  HostCopier copier(5, (60 << 10) + 1);  // rounded up to whole pages: 64 KiB
  EXPECT_EQ(copier.min_chunk_bytes(), size_t{64} << 10);
  EXPECT_EQ(HostCopier(1, 1).min_chunk_bytes(), size_t{4096});
  for (int round = 0; round < 20; ++round) {
    Case c = MakeCase(RandomSizes(rng, 1 + static_cast<int>(rng() % 12), 3 * kMiB), rng);
    EXPECT_TRUE(copier.Copy(c.jobs).empty());
    ExpectCopied(c);
  }
}

TEST(HostCopierTest, JobsTouchingAShrunkObjectAreReported) {
  // An object of 8 MiB, shrunk to 4 MiB under the server's mapping: the lower half is still
  // there, the upper half vanished.
  auto owner = testing::CreateTestShm("copier", 8 * kMiB);
  ASSERT_TRUE(owner.ok()) << owner.status();
  auto region = PosixShm::Open((*owner)->key(), 0, 8 * kMiB);
  ASSERT_TRUE(region.ok()) << region.status();
  char* shm = (*region)->data();
  std::memset(shm, 'x', 4 * kMiB);
  ASSERT_TRUE(testing::ResizeShm((*owner)->key(), 4 * kMiB).ok());
  std::mt19937_64 rng(9);
  for (int threads : {0, 4}) {  // on the caller alone, and split over the pool
    SCOPED_TRACE(threads);
    HostCopier copier(threads);
    Case c = MakeCase({3 * kMiB, 5 * kMiB}, rng);
    std::string from_shm(kMiB, '\0');
    std::string into_shm(kMiB, 'y');
    std::string from_backed(kMiB, '\0');
    std::vector<CopyJob> jobs = {
        c.jobs[0],
        {from_shm.data(), shm + 6 * kMiB, kMiB},  // reads vanished bytes
        c.jobs[1],
        {shm + 4 * kMiB - 10, into_shm.data(), kMiB},  // writes across the new end
        {from_backed.data(), shm + 3 * kMiB, kMiB},    // reads bytes still there
    };
    EXPECT_EQ(copier.Copy(jobs), (std::vector<size_t>{1, 3}));
    ExpectCopied(c);
    EXPECT_EQ(from_backed, std::string(kMiB, 'x'));
  }
}

}  // namespace
}  // namespace gemm::gpu
