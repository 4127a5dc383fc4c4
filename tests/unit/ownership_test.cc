// Ownership and per-caller caps in the core: a resident matrix or shared-memory region belongs to
// the caller that registered it; another tenant neither lists nor releases it (NOT_FOUND, the
// same answer as an unknown name) while an admin sees and releases all; each caller's own byte
// cap refuses RESOURCE_EXHAUSTED without touching the others'; CallerCalls caps open calls per
// caller (no GPU, no network).
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "server/core/caller.h"
#include "server/core/caller_calls.h"
#include "server/core/matrix_registry.h"
#include "server/core/shared_memory_registry.h"
#include "server/cpu/cpu_backend.h"
#include "tests/common/shm_util.h"

namespace gemm::core {
namespace {

Caller Tenant(const std::string& name, CallerLimits limits = {}) {
  return {.name = name, .admin = false, .limits = limits};
}

class OwnershipTest : public ::testing::Test {
 protected:
  OwnershipTest()
      : backend_(*cpu::CreateCpuBackend({})),
        registry_(backend_.get(), int64_t{1} << 30),
        shm_(backend_.get(), int64_t{1} << 30, "/gemm") {}

  // Registers a rows x 4 matrix for `caller`; its handle, or the error.
  absl::StatusOr<std::string> Register(const Caller& caller, int64_t rows = 2,
                                       MatrixNaming naming = {}, char fill = '\0') {
    auto reg = registry_.Begin({.rows = rows, .cols = 4}, 1 << 20, naming, caller);
    if (!reg.ok()) return reg.status();
    if (auto s = (*reg)->Append(0, std::string(rows * 4 * 2, fill)); !s.ok()) return s;
    auto m = (*reg)->Finish();
    if (!m.ok()) return m.status();
    return (*m)->desc().handle;
  }

  std::unique_ptr<Backend> backend_;
  MatrixRegistry registry_;
  SharedMemoryRegistry shm_;
};

TEST_F(OwnershipTest, AnotherTenantNeitherListsNorReleasesAMatrix) {
  auto handle = Register(Tenant("alice"));
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(registry_.List(Tenant("alice")).size(), 1u);
  EXPECT_EQ(registry_.List(Tenant("alice"))[0].matrix->desc().owner, "alice");
  EXPECT_TRUE(registry_.List(Tenant("bob")).empty());
  EXPECT_EQ(registry_.Release(*handle, Tenant("bob")).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(registry_.Lookup(*handle).ok()) << "a refused release must not release";
  EXPECT_TRUE(registry_.Release(*handle, Tenant("alice")).ok());
  EXPECT_EQ(registry_.resident_bytes(), 0);
}

TEST_F(OwnershipTest, AnotherTenantCannotTakeOverAChosenName) {
  ASSERT_TRUE(Register(Tenant("alice"), 2, {.handle = "w1"}).ok());
  for (char fill : {'\0', '\1'}) {  // the same content, then other content
    auto bobs = Register(Tenant("bob"), 2, {.handle = "w1", .replace = true}, fill);
    EXPECT_EQ(bobs.status().code(), absl::StatusCode::kAlreadyExists) << bobs.status();
  }
  auto reshaped = Register(Tenant("bob"), 3, {.handle = "w1", .replace = true});
  EXPECT_EQ(reshaped.status().code(), absl::StatusCode::kAlreadyExists) << reshaped.status();
  EXPECT_EQ(registry_.List(Tenant("alice")).size(), 1u);
  EXPECT_EQ((*registry_.Lookup("w1"))->desc().owner, "alice");
  EXPECT_EQ(registry_.resident_bytes(), 2 * 4 * 2) << "refused uploads give their bytes back";
  EXPECT_TRUE(Register(Tenant("alice"), 2, {.handle = "w1"}).ok()) << "idempotent for its owner";
}

TEST_F(OwnershipTest, RepositoryWeightsAreListedToEveryCaller) {
  ASSERT_TRUE(Register(Caller{}, 2, {.handle = "model/w", .repository = true}).ok());
  ASSERT_EQ(registry_.List(Tenant("bob")).size(), 1u);
  EXPECT_TRUE(registry_.List(Tenant("bob"))[0].repository);
  EXPECT_EQ(registry_.Release("model/w", Tenant("bob")).code(), absl::StatusCode::kNotFound);
}

TEST_F(OwnershipTest, AdminListsAndReleasesEveryTenantsMatrix) {
  ASSERT_TRUE(Register(Tenant("alice")).ok());
  auto bobs = Register(Tenant("bob"));
  ASSERT_TRUE(bobs.ok());
  const Caller admin{.name = "root", .admin = true};
  EXPECT_EQ(registry_.List(admin).size(), 2u);
  EXPECT_TRUE(registry_.Release(*bobs, admin).ok());
  EXPECT_EQ(registry_.List(admin).size(), 1u);
}

TEST_F(OwnershipTest, ResidentCapPerCallerLeavesOthersRoom) {
  const Caller alice = Tenant("alice", {.max_resident_bytes = 100});
  auto first = Register(alice, 10);  // 80 bytes
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Register(alice, 10);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(second.status().message().find("alice"), std::string::npos) << second.status();
  EXPECT_TRUE(Register(Tenant("bob", {.max_resident_bytes = 100}), 10).ok());
  ASSERT_TRUE(registry_.Release(*first, alice).ok());
  EXPECT_TRUE(Register(alice, 10).ok()) << "a released matrix gives its owner's bytes back";
}

TEST_F(OwnershipTest, AbandonedUploadGivesItsOwnersBytesBack) {
  const Caller alice = Tenant("alice", {.max_resident_bytes = 100});
  {
    auto reg = registry_.Begin({.rows = 10, .cols = 4}, 1 << 20, {}, alice);
    ASSERT_TRUE(reg.ok());
  }
  EXPECT_TRUE(Register(alice, 10).ok());
}

TEST_F(OwnershipTest, SharedMemoryRegionBelongsToItsRegistrant) {
  auto object = testing::CreateTestShm("own", 1 << 16);
  ASSERT_TRUE(object.ok()) << object.status();
  const Caller alice = Tenant("alice", {.max_shared_memory_bytes = 1 << 16});
  auto region = shm_.Register({.name = "r", .key = (*object)->key(), .byte_size = 4096}, alice);
  ASSERT_TRUE(region.ok()) << region.status();
  const Caller bob = Tenant("bob");
  EXPECT_TRUE(shm_.List(bob).empty());
  EXPECT_EQ(shm_.List(alice).size(), 1u);
  std::vector<std::shared_ptr<const SharedMemoryRegion>> keep;
  EXPECT_EQ(shm_.Resolve("problem.a", {"r", 0, 16}, &keep, bob).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(shm_.Resolve("problem.a", {"r", 0, 16}, &keep, alice).ok());
  EXPECT_EQ(shm_.Unregister("r", bob).code(), absl::StatusCode::kNotFound);
  auto over = shm_.Register({.name = "r2", .key = (*object)->key(), .byte_size = 1 << 16}, alice);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted) << over.status();
  EXPECT_TRUE(shm_.Unregister("r", alice).ok());
  EXPECT_EQ(shm_.bytes(), 0);
}

TEST(CallerCallsTest, CallerOverItsCapIsRefusedOthersAreNot) {
  CallerCalls calls;
  const Caller alice = Tenant("alice", {.max_calls = 2});
  auto a1 = calls.Enter(alice);
  auto a2 = calls.Enter(alice);
  ASSERT_TRUE(a1.ok() && a2.ok());
  auto a3 = calls.Enter(alice);
  EXPECT_EQ(a3.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(calls.Enter(Tenant("bob", {.max_calls = 1})).ok());
  a1->Reset();
  EXPECT_EQ(calls.open("alice"), 1);
  EXPECT_TRUE(calls.Enter(alice).ok()) << "a call that ended gives its slot back";
  EXPECT_TRUE(calls.Enter(Tenant("carol")).ok()) << "no cap: never refused";
}

}  // namespace
}  // namespace gemm::core
