// Extra gRPC channel arguments given on the command line as "name=value" (--grpc_arg), for
// transport tuning (HTTP/2 frame size and windows, TCP read chunks) without a rebuild. Parsed
// here without gRPC types; the server and the clients hand them to gRPC.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"

namespace gemm {

// One channel argument: gRPC takes integer and string values apart.
struct ChannelArg {
  std::string name;
  std::variant<int, std::string> value;
};

// Parses "name=value" items: a value that is a whole number in int range becomes an integer
// argument, any other value a string one. INVALID_ARGUMENT names the item when it has no '=' or
// an empty name.
absl::StatusOr<std::vector<ChannelArg>> ParseChannelArgs(const std::vector<std::string>& items);

}  // namespace gemm
