// Conversion between gemm.v1 protobuf messages and server-core domain types. Operand bytes are
// borrowed from the proto or from the buffers it was received in (not copied): they must outlive
// the domain request.
#pragma once

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gemm/v1/gemm_service.grpc.pb.h"
#include "server/core/backend.h"
#include "server/core/limits.h"
#include "server/core/matrix_registry.h"
#include "server/core/shared_memory_registry.h"
#include "server/core/types.h"
#include "server/grpc/received_message.h"
#include "server/grpc/response_wire.h"

namespace gemm::service {

// Maps the request's fields (INVALID_ARGUMENT for unknown enum values). A group of more problems
// or a batch of a larger count than `limits` allow is refused before any problem is converted.
// `arrival` + timeout_us and `rpc_deadline` (whichever is earlier) become the request deadline.
// Shared-memory references are resolved through `shm` as `caller` sees it (NOT_FOUND /
// INVALID_ARGUMENT naming the field; another caller's region is NOT_FOUND unless `caller` is an
// admin); the request holds the regions it points into. When `proto` was parsed by `received`,
// the inline operands are the pieces they arrived in (not copied).
absl::StatusOr<core::GemmRequest> FromProto(const v1::GemmRequest& proto, absl::Time arrival,
                                            absl::Time rpc_deadline, const core::Limits& limits,
                                            const core::SharedMemoryRegistry& shm,
                                            const core::Caller& caller,
                                            const ReceivedMessage* received = nullptr);

// Moves the result's outputs into `out`: shapes, dtypes, timing and kernel into its message, each
// output's data into a slice that owns it (no copy of the data).
void ToOutgoing(core::GemmResult&& result, OutgoingResponse* out);

// Matrix header -> domain description (INVALID_ARGUMENT for bad enum values).
absl::StatusOr<core::ResidentMatrix::Desc> FromProto(const v1::MatrixHeader& header);

// The stable name and replace choice of a RegisterMatrix header.
core::MatrixNaming NamingFromProto(const v1::MatrixHeader& header);

// Resident matrix (a registry entry) -> MatrixInfo.
void ToProto(const core::MatrixRegistry::Entry& entry, v1::MatrixInfo* proto);

// Shared-memory region -> SharedMemoryInfo.
void ToProto(const core::SharedMemoryRegion& region, int64_t in_flight,
             v1::SharedMemoryInfo* proto);

// RegisterSharedMemoryRequest -> region description (no checks; the registry checks).
core::SharedMemoryRegion::Desc FromProto(const v1::RegisterSharedMemoryRequest& proto);

// Backend description + limits -> ServerInfo.
void ToProto(const core::BackendDescription& backend, const core::Limits& limits,
             v1::ServerInfo* proto);

}  // namespace gemm::service
