// gemm_server: flags -> ServerOptions, backend selection, engine + gRPC service wiring, TLS and
// caller authentication, the weight repository (loaded before the server listens, rescanned on
// SIGHUP), health and reflection, Prometheus metrics, the listener's guards (taken port,
// open-file limit, connection cap), graceful drain on SIGTERM/SIGINT.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <malloc.h>
#if GEMM_HAVE_TCMALLOC
#include <gperftools/tcmalloc.h>
#endif

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/abseil_runtime.h"
#include "common/channel_args.h"
#include "common/cli_flags.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "common/transport_options.h"
#include "server/core/engine.h"
#include "server/core/metrics.h"
#include "server/core/weight_repository.h"
#include "server/core/weight_repository_reloader.h"
#include "server/cpu/cpu_backend.h"
#include "server/grpc/authorizer.h"
#include "server/grpc/gemm_service.h"
#include "server/grpc/server_credentials.h"
#include "server/listener/accept_guard.h"
#include "server/listener/open_files.h"
#include "server/listener/port_in_use.h"
#include "server/options/server_options.h"
#include "server/process/termination_signals.h"

#ifndef GEMM_HAVE_TCMALLOC
#define GEMM_HAVE_TCMALLOC 0
#endif
#ifdef GEMM_HAVE_CUDA_BACKEND
#include "server/gpu/cuda_backend.h"
#include "server/process/pinned_heap.h"
#endif

namespace {

using gemm::server::ProcessOptions;
using gemm::server::ServerOptions;

// The allocator serving malloc, for the start-up log.
std::string AllocatorName() {
#if GEMM_HAVE_TCMALLOC
  return absl::StrCat("tcmalloc ", tc_version(nullptr, nullptr, nullptr));
#else
  return "glibc malloc";
#endif
}

absl::StatusOr<std::unique_ptr<gemm::core::Backend>> MakeBackend(const ServerOptions& o) {
  const std::string& backend = o.process.backend;
  if (backend != "auto" && backend != "cpu" && backend != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend: '", backend, "' is not one of auto, cpu, cuda"));
  }
#ifdef GEMM_HAVE_CUDA_BACKEND
  if (backend == "cuda" || (backend == "auto" && gemm::gpu::CudaDeviceCount() > 0)) {
    auto cuda = gemm::gpu::CreateCudaBackend(o.cuda);
    if (cuda.ok() && o.cuda.pinned_heap_bytes > 0) {
      auto heap = gemm::server::StartPinnedHeap(o.cuda.pinned_heap_bytes);
      if (heap.ok()) {
        GEMM_LOG(INFO) << "pinned heap: " << (*heap >> 20)
                       << " MiB; the GPU reads requests' A where gRPC received them";
      } else {
        GEMM_LOG(WARNING) << "no pinned heap: " << heap.status();
      }
    }
    return cuda;
  }
#else
  if (backend == "cuda") {
    return absl::FailedPreconditionError("--backend=cuda: this build has no CUDA support");
  }
#endif
  return gemm::cpu::CreateCpuBackend(o.cpu);
}

// Logs the limits in force and how those derived from the host's memory came about.
void LogLimits(const gemm::core::GemmEngine& engine) {
  using gemm::core::FormatBytes;
  for (const std::string& note : engine.limit_notes()) GEMM_LOG(INFO) << note;
  const gemm::core::Limits& l = engine.limits();
  GEMM_LOG(INFO) << "limits: in flight " << FormatBytes(l.max_in_flight_bytes) << ", request "
                 << FormatBytes(l.max_request_bytes) << ", response "
                 << FormatBytes(l.max_response_bytes) << ", message "
                 << FormatBytes(l.max_message_bytes) << ", resident "
                 << FormatBytes(l.max_resident_bytes) << ", shared memory "
                 << FormatBytes(l.max_shared_memory_bytes) << ", dim " << l.max_dim << ", problems "
                 << l.max_problems;
}

// The start-up error for a gRPC port another process listens on.
std::string PortInUseMessage(int port) {
  return absl::StrCat("port ", port,
                      " is in use: another process listens on it (--reuse_port shares a port "
                      "among servers that all pass it)");
}

// Caps client connections to the gRPC `port` once the server listens (--max_connections, or
// what the open-file limit leaves), and logs the descriptor budget.
void CapConnections(const ProcessOptions& o, const gemm::server::OpenFileLimit& files, int port) {
  const int64_t open = gemm::server::CountOpenFiles();
  const int64_t room = gemm::server::DefaultMaxConnections(files.now, open);
  const int64_t cap = o.max_connections > 0 ? o.max_connections : room;
  gemm::server::SetConnectionCap(cap, port);
  GEMM_LOG(INFO) << "open files: limit " << files.now
                 << (files.now != files.before ? absl::StrCat(" (raised from ", files.before, ")")
                                               : std::string())
                 << ", " << open << " open; up to " << cap << " client connections";
  if (cap > room) {
    GEMM_LOG(WARNING) << "--max_connections=" << cap << " is more than the open-file limit leaves "
                      << "room for (" << room << "): connections past that are shed when the "
                      << "process runs out of descriptors";
  }
}

// Raises the open-file limit into `files` and checks what must hold before anything starts: a
// sane connection cap, a free port (unless shared), the accept guard. Logs and returns false on
// an error.
bool PrepareProcess(const ProcessOptions& o, gemm::server::OpenFileLimit* files) {
  *files = gemm::server::RaiseOpenFileLimit();
  if (o.max_connections < 0) {
    GEMM_LOG(ERROR) << "--max_connections must be >= 0, got " << o.max_connections;
    return false;
  }
  if (!o.reuse_port && gemm::server::PortInUse(o.host, o.port)) {
    GEMM_LOG(ERROR) << PortInUseMessage(o.port);
    return false;
  }
  if (absl::Status s = gemm::server::InstallAcceptGuard(); !s.ok()) {
    GEMM_LOG(ERROR) << s;
    return false;
  }
  return true;
}

// The engine and the metrics it reports to (declared first: they outlive the engine).
struct EngineAndMetrics {
  std::unique_ptr<gemm::core::Metrics> metrics;
  std::unique_ptr<gemm::core::GemmEngine> engine;
};

// Creates the backend, the metrics (and their HTTP endpoint) and the engine, logging the
// backend's devices and the limits in force; nullopt, logged, on an error.
std::optional<EngineAndMetrics> BuildEngine(const ServerOptions& o) {
  auto backend = MakeBackend(o);
  if (!backend.ok()) {
    GEMM_LOG(ERROR) << "backend: " << backend.status();
    return std::nullopt;
  }
  GEMM_LOG(INFO) << "backend: " << (*backend)->Name();
  for (const auto& d : (*backend)->Describe().devices) {
    GEMM_LOG(INFO) << "device " << d.ordinal << ": " << d.name << ", serving kernel " << d.kernel;
  }
  auto metrics = gemm::core::Metrics::Create(o.process.metrics_port, o.process.metrics_host);
  if (!metrics.ok()) {
    GEMM_LOG(ERROR) << "metrics: " << metrics.status();
    return std::nullopt;
  }
  gemm::core::GemmEngine::Options engine_options = o.engine;
  engine_options.batcher.metrics = metrics->get();  // queue depth and drop counters
  auto engine = gemm::core::GemmEngine::Create(engine_options, std::move(*backend));
  if (!engine.ok()) {
    GEMM_LOG(ERROR) << "engine: " << engine.status();
    return std::nullopt;
  }
  LogLimits(**engine);
  return EngineAndMetrics{.metrics = std::move(*metrics), .engine = std::move(*engine)};
}

// Loads the weight repository of `o` (none without --weights) into the engine's registry before
// the server listens, so that it reports SERVING with every weight in place. Null when there is
// none; sets `failed` (logged) when a path, file or tensor could not be loaded.
std::unique_ptr<gemm::core::WeightRepository> LoadWeights(const ServerOptions& o,
                                                          const EngineAndMetrics& core,
                                                          bool* failed) {
  *failed = false;
  if (o.weights.paths.empty()) return nullptr;
  gemm::core::WeightRepository::Options options = o.weights;
  options.metrics = core.metrics.get();
  auto repository = gemm::core::WeightRepository::Create(
      std::move(options), &core.engine->registry(), core.engine->limits().max_dim);
  if (!repository.ok()) {
    GEMM_LOG(ERROR) << repository.status();
    *failed = true;
    return nullptr;
  }
  if (!(*repository)->ScanAndLog()) {
    GEMM_LOG(ERROR) << "weights: the repository did not load (see above; --weights_strict makes "
                       "skipped tensors errors too)";
    *failed = true;
  }
  return std::move(*repository);
}

// Creates the gRPC service over `engine`, reporting every RPC to `metrics`, and logs its stream
// and upload bounds; null, logged, on an error.
std::unique_ptr<gemm::service::GemmServiceImpl> BuildService(const ServerOptions& o,
                                                             gemm::core::GemmEngine* engine,
                                                             gemm::core::Metrics* metrics) {
  gemm::service::GemmServiceImpl::Options service_options = o.service;
  auto authorizer = gemm::service::Authorizer::Create(o.auth);
  if (!authorizer.ok()) {
    GEMM_LOG(ERROR) << "auth: " << authorizer.status();
    return nullptr;
  }
  if ((*authorizer)->enabled()) service_options.authorizer = std::move(*authorizer);
  service_options.observer = [metrics](absl::string_view method, absl::StatusCode code,
                                       const gemm::core::Timing* timing) {
    metrics->RecordRpc(method, static_cast<int>(code));
    if (timing != nullptr) metrics->RecordTiming(*timing);
  };
  auto service = gemm::service::GemmServiceImpl::Create(engine, std::move(service_options));
  if (!service.ok()) {
    GEMM_LOG(ERROR) << "service: " << service.status();
    return nullptr;
  }
  const auto& answers = (*service)->options().answers;
  GEMM_LOG(INFO) << "stream answers held: up to " << (answers.per_stream_bytes >> 20)
                 << " MiB per stream, " << (answers.server_bytes >> 20) << " MiB in all"
                 << (o.service.answers.server_bytes == 0 ? " (a quarter of usable memory)" : "")
                 << "; uploads idle for " << (*service)->options().upload_idle_timeout
                 << " are abandoned";
  return std::move(*service);
}

// OK when the security flags fit together (bearer tokens only over TLS, certificate roles only
// with client certificates); warns when the port takes everyone in plaintext.
absl::Status CheckSecurity(const ServerOptions& o) {
  if (!o.auth.tokens_file.empty() && !o.process.tls.enabled()) {
    return absl::InvalidArgumentError(
        "--auth_tokens_file needs --tls_cert and --tls_key: bearer tokens must not cross the "
        "network in plaintext");
  }
  if (!o.auth.cert_roles_file.empty() && o.process.tls.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--auth_cert_roles needs --tls_client_ca: only verified client certificates name callers");
  }
  if (!o.process.tls.enabled()) {
    GEMM_LOG(WARNING) << "no --tls_cert: the gRPC port is plaintext and every caller that reaches "
                         "it may do everything (docs/security.md)";
  } else if (o.auth.tokens_file.empty() && o.auth.cert_roles_file.empty()) {
    GEMM_LOG(WARNING) << "no --auth_tokens_file or --auth_cert_roles: every caller that completes "
                         "the TLS handshake may do everything (docs/security.md)";
  }
  return absl::OkStatus();
}

// The gRPC port's channel arguments: the transport settings, then the --grpc_arg items (which
// override them).
absl::StatusOr<std::vector<gemm::ChannelArg>> ServerChannelArgs(const ProcessOptions& o) {
  absl::StatusOr<std::vector<gemm::ChannelArg>> args = gemm::TransportChannelArgs(o.transport);
  if (!args.ok()) return args.status();
  absl::StatusOr<std::vector<gemm::ChannelArg>> extra = gemm::ParseChannelArgs(o.grpc_args);
  if (!extra.ok()) return extra.status();
  args->insert(args->end(), extra->begin(), extra->end());
  return args;
}

// Sets the listening address and credentials, message sizes, connection age and transport
// arguments.
void ConfigureBuilder(const ProcessOptions& o, const std::vector<gemm::ChannelArg>& channel_args,
                      int max_message_bytes,
                      const std::shared_ptr<grpc::ServerCredentials>& credentials,
                      grpc::ServerBuilder& builder, int* bound_port) {
  builder.AddListeningPort(absl::StrCat(o.host, ":", o.port), credentials, bound_port);
  builder.SetMaxReceiveMessageSize(max_message_bytes);
  builder.SetMaxSendMessageSize(max_message_bytes);
  if (const int64_t age_ms = absl::ToInt64Milliseconds(o.max_connection_age); age_ms > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, static_cast<int>(age_ms));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(o.drain_timeout)));
  }
  for (const gemm::ChannelArg& a : channel_args) {
    if (const int* v = std::get_if<int>(&a.value)) {
      builder.AddChannelArgument(a.name, *v);
    } else {
      builder.AddChannelArgument(a.name, std::get<std::string>(a.value));
    }
  }
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, o.reuse_port ? 1 : 0);
}

// Starts the gRPC server (with health checking, and reflection unless turned off) serving
// `service` with the port's credentials; sets `bound_port`. Null, logged, when the credentials
// cannot be made or it cannot listen.
std::unique_ptr<grpc::Server> StartGrpcServer(const ProcessOptions& o,
                                              const std::vector<gemm::ChannelArg>& channel_args,
                                              const gemm::core::GemmEngine& engine,
                                              gemm::service::GemmServiceImpl* service,
                                              int* bound_port) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      gemm::service::MakeServerCredentials(o.tls);
  if (!credentials.ok()) {
    GEMM_LOG(ERROR) << credentials.status();
    return nullptr;
  }
  grpc::EnableDefaultHealthCheckService(true);
  if (o.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // NOTE: the engine's limits are resolved: max_message_bytes fits an int.
  ConfigureBuilder(o, channel_args, static_cast<int>(engine.limits().max_message_bytes),
                   *credentials, builder, bound_port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || *bound_port == 0) {
    GEMM_LOG(ERROR) << (gemm::server::PortInUse(o.host, o.port)
                            ? PortInUseMessage(o.port)
                            : absl::StrCat("could not listen on ", o.host, ":", o.port));
    return nullptr;
  }
  return server;
}

// Starts the plaintext health-only server on --health_port (none when 0); null, logged, when it
// cannot listen. It serves no other service, so it opens nothing the TLS port guards.
std::unique_ptr<grpc::Server> StartHealthServer(const ProcessOptions& o, bool* failed) {
  *failed = false;
  if (o.health_port == 0) return nullptr;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort(absl::StrCat(o.host, ":", o.health_port),
                           grpc::InsecureServerCredentials(), &bound);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound == 0) {
    GEMM_LOG(ERROR) << "--health_port: could not listen on " << o.host << ":" << o.health_port;
    *failed = true;
    return nullptr;
  }
  return server;
}

// Tells health checks (on the gRPC port and the health port, if any) whether the server and the
// GemmService in it take requests.
void SetServing(grpc::Server& server, grpc::Server* health_server, bool serving) {
  for (grpc::Server* s : {&server, health_server}) {
    if (s == nullptr) continue;
    auto* health = s->GetHealthCheckService();
    health->SetServingStatus("gemm.v1.GemmService", serving);
    health->SetServingStatus(serving);
  }
}

// A thread that sets the periodic gauges (pools, resident bytes, shared memory, shed connections,
// serving kernel, pinned staging and inline answers) every 500 ms until Stop().
class GaugeThread {
 public:
  // `metrics` and `engine` must outlive the thread.
  GaugeThread(gemm::core::Metrics* metrics, gemm::core::GemmEngine* engine)
      : thread_([this, metrics, engine] { Loop(*metrics, *engine); }) {}
  ~GaugeThread() { Stop(); }

  // Stops the thread and waits for it. Idempotent.
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop(gemm::core::Metrics& m, gemm::core::GemmEngine& engine) {
    gemm::SetCurrentThreadName("gemm-gauges");
    while (!stop_.load()) {
      m.SetResidentMatrices(engine.registry().List().size(), engine.registry().resident_bytes());
      m.SetSharedMemory(engine.shared_memory().List().size(), engine.shared_memory().bytes());
      const gemm::server::ShedConnections shed = gemm::server::ConnectionsShed();
      m.SetConnectionsShed("max_connections", shed.max_connections);
      m.SetConnectionsShed("out_of_descriptors", shed.out_of_descriptors);
      const gemm::core::BackendDescription backend = engine.backend().Describe();
      for (const auto& d : backend.devices) {
        m.SetPoolBytes(d.ordinal, d.pool_used_bytes, d.pool_capacity_bytes);
        m.SetKernel(d.ordinal, d.kernel);
      }
      m.SetStaging(backend.staging);
      // Native kernel variants judged by qualification (they carry a reason when unusable).
      for (const auto& k : backend.kernels) {
        if (k.usable || !k.reason.empty()) m.SetVariantUsability(k.name, k.usable, k.reason);
      }
      absl::SleepFor(absl::Milliseconds(500));
    }
  }

  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts once stop_ is set up
};

// The longest the drain waits for clients to stop sending before the listener closes.
constexpr absl::Duration kDrainNotice = absl::Seconds(2);

// Waits (up to `notice`) until no request has been refused for 100 ms: clients that check health
// (the client libraries' service config) stop sending within a round trip of NOT_SERVING, and
// those that do not are answered UNAVAILABLE, which they retry elsewhere.
// NOTE: gRPC cancels a call that arrives after Server::Shutdown began and before the client
// saw the GOAWAY (the client gets CANCELLED, which it must not retry), so the drain closes the
// listener only once calls stopped coming.
void AwaitClientsLeaving(const gemm::service::GemmServiceImpl& service, absl::Duration notice) {
  const absl::Time end = absl::Now() + notice;
  int64_t refused = service.RefusedWhileDraining();
  absl::Time quiet_since = absl::Now();
  while (absl::Now() < end && absl::Now() - quiet_since < absl::Milliseconds(100)) {
    absl::SleepFor(absl::Milliseconds(10));
    const int64_t now = service.RefusedWhileDraining();
    if (now != refused) {
      refused = now;
      quiet_since = absl::Now();
    }
  }
}

// Waits for SIGTERM or SIGINT, stops the weight repository's rescans (`reloader`, when there is
// one), then drains: new requests, also on streams already open, are
// refused from here on; the ones accepted before are answered. Shutdown waits (up to the drain
// timeout) for every call, and a stream call ends only after each request it handed to the
// engine is answered, so the engine keeps running until Shutdown returns.
void WaitAndDrain(gemm::server::TerminationSignals& signals, absl::Duration drain_timeout,
                  gemm::service::GemmServiceImpl& service, grpc::Server& server,
                  grpc::Server* health_server, gemm::core::GemmEngine& engine, GaugeThread& gauges,
                  gemm::core::WeightRepositoryReloader* reloader) {
  const int sig = signals.AwaitFirst();
  signals.OnHangup(nullptr);
  if (reloader != nullptr) reloader->Stop();
  GEMM_LOG(INFO) << "signal " << sig << ": draining (up to " << drain_timeout << ")";
  service.StartDrain();
  SetServing(server, health_server, false);
  AwaitClientsLeaving(service, std::min(drain_timeout, kDrainNotice));
  server.Shutdown(std::chrono::system_clock::now() + absl::ToChronoSeconds(drain_timeout));
  if (health_server != nullptr) health_server->Shutdown();
  engine.Shutdown();
  gauges.Stop();
  GEMM_LOG(INFO) << "stopped";
}

// Serves with options `o` until SIGTERM or SIGINT; 0 after a drain, 1 when start-up fails.
int Run(const ServerOptions& o) {
  gemm::server::TerminationSignals signals;
  if (absl::Status s = CheckSecurity(o); !s.ok()) {
    GEMM_LOG(ERROR) << s;
    return 1;
  }
  gemm::server::OpenFileLimit files;
  if (!PrepareProcess(o.process, &files)) return 1;
  absl::StatusOr<std::vector<gemm::ChannelArg>> channel_args = ServerChannelArgs(o.process);
  if (!channel_args.ok()) {
    GEMM_LOG(ERROR) << channel_args.status();
    return 1;
  }
  std::optional<EngineAndMetrics> core = BuildEngine(o);
  if (!core.has_value()) return 1;
  bool weights_failed = false;
  std::unique_ptr<gemm::core::WeightRepository> weights = LoadWeights(o, *core, &weights_failed);
  if (weights_failed) return 1;
  std::unique_ptr<gemm::service::GemmServiceImpl> service =
      BuildService(o, core->engine.get(), core->metrics.get());
  if (service == nullptr) return 1;
  int bound_port = 0;
  std::unique_ptr<grpc::Server> server =
      StartGrpcServer(o.process, *channel_args, *core->engine, service.get(), &bound_port);
  if (server == nullptr) return 1;
  bool health_failed = false;
  std::unique_ptr<grpc::Server> health_server = StartHealthServer(o.process, &health_failed);
  if (health_failed) return 1;
  CapConnections(o.process, files, bound_port);
  SetServing(*server, health_server.get(), true);
  GEMM_LOG(INFO) << "gemm_server " << o.service.version << " listening on " << o.process.host << ":"
                 << bound_port << (o.process.tls.enabled() ? " (TLS)" : " (plaintext)")
                 << (o.process.metrics_port ? absl::StrCat(", metrics on ", o.process.metrics_host,
                                                           ":", o.process.metrics_port)
                                            : std::string())
                 << "; allocator " << AllocatorName();
  std::fflush(stdout);
  GaugeThread gauges(core->metrics.get(), core->engine.get());
  std::optional<gemm::core::WeightRepositoryReloader> reloader;
  if (weights != nullptr) {
    reloader.emplace(weights.get());
    signals.OnHangup([&reloader] { reloader->Trigger(); });
  }
  WaitAndDrain(signals, o.process.drain_timeout, *service, *server, health_server.get(),
               *core->engine, gauges, reloader ? &*reloader : nullptr);
  return 0;
}

// Keeps freed large buffers in glibc's heap (no mmap, no trimming) when asked and when glibc
// serves malloc.
void ConfigureAllocator(const ProcessOptions& o) {
  if (o.reuse_large_buffers && !GEMM_HAVE_TCMALLOC) {
    // NOTE: glibc serves allocations of >= 32 MiB (the most its mmap threshold can be raised
    // to) with a fresh mmap and unmaps them on free, so every large request and response paid
    // a page fault per 4 KiB. Without mmap they come from the heap, which keeps freed memory for
    // the next request.
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
}

}  // namespace

int main(int argc, char** argv) {
  gemm::DisableMutexDeadlockDetection();
  const std::vector<char*> args = gemm::ParseCommandLine(
      argc, argv,
      {.usage = "Serves BF16 GEMM over gRPC.\n"
                "  gemm_server [--port=50051] [--backend=auto|cpu|cuda] [flags]\n"
                "--help lists the flags most deployments set; --helpfull lists every flag.",
       .help_files = gemm::server::IsUserFlagFile});
  if (args.size() > 1) {
    std::fprintf(stderr, "unexpected argument '%s'\nTry --help.\n", args[1]);
    return gemm::kUsageErrorExit;
  }
  const ServerOptions options = gemm::server::ServerOptionsFromFlags();
  ConfigureAllocator(options.process);
  return Run(options);
}
