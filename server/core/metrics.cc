// Prometheus metrics of the server: see metrics.h for the metric names. Scrapes are served by
// MetricsHttpServer (metrics_http.h), rendered with prometheus-cpp's TextSerializer.
#include "server/core/metrics.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "server/core/metrics_http.h"
#include "server/core/qualification.h"

namespace gemm::core {
namespace {

// 10us .. 10s in 1-2.5-5 steps: covers a small decode GEMM's queueing up to a huge upload.
prometheus::Histogram::BucketBoundaries SecondsBuckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (double decade = 1e-5; decade < 10.0; decade *= 10.0) {
    b.push_back(decade);
    b.push_back(2.5 * decade);
    b.push_back(5.0 * decade);
  }
  b.push_back(10.0);
  return b;
}

// Powers of two, 1 .. 65536.
prometheus::Histogram::BucketBoundaries PowersOfTwo(int max_exponent) {
  prometheus::Histogram::BucketBoundaries b;
  for (int e = 0; e <= max_exponent; ++e) b.push_back(static_cast<double>(int64_t{1} << e));
  return b;
}

std::string DeviceLabel(int device) { return device < 0 ? "cpu" : absl::StrCat(device); }

std::string CodeName(int grpc_code) {
  // grpc::StatusCode and absl::StatusCode share their numbering (0..16).
  if (grpc_code < 0 || grpc_code > 16) return absl::StrCat(grpc_code);
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(grpc_code));
}

prometheus::Family<prometheus::Histogram>& BuildHistogramFamily(prometheus::Registry& registry,
                                                                const std::string& name,
                                                                const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
}

}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  prometheus::Registry& r = *registry_;
  rpcs_ = &prometheus::BuildCounter()
               .Name("gemm_rpcs_total")
               .Help("Finished RPCs by method and gRPC status code.")
               .Register(r);
  queue_seconds_ =
      &BuildHistogramFamily(r, "gemm_queue_seconds", "Time a request waited in the batcher queue.");
  copy_in_seconds_ = &BuildHistogramFamily(
      r, "gemm_copy_in_seconds",
      "Time copying a request's inputs in (batches whose GPU phases were timed).");
  compute_seconds_ =
      &BuildHistogramFamily(r, "gemm_compute_seconds",
                            "Kernel time of the batch a request ran in (timed batches: every "
                            "--gpu_timing_every-th per GPU).");
  copy_out_seconds_ = &BuildHistogramFamily(r, "gemm_copy_out_seconds",
                                            "Time copying a request's result out (timed batches).");
  total_seconds_ = &BuildHistogramFamily(r, "gemm_request_seconds",
                                         "Total time of a request from arrival to completion.");
  launch_seconds_ =
      &BuildHistogramFamily(r, "gemm_launch_seconds",
                            "Host time planning and enqueuing the GPU work of a request's batch.");
  completion_seconds_ =
      &BuildHistogramFamily(r, "gemm_completion_seconds",
                            "Time from a request's GPU work finishing to its result being ready.");
  batch_rows_ = &BuildHistogramFamily(r, "gemm_batch_rows",
                                      "Rows (sum of M) of the batch each request ran in.");
  batch_requests_ =
      &BuildHistogramFamily(r, "gemm_batch_requests", "Requests in the batch each request ran in.");
  dropped_ = &prometheus::BuildCounter()
                  .Name("gemm_batcher_dropped_total")
                  .Help("Requests the batcher answered without running them, by reason.")
                  .Register(r);
  connections_shed_ = &prometheus::BuildCounter()
                           .Name("gemm_connections_shed_total")
                           .Help(
                               "Client connections closed as soon as accepted, for the "
                               "connection cap or while out of descriptors.")
                           .Register(r);
  auto& released = prometheus::BuildCounter()
                       .Name("gemm_batches_released_total")
                       .Help("Batches the batcher handed out, by what released them.")
                       .Register(r);
  static constexpr const char* kReleaseNames[] = {"alone", "full",     "idle",
                                                  "delay", "deadline", "shutdown"};
  static_assert(std::size(kReleaseNames) == static_cast<size_t>(Release::kCount));
  for (size_t i = 0; i < std::size(kReleaseNames); ++i) {
    released_[i] = &released.Add({{"reason", kReleaseNames[i]}});
  }
  pool_in_use_ = &prometheus::BuildGauge()
                      .Name("gemm_pool_bytes_in_use")
                      .Help("Device memory pool bytes in use.")
                      .Register(r);
  pool_capacity_ = &prometheus::BuildGauge()
                        .Name("gemm_pool_bytes_capacity")
                        .Help("Device memory pool capacity in bytes.")
                        .Register(r);
  kernel_info_ = &prometheus::BuildGauge()
                      .Name("gemm_kernel_info")
                      .Help("1 for the kernel serving each device.")
                      .Register(r);
  variant_unusable_ = &prometheus::BuildGauge()
                           .Name("gemm_kernel_variant_unusable")
                           .Help("1 for each native kernel variant that failed qualification.")
                           .Register(r);
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("gemm_queue_depth")
                      .Help("Requests queued in the batcher.")
                      .Register(r)
                      .Add({});
  resident_count_ = &prometheus::BuildGauge()
                         .Name("gemm_resident_matrices")
                         .Help("Registered resident matrices.")
                         .Register(r)
                         .Add({});
  resident_bytes_ = &prometheus::BuildGauge()
                         .Name("gemm_resident_matrix_bytes")
                         .Help("Bytes of registered resident matrices.")
                         .Register(r)
                         .Add({});
  shm_count_ = &prometheus::BuildGauge()
                    .Name("gemm_shared_memory_regions")
                    .Help("Registered client shared-memory regions.")
                    .Register(r)
                    .Add({});
  shm_bytes_ = &prometheus::BuildGauge()
                    .Name("gemm_shared_memory_bytes")
                    .Help("Bytes of registered client shared-memory regions.")
                    .Register(r)
                    .Add({});
  BuildWeightsMetrics(r);
  BuildStagingMetrics(r);
}

void Metrics::BuildStagingMetrics(prometheus::Registry& r) {
  auto gauge = [&r](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
  };
  staging_in_use_ = gauge("gemm_staging_bytes_in_use",
                          "Pinned host staging handed out: units in flight and answers held.");
  answer_bytes_ = gauge("gemm_pinned_answer_bytes",
                        "Pinned staging held by inline answers waiting to be sent.");
  answer_bytes_limit_ = gauge("gemm_pinned_answer_bytes_limit",
                              "The most pinned staging inline answers may hold "
                              "(--pinned_answer_fraction of the pool).");
  request_bytes_ = gauge("gemm_pinned_request_bytes",
                         "Pinned memory held by requests' A copied on arrival, waiting to run.");
  request_bytes_limit_ = gauge("gemm_pinned_request_bytes_limit",
                               "Pinned memory set aside for requests' A (--pinned_request_bytes).");
  heap_bytes_ = gauge("gemm_pinned_heap_bytes",
                      "The pinned arena the server's heap grows into (--pinned_heap_bytes; 0: "
                      "none, e.g. without the locked-memory limit).");
  heap_taken_bytes_ = gauge("gemm_pinned_heap_taken_bytes",
                            "Of the pinned heap, what the heap has taken (never given back; at "
                            "the limit, messages land in pageable memory and A is copied).");
  received_pinned_ = &prometheus::BuildCounter()
                          .Name("gemm_request_operands_received_pinned_total")
                          .Help(
                              "Requests' A that gRPC received into the pinned heap and the "
                              "GPU read where they arrived, without a host copy.")
                          .Register(r)
                          .Add({});
  auto& answers = prometheus::BuildCounter()
                      .Name("gemm_inline_answers_total")
                      .Help(
                          "Inline answers (one per output D in a response message) by where "
                          "they were sent from: pinned (the block the GPU wrote) or copied (out "
                          "of staging, past the bound or with the pool busy).")
                      .Register(r);
  answers_pinned_ = &answers.Add({{"from", "pinned"}});
  answers_copied_ = &answers.Add({{"from", "copied"}});
}

void Metrics::BuildWeightsMetrics(prometheus::Registry& r) {
  auto gauge = [&r](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
  };
  weights_seconds_ = gauge("gemm_weights_load_seconds",
                           "Seconds the last weight repository scan spent reading and uploading.");
  weights_bytes_ = gauge("gemm_weights_load_bytes", "File bytes the last repository scan read.");
  weights_rate_ = gauge("gemm_weights_load_bytes_per_second",
                        "Bytes per second of the last repository scan that read anything.");
  weights_tensors_ = gauge("gemm_weights_tensors", "Tensors loaded from the weight repository.");
  weights_changes_ = &prometheus::BuildCounter()
                          .Name("gemm_weights_changes_total")
                          .Help("Repository tensors added, replaced, removed, skipped or failed.")
                          .Register(r);
}

void Metrics::RecordWeightsScan(const WeightsScanStats& s) {
  weights_seconds_->Set(s.seconds);
  weights_bytes_->Set(static_cast<double>(s.bytes_read));
  if (s.bytes_read > 0 && s.seconds > 0) weights_rate_->Set(s.bytes_read / s.seconds);
  weights_tensors_->Set(static_cast<double>(s.tensors));
  for (auto [change, n] : {std::pair{"added", s.added},
                           {"replaced", s.replaced},
                           {"removed", s.removed},
                           {"skipped", s.skipped},
                           {"failed", s.failed}}) {
    weights_changes_->Add({{"change", change}}).Increment(static_cast<double>(n));
  }
}

Metrics::~Metrics() = default;

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Create(int port, const std::string& host) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("metrics port ", port, " is out of range"));
  }
  std::unique_ptr<Metrics> metrics(new Metrics());
  if (port == 0) return metrics;
  // The server renders on its own thread; `metrics` outlives it (http_ is a member).
  auto http = MetricsHttpServer::Start(host, port, [m = metrics.get()] { return m->Serialize(); });
  if (!http.ok()) return http.status();
  metrics->http_ = std::move(*http);
  metrics->port_ = metrics->http_->port();
  return metrics;
}

void Metrics::RecordRpc(absl::string_view method, int grpc_code) {
  absl::MutexLock lock(&mu_);
  auto key = std::make_pair(std::string(method), grpc_code);
  auto it = rpc_counters_.find(key);
  if (it == rpc_counters_.end()) {
    prometheus::Counter* c = &rpcs_->Add({{"method", key.first}, {"code", CodeName(grpc_code)}});
    it = rpc_counters_.emplace(std::move(key), c).first;
  }
  it->second->Increment();
}

Metrics::DeviceHistograms& Metrics::HistogramsFor(int device) {
  auto it = histograms_.find(device);
  if (it != histograms_.end()) return it->second;
  const prometheus::Labels labels = {{"device", DeviceLabel(device)}};
  const auto secs = SecondsBuckets();
  DeviceHistograms h{
      .queue = &queue_seconds_->Add(labels, secs),
      .copy_in = &copy_in_seconds_->Add(labels, secs),
      .compute = &compute_seconds_->Add(labels, secs),
      .copy_out = &copy_out_seconds_->Add(labels, secs),
      .total = &total_seconds_->Add(labels, secs),
      .launch = &launch_seconds_->Add(labels, secs),
      .completion = &completion_seconds_->Add(labels, secs),
      .batch_rows = &batch_rows_->Add(labels, PowersOfTwo(16)),
      .batch_requests = &batch_requests_->Add(labels, PowersOfTwo(10)),
  };
  return histograms_.emplace(device, h).first->second;
}

void Metrics::RecordTiming(const Timing& timing) {
  DeviceHistograms h;
  {
    absl::MutexLock lock(&mu_);
    h = HistogramsFor(timing.device);
  }
  // Histograms are internally synchronized; observe outside our lock.
  h.queue->Observe(absl::ToDoubleSeconds(timing.queue));
  if (!timing.gpu_timing_skipped) {  // GPU phases timed only for every n-th unit
    h.copy_in->Observe(absl::ToDoubleSeconds(timing.copy_in));
    h.compute->Observe(absl::ToDoubleSeconds(timing.compute));
    h.copy_out->Observe(absl::ToDoubleSeconds(timing.copy_out));
  }
  h.total->Observe(absl::ToDoubleSeconds(timing.total));
  h.launch->Observe(absl::ToDoubleSeconds(timing.launch));
  h.completion->Observe(absl::ToDoubleSeconds(timing.completion));
  h.batch_rows->Observe(static_cast<double>(timing.batch_rows));
  h.batch_requests->Observe(static_cast<double>(timing.batch_requests));
}

void Metrics::SetQueueDepth(int64_t depth) { queue_depth_->Set(static_cast<double>(depth)); }

void Metrics::RecordDropped(absl::string_view reason) {
  // Family::Add returns the existing series for a known label set.
  dropped_->Add({{"reason", std::string(reason)}}).Increment();
}

void Metrics::SetConnectionsShed(absl::string_view reason, int64_t total) {
  prometheus::Counter& counter = connections_shed_->Add({{"reason", std::string(reason)}});
  const double more = static_cast<double>(total) - counter.Value();
  if (more > 0) counter.Increment(more);
}

void Metrics::SetStaging(const StagingDescription& staging) {
  staging_in_use_->Set(static_cast<double>(staging.used_bytes));
  answer_bytes_->Set(static_cast<double>(staging.answer_bytes));
  answer_bytes_limit_->Set(static_cast<double>(staging.answer_max_bytes));
  request_bytes_->Set(static_cast<double>(staging.request_bytes));
  request_bytes_limit_->Set(static_cast<double>(staging.request_max_bytes));
  heap_bytes_->Set(static_cast<double>(staging.heap_bytes));
  heap_taken_bytes_->Set(static_cast<double>(staging.heap_taken_bytes));
  for (auto [counter, total] : {std::pair{answers_pinned_, staging.pinned_answers},
                                std::pair{answers_copied_, staging.copied_answers},
                                std::pair{received_pinned_, staging.received_pinned_operands}}) {
    const double more = static_cast<double>(total) - counter->Value();
    if (more > 0) counter->Increment(more);
  }
}

void Metrics::RecordBatchReleased(Release reason) {
  released_[static_cast<size_t>(reason)]->Increment();
}

void Metrics::SetPoolBytes(int device, int64_t in_use, int64_t capacity) {
  const prometheus::Labels labels = {{"device", DeviceLabel(device)}};
  pool_in_use_->Add(labels).Set(static_cast<double>(in_use));
  pool_capacity_->Add(labels).Set(static_cast<double>(capacity));
}

void Metrics::SetResidentMatrices(int64_t count, int64_t bytes) {
  resident_count_->Set(static_cast<double>(count));
  resident_bytes_->Set(static_cast<double>(bytes));
}

void Metrics::SetSharedMemory(int64_t count, int64_t bytes) {
  shm_count_->Set(static_cast<double>(count));
  shm_bytes_->Set(static_cast<double>(bytes));
}

void Metrics::SetKernel(int device, absl::string_view kernel) {
  absl::MutexLock lock(&mu_);
  auto it = kernel_names_.find(device);
  if (it != kernel_names_.end()) {
    if (it->second == kernel) return;
    kernel_info_->Remove(kernel_gauges_[device]);
  }
  prometheus::Gauge* g =
      &kernel_info_->Add({{"device", DeviceLabel(device)}, {"kernel", std::string(kernel)}});
  g->Set(1);
  kernel_gauges_[device] = g;
  kernel_names_[device] = std::string(kernel);
}

void Metrics::SetVariantUsability(absl::string_view variant, bool usable,
                                  absl::string_view reason) {
  const bool known = std::find(std::begin(kFailureReasons), std::end(kFailureReasons), reason) !=
                     std::end(kFailureReasons);
  const std::string label = known ? std::string(reason) : "error";
  absl::MutexLock lock(&mu_);
  auto it = variant_gauges_.find(variant);
  if (it != variant_gauges_.end()) {
    if (!usable && it->second.first == label) return;  // unchanged
    variant_unusable_->Remove(it->second.second);
    variant_gauges_.erase(it);
  }
  if (usable) return;
  prometheus::Gauge* g =
      &variant_unusable_->Add({{"variant", std::string(variant)}, {"reason", label}});
  g->Set(1);
  variant_gauges_[std::string(variant)] = {label, g};
}

std::string Metrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace gemm::core
