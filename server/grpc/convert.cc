// Proto <-> domain conversion.
#include "server/grpc/convert.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/core/client_string.h"
#include "server/core/validation.h"

namespace gemm::service {
namespace {

// Where a request's operand bytes come from: the shared-memory registry as one caller sees it,
// and the received message whose bytes fields were left where they arrived (null: the protobuf
// message holds them).
struct OperandSources {
  const core::SharedMemoryRegistry& registry;
  const core::Caller& caller;
  const ReceivedMessage* received = nullptr;
};

// The value of bytes field number `field` of `p` (`value` in the message): the pieces it arrived
// in when the message was parsed by ReceivedMessage, else `value`.
core::OperandBytes MessageBytes(const v1::Problem& p, int field, const std::string& value,
                                const OperandSources& sources) {
  if (sources.received != nullptr) {
    if (const auto* pieces = sources.received->Bytes(p, field)) {
      return core::OperandBytes::Pieces(*pieces);
    }
  }
  return value;
}

absl::StatusOr<core::DType> DTypeFromProto(v1::DType t, const std::string& field) {
  switch (t) {
    case v1::DTYPE_UNSPECIFIED:
    case v1::DTYPE_BF16:
      return core::DType::kBF16;
    case v1::DTYPE_FP32:
      return core::DType::kFP32;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": unsupported dtype ", static_cast<int>(t), " (BF16 or FP32)"));
  }
}

absl::StatusOr<core::BLayout> LayoutFromProto(v1::BLayout l, const std::string& field) {
  switch (l) {
    case v1::B_LAYOUT_UNSPECIFIED:
    case v1::B_LAYOUT_KN:
      return core::BLayout::kKN;
    case v1::B_LAYOUT_NK:
      return core::BLayout::kNK;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": unsupported layout ", static_cast<int>(l), " (B_LAYOUT_KN or B_LAYOUT_NK)"));
  }
}

v1::DType DTypeToProto(core::DType t) {
  return t == core::DType::kFP32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16;
}

v1::BLayout LayoutToProto(core::BLayout l) {
  return l == core::BLayout::kNK ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN;
}

// Resolves the shared-memory reference `ref` (field `field`) into `*bytes` and `*where`; for GPU
// memory also into `*device`, the problem's operand GPU (one for all its operands).
template <typename Bytes>
absl::Status ResolveShm(const v1::SharedMemoryRef& ref, const std::string& field,
                        const OperandSources& shm, core::GemmRequest* request, Bytes* bytes,
                        core::HostMemory* where, int* device) {
  auto r = shm.registry.Resolve(field, {ref.region(), ref.offset(), ref.byte_size()},
                                &request->regions, shm.caller);
  if (!r.ok()) return r.status();
  if (r->on_device) {
    if (*device >= 0 && *device != r->device) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": region ", core::QuoteClientString(ref.region()),
                       " is GPU memory of device ", r->device, ", another operand's of device ",
                       *device, " (a problem's operands in GPU memory must share one GPU)"));
    }
    *device = r->device;
  }
  *bytes = Bytes(r->bytes.data(), r->bytes.size());
  *where = r->on_device ? core::HostMemory::kSharedDevice
           : r->pinned  ? core::HostMemory::kSharedPinned
                        : core::HostMemory::kShared;
  return absl::OkStatus();
}

// An input given inline (`bytes`) or by reference (`ref`, when `has_ref`), not both.
absl::Status InputFromProto(const core::OperandBytes& bytes, bool has_ref,
                            const v1::SharedMemoryRef& ref, const std::string& field,
                            const std::string& name, const OperandSources& shm,
                            core::GemmRequest* request, core::OperandBytes* out,
                            core::HostMemory* where, int* device) {
  *out = bytes;
  if (!has_ref) return absl::OkStatus();
  if (!bytes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": set ", name, " or ", name, "_shm, not both"));
  }
  return ResolveShm(ref, absl::StrCat(field, ".", name, "_shm"), shm, request, out, where, device);
}

absl::Status ProblemFromProto(const v1::Problem& p, const std::string& field,
                              const OperandSources& shm, core::GemmRequest* request,
                              core::Problem* out) {
  out->m = p.m();
  out->n = p.n();
  out->k = p.k();
  if (auto s = InputFromProto(MessageBytes(p, v1::Problem::kAFieldNumber, p.a(), shm),
                              p.has_a_shm(), p.a_shm(), field, "a", shm, request, &out->a,
                              &out->a_mem, &out->operand_device);
      !s.ok()) {
    return s;
  }
  if (p.b_source_case() == v1::Problem::kBHandle) {
    out->b_handle = p.b_handle();
    if (out->b_handle.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".b_handle: is empty"));
    }
  } else if (p.b_source_case() == v1::Problem::kBShm) {
    if (auto s = ResolveShm(p.b_shm(), field + ".b_shm", shm, request, &out->b, &out->b_mem,
                            &out->operand_device);
        !s.ok()) {
      return s;
    }
  } else {
    out->b = MessageBytes(p, v1::Problem::kBFieldNumber, p.b(), shm);
  }
  auto layout = LayoutFromProto(p.b_layout(), field + ".b_layout");
  if (!layout.ok()) return layout.status();
  out->b_layout = *layout;
  out->b_layout_explicit = p.b_layout() != v1::B_LAYOUT_UNSPECIFIED;
  out->alpha = p.has_alpha() ? p.alpha() : 1.0f;
  out->beta = p.has_beta() ? p.beta() : 0.0f;
  if (auto s = InputFromProto(MessageBytes(p, v1::Problem::kCFieldNumber, p.c(), shm),
                              p.has_c_shm(), p.c_shm(), field, "c", shm, request, &out->c,
                              &out->c_mem, &out->operand_device);
      !s.ok()) {
    return s;
  }
  if (p.has_d_shm()) {
    if (auto s = ResolveShm(p.d_shm(), field + ".d_shm", shm, request, &out->d_dest, &out->d_mem,
                            &out->operand_device);
        !s.ok()) {
      return s;
    }
  }
  auto dtype = DTypeFromProto(p.output_dtype(), field + ".output_dtype");
  if (!dtype.ok()) return dtype.status();
  out->out_dtype = *dtype;
  return absl::OkStatus();
}

void DurationsToProto(const core::Timing& t, v1::Timing* p) {
  p->set_queue_us(absl::ToInt64Microseconds(t.queue));
  p->set_copy_in_us(absl::ToInt64Microseconds(t.copy_in));
  p->set_compute_us(absl::ToInt64Microseconds(t.compute));
  p->set_copy_out_us(absl::ToInt64Microseconds(t.copy_out));
  p->set_launch_us(absl::ToInt64Microseconds(t.launch));
  p->set_completion_us(absl::ToInt64Microseconds(t.completion));
  p->set_total_us(absl::ToInt64Microseconds(t.total));
  p->set_batch_rows(t.batch_rows);
  p->set_batch_requests(t.batch_requests);
  p->set_device(t.device);
  p->set_gpu_timing_skipped(t.gpu_timing_skipped);
}

// The kind of work `proto` asks for and how much (problems of a group, count of a batch).
std::pair<core::WorkKind, int64_t> WorkOf(const v1::GemmRequest& proto) {
  switch (proto.work_case()) {
    case v1::GemmRequest::kBatch:
      return {core::WorkKind::kBatch, proto.batch().count()};
    case v1::GemmRequest::kGroup:
      return {core::WorkKind::kGroup, proto.group().problems_size()};
    default:
      return {core::WorkKind::kSingle, 1};
  }
}

}  // namespace

absl::StatusOr<core::GemmRequest> FromProto(const v1::GemmRequest& proto, absl::Time arrival,
                                            absl::Time rpc_deadline, const core::Limits& limits,
                                            const core::SharedMemoryRegistry& registry,
                                            const core::Caller& caller,
                                            const ReceivedMessage* received) {
  const OperandSources shm{.registry = registry, .caller = caller, .received = received};
  // NOTE: before anything is converted: a group's domain problems cost memory per entry.
  if (proto.work_case() != v1::GemmRequest::WORK_NOT_SET) {
    const auto [kind, count] = WorkOf(proto);
    if (auto s = core::CheckWorkCount(limits, kind, count); !s.ok()) return s;
  }
  core::GemmRequest r;
  r.request_id = proto.request_id();
  r.kernel = proto.kernel();
  switch (proto.priority()) {
    case v1::PRIORITY_UNSPECIFIED:
    case v1::PRIORITY_NORMAL:
      r.priority = core::Priority::kNormal;
      break;
    case v1::PRIORITY_HIGH:
      r.priority = core::Priority::kHigh;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("priority: unsupported value ", static_cast<int>(proto.priority())));
  }
  if (proto.timeout_us() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("timeout_us: must be >= 0, got ", proto.timeout_us()));
  }
  r.deadline = rpc_deadline;
  if (proto.timeout_us() > 0) {
    r.deadline = std::min(r.deadline, arrival + absl::Microseconds(proto.timeout_us()));
  }
  switch (proto.work_case()) {
    case v1::GemmRequest::kProblem: {
      r.kind = core::WorkKind::kSingle;
      r.problems.emplace_back();
      if (auto s = ProblemFromProto(proto.problem(), "problem", shm, &r, &r.problems[0]); !s.ok())
        return s;
      break;
    }
    case v1::GemmRequest::kBatch: {
      r.kind = core::WorkKind::kBatch;
      r.problems.emplace_back();
      if (!proto.batch().has_problem()) {
        return absl::InvalidArgumentError("batch.problem: is missing");
      }
      if (auto s =
              ProblemFromProto(proto.batch().problem(), "batch.problem", shm, &r, &r.problems[0]);
          !s.ok()) {
        return s;
      }
      r.problems[0].count = proto.batch().count();
      break;
    }
    case v1::GemmRequest::kGroup: {
      r.kind = core::WorkKind::kGroup;
      r.problems.resize(proto.group().problems_size());
      for (int i = 0; i < proto.group().problems_size(); ++i) {
        if (auto s = ProblemFromProto(proto.group().problems(i),
                                      core::ProblemField(core::WorkKind::kGroup, i), shm, &r,
                                      &r.problems[i]);
            !s.ok()) {
          return s;
        }
      }
      break;
    }
    case v1::GemmRequest::WORK_NOT_SET:
      break;  // validation reports the empty request
  }
  return r;
}

void ToOutgoing(core::GemmResult&& result, OutgoingResponse* out) {
  v1::GemmResponse* proto = &out->message;
  for (core::Output& o : result.outputs) {
    v1::Output* po = proto->add_outputs();
    for (int64_t d : o.shape) po->add_shape(d);
    po->set_dtype(DTypeToProto(o.dtype));
    out->data.push_back(o.held_owner != nullptr ? SliceHolding(o.held, std::move(o.held_owner))
                                                : SliceOwning(std::move(o.data)));
  }
  DurationsToProto(result.timing, proto->mutable_timing());
  proto->set_kernel(std::move(result.kernel));
}

absl::StatusOr<core::ResidentMatrix::Desc> FromProto(const v1::MatrixHeader& header) {
  core::ResidentMatrix::Desc d;
  d.name = header.name();
  d.rows = header.rows();
  d.cols = header.cols();
  if (header.dtype() != v1::DTYPE_UNSPECIFIED && header.dtype() != v1::DTYPE_BF16) {
    return absl::InvalidArgumentError(absl::StrCat("header.dtype: unsupported dtype ",
                                                   static_cast<int>(header.dtype()),
                                                   " (resident matrices are BF16)"));
  }
  auto layout = LayoutFromProto(header.layout(), "header.layout");
  if (!layout.ok()) return layout.status();
  d.layout = *layout;
  d.devices.assign(header.devices().begin(), header.devices().end());
  return d;
}

core::MatrixNaming NamingFromProto(const v1::MatrixHeader& header) {
  return {.handle = header.handle(), .replace = header.replace()};
}

void ToProto(const core::MatrixRegistry::Entry& entry, v1::MatrixInfo* proto) {
  const core::ResidentMatrix& matrix = *entry.matrix;
  const auto& d = matrix.desc();
  proto->set_handle(d.handle);
  proto->set_name(d.name);
  proto->set_rows(d.rows);
  proto->set_cols(d.cols);
  proto->set_dtype(v1::DTYPE_BF16);
  proto->set_layout(LayoutToProto(d.layout));
  proto->set_bytes(matrix.bytes());
  for (int dev : d.devices) proto->add_devices(dev);
  proto->set_in_flight(entry.in_flight);
  proto->set_content_hash(entry.content_hash);
  proto->set_repository(entry.repository);
}

void ToProto(const core::SharedMemoryRegion& region, int64_t in_flight,
             v1::SharedMemoryInfo* proto) {
  const auto& d = region.desc();
  proto->set_name(d.name);
  proto->set_key(d.key);
  proto->set_offset(d.offset);
  proto->set_byte_size(d.byte_size);
  proto->set_pinned(region.pinned());
  proto->set_in_flight(in_flight);
  if (region.on_device()) {
    proto->set_cuda(true);
    proto->set_device(d.device);
  }
}

core::SharedMemoryRegion::Desc FromProto(const v1::RegisterSharedMemoryRequest& proto) {
  return {proto.name(),  proto.key(), proto.offset(), proto.byte_size(), proto.cuda_ipc_handle(),
          proto.device()};
}

void ToProto(const core::BackendDescription& backend, const core::Limits& limits,
             v1::ServerInfo* proto) {
  proto->set_backend(backend.name);
  for (const auto& d : backend.devices) {
    v1::DeviceInfo* pd = proto->add_devices();
    pd->set_ordinal(d.ordinal);
    pd->set_name(d.name);
    pd->set_compute_capability_major(d.cc_major);
    pd->set_compute_capability_minor(d.cc_minor);
    pd->set_multiprocessors(d.multiprocessors);
    pd->set_memory_bytes(d.memory_bytes);
    pd->set_pool_capacity_bytes(d.pool_capacity_bytes);
    pd->set_pool_used_bytes(d.pool_used_bytes);
    pd->set_kernel(d.kernel);
  }
  for (const auto& k : backend.kernels) {
    v1::KernelInfo* pk = proto->add_kernels();
    pk->set_name(k.name);
    pk->set_usable(k.usable);
    pk->set_detail(k.detail);
  }
  v1::Limits* l = proto->mutable_limits();
  l->set_max_dim(limits.max_dim);
  l->set_max_request_bytes(limits.max_request_bytes);
  l->set_max_message_bytes(limits.max_message_bytes);
  l->set_max_problems(limits.max_problems);
  l->set_max_resident_bytes(limits.max_resident_bytes);
}

}  // namespace gemm::service
