// Integration: RegisterMatrix uploads that do not end well give their reservation back. One that
// stops sending ends DEADLINE_EXCEEDED after --upload_idle_timeout_s (while it is open, its
// reservation counts against --max_resident_bytes); one whose client cancels after sending the
// last byte is not published.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/server_process.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {
namespace {

v1::MatrixHeader Header(int64_t rows, int64_t cols) {
  v1::MatrixHeader h;
  h.set_name("w");
  h.set_rows(rows);
  h.set_cols(cols);
  h.set_dtype(v1::DTYPE_BF16);
  return h;
}

// Opens an upload of a rows x cols matrix on `stub` and sends its first `bytes` bytes (header in
// the first chunk); sends nothing more and does not half-close.
std::unique_ptr<grpc::ClientWriter<v1::RegisterMatrixChunk>> StartUpload(
    v1::GemmService::Stub* stub, grpc::ClientContext* ctx, v1::MatrixInfo* info, int64_t rows,
    int64_t cols, int64_t bytes) {
  auto writer = stub->RegisterMatrix(ctx, info);
  v1::RegisterMatrixChunk chunk;
  *chunk.mutable_header() = Header(rows, cols);
  chunk.set_data(std::string(bytes, '\1'));
  EXPECT_TRUE(writer->Write(chunk));
  return writer;
}

TEST(UploadLifecycleTest, IdleUploadTimesOutAndGivesItsReservationBack) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  auto server = ServerProcess::Start({"--backend=cpu", "--upload_idle_timeout_s=1",
                                      absl::StrCat("--max_resident_bytes=", 40 * kMiB)});
  ASSERT_TRUE(server.ok()) << server.status();
  client::GemmClient& c = (*server)->client();

  // An upload of 32 MiB sends 1 MiB and goes quiet.
  grpc::ClientContext ctx;
  v1::MatrixInfo info;
  auto idle = StartUpload(c.stub(), &ctx, &info, 4096, 4096, kMiB);
  std::atomic<bool> ended{false};
  grpc::Status status;
  std::thread waiter([&] {
    status = idle->Finish();  // does not half-close: the server has to end the call
    ended = true;
  });
  // While it holds 32 MiB of the 40 MiB cap, a 16 MiB matrix does not fit.
  const std::string small(16 * kMiB, '\2');
  EXPECT_EQ(c.RegisterMatrix(Header(2048, 4096), small).status().code(),
            absl::StatusCode::kResourceExhausted);

  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  while (!ended && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(20));
  if (!ended) ctx.TryCancel();
  waiter.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_NE(status.error_message().find("upload_idle_timeout_s"), std::string::npos)
      << status.error_message();

  // Its reservation is back: the 16 MiB matrix fits now, and it is the only one.
  auto registered = c.RegisterMatrix(Header(2048, 4096), small);
  EXPECT_TRUE(registered.ok()) << registered.status();
  auto list = c.ListMatrices();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->size(), 1u);
  EXPECT_EQ((*server)->Stop(SIGTERM), 0);
}

TEST(UploadLifecycleTest, UploadCancelledAfterItsLastByteIsNotPublished) {
  // The cap holds exactly one 64x64 matrix.
  auto server = ServerProcess::Start({"--backend=cpu", "--max_resident_bytes=8192"});
  ASSERT_TRUE(server.ok()) << server.status();
  client::GemmClient& c = (*server)->client();
  {
    grpc::ClientContext ctx;
    v1::MatrixInfo info;
    auto upload = StartUpload(c.stub(), &ctx, &info, 64, 64, 64 * 64 * 2);  // every byte
    absl::SleepFor(absl::Milliseconds(300));  // the server takes the chunk
    ctx.TryCancel();
    EXPECT_EQ(upload->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // Nothing is registered (the cancellation may reach the server a moment after the call ended
  // here), and the reservation is back: another 64x64 matrix fits.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  absl::StatusOr<std::vector<v1::MatrixInfo>> list = c.ListMatrices();
  while (list.ok() && !list->empty() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(20));
    list = c.ListMatrices();
  }
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->empty()) << "published: " << (*list)[0].handle();
  auto again = c.RegisterMatrix(Header(64, 64), std::string(64 * 64 * 2, '\3'));
  EXPECT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*server)->Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace gemm::testing
