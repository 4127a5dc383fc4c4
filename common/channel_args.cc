// ParseChannelArgs (see channel_args.h).
#include "common/channel_args.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gemm {

absl::StatusOr<std::vector<ChannelArg>> ParseChannelArgs(const std::vector<std::string>& items) {
  std::vector<ChannelArg> args;
  args.reserve(items.size());
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "grpc_arg: '", item, "' is not name=value (e.g. grpc.http2.max_frame_size=1048576)"));
    }
    ChannelArg arg;
    arg.name = item.substr(0, eq);
    const absl::string_view value = absl::string_view(item).substr(eq + 1);
    int number = 0;
    if (absl::SimpleAtoi(value, &number)) {
      arg.value = number;
    } else {
      arg.value = std::string(value);
    }
    args.push_back(std::move(arg));
  }
  return args;
}

}  // namespace gemm
