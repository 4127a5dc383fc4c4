// Prometheus metrics of the server (prometheus-cpp): RPCs by method and status code, per-stage
// latency histograms, batch sizes, queue depth and drops, memory pool and resident-matrix bytes,
// and which kernel serves each device. Owns the registry and, when a port is given, the HTTP
// server answering scrapes at /metrics. Every method is thread-safe and non-blocking apart from a
// short internal lock; none does I/O (scrapes are served on the HTTP server's own thread).
// NOTE: we serve HTTP ourselves (MetricsHttpServer) instead of prometheus-cpp's CivetWeb
// Exposer: CivetWeb's 100 KiB thread stacks cannot hold the static TLS of a CUDA build
// (cuBLASLt + OpenBLAS), so its threads never started in gemm_server.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/core/backend.h"
#include "server/core/types.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace gemm::core {

class MetricsHttpServer;

// Metric names (all prefixed `gemm_`):
//   gemm_rpcs_total{method,code}                 counter, finished RPCs
//   gemm_queue_seconds{device}                   histogram, time queued in the batcher
//   gemm_copy_in_seconds{device}                 histogram, host-to-device copy time
//   gemm_compute_seconds{device}                 histogram, kernel time
//   gemm_copy_out_seconds{device}                histogram, device-to-host copy time
//   gemm_request_seconds{device}                 histogram, total time in the server
//   gemm_launch_seconds{device}                  histogram, host time enqueuing a batch's GPU work
//   gemm_completion_seconds{device}              histogram, GPU work done -> result ready
//   gemm_batch_rows{device}                      histogram, rows (sum of M) of a request's batch
//   gemm_batch_requests{device}                  histogram, requests in a request's batch
//   gemm_queue_depth                             gauge, requests queued in the batcher
//   gemm_batcher_dropped_total{reason}           counter, requests answered by the batcher without
//                                                running (reason: deadline, cancelled, queue_full,
//                                                shutdown)
//   gemm_batches_released_total{reason}          counter, batches the batcher handed out, by what
//                                                released them (alone, full, idle, delay,
//                                                deadline, shutdown)
//   gemm_pool_bytes_in_use{device}               gauge, device memory pool bytes in use
//   gemm_pool_bytes_capacity{device}             gauge, device memory pool capacity
//   gemm_resident_matrices                       gauge, registered resident matrices
//   gemm_resident_matrix_bytes                   gauge, bytes of registered resident matrices
//   gemm_shared_memory_regions                   gauge, registered client shared-memory regions
//   gemm_shared_memory_bytes                     gauge, bytes of those regions
//   gemm_kernel_info{device,kernel}              gauge = 1 for the kernel serving each device
//   gemm_weights_load_seconds                    gauge, how long the last weight repository
//                                                scan took to read and upload what changed
//   gemm_weights_load_bytes                      gauge, file bytes that scan read
//   gemm_weights_load_bytes_per_second           gauge, those bytes over those seconds
//   gemm_weights_tensors                         gauge, tensors loaded from the repository
//   gemm_weights_changes_total{change}           counter, repository tensors by what a scan did
//                                                (added, replaced, removed, skipped, failed)
//   gemm_kernel_variant_unusable{variant,reason} gauge = 1 for each native kernel variant that
//                                                failed start-up qualification (reason: one of
//                                                core::kFailureReasons; variants: the compiled
//                                                ones, so both labels are bounded)
//   gemm_connections_shed_total{reason}          counter, client connections closed as soon as
//                                                accepted (reason: max_connections,
//                                                out_of_descriptors)
//   gemm_staging_bytes_in_use                    gauge, pinned host staging handed out (CUDA)
//   gemm_pinned_answer_bytes                     gauge, of which inline answers waiting to be
//                                                sent hold
//   gemm_pinned_answer_bytes_limit               gauge, the most those answers may hold
//   gemm_inline_answers_total{from}              counter, inline answers (one per output D in a
//                                                response message) by where they were sent
//                                                from (pinned: the pinned block the GPU wrote;
//                                                copied: copied out of staging first)
// The `device` label is the CUDA ordinal, or "cpu" for -1.

// What one scan of the weight repository did.
struct WeightsScanStats {
  int64_t added = 0, replaced = 0, removed = 0, skipped = 0, failed = 0;
  int64_t tensors = 0;     // loaded from the repository after the scan
  int64_t bytes_read = 0;  // file bytes read
  double seconds = 0;      // spent reading and uploading
};

class Metrics {
 public:
  // Creates the metrics. `port` > 0 also starts an HTTP server on `host`:`port` ("" or
  // "0.0.0.0" = all interfaces, else an IPv4 address) serving /metrics (INVALID_ARGUMENT for a
  // port out of range or a bad host, UNAVAILABLE when it cannot bind); `port` == 0 keeps a
  // registry only (tests, or when metrics are scraped some other way).
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(int port,
                                                         const std::string& host = "0.0.0.0");

  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Counts one finished RPC: `method` is the RPC's short name (e.g. "Gemm"), `grpc_code` its
  // grpc::StatusCode as an int (0 = OK); the label is the code's name, e.g. "DEADLINE_EXCEEDED".
  void RecordRpc(absl::string_view method, int grpc_code);

  // Records where a completed request's time went (seconds) and the batch it ran in, labelled
  // with `timing.device`; the copy-in, compute and copy-out histograms only when its GPU phases
  // were timed (not `gpu_timing_skipped`).
  void RecordTiming(const Timing& timing);

  // Sets the number of requests queued (the Batcher calls this when given this Metrics).
  void SetQueueDepth(int64_t depth);

  // Counts one request the batcher answered without running it. `reason`: "deadline",
  // "cancelled", "queue_full" or "shutdown".
  void RecordDropped(absl::string_view reason);

  // Why the batcher handed a batch out: it could not coalesce (kAlone), reached max_batch_rows
  // (kFull), its device was idle (kIdle), max_queue_delay passed (kDelay), a member's deadline
  // came (kDeadline), or the server is shutting down (kShutdown).
  enum class Release { kAlone, kFull, kIdle, kDelay, kDeadline, kShutdown, kCount };
  // Counts one batch handed out for `reason`. Lock-free (one atomic add).
  void RecordBatchReleased(Release reason);

  // Sets the memory pool bytes in use and the pool capacity of `device`.
  void SetPoolBytes(int device, int64_t in_use, int64_t capacity);

  // Sets the number and total bytes of resident matrices (all devices, replicas counted once
  // per copy by the caller's convention).
  void SetResidentMatrices(int64_t count, int64_t bytes);

  // Sets the number and total bytes of registered shared-memory regions.
  void SetSharedMemory(int64_t count, int64_t bytes);

  // Records that `kernel` now serves `device`: gemm_kernel_info{device,kernel} = 1, and the
  // series of the kernel that served it before (if different) is removed.
  void SetKernel(int device, absl::string_view kernel);

  // Publishes qualification's verdict on kernel variant `variant`: unusable sets
  // gemm_kernel_variant_unusable{variant,reason} = 1 (a `reason` outside core::kFailureReasons
  // is published as "error"); usable removes the variant's series.
  void SetVariantUsability(absl::string_view variant, bool usable, absl::string_view reason);

  // Raises gemm_connections_shed_total{reason} to `total`, a count kept by the listener and
  // published here (a total below the published one is ignored). `reason`: "max_connections"
  // or "out_of_descriptors". Call from one thread.
  void SetConnectionsShed(absl::string_view reason, int64_t total);

  // Publishes the pinned staging in use and the inline answers sent from it (the gemm_staging_*,
  // gemm_pinned_answer_* and gemm_inline_answers_total series; the counters are raised to the
  // totals, never lowered). Call from one thread.
  void SetStaging(const StagingDescription& staging);

  // Publishes what a weight repository scan did (the gemm_weights_* series).
  void RecordWeightsScan(const WeightsScanStats& stats);

  // The registry, e.g. to add component-specific metrics. Outlives nothing: valid while this
  // Metrics lives.
  prometheus::Registry& registry() { return *registry_; }

  // The current metrics in Prometheus text exposition format (what a scrape returns).
  std::string Serialize() const;

  // The port /metrics is served on, or 0 without an HTTP server.
  int port() const { return port_; }

 private:
  struct DeviceHistograms {
    prometheus::Histogram* queue;
    prometheus::Histogram* copy_in;
    prometheus::Histogram* compute;
    prometheus::Histogram* copy_out;
    prometheus::Histogram* total;
    prometheus::Histogram* launch;
    prometheus::Histogram* completion;
    prometheus::Histogram* batch_rows;
    prometheus::Histogram* batch_requests;
  };

  Metrics();
  // Creates the gemm_weights_* series.
  void BuildWeightsMetrics(prometheus::Registry& r);
  // Creates the staging and inline answer series.
  void BuildStagingMetrics(prometheus::Registry& r);
  DeviceHistograms& HistogramsFor(int device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::shared_ptr<prometheus::Registry> registry_;
  int port_ = 0;

  // Families are owned by `registry_`.
  prometheus::Family<prometheus::Counter>* rpcs_;
  prometheus::Family<prometheus::Histogram>* queue_seconds_;
  prometheus::Family<prometheus::Histogram>* copy_in_seconds_;
  prometheus::Family<prometheus::Histogram>* compute_seconds_;
  prometheus::Family<prometheus::Histogram>* copy_out_seconds_;
  prometheus::Family<prometheus::Histogram>* total_seconds_;
  prometheus::Family<prometheus::Histogram>* launch_seconds_;
  prometheus::Family<prometheus::Histogram>* completion_seconds_;
  prometheus::Family<prometheus::Histogram>* batch_rows_;
  prometheus::Family<prometheus::Histogram>* batch_requests_;
  prometheus::Family<prometheus::Counter>* dropped_;
  prometheus::Family<prometheus::Counter>* connections_shed_;
  // gemm_batches_released_total, one series per Release (made up front: no lookup per batch).
  std::array<prometheus::Counter*, static_cast<int>(Release::kCount)> released_{};
  prometheus::Family<prometheus::Gauge>* pool_in_use_;
  prometheus::Family<prometheus::Gauge>* pool_capacity_;
  prometheus::Family<prometheus::Gauge>* kernel_info_;
  prometheus::Family<prometheus::Gauge>* variant_unusable_;
  prometheus::Gauge* queue_depth_;
  prometheus::Gauge* resident_count_;
  prometheus::Gauge* resident_bytes_;
  prometheus::Gauge* shm_count_;
  prometheus::Gauge* shm_bytes_;
  prometheus::Gauge* weights_seconds_;
  prometheus::Gauge* weights_bytes_;
  prometheus::Gauge* weights_rate_;
  prometheus::Gauge* weights_tensors_;
  prometheus::Family<prometheus::Counter>* weights_changes_;
  prometheus::Gauge* staging_in_use_;
  prometheus::Gauge* answer_bytes_;
  prometheus::Gauge* answer_bytes_limit_;
  prometheus::Gauge* request_bytes_;
  prometheus::Gauge* request_bytes_limit_;
  prometheus::Gauge* heap_bytes_;
  prometheus::Gauge* heap_taken_bytes_;
  prometheus::Counter* received_pinned_;
  prometheus::Counter* answers_pinned_;
  prometheus::Counter* answers_copied_;

  // Caches so the hot path does a hash lookup under one short lock rather than the families'
  // label-set hashing.
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int, DeviceHistograms> histograms_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::pair<std::string, int>, prometheus::Counter*> rpc_counters_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, prometheus::Gauge*> kernel_gauges_ ABSL_GUARDED_BY(mu_);
  // Published unusable variants: name -> (reason label, gauge).
  absl::flat_hash_map<std::string, std::pair<std::string, prometheus::Gauge*>> variant_gauges_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, std::string> kernel_names_ ABSL_GUARDED_BY(mu_);

  // Last, so it is destroyed first: its thread calls Serialize() until then.
  std::unique_ptr<MetricsHttpServer> http_;
};

}  // namespace gemm::core
