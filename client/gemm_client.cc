// GemmClient implementation.
#include "client/gemm_client.h"

#include <algorithm>
#include <thread>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace gemm::client {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

absl::StatusOr<std::unique_ptr<GemmClient>> GemmClient::Create(const Options& options) {
  if (options.target.empty()) return absl::InvalidArgumentError("target: is empty");
  if (options.channels < 1) return absl::InvalidArgumentError("channels: must be >= 1");
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(options.security);
  if (!credentials.ok()) return credentials.status();
  absl::StatusOr<std::vector<ChannelArg>> transport = TransportChannelArgs(options.transport);
  if (!transport.ok()) return transport.status();
  std::vector<ChannelArg> extra_args = *std::move(transport);
  extra_args.insert(extra_args.end(), options.channel_args.begin(), options.channel_args.end());
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < options.channels; ++i) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
    args.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
    args.SetLoadBalancingPolicyName(options.lb_policy);
    if (options.retry_unavailable) {
      args.SetServiceConfigJSON(kRetryServiceConfig);
      args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
      args.SetInt(GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE, static_cast<int>(options.max_message_bytes));
    }
    for (const ChannelArg& a : extra_args) {
      if (const int* v = std::get_if<int>(&a.value)) {
        args.SetInt(a.name, *v);
      } else {
        args.SetString(a.name, std::get<std::string>(a.value));
      }
    }
    args.SetInt("gemm_channel_index", i);  // distinct args: distinct subchannels/connections
    channels.push_back(grpc::CreateCustomChannel(options.target, *credentials, args));
  }
  return std::unique_ptr<GemmClient>(new GemmClient(options.target, std::move(channels)));
}

GemmClient::GemmClient(std::string target, std::vector<std::shared_ptr<grpc::Channel>> channels)
    : target_(std::move(target)), channels_(std::move(channels)) {
  for (auto& c : channels_) stubs_.push_back(v1::GemmService::NewStub(c));
}

absl::StatusOr<v1::GemmResponse> GemmClient::Gemm(const v1::GemmRequest& request,
                                                  absl::Duration timeout) {
  grpc::ClientContext context;
  if (timeout != absl::InfiniteDuration()) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  }
  v1::GemmResponse response;
  grpc::Status s = stub(static_cast<int>(next_++))->Gemm(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

absl::StatusOr<v1::MatrixInfo> GemmClient::RegisterMatrix(const v1::MatrixHeader& header,
                                                          absl::string_view bf16_bytes,
                                                          int64_t chunk_bytes) {
  if (chunk_bytes <= 0) return absl::InvalidArgumentError("chunk_bytes: must be > 0");
  grpc::ClientContext context;
  v1::MatrixInfo info;
  auto writer = stub()->RegisterMatrix(&context, &info);
  int64_t offset = 0;
  bool first = true;
  while (first || offset < static_cast<int64_t>(bf16_bytes.size())) {
    v1::RegisterMatrixChunk chunk;
    if (first) *chunk.mutable_header() = header;
    const int64_t n = std::min<int64_t>(chunk_bytes, bf16_bytes.size() - offset);
    chunk.set_offset(offset);
    chunk.set_data(bf16_bytes.data() + offset, n);
    offset += n;
    first = false;
    if (!writer->Write(chunk)) break;  // server closed early; Finish() says why
  }
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (!s.ok()) return FromGrpcStatus(s);
  return info;
}

absl::Status GemmClient::ReleaseMatrix(const std::string& handle) {
  grpc::ClientContext context;
  v1::ReleaseMatrixRequest request;
  request.set_handle(handle);
  v1::ReleaseMatrixResponse response;
  return FromGrpcStatus(stub()->ReleaseMatrix(&context, request, &response));
}

absl::StatusOr<std::vector<v1::MatrixInfo>> GemmClient::ListMatrices() {
  grpc::ClientContext context;
  v1::ListMatricesResponse response;
  grpc::Status s = stub()->ListMatrices(&context, v1::ListMatricesRequest(), &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return std::vector<v1::MatrixInfo>(response.matrices().begin(), response.matrices().end());
}

absl::StatusOr<v1::ServerInfo> GemmClient::GetServerInfo() {
  grpc::ClientContext context;
  v1::ServerInfo info;
  grpc::Status s = stub()->GetServerInfo(&context, v1::GetServerInfoRequest(), &info);
  if (!s.ok()) return FromGrpcStatus(s);
  return info;
}

absl::StatusOr<v1::SharedMemoryInfo> GemmClient::RegisterSharedMemory(const std::string& name,
                                                                      const std::string& key,
                                                                      int64_t offset,
                                                                      int64_t byte_size) {
  v1::RegisterSharedMemoryRequest request;
  request.set_name(name);
  request.set_key(key);
  request.set_offset(offset);
  request.set_byte_size(byte_size);
  return RegisterRegion(request);
}

absl::StatusOr<v1::SharedMemoryInfo> GemmClient::RegisterDeviceMemory(const std::string& name,
                                                                      const std::string& ipc_handle,
                                                                      int device, int64_t offset,
                                                                      int64_t byte_size) {
  v1::RegisterSharedMemoryRequest request;
  request.set_name(name);
  request.set_cuda_ipc_handle(ipc_handle);
  request.set_device(device);
  request.set_offset(offset);
  request.set_byte_size(byte_size);
  return RegisterRegion(request);
}

absl::StatusOr<v1::SharedMemoryInfo> GemmClient::RegisterRegion(
    const v1::RegisterSharedMemoryRequest& request) {
  grpc::ClientContext context;
  v1::SharedMemoryInfo info;
  grpc::Status s = stub()->RegisterSharedMemory(&context, request, &info);
  if (!s.ok()) return FromGrpcStatus(s);
  return info;
}

absl::Status GemmClient::UnregisterSharedMemory(const std::string& name) {
  grpc::ClientContext context;
  v1::UnregisterSharedMemoryRequest request;
  request.set_name(name);
  v1::UnregisterSharedMemoryResponse response;
  return FromGrpcStatus(stub()->UnregisterSharedMemory(&context, request, &response));
}

bool GemmClient::WaitForConnected(absl::Duration timeout) {
  return channels_[0]->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout));
}

absl::Status GemmClient::WaitForServing(absl::Duration timeout) {
  namespace health = grpc::health::v1;
  const absl::Time deadline = absl::Now() + timeout;
  const std::unique_ptr<health::Health::Stub> stub = health::Health::NewStub(channels_[0]);
  health::HealthCheckRequest request;
  request.set_service(v1::GemmService::service_full_name());
  // Asks once; `wait` rides out a connection that is not up yet until the deadline.
  auto check = [&](bool wait, absl::Time until, health::HealthCheckResponse* response) {
    grpc::ClientContext context;
    context.set_wait_for_ready(wait);
    context.set_deadline(absl::ToChronoTime(until));
    return stub->Check(&context, request, response);
  };
  std::string last = "no answer";
  // Whether an answer says the server serves (one without a health service answers too);
  // otherwise keeps what it said in `last`.
  auto serving = [&](const grpc::Status& s, const health::HealthCheckResponse& response) {
    if (s.ok() && response.status() == health::HealthCheckResponse::SERVING) return true;
    if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) return true;
    if (s.ok()) {
      last = absl::StrCat("health check says ",
                          health::HealthCheckResponse::ServingStatus_Name(response.status()));
    } else if (s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      last = FromGrpcStatus(s).ToString();
    }
    return false;
  };
  while (absl::Now() < deadline) {
    health::HealthCheckResponse response;
    if (serving(check(true, deadline, &response), response)) return absl::OkStatus();
    std::this_thread::sleep_for(
        absl::ToChronoNanoseconds(std::min(absl::Milliseconds(100), deadline - absl::Now())));
  }
  // Nothing answered in time: one call that does not wait says why the connection failed (or,
  // with no time to wait at all, whether the server serves now).
  health::HealthCheckResponse response;
  if (serving(check(false, absl::Now() + absl::Seconds(1), &response), response)) {
    return absl::OkStatus();
  }
  return absl::UnavailableError(
      absl::StrFormat("%s is not serving after %s: %s", target_,
                      absl::FormatDuration(absl::Ceil(timeout, absl::Milliseconds(1))), last));
}

}  // namespace gemm::client
