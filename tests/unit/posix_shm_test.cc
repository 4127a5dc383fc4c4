// PosixShm::Open as the server uses it on client-supplied keys: POSIX name rules (leading '/', no
// other '/', no NUL, at most NAME_MAX bytes, not "." or ".."), with errors that quote a bounded
// part of the key; symbolic links, directories and FIFOs are refused as INVALID_ARGUMENT, another
// user's private object as PERMISSION_DENIED (never INTERNAL); Backed() tells when the object was
// shrunk under the mapping.
#include "common/posix_shm.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "tests/common/shm_util.h"

namespace gemm {
namespace {

// Where this system keeps POSIX shared-memory objects (glibc: /dev/shm).
std::string ShmPath(const std::string& key) { return "/dev/shm" + key; }

std::string UniqueKey(const std::string& tag) { return absl::StrCat("/gemm_", tag, "_", getpid()); }

TEST(PosixShmKeyTest, NamesFollowThePosixRules) {
  EXPECT_TRUE(PosixShm::CheckKey("/gemm_x").ok());
  EXPECT_TRUE(PosixShm::CheckKey("/" + std::string(NAME_MAX, 'k')).ok());
  const std::string bad[] = {"",
                             "/",
                             "gemm_x",
                             "/gemm/x",
                             "//gemm_x",
                             std::string("/gemm_x\0y", 9),
                             std::string("/gemm\0", 6),
                             "/.",
                             "/..",
                             "/" + std::string(NAME_MAX + 1, 'k')};
  for (const std::string& key : bad) {
    const absl::Status s = PosixShm::CheckKey(key);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << absl::CHexEscape(key) << ": " << s;
    auto open = PosixShm::Open(key, 0, 1);
    EXPECT_EQ(open.status().code(), absl::StatusCode::kInvalidArgument) << open.status();
  }
}

TEST(PosixShmKeyTest, AHugeKeyIsNotEchoedWhole) {
  const absl::Status s = PosixShm::CheckKey("/" + std::string(5 << 20, 'k'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(s.message().size(), 400u) << s.message().substr(0, 400);
  EXPECT_NE(s.message().find("5242881 bytes"), std::string::npos) << s.message().substr(0, 400);
}

TEST(PosixShmOpenTest, SymbolicLinkIsRefusedNotFollowed) {
  auto target = testing::CreateTestShm("link_target", 4096);
  ASSERT_TRUE(target.ok()) << target.status();
  const std::string key = UniqueKey("link");
  ASSERT_EQ(symlink(ShmPath((*target)->key()).c_str(), ShmPath(key).c_str()), 0);
  auto open = PosixShm::Open(key, 0, 4096);
  unlink(ShmPath(key).c_str());
  EXPECT_EQ(open.status().code(), absl::StatusCode::kInvalidArgument) << open.status();
  EXPECT_NE(open.status().message().find("symbolic link"), std::string::npos) << open.status();
}

TEST(PosixShmOpenTest, DirectoryAndFifoAreRefused) {
  const std::string dir = UniqueKey("dir");
  ASSERT_EQ(mkdir(ShmPath(dir).c_str(), 0700), 0);
  auto open_dir = PosixShm::Open(dir, 0, 1);
  rmdir(ShmPath(dir).c_str());
  EXPECT_EQ(open_dir.status().code(), absl::StatusCode::kInvalidArgument) << open_dir.status();

  const std::string fifo = UniqueKey("fifo");
  ASSERT_EQ(mkfifo(ShmPath(fifo).c_str(), 0600), 0);
  auto open_fifo = PosixShm::Open(fifo, 0, 1);
  unlink(ShmPath(fifo).c_str());
  EXPECT_EQ(open_fifo.status().code(), absl::StatusCode::kInvalidArgument) << open_fifo.status();
  EXPECT_NE(open_fifo.status().message().find("not a regular file"), std::string::npos)
      << open_fifo.status();
}

TEST(PosixShmOpenTest, AnotherUsersPrivateObjectIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give an object to another user";
  auto shm = testing::CreateTestShm("foreign", 4096);
  ASSERT_TRUE(shm.ok()) << shm.status();
  const std::string path = ShmPath((*shm)->key());
  ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  auto private_open = PosixShm::Open((*shm)->key(), 0, 4096);
  EXPECT_EQ(private_open.status().code(), absl::StatusCode::kPermissionDenied)
      << private_open.status();
  // Shared on purpose (group or everyone may read and write it): mapped.
  ASSERT_EQ(chmod(path.c_str(), 0660), 0);
  EXPECT_TRUE(PosixShm::Open((*shm)->key(), 0, 4096).ok());
  ASSERT_EQ(chmod(path.c_str(), 0606), 0);
  EXPECT_TRUE(PosixShm::Open((*shm)->key(), 0, 4096).ok());
  ASSERT_EQ(chmod(path.c_str(), 0640), 0);
  EXPECT_EQ(PosixShm::Open((*shm)->key(), 0, 4096).status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(PosixShmOpenTest, BackedUntilTheObjectShrinksUnderTheRange) {
  const int64_t page = sysconf(_SC_PAGESIZE);
  auto owner = testing::CreateTestShm("backed", 4 * page);
  ASSERT_TRUE(owner.ok()) << owner.status();
  auto range = PosixShm::Open((*owner)->key(), 100, 3 * page);  // ends on page 3
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_TRUE((*range)->Backed());
  // Shrunk, but every page of the range still has the object behind it (bytes past the end of
  // the object on its last page read as zeros and never fault).
  ASSERT_TRUE(testing::ResizeShm((*owner)->key(), 3 * page + 1).ok());
  EXPECT_TRUE((*range)->Backed());
  ASSERT_TRUE(testing::ResizeShm((*owner)->key(), 3 * page).ok());
  EXPECT_FALSE((*range)->Backed());
  ASSERT_TRUE(testing::ResizeShm((*owner)->key(), 0).ok());
  EXPECT_FALSE((*range)->Backed());
  // Grown again: backed (the pages read as zeros).
  ASSERT_TRUE(testing::ResizeShm((*owner)->key(), 4 * page).ok());
  EXPECT_TRUE((*range)->Backed());
}

}  // namespace
}  // namespace gemm
