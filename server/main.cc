// gemm_server: flags -> Options, backend selection, engine + gRPC service wiring, health and
// reflection, Prometheus metrics, the listener's guards (taken port, open-file limit, connection
// cap), graceful drain on SIGTERM/SIGINT.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <malloc.h>
#include <signal.h>
#if GEMM_HAVE_TCMALLOC
#include <gperftools/tcmalloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/abseil_runtime.h"
#include "common/channel_args.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "server/core/engine.h"
#include "server/core/metrics.h"
#include "server/cpu/cpu_backend.h"
#include "server/grpc/gemm_service.h"
#include "server/listener/accept_guard.h"
#include "server/listener/open_files.h"
#include "server/listener/port_in_use.h"

#ifndef GEMM_HAVE_TCMALLOC
#define GEMM_HAVE_TCMALLOC 0
#endif
#ifdef GEMM_HAVE_CUDA_BACKEND
#include "server/gpu/cuda_backend.h"
#endif

ABSL_FLAG(std::string, host, "0.0.0.0", "Address to listen on.");
ABSL_FLAG(int32_t, port, 50051, "gRPC port.");
ABSL_FLAG(int32_t, metrics_port, 9464, "Prometheus /metrics HTTP port; 0 disables.");
ABSL_FLAG(std::string, backend, "auto", "auto|cpu|cuda: auto uses CUDA when a GPU is present.");
ABSL_FLAG(int32_t, drain_timeout_s, 30, "On SIGTERM/SIGINT, seconds to let in-flight RPCs finish.");
ABSL_FLAG(int32_t, max_connection_age_s, 0,
          "Close client connections after this many seconds (0: never), so round_robin clients "
          "re-resolve DNS and reach new replicas after a scale-out.");
ABSL_FLAG(std::vector<std::string>, grpc_arg, {},
          "Extra gRPC server arguments, name=value[,name=value...] (integers where the value is "
          "one), e.g. grpc.http2.max_frame_size=1048576: transport tuning.");
ABSL_FLAG(int64_t, max_dim, gemm::core::Limits{}.max_dim,
          "Largest M, N or K accepted (at most 2147483647).");
ABSL_FLAG(int64_t, max_request_bytes, gemm::core::Limits{}.max_request_bytes,
          "Largest operand payload of a request (bytes; lowered to --max_in_flight_bytes).");
ABSL_FLAG(int64_t, max_message_bytes, gemm::core::Limits{}.max_message_bytes,
          "gRPC max send/receive message size (bytes, 4 MiB to 2147483647).");
ABSL_FLAG(int64_t, max_problems, gemm::core::Limits{}.max_problems,
          "Largest batch count or group size.");
ABSL_FLAG(int64_t, max_resident_bytes, gemm::core::Limits{}.max_resident_bytes,
          "Cap on resident matrix bytes (bytes; with the cpu backend, which keeps them in host "
          "memory, lowered to 25% of host memory).");
ABSL_FLAG(int64_t, max_shared_memory_bytes, gemm::core::Limits{}.max_shared_memory_bytes,
          "Cap on bytes of registered client shared-memory regions; 0 turns them off.");
ABSL_FLAG(int64_t, max_shared_memory_regions, gemm::core::Limits{}.max_shared_memory_regions,
          "Most registered client shared-memory regions at once (each is one memory mapping; "
          "lowered to half the mappings the process has left under vm.max_map_count).");
ABSL_FLAG(std::string, shared_memory_key_prefix, gemm::core::Limits{}.shared_memory_key_prefix,
          "Clients may only register POSIX shared-memory objects whose names start with this.");

// Memory requests may hold (see server/core/limits.h).
ABSL_FLAG(int64_t, max_response_bytes, gemm::core::Limits{}.max_response_bytes,
          "Largest output payload of one response (bytes; outputs written to shared memory "
          "excluded; lowered to --max_in_flight_bytes).");
ABSL_FLAG(int64_t, max_in_flight_bytes, gemm::core::Limits{}.max_in_flight_bytes,
          "Bytes the server holds at once for requests accepted and not yet answered: operands "
          "in request messages plus responses; a request that does not fit gets "
          "RESOURCE_EXHAUSTED (bytes; 0: 25% of the host's memory, physical RAM or the cgroup "
          "limit if smaller; at most 50% of it).");
ABSL_FLAG(int64_t, max_queue_delay_us, 50,
          "Longest a request waits to be coalesced while its GPU is busy (us).");
ABSL_FLAG(int64_t, max_batch_rows, 4096, "Most rows (sum of M) in one coalesced GEMM.");
ABSL_FLAG(int64_t, queue_capacity, 1024, "Most queued requests; beyond it UNAVAILABLE.");
ABSL_FLAG(bool, batching, true, "Coalesce requests that share a resident B.");
ABSL_FLAG(bool, dispatch_when_idle, true,
          "An idle GPU (see --idle_units_per_device; the CPU backend: no batch running) takes "
          "its next batch at once instead of waiting --max_queue_delay_us for company (the "
          "delay applies while it is busy).");
ABSL_FLAG(int32_t, cpu_workers, 2, "CPU backend worker threads.");
ABSL_FLAG(int64_t, pool_cap_bytes, 0, "CUDA: device pool cap per GPU; 0 = 90% of free memory.");
ABSL_FLAG(int64_t, staging_bytes, int64_t{2} << 30,
          "CUDA: pinned host staging bytes in all, shared by the GPUs.");
ABSL_FLAG(int64_t, staging_slab_bytes, int64_t{512} << 20,
          "CUDA: one pinned staging slab (clamped to --staging_bytes); the most staging one "
          "request or coalesced batch takes. A larger request is copied from pageable memory.");
ABSL_FLAG(int32_t, host_copy_threads, 8,
          "CUDA: threads that copy request bytes into staging and results out of it, shared by "
          "the GPUs; 0 copies on each GPU's own executor threads.");
ABSL_FLAG(int64_t, host_copy_chunk_bytes, int64_t{1} << 20,
          "CUDA: the smallest piece a host copy (request bytes into staging, results out of it) "
          "is cut into for the host copy threads; a copy under two pieces runs on the calling "
          "thread alone.");
ABSL_FLAG(int32_t, streams_per_device, 4, "CUDA: streams per GPU.");
ABSL_FLAG(int32_t, launch_threads_per_device, 4,
          "CUDA: threads per GPU that pull batches and enqueue their GPU work.");
ABSL_FLAG(bool, batched_copies, true,
          "CUDA: submit a unit's contiguous copies to and from pinned host memory with one "
          "cudaMemcpyBatchAsync call each way instead of one call per copy.");
ABSL_FLAG(bool, merge_copies, true,
          "CUDA: copy a coalesced unit's stacked rows to and from staging as one copy each way "
          "wherever they lie back to back on both sides, instead of one copy per request.");
ABSL_FLAG(int32_t, completion_threads_per_device, 8,
          "CUDA: threads per GPU that complete finished work and answer the requests.");
ABSL_FLAG(bool, serial_kernels, true,
          "CUDA: run every unit's kernels on one compute stream per GPU (per priority), one after "
          "another, while their copies overlap on the other streams; else each unit's kernels "
          "run on its own stream and may share the GPU with other units' kernels. On an H200 it "
          "made the event-timed kernel time match the kernel alone and the compute-bound load "
          "10% faster.");
ABSL_FLAG(bool, poll_completion, true,
          "CUDA: learn that a unit's GPU work finished by polling its last event on a thread per "
          "GPU, instead of a CUDA host function enqueued after the work (on an H200: "
          "decode M=16 +20-26% without batching, +5-9% with).");
ABSL_FLAG(int32_t, idle_units_per_device, 1,
          "CUDA, with --dispatch_when_idle: a GPU counts as idle while at most this many of its "
          "units are unfinished on it (0: none; 1: the next batch's copies overlap the last "
          "unit's kernel).");
ABSL_FLAG(bool, device_units_on_compute_stream, true,
          "CUDA, with --serial_kernels: a unit whose operands and outputs all live in a client's "
          "GPU memory (CUDA IPC regions) runs wholly on the compute stream: copy kernel in, "
          "GEMM, copy kernel out, with no cross-stream events.");
ABSL_FLAG(int64_t, watcher_completion_bytes, int64_t{64} << 10,
          "CUDA, with --poll_completion: a finished unit whose results copy at most this many "
          "bytes out of staging into the responses is completed, and its first request "
          "answered, on the polling thread itself (saves a hand-off); larger ones go to the "
          "completion threads so the polling goes on. -1: always the completion threads.");
ABSL_FLAG(int32_t, max_units_in_flight_per_device, 0,
          "CUDA: a GPU pulls more work from the queue only while fewer units (kernel-call groups: "
          "a coalesced batch or a request) than this are in flight on it; 0: no bound.");
ABSL_FLAG(double, max_work_in_flight_ms_per_device, 1,
          "CUDA: a GPU pulls more work from the queue only while the work in flight on it, "
          "estimated from FLOPs and bytes at the GPU's peak rates, is under this many "
          "milliseconds or fewer than two units are in flight (one launch thread pulling at a "
          "time); 0: no bound. Keeps large requests in the shared queue for whichever GPU frees "
          "up first, and mixture-of-experts steps there long enough to batch (H200: 28k expert "
          "steps/s at 1 ms, 11k at 7 ms; decode and two-GPU loads alike), leaves small ones "
          "unbounded.");
ABSL_FLAG(bool, replicate_resident, false, "CUDA: place resident matrices on every GPU.");
ABSL_FLAG(int32_t, gpu_timing_every, 8,
          "CUDA: time the GPU phases (copy-in, compute, copy-out: CUDA events) of every n-th unit "
          "per GPU; 1 times every unit. The others' answers carry host times only and set "
          "Timing.gpu_timing_skipped; the Prometheus copy-in, compute and copy-out histograms "
          "observe the timed ones. Timing every unit costs ~10 us of host time per unit: decode "
          "at 64 callers ran 7% slower timed than untimed (H100).");
ABSL_FLAG(bool, self_test, true, "CUDA: self-test the kernel against cuBLASLt at start-up.");
// The gRPC service's streams and uploads.
ABSL_FLAG(int64_t, max_stream_answer_bytes, int64_t{256} << 20,
          "Bytes of answers one GemmStream/GemmStreamPacked call may hold (being computed, "
          "waiting or being written) before the server stops reading its requests until the "
          "client reads answers (HTTP/2 flow control then holds the client back); a single "
          "larger answer still goes, alone. Default 268435456 (256 MiB).");
ABSL_FLAG(int64_t, max_answer_bytes, 0,
          "Bytes of stream answers all calls together may hold before every stream holding some "
          "stops reading until its answers are written. Default 0: a quarter of the host's "
          "physical memory.");
ABSL_FLAG(int32_t, upload_idle_timeout_s, 60,
          "A RegisterMatrix upload that receives no chunk for this many seconds ends "
          "DEADLINE_EXCEEDED and gives its reserved bytes back. Default 60.");

ABSL_FLAG(
    bool, reuse_large_buffers, true,
    "Keep freed payload-sized buffers in the heap for reuse instead of unmapping them "
    "(glibc malloc: no mmap, no trimming), so a request's 32 MiB response does not page-fault "
    "fresh memory every time. Builds with tcmalloc (the default) need no tuning for it.");

// The gRPC listener: who may share its port, and how many connections it holds.
ABSL_FLAG(bool, reuse_port, false,
          "Share --port with other processes that pass --reuse_port too (SO_REUSEPORT: the kernel "
          "spreads new connections over them). Default false: a port another process listens on "
          "is refused at start (\"port N is in use\", exit 1). Each process still needs its own "
          "--metrics_port.");
ABSL_FLAG(int64_t, max_connections, 0,
          "Most client connections held at once (counted by descriptor number); one past it is "
          "closed as soon as accepted. 0 (default): the open-file limit, which start-up raises "
          "to its hard limit, less the descriptors open once the server listens and a reserve "
          "of 1/8 of the limit (at least 32) for files, shared-memory regions and scrapes.");

namespace {

// The allocator serving malloc, for the start-up log.
std::string AllocatorName() {
#if GEMM_HAVE_TCMALLOC
  return absl::StrCat("tcmalloc ", tc_version(nullptr, nullptr, nullptr));
#else
  return "glibc malloc";
#endif
}

#ifndef GEMM_VERSION
#define GEMM_VERSION "dev"
#endif

struct Options {
  std::string host;
  int port = 0;
  int metrics_port = 0;
  std::string backend;
  absl::Duration drain_timeout;
  std::vector<std::string> grpc_args;  // --grpc_arg items, parsed when the server is built
  bool reuse_port = false;             // share the port with other processes (SO_REUSEPORT)
  int64_t max_connections = 0;         // client connections held at once; 0: from the file limit
  gemm::core::GemmEngine::Options engine;
  gemm::service::GemmServiceImpl::Options service;
  int cpu_workers = 2;
#ifdef GEMM_HAVE_CUDA_BACKEND
  gemm::gpu::CudaBackendOptions cuda;
#endif
};

Options OptionsFromFlags() {
  Options o;
  o.host = absl::GetFlag(FLAGS_host);
  o.port = absl::GetFlag(FLAGS_port);
  o.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  o.backend = absl::GetFlag(FLAGS_backend);
  o.drain_timeout = absl::Seconds(absl::GetFlag(FLAGS_drain_timeout_s));
  o.grpc_args = absl::GetFlag(FLAGS_grpc_arg);
  o.reuse_port = absl::GetFlag(FLAGS_reuse_port);
  o.max_connections = absl::GetFlag(FLAGS_max_connections);
  auto& l = o.engine.limits;
  l.max_dim = absl::GetFlag(FLAGS_max_dim);
  l.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  l.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  l.max_problems = absl::GetFlag(FLAGS_max_problems);
  l.max_resident_bytes = absl::GetFlag(FLAGS_max_resident_bytes);
  l.max_shared_memory_bytes = absl::GetFlag(FLAGS_max_shared_memory_bytes);
  l.max_shared_memory_regions = absl::GetFlag(FLAGS_max_shared_memory_regions);
  l.shared_memory_key_prefix = absl::GetFlag(FLAGS_shared_memory_key_prefix);
  l.max_response_bytes = absl::GetFlag(FLAGS_max_response_bytes);
  l.max_in_flight_bytes = absl::GetFlag(FLAGS_max_in_flight_bytes);
  auto& b = o.engine.batcher;
  b.max_queue_delay = absl::Microseconds(absl::GetFlag(FLAGS_max_queue_delay_us));
  b.max_batch_rows = absl::GetFlag(FLAGS_max_batch_rows);
  b.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  b.enable_batching = absl::GetFlag(FLAGS_batching);
  b.dispatch_when_idle = absl::GetFlag(FLAGS_dispatch_when_idle);
  o.cpu_workers = absl::GetFlag(FLAGS_cpu_workers);
  o.service = {
      .version = GEMM_VERSION,
      .answers = {.per_stream_bytes = absl::GetFlag(FLAGS_max_stream_answer_bytes),
                  .server_bytes = absl::GetFlag(FLAGS_max_answer_bytes)},
      .upload_idle_timeout = absl::Seconds(absl::GetFlag(FLAGS_upload_idle_timeout_s)),
  };
#ifdef GEMM_HAVE_CUDA_BACKEND
  o.cuda.pool_cap_bytes = absl::GetFlag(FLAGS_pool_cap_bytes);
  o.cuda.staging_bytes = absl::GetFlag(FLAGS_staging_bytes);
  o.cuda.staging_slab_bytes = absl::GetFlag(FLAGS_staging_slab_bytes);
  o.cuda.host_copy_threads = absl::GetFlag(FLAGS_host_copy_threads);
  o.cuda.host_copy_chunk_bytes = absl::GetFlag(FLAGS_host_copy_chunk_bytes);
  o.cuda.streams_per_device = absl::GetFlag(FLAGS_streams_per_device);
  o.cuda.launch_threads_per_device = absl::GetFlag(FLAGS_launch_threads_per_device);
  o.cuda.completion_threads_per_device = absl::GetFlag(FLAGS_completion_threads_per_device);
  o.cuda.batched_copies = absl::GetFlag(FLAGS_batched_copies);
  o.cuda.merge_copies = absl::GetFlag(FLAGS_merge_copies);
  o.cuda.serial_kernels = absl::GetFlag(FLAGS_serial_kernels);
  o.cuda.poll_completion = absl::GetFlag(FLAGS_poll_completion);
  o.cuda.watcher_completion_bytes = absl::GetFlag(FLAGS_watcher_completion_bytes);
  o.cuda.idle_units_per_device = absl::GetFlag(FLAGS_idle_units_per_device);
  o.cuda.device_units_on_compute_stream = absl::GetFlag(FLAGS_device_units_on_compute_stream);
  o.cuda.max_units_in_flight_per_device = absl::GetFlag(FLAGS_max_units_in_flight_per_device);
  o.cuda.max_work_in_flight_ms_per_device = absl::GetFlag(FLAGS_max_work_in_flight_ms_per_device);
  o.cuda.replicate_resident = absl::GetFlag(FLAGS_replicate_resident);
  o.cuda.self_test = absl::GetFlag(FLAGS_self_test);
  o.cuda.gpu_timing_every = absl::GetFlag(FLAGS_gpu_timing_every);
#endif
  return o;
}

absl::StatusOr<std::unique_ptr<gemm::core::Backend>> MakeBackend(const Options& o) {
  if (o.backend != "auto" && o.backend != "cpu" && o.backend != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--backend: '", o.backend, "' is not one of auto, cpu, cuda"));
  }
#ifdef GEMM_HAVE_CUDA_BACKEND
  if (o.backend == "cuda" || (o.backend == "auto" && gemm::gpu::CudaDeviceCount() > 0)) {
    return gemm::gpu::CreateCudaBackend(o.cuda);
  }
#else
  if (o.backend == "cuda") {
    return absl::FailedPreconditionError("--backend=cuda: this build has no CUDA support");
  }
#endif
  return gemm::cpu::CreateCpuBackend({.workers = o.cpu_workers});
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
void CapConnections(const Options& o, const gemm::server::OpenFileLimit& files, int port) {
  const int64_t open = gemm::server::CountOpenFiles();
  const int64_t room = gemm::server::DefaultMaxConnections(files.now, open);
  const int64_t cap = o.max_connections > 0 ? o.max_connections : room;
  gemm::server::SetConnectionCap(open + std::min(cap, std::numeric_limits<int64_t>::max() - open),
                                 port);
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

int Run(const Options& o) {
  // Block the termination signals in every thread; one waits for them below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const gemm::server::OpenFileLimit files = gemm::server::RaiseOpenFileLimit();
  if (o.max_connections < 0) {
    GEMM_LOG(ERROR) << "--max_connections must be >= 0, got " << o.max_connections;
    return 1;
  }
  if (!o.reuse_port && gemm::server::PortInUse(o.host, o.port)) {
    GEMM_LOG(ERROR) << PortInUseMessage(o.port);
    return 1;
  }
  if (absl::Status s = gemm::server::InstallAcceptGuard(); !s.ok()) {
    GEMM_LOG(ERROR) << s;
    return 1;
  }

  absl::StatusOr<std::vector<gemm::ChannelArg>> channel_args = gemm::ParseChannelArgs(o.grpc_args);
  if (!channel_args.ok()) {
    GEMM_LOG(ERROR) << channel_args.status();
    return 1;
  }
  auto backend = MakeBackend(o);
  if (!backend.ok()) {
    GEMM_LOG(ERROR) << "backend: " << backend.status();
    return 1;
  }
  GEMM_LOG(INFO) << "backend: " << (*backend)->Name();
  for (const auto& d : (*backend)->Describe().devices) {
    GEMM_LOG(INFO) << "device " << d.ordinal << ": " << d.name << ", serving kernel " << d.kernel;
  }
  auto metrics = gemm::core::Metrics::Create(o.metrics_port, o.host);
  if (!metrics.ok()) {
    GEMM_LOG(ERROR) << "metrics: " << metrics.status();
    return 1;
  }
  gemm::core::GemmEngine::Options engine_options = o.engine;
  engine_options.batcher.metrics = metrics->get();  // queue depth and drop counters
  auto engine = gemm::core::GemmEngine::Create(engine_options, std::move(*backend));
  if (!engine.ok()) {
    GEMM_LOG(ERROR) << "engine: " << engine.status();
    return 1;
  }
  LogLimits(**engine);
  gemm::core::Metrics* m = metrics->get();
  gemm::service::GemmServiceImpl::Options service_options = o.service;
  service_options.observer = [m](absl::string_view method, absl::StatusCode code,
                                 const gemm::core::Timing* timing) {
    m->RecordRpc(method, static_cast<int>(code));
    if (timing != nullptr) m->RecordTiming(*timing);
  };
  auto service = gemm::service::GemmServiceImpl::Create(engine->get(), std::move(service_options));
  if (!service.ok()) {
    GEMM_LOG(ERROR) << "service: " << service.status();
    return 1;
  }
  const auto& answers = (*service)->options().answers;
  GEMM_LOG(INFO) << "stream answers held: up to " << (answers.per_stream_bytes >> 20)
                 << " MiB per stream, " << (answers.server_bytes >> 20) << " MiB in all"
                 << (o.service.answers.server_bytes == 0 ? " (a quarter of physical memory)" : "")
                 << "; uploads idle for " << (*service)->options().upload_idle_timeout
                 << " are abandoned";

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string address = absl::StrCat(o.host, ":", o.port);
  int bound_port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &bound_port);
  // NOTE: the engine's limits are resolved: max_message_bytes fits an int.
  const int max_message_bytes = static_cast<int>((*engine)->limits().max_message_bytes);
  builder.SetMaxReceiveMessageSize(max_message_bytes);
  builder.SetMaxSendMessageSize(max_message_bytes);
  if (const int age = absl::GetFlag(FLAGS_max_connection_age_s); age > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, age * 1000);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(o.drain_timeout)));
  }
  for (const gemm::ChannelArg& a : *channel_args) {
    if (const int* v = std::get_if<int>(&a.value)) {
      builder.AddChannelArgument(a.name, *v);
    } else {
      builder.AddChannelArgument(a.name, std::get<std::string>(a.value));
    }
  }
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, o.reuse_port ? 1 : 0);
  builder.RegisterService(service->get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    GEMM_LOG(ERROR) << (gemm::server::PortInUse(o.host, o.port)
                            ? PortInUseMessage(o.port)
                            : absl::StrCat("could not listen on ", address));
    return 1;
  }
  CapConnections(o, files, bound_port);
  auto* health = server->GetHealthCheckService();
  health->SetServingStatus("gemm.v1.GemmService", true);
  health->SetServingStatus(true);
  GEMM_LOG(INFO) << "gemm_server " << GEMM_VERSION << " listening on " << o.host << ":"
                 << bound_port
                 << (o.metrics_port ? absl::StrCat(", metrics on :", o.metrics_port)
                                    : std::string())
                 << "; allocator " << AllocatorName();
  std::fflush(stdout);

  // Periodic gauges (pools, resident bytes, serving kernel) until shutdown.
  std::atomic<bool> stop_gauges{false};
  std::thread gauges([&] {
    gemm::SetCurrentThreadName("gemm-gauges");
    while (!stop_gauges.load()) {
      m->SetResidentMatrices((*engine)->registry().List().size(),
                             (*engine)->registry().resident_bytes());
      m->SetSharedMemory((*engine)->shared_memory().List().size(),
                         (*engine)->shared_memory().bytes());
      const gemm::server::ShedConnections shed = gemm::server::ConnectionsShed();
      m->SetConnectionsShed("max_connections", shed.max_connections);
      m->SetConnectionsShed("out_of_descriptors", shed.out_of_descriptors);
      for (const auto& d : (*engine)->backend().Describe().devices) {
        m->SetPoolBytes(d.ordinal, d.pool_used_bytes, d.pool_capacity_bytes);
        m->SetKernel(d.ordinal, d.kernel);
      }
      absl::SleepFor(absl::Milliseconds(500));
    }
  });

  int sig = 0;
  sigwait(&signals, &sig);
  GEMM_LOG(INFO) << "signal " << sig << ": draining (up to " << o.drain_timeout << ")";
  // New requests, also on streams already open, are refused from here on; the ones accepted
  // before are answered: Shutdown waits (up to the drain timeout) for every call, and a stream
  // call ends only after each request it handed to the engine is answered, so the engine keeps
  // running until Shutdown returns.
  (*service)->StartDrain();
  health->SetServingStatus("gemm.v1.GemmService", false);
  health->SetServingStatus(false);
  server->Shutdown(std::chrono::system_clock::now() + absl::ToChronoSeconds(o.drain_timeout));
  (*engine)->Shutdown();
  stop_gauges = true;
  gauges.join();
  GEMM_LOG(INFO) << "stopped";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gemm::DisableMutexDeadlockDetection();
  absl::SetProgramUsageMessage("gemm_server: BF16 GEMM over gRPC. See --helpfull.");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_reuse_large_buffers) && !GEMM_HAVE_TCMALLOC) {
    // NOTE: glibc serves allocations of >= 32 MiB (the most its mmap threshold can be raised
    // to) with a fresh mmap and unmaps them on free, so every large request and response paid
    // a page fault per 4 KiB (~12 ms of the ~18 ms copy-out of a 32 MiB result on H200).
    // Without mmap they come from the heap, which keeps freed memory for the next request.
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  return Run(OptionsFromFlags());
}
