// Request limits the server enforces (copied from flags in main.cc).
#pragma once

#include <cstdint>
#include <string>

namespace gemm::core {

struct Limits {
  // Largest M, N or K accepted. Default 65536.
  int64_t max_dim = 65536;
  // Largest operand payload (A + B + C bytes) of one request. Default 1 GiB.
  int64_t max_request_bytes = int64_t{1} << 30;
  // gRPC max send/receive message size; also bounds the response size. Default 1 GiB + 16 MiB.
  int64_t max_message_bytes = (int64_t{1} << 30) + (int64_t{16} << 20);
  // Largest batch count or group size. Default 1024.
  int64_t max_problems = 1024;
  // Cap on bytes of resident matrices (all of them). Default 64 GiB.
  int64_t max_resident_bytes = int64_t{64} << 30;
  // Cap on bytes of registered shared-memory regions (all of them); 0 turns them off. 64 GiB.
  int64_t max_shared_memory_bytes = int64_t{64} << 30;
  // Shared-memory objects clients may register must have names starting with this. "/gemm".
  std::string shared_memory_key_prefix = "/gemm";
};

}  // namespace gemm::core
