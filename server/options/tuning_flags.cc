// Transport and allocator tuning flags, listed by --helpfull only.
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "common/transport_flags.h"
#include "server/options/flag_groups.h"

ABSL_FLAG(std::vector<std::string>, grpc_arg, gemm::server::ProcessOptions{}.grpc_args,
          "Extra gRPC server arguments, name=value[,name=value...] (integers where the value is "
          "one), e.g. grpc.http2.max_frame_size=1048576: transport tuning.");
ABSL_FLAG(bool, reuse_large_buffers, gemm::server::ProcessOptions{}.reuse_large_buffers,
          "Keep freed payload-sized buffers in the heap for reuse instead of unmapping them "
          "(glibc malloc: no mmap, no trimming), so a large response does not page-fault fresh "
          "memory every time. Builds with tcmalloc need no tuning for it.");

namespace gemm::server {

void ApplyTuningFlags(ServerOptions& options) {
  options.process.transport = TransportOptionsFromFlags();
  options.process.grpc_args = absl::GetFlag(FLAGS_grpc_arg);
  options.process.reuse_large_buffers = absl::GetFlag(FLAGS_reuse_large_buffers);
}

}  // namespace gemm::server
