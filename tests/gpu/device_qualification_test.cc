// Tests of the server's side of kernel qualification (server/gpu/qualification.h) against fake
// gemm_qualify binaries (shell scripts speaking the child protocol): a missing binary, a child
// that hangs in a case and one whose case fails with a CUDA error each leave every affected
// variant unusable with its reason, within the deadlines, and never fail start-up. No GPU: the
// parent makes no CUDA call, and the fakes make none either.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gemm/qualification.h"
#include "gtest/gtest.h"
#include "server/gpu/qualification.h"

namespace gemm::gpu {
namespace {

// Writes an executable script `body` (after "#!/bin/sh") and returns its path.
std::string FakeChild(const std::string& name, const std::string& body) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name + "." + std::to_string(getpid());
  std::ofstream(path) << "#!/bin/sh\n" << body;
  chmod(path.c_str(), 0755);
  return path;
}

DeviceQualificationOptions Fast(const std::string& binary) {
  return {.binary = binary,
          .case_deadline = absl::Milliseconds(500),
          .total_deadline = absl::Seconds(10)};
}

TEST(DeviceQualificationTest, MissingBinaryQualifiesNothingAndDoesNotFail) {
  const DeviceQualification q =
      QualifyDevice(0, kernel::KernelKind::kSm90, Fast("/nonexistent/gemm_qualify"));
  EXPECT_EQ(q.usable_variants, 0u);
  ASSERT_EQ(q.verdicts.size(), kernel::NativeVariantNames(kernel::KernelKind::kSm90).size());
  for (const auto& v : q.verdicts) {
    EXPECT_FALSE(v.usable) << v.name;
    EXPECT_EQ(v.reason, "not_run") << v.name;
  }
  const std::string none = absl::StrCat("0 of ", q.verdicts.size(), " variants");
  EXPECT_NE(q.summary.find(none), std::string::npos) << q.summary;
  EXPECT_FALSE(q.cublaslt_wrong);
}

TEST(DeviceQualificationTest, HungCaseTimesOutAndOtherVariantsStillQualify) {
  // Case 0 (variant 0) hangs in its first child; the next child starts at case 1.
  const std::string child = FakeChild("hang", R"(
echo "cases 2"; echo "variant 0 sm90.wgmma_128x256"; echo "variant 1 sm90.small_m"
if [ "$2" = 0 ]; then echo "case 0 0 hangs"; exec sleep 30; fi
echo "case 1 1 passes"; echo "result 1 ok fine"
)");
  const absl::Time start = absl::Now();
  const DeviceQualification q = QualifyDevice(0, kernel::KernelKind::kSm90, Fast(child));
  EXPECT_LT(absl::Now() - start, absl::Seconds(8));
  ASSERT_EQ(q.verdicts.size(), 2u);
  EXPECT_FALSE(q.verdicts[0].usable);
  EXPECT_EQ(q.verdicts[0].reason, "timeout") << q.verdicts[0].detail;
  EXPECT_TRUE(q.verdicts[1].usable) << q.verdicts[1].detail;
  EXPECT_EQ(q.usable_variants, 0b10u);
}

TEST(DeviceQualificationTest, CudaErrorMarksItsVariantWithTheChildsReport) {
  const std::string child = FakeChild("fault", R"(
echo "cases 1"; echo "variant 0 sm90.wgmma_128x256"; echo "case 0 0 faults"
echo "result 0 fail INTERNAL: cudaStreamSynchronize: unspecified launch failure: mbarrier wait sm90.consumer_full timed out"
exit 0
)");
  const DeviceQualification q = QualifyDevice(0, kernel::KernelKind::kSm90, Fast(child));
  ASSERT_EQ(q.verdicts.size(), 1u);
  EXPECT_FALSE(q.verdicts[0].usable);
  EXPECT_EQ(q.verdicts[0].reason, "error");
  EXPECT_NE(q.verdicts[0].detail.find("sm90.consumer_full"), std::string::npos)
      << q.verdicts[0].detail;
  EXPECT_EQ(q.usable_variants, 0u);
}

TEST(DeviceQualificationTest, CublasLtMismatchIsTheOnlyFatalOutcome) {
  const std::string wrong = FakeChild("wrong", R"(
echo "cases 1"; echo "case 0  cublaslt"; echo "result 0 fail DATA_LOSS: cublaslt disagrees"
)");
  EXPECT_TRUE(QualifyDevice(0, kernel::KernelKind::kCublasLt, Fast(wrong)).cublaslt_wrong);
  const DeviceQualification missing =
      QualifyDevice(0, kernel::KernelKind::kCublasLt, Fast("/nonexistent/gemm_qualify"));
  EXPECT_FALSE(missing.cublaslt_wrong);
  EXPECT_FALSE(missing.cublaslt_ok);
}

}  // namespace
}  // namespace gemm::gpu
