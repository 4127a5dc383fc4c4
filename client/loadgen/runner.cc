// Load-generator engine: request templates, resident B registration, the dispatcher (closed and
// open loop), unary and streaming calls through gRPC's callback API, measurement windows and the
// stability rule, verification against a float64 reference, draining and cleanup.
#include "client/loadgen/runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "client/loadgen/call_stream.h"
#include "client/loadgen/device_region.h"
#include "common/bf16.h"
#include "common/posix_shm.h"
#include "common/reference_gemm.h"
#include "gemm/v1/gemm_service.grpc.pb.h"
#include "gemm/v1/gemm_service.pb.h"

namespace gemm::loadgen {
namespace {

namespace v1 = ::gemm::v1;
using Clock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

Clock::time_point FromNs(int64_t ns) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

// Operands of one shape and what verification needs.
struct ShapeData {
  ShapeSpec spec;
  std::string a;  // BF16 [M,K]
  std::string b;  // BF16 [K,N] or [N,K]
  int64_t request_bytes = 0;
  int64_t response_bytes = 0;
  // --shm: offsets of A, B (inline only) and D in the shared-memory region.
  // D slot k (of RunnerOptions::shm_output_slots) is at d_off + k * d_stride.
  int64_t a_off = 0, b_off = 0, d_off = 0, d_stride = 0;
  // Verification: output positions (row-major index), their float64 reference, and the sum of
  // |a_ik * b_kj| there (the scale of the accumulation's rounding error).
  std::vector<int64_t> positions;
  std::vector<double> ref;
  std::vector<double> abs_dot;
};

float Bf16At(absl::string_view bytes, int64_t index) {
  uint16_t h;
  std::memcpy(&h, bytes.data() + 2 * index, 2);
  return Bf16ToFloat(h);
}

constexpr int kMaxMismatchLogs = 5;

}  // namespace

class Runner::Impl {
 public:
  Impl(const RunnerOptions& options, std::vector<Target> targets)
      : options_(options), targets_(std::move(targets)), rng_(options.seed) {}
  ~Impl();

  absl::Status Init();
  PointResult RunPoint(double level, int index, int total);
  void Finish(double timeout_s);
  int64_t issued() const { return issued_.load(); }

  // Records the outcome of `c` and deletes it. `resp` is the response (may carry a stream error).
  void Complete(Call* c, const grpc::Status& status, const v1::GemmResponse* resp);

 private:
  int TemplateGroup(int endpoint) const {
    return options_.workload.b_source == BSource::kResident ? endpoints_[endpoint].target_index : 0;
  }
  absl::StatusOr<std::string> RegisterB(int target, const ShapeData& s);
  // --shm: creates the region (A, inline B, D slots per shape), registers it on every target.
  absl::Status SetUpSharedMemory();
  // The output bytes of a response for shape `s` (from the region with --shm).
  absl::string_view OutputBytes(const Call& c, const v1::GemmResponse& resp) const;
  // Bytes of `resp`'s single output (in the message or, with --shm, in the call's D slot), 0 when
  // the response does not have the form expected.
  int64_t OutputSize(const Call& c, const v1::GemmResponse& resp) const;
  // Index of the template for a shape, output slot and expert draw in templates_[group].
  int TemplateIndex(int shape, int dslot, int variant) const {
    return (shape * d_slots_ + dslot) * variants_ + variant;
  }
  // --experts: whether `resp` holds one output of the shape's size per expert (else one output
  // of the shape's response size); names what is wrong in *why.
  bool OutputSizesOk(const Call& c, const v1::GemmResponse& resp, std::string* why) const;
  // Checks one output's bytes `data` against the shape's sampled reference.
  bool VerifyOutput(const ShapeData& s, absl::string_view data, std::string* why) const;
  void PrepareVerification(ShapeData& s);
  bool Verify(const Call& c, const v1::GemmResponse& resp, std::string* why) const;
  // Closed loop: fills the point's concurrency and refills after failed calls (completions
  // refill inline). Runs on the point's one dispatcher thread until stop_dispatch_.
  void DispatchLoop(double level);
  // Open loop: dispatcher k of n sends its share (rate/n) of the point's arrivals until
  // stop_dispatch_, each request stamped with its intended send time.
  void OpenLoopDispatch(double rate, int k, int n);
  // Closed loop with --client_api=sync: runs `callers` SyncCaller threads until the point ends.
  void RunSyncCallers(int64_t callers);
  // One blocking caller: sends a request, waits for its answer, records it, repeats until
  // sync_stop_. Streaming: over its own GemmStream, reopened after a failure.
  void SyncCaller(int caller);
  // Draws `c`'s shape and verify decision, and its request id when streaming.
  // Caller holds issue_mu_.
  void PickLocked(Call* c);
  // --shm: fills the output slot of a call that will be verified with NaN, so a response that
  // did not write D fails verification instead of passing on an earlier request's result.
  void PoisonOutput(const Call& c);
  // Opens the stream of slot `slot` (GemmStream or GemmStreamPacked) to the slot's endpoint.
  std::unique_ptr<CallStream> OpenStream(int slot);
  // The gRPC deadline of a request sent now.
  std::chrono::system_clock::time_point Deadline() const;
  // Sends one request, already counted in outstanding_ by the caller (TryClaim).
  // Thread-safe: runs on the dispatchers and, closed loop, on gRPC's callback threads.
  void Issue(int64_t intended_ns);
  // Counts one more request in flight if fewer than `limit` are; false otherwise.
  bool TryClaim(int64_t limit);
  WindowStats TakeWindow();
  // Sleeps `seconds` (interruptible by `stop`), refreshing the progress line. False if stopped.
  bool WaitFor(double seconds, const std::string& label, const std::string& phase);
  bool Stopped() const { return options_.stop != nullptr && options_.stop->load(); }
  bool IsStable(const PointResult& r) const;
  double LatencyMetricMs(const Histogram& h) const {
    return (options_.stability_percentile > 0 ? h.Percentile(options_.stability_percentile)
                                              : h.mean()) /
           1e6;
  }

  // One channel of one target.
  struct Endpoint {
    int target_index = 0;
    v1::GemmService::Stub* stub = nullptr;  // owned by the target's GemmClient
  };

  RunnerOptions options_;
  std::vector<Target> targets_;
  std::vector<Endpoint> endpoints_;
  std::vector<ShapeData> shapes_;
  std::discrete_distribution<int> shape_pick_;
  // Request templates [group][TemplateIndex(shape, output slot)]; group = target index for
  // resident B, else 0.
  std::vector<std::vector<v1::GemmRequest>> templates_;
  // --shm: D slots per shape, and those no request in flight writes (guarded by issue_mu_;
  // when none is free, requests share one, which verification tolerates: same inputs).
  int d_slots_ = 1;
  std::vector<int> free_dslots_;
  // --experts: templates per shape and output slot, each with its own draw of experts.
  int variants_ = 1;
  // Resident handles registered: (target index, handle).
  std::vector<std::pair<int, std::string>> handles_;
  // --shm: the region and the targets it is registered on.
  std::unique_ptr<PosixShm> shm_;
  std::unique_ptr<DeviceRegion> device_shm_;  // --shm_device: the region in GPU memory instead
  std::string shm_name_;
  std::vector<int> shm_targets_;

  // Issue state, guarded by issue_mu_ (Issue runs on several threads in closed loop).
  std::mutex issue_mu_;
  std::mt19937_64 rng_;
  uint64_t next_id_ = 0;
  uint64_t round_robin_ = 0;
  std::vector<CallStream*> streams_;  // live stream per slot (streaming only)
  std::vector<int64_t> stream_opened_ns_;
  // Every stream ever opened (kept until ~Impl).
  std::vector<std::unique_ptr<CallStream>> all_streams_;

  std::mutex dispatch_mu_;
  std::condition_variable dispatch_cv_;
  bool stop_dispatch_ = false;  // guarded by dispatch_mu_
  std::atomic<int64_t> outstanding_{0};
  // Closed loop: the concurrency a completed call refills inline (its caller sends the next
  // request from the completion callback); 0 while no closed-loop point runs.
  std::atomic<int64_t> inline_limit_{0};
  std::atomic<int64_t> issued_{0};
  std::atomic<int64_t> stream_messages_{0};  // written by the streams (CallStream::Options)
  std::atomic<int64_t> stream_requests_{0};
  std::atomic<int64_t> failures_{0};
  std::atomic<bool> sync_stop_{false};  // --client_api=sync: callers finish their call and stop

  std::mutex live_mu_;
  std::unordered_set<Call*> live_;  // unary calls in flight, for cancellation

  std::mutex stats_mu_;
  WindowStats current_;  // guarded by stats_mu_
  int64_t window_start_ns_ = 0;
  std::atomic<int> mismatch_logs_{0};
  bool finished_ = false;
};

Runner::Impl::~Impl() {
  Finish(5.0);
  // Streams are destroyed only after their OnDone ran (Finish waited or cancelled them).
  for (auto& s : all_streams_) s->WaitDone(Clock::now() + std::chrono::seconds(5));
}

absl::Status Runner::Impl::Init() {
  const WorkloadSpec& w = options_.workload;
  if (targets_.empty()) return absl::InvalidArgumentError("no targets");
  if (w.shapes.empty()) return absl::InvalidArgumentError("no shapes");
  for (int t = 0; t < static_cast<int>(targets_.size()); ++t) {
    for (int i = 0; i < std::max(1, w.channels); ++i) {
      endpoints_.push_back(Endpoint{t, targets_[t].client->stub(i)});
    }
  }

  absl::BitGen gen(std::seed_seq{options_.seed});
  std::vector<double> weights;
  for (const ShapeSpec& spec : w.shapes) {
    ShapeData s;
    s.spec = spec;
    s.a = RandomBf16Bytes(spec.m * spec.k, gen);
    s.b = RandomBf16Bytes(spec.k * spec.n, gen);
    s.request_bytes = w.RequestBytes(spec);
    s.response_bytes = w.ResponseBytes(spec);
    if (options_.verify_fraction > 0) PrepareVerification(s);
    shapes_.push_back(std::move(s));
    weights.push_back(spec.weight);
  }
  shape_pick_ = std::discrete_distribution<int>(weights.begin(), weights.end());
  if (w.shared_memory) {
    d_slots_ = static_cast<int>(std::max<int64_t>(1, options_.shm_output_slots));
    for (int i = d_slots_ - 1; i >= 0; --i) free_dslots_.push_back(i);
    if (absl::Status s = SetUpSharedMemory(); !s.ok()) return s;
  }

  if (w.experts > 0) {
    if (w.b_source != BSource::kResident || w.streaming || w.shared_memory ||
        w.experts_per_request < 1 || w.experts_per_request > w.experts) {
      return absl::InvalidArgumentError(
          "--experts needs --b=resident, unary RPCs and no --shm, and 1 <= T <= E");
    }
    variants_ = 64;
  }
  // Templates: one group for inline B, one per target for resident B (handles are per server).
  const int groups = w.b_source == BSource::kResident ? static_cast<int>(targets_.size()) : 1;
  templates_.assign(groups, {});
  for (int g = 0; g < groups; ++g) {
    for (const ShapeData& s : shapes_) {
      std::vector<std::string> handle_of(std::max(1, w.experts));
      if (w.b_source == BSource::kResident) {
        for (std::string& handle : handle_of) {
          absl::StatusOr<std::string> h = RegisterB(g, s);
          if (!h.ok()) return h.status();
          handles_.emplace_back(g, *h);
          handle = *h;
        }
      }
      const std::string& handle = handle_of[0];
      if (w.experts > 0) {
        // Each template draws its own experts (distinct within a request).
        std::mt19937_64 draw(options_.seed ^ (0xe4e2 + templates_[g].size()));
        for (int v = 0; v < variants_; ++v) {
          std::vector<int> order(w.experts);
          for (int e = 0; e < w.experts; ++e) order[e] = e;
          std::shuffle(order.begin(), order.end(), draw);
          v1::GemmRequest req;
          for (int t = 0; t < w.experts_per_request; ++t) {
            v1::Problem* p = req.mutable_group()->add_problems();
            p->set_m(s.spec.m);
            p->set_n(s.spec.n);
            p->set_k(s.spec.k);
            p->set_a(s.a);
            p->set_b_handle(handle_of[order[t]]);
            p->set_output_dtype(w.output_fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16);
          }
          req.set_priority(w.priority_high ? v1::PRIORITY_HIGH : v1::PRIORITY_NORMAL);
          req.set_timeout_us(w.deadline_us);
          req.set_kernel(w.kernel);
          templates_[g].push_back(std::move(req));
        }
        continue;
      }
      for (int dslot = 0; dslot < d_slots_; ++dslot) {
        v1::GemmRequest req;
        v1::Problem* p = req.mutable_problem();
        p->set_m(s.spec.m);
        p->set_n(s.spec.n);
        p->set_k(s.spec.k);
        auto ref = [&](v1::SharedMemoryRef* r, int64_t off, int64_t bytes) {
          r->set_region(shm_name_);
          r->set_offset(off);
          r->set_byte_size(bytes);
        };
        if (w.shared_memory) {
          ref(p->mutable_a_shm(), s.a_off, s.a.size());
          ref(p->mutable_d_shm(), s.d_off + dslot * s.d_stride, s.response_bytes);
        } else {
          p->set_a(s.a);
        }
        if (w.b_source == BSource::kResident) {
          p->set_b_handle(handle);
        } else {
          if (w.shared_memory) {
            ref(p->mutable_b_shm(), s.b_off, s.b.size());
          } else {
            p->set_b(s.b);
          }
          p->set_b_layout(w.b_nk ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN);
        }
        p->set_output_dtype(w.output_fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16);
        req.set_priority(w.priority_high ? v1::PRIORITY_HIGH : v1::PRIORITY_NORMAL);
        req.set_timeout_us(w.deadline_us);
        req.set_kernel(w.kernel);
        templates_[g].push_back(std::move(req));
      }
    }
  }

  if (w.streaming && !w.sync_callers) {  // sync callers open their own streams
    for (int e = 0; e < static_cast<int>(endpoints_.size()); ++e) {
      for (int i = 0; i < std::max(1, w.streams_per_channel); ++i) {
        all_streams_.push_back(OpenStream(static_cast<int>(streams_.size())));
        streams_.push_back(all_streams_.back().get());
        stream_opened_ns_.push_back(NowNs());
      }
    }
  }
  window_start_ns_ = NowNs();
  return absl::OkStatus();
}

absl::StatusOr<std::string> Runner::Impl::RegisterB(int target, const ShapeData& s) {
  const WorkloadSpec& w = options_.workload;
  v1::MatrixHeader h;
  h.set_name(absl::StrCat("gemm_loadgen ", s.spec.Name()));
  h.set_rows(w.b_nk ? s.spec.n : s.spec.k);
  h.set_cols(w.b_nk ? s.spec.k : s.spec.n);
  h.set_dtype(v1::DTYPE_BF16);
  h.set_layout(w.b_nk ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN);
  absl::StatusOr<v1::MatrixInfo> info = targets_[target].client->RegisterMatrix(h, s.b);
  if (!info.ok()) {
    return absl::Status(info.status().code(),
                        absl::StrCat("registering B of ", s.spec.Name(), " on ",
                                     targets_[target].name, " failed: ", info.status().message()));
  }
  return info->handle();
}

absl::Status Runner::Impl::SetUpSharedMemory() {
  const bool inline_b = options_.workload.b_source == BSource::kInline;
  constexpr int64_t kAlign = 4096;
  int64_t size = 0;
  auto take = [&](int64_t bytes) {
    const int64_t off = size;
    size = (size + bytes + kAlign - 1) / kAlign * kAlign;
    return off;
  };
  for (ShapeData& s : shapes_) {
    s.a_off = take(s.a.size());
    if (inline_b) s.b_off = take(s.b.size());
    // D slots: each request in flight writes its own (as a real client's outputs would be),
    // unless more are in flight than there are slots.
    s.d_stride = (s.response_bytes + kAlign - 1) / kAlign * kAlign;
    s.d_off = take(s.d_stride * d_slots_);
  }
  const std::string tag = absl::StrCat("gemm_loadgen_", getpid(), "_", options_.seed);
  const int device = options_.workload.shm_device;
  if (device >= 0) {
    auto region = DeviceRegion::Create(device, size);
    if (!region.ok()) return region.status();
    device_shm_ = std::move(*region);
    for (const ShapeData& s : shapes_) {
      absl::Status up = device_shm_->Upload(s.a_off, s.a.data(), s.a.size());
      if (up.ok() && inline_b) up = device_shm_->Upload(s.b_off, s.b.data(), s.b.size());
      if (!up.ok()) return up;
    }
  } else {
    auto shm = PosixShm::Create(absl::StrCat("/", tag), size);
    if (!shm.ok()) return shm.status();
    shm_ = std::move(*shm);
    for (const ShapeData& s : shapes_) {
      std::memcpy(shm_->data() + s.a_off, s.a.data(), s.a.size());
      if (inline_b) std::memcpy(shm_->data() + s.b_off, s.b.data(), s.b.size());
    }
  }
  shm_name_ = tag;
  for (int t = 0; t < static_cast<int>(targets_.size()); ++t) {
    auto info = device >= 0
                    ? targets_[t].client->RegisterDeviceMemory(shm_name_, device_shm_->ipc_handle(),
                                                               device, 0, size)
                    : targets_[t].client->RegisterSharedMemory(shm_name_, shm_->key(), 0, size);
    if (!info.ok()) {
      return absl::Status(
          info.status().code(),
          absl::StrCat("registering shared memory on ", targets_[t].name,
                       " failed (--shm needs the server on this host): ", info.status().message()));
    }
    shm_targets_.push_back(t);
    if (device < 0 && !info->pinned()) {
      std::fprintf(stderr, "gemm_loadgen: %s did not page-lock the region (copies are staged)\n",
                   targets_[t].name.c_str());
    }
  }
  return absl::OkStatus();
}

absl::string_view Runner::Impl::OutputBytes(const Call& c, const v1::GemmResponse& resp) const {
  const ShapeData& s = shapes_[c.shape];
  if (options_.workload.shared_memory) {
    if (resp.outputs_size() != 1 || !resp.outputs(0).data().empty()) return {};
    const int64_t off = s.d_off + std::max(0, c.dslot) * s.d_stride;
    if (device_shm_ != nullptr) {
      // NOTE: copied out for the few responses verified; the size check needs no bytes.
      thread_local std::string copy;
      if (!device_shm_->Download(off, s.response_bytes, &copy).ok()) return {};
      return copy;
    }
    return absl::string_view(shm_->data() + off, s.response_bytes);
  }
  if (resp.outputs_size() != 1) return {};
  return resp.outputs(0).data();
}

int64_t Runner::Impl::OutputSize(const Call& c, const v1::GemmResponse& resp) const {
  if (options_.workload.shared_memory) {
    const bool ok = resp.outputs_size() == 1 && resp.outputs(0).data().empty();
    return ok ? shapes_[c.shape].response_bytes : 0;
  }
  return resp.outputs_size() == 1 ? static_cast<int64_t>(resp.outputs(0).data().size()) : 0;
}

void Runner::Impl::PrepareVerification(ShapeData& s) {
  const int64_t m = s.spec.m, n = s.spec.n, k = s.spec.k;
  const bool nk = options_.workload.b_nk;
  if (m * n <= 4096) {
    for (int64_t i = 0; i < m * n; ++i) s.positions.push_back(i);
  } else {
    std::mt19937_64 rng(options_.seed ^ 0x5eed);
    std::uniform_int_distribution<int64_t> pick(0, m * n - 1);
    s.positions.push_back(0);
    s.positions.push_back(m * n - 1);
    for (int i = 0; i < 1022; ++i) s.positions.push_back(pick(rng));
  }
  for (int64_t pos : s.positions) {
    const int64_t i = pos / n, j = pos % n;
    double dot = 0, abs_dot = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const double av = Bf16At(s.a, i * k + kk);
      const double bv = Bf16At(s.b, nk ? j * k + kk : kk * n + j);
      dot += av * bv;
      abs_dot += std::fabs(av * bv);
    }
    s.ref.push_back(dot);
    s.abs_dot.push_back(abs_dot);
  }
}

bool Runner::Impl::OutputSizesOk(const Call& c, const v1::GemmResponse& resp,
                                 std::string* why) const {
  const WorkloadSpec& w = options_.workload;
  const ShapeData& s = shapes_[c.shape];
  const int outputs = std::max(1, w.experts_per_request);
  if (resp.outputs_size() != outputs) {
    *why = absl::StrCat("expected ", outputs, " output(s), got ", resp.outputs_size());
    return false;
  }
  if (w.experts > 0) {
    for (int j = 0; j < outputs; ++j) {
      const int64_t got = static_cast<int64_t>(resp.outputs(j).data().size());
      if (got != s.response_bytes / outputs) {
        *why = absl::StrCat("output ", j, " has ", got, " bytes, expected ",
                            s.response_bytes / outputs);
        return false;
      }
    }
    return true;
  }
  const int64_t got = OutputSize(c, resp);
  if (got != s.response_bytes) {
    *why = absl::StrCat("output has ", got, " bytes, expected ", s.response_bytes);
    return false;
  }
  return true;
}

bool Runner::Impl::Verify(const Call& c, const v1::GemmResponse& resp, std::string* why) const {
  if (!OutputSizesOk(c, resp, why)) return false;
  const ShapeData& s = shapes_[c.shape];
  if (options_.workload.experts > 0) {
    // Every expert holds the shape's B, so every output has the shape's reference.
    for (int j = 0; j < resp.outputs_size(); ++j) {
      if (!VerifyOutput(s, resp.outputs(j).data(), why)) {
        *why = absl::StrCat("output ", j, ": ", *why);
        return false;
      }
    }
    return true;
  }
  return VerifyOutput(s, OutputBytes(c, resp), why);
}

bool Runner::Impl::VerifyOutput(const ShapeData& s, absl::string_view data,
                                std::string* why) const {
  const bool fp32 = options_.workload.output_fp32;
  for (size_t i = 0; i < s.positions.size(); ++i) {
    const int64_t pos = s.positions[i];
    double got;
    if (fp32) {
      float f;
      std::memcpy(&f, data.data() + 4 * pos, 4);
      got = f;
    } else {
      got = Bf16At(data, pos);
    }
    // BF16 output rounding (2^-9 relative, given 4x margin) plus FP32 accumulation error,
    // bounded by K * 2^-24 * sum|a*b| (given generous margin via 2^-10 * sum|a*b|).
    const double tol =
        std::ldexp(std::fabs(s.ref[i]), fp32 ? -20 : -7) + std::ldexp(s.abs_dot[i], -10) + 1e-30;
    if (!(std::fabs(got - s.ref[i]) <= tol)) {
      *why = absl::StrFormat("D[%d,%d] = %g, reference %g (tolerance %g)", pos / s.spec.n,
                             pos % s.spec.n, got, s.ref[i], tol);
      return false;
    }
  }
  return true;
}

void Runner::Impl::Complete(Call* c, const grpc::Status& status, const v1::GemmResponse* resp) {
  const int64_t latency = NowNs() - c->intended_ns;
  const ShapeData& s = shapes_[c->shape];
  const bool stream_error = resp != nullptr && resp->has_error();
  const bool ok = status.ok() && resp != nullptr && !stream_error;
  const int code =
      ok ? 0 : (stream_error ? resp->error().code() : static_cast<int>(status.error_code()));
  bool verified = false, mismatch = false;
  if (ok) {
    std::string why;
    const bool size_ok = OutputSizesOk(*c, *resp, &why);
    if (c->verify || !size_ok) {
      verified = true;
      mismatch = !size_ok || (!s.positions.empty() && !Verify(*c, *resp, &why));
      if (mismatch && mismatch_logs_.fetch_add(1) < kMaxMismatchLogs) {
        std::fprintf(stderr, "\ngemm_loadgen: MISMATCH in %s response: %s\n", s.spec.Name().c_str(),
                     why.c_str());
      }
    }
  }
  {
    std::lock_guard<std::mutex> l(stats_mu_);
    if (ok) {
      current_.latency_ns.Record(latency);
      ++current_.ok;
      current_.flops += s.spec.Flops();
      current_.payload_bytes += static_cast<double>(s.request_bytes + s.response_bytes);
      if (resp->has_timing()) {
        const v1::Timing& t = resp->timing();
        ServerTimingSums& st = current_.server;
        ++st.responses;
        st.queue_us += t.queue_us();
        if (!t.gpu_timing_skipped()) {
          ++st.gpu_timed;
          st.copy_in_us += t.copy_in_us();
          st.compute_us += t.compute_us();
          st.copy_out_us += t.copy_out_us();
        }
        st.total_us += t.total_us();
        st.launch_us += t.launch_us();
        st.completion_us += t.completion_us();
        st.batch_requests += t.batch_requests();
        st.batch_rows += t.batch_rows();
      }
      if (!resp->kernel().empty()) ++current_.kernels[resp->kernel()];
      if (verified) {
        ++current_.verified;
        if (mismatch) ++current_.mismatches;
      }
    } else {
      ++current_.failed;
      ++current_.errors_by_code[code];
    }
  }
  if (!ok) failures_.fetch_add(1);
  if (c->ctx) {
    std::lock_guard<std::mutex> l(live_mu_);
    live_.erase(c);
  }
  if (c->dslot >= 0) {
    std::lock_guard<std::mutex> l(issue_mu_);
    free_dslots_.push_back(c->dslot);
  }
  delete c;
  const int64_t before = outstanding_.fetch_sub(1);
  // NOTE: closed loop, the caller whose request finished sends its next one right here, on the
  // callback thread. Through the single dispatcher thread, that thread was the limit (90% busy
  // at 51k req/s on an H200 host) and every request waited for it. Failed calls still go
  // through the dispatcher, which applies --error_backoff_ms.
  const int64_t limit = inline_limit_.load();
  if (ok && limit > 0 && TryClaim(limit)) {
    Issue(NowNs());
    return;
  }
  if (options_.workload.sync_callers) return;  // its caller thread sends the next one
  // Open loop: the dispatchers wait on the clock, not on completions; only a count leaving the
  // cap (--max_outstanding) or reaching zero (Finish) has a waiter. Waking them on every answer
  // made each request cost the dispatchers a context switch.
  if (options_.open_loop && ok && before != 1 && before < options_.max_outstanding) return;
  { std::lock_guard<std::mutex> l(dispatch_mu_); }  // a waiting dispatcher sees the new count
  dispatch_cv_.notify_all();
}

bool Runner::Impl::TryClaim(int64_t limit) {
  int64_t n = outstanding_.load();
  while (n < limit) {
    if (outstanding_.compare_exchange_weak(n, n + 1)) return true;
  }
  return false;
}

void Runner::Impl::Issue(int64_t intended_ns) {
  const WorkloadSpec& w = options_.workload;
  Call* c = new Call;
  c->intended_ns = intended_ns;
  CallStream* st = nullptr;
  size_t slot = 0;
  {
    std::lock_guard<std::mutex> l(issue_mu_);
    PickLocked(c);
    if (w.streaming) {
      // A packed stream completing a message takes its callers' next requests (see Completing).
      st = w.packed ? CallStream::Completing() : nullptr;
      if (st != nullptr) {
        slot = static_cast<size_t>(st->slot());
      } else {
        slot = round_robin_++ % streams_.size();
        st = streams_[slot];
      }
    } else {
      c->endpoint = static_cast<int>(round_robin_++ % endpoints_.size());
    }
  }
  PoisonOutput(*c);
  issued_.fetch_add(1);
  if (w.streaming) {
    if (st->Send(c)) return;
    // The stream is gone: reopen it (at most every 200 ms per slot) or fail the request.
    CallStream* fresh = nullptr;
    {
      std::lock_guard<std::mutex> l(issue_mu_);
      const int64_t now = NowNs();
      if (streams_[slot] != st) {
        fresh = streams_[slot];  // another thread reopened it already
      } else if (now - stream_opened_ns_[slot] >= 200'000'000) {
        stream_opened_ns_[slot] = now;
        st->Close();
        all_streams_.push_back(OpenStream(static_cast<int>(slot)));
        fresh = streams_[slot] = all_streams_.back().get();
      }
    }
    if (fresh != nullptr && fresh->Send(c)) return;
    Complete(c, grpc::Status(grpc::StatusCode::UNAVAILABLE, st->final_message()), nullptr);
    return;
  }
  const int e = c->endpoint;
  c->ctx = std::make_unique<grpc::ClientContext>();
  c->ctx->set_deadline(Deadline());
  {
    std::lock_guard<std::mutex> l(live_mu_);
    live_.insert(c);
  }
  const v1::GemmRequest& req = templates_[TemplateGroup(c->endpoint)][c->tmpl];
  endpoints_[e].stub->async()->Gemm(c->ctx.get(), &req, &c->resp, [this, c](grpc::Status status) {
    Complete(c, status, &c->resp);
  });
}

std::unique_ptr<CallStream> Runner::Impl::OpenStream(int slot) {
  const WorkloadSpec& w = options_.workload;
  const int endpoint = slot / std::max(1, w.streams_per_channel);
  CallStream::Options o;
  o.stub = endpoints_[endpoint].stub;
  o.packed = w.packed;
  o.slot = slot;
  o.priority = w.priority_high ? v1::PRIORITY_HIGH : v1::PRIORITY_NORMAL;
  o.timeout_us = w.deadline_us;
  o.kernel = w.kernel;
  const std::vector<v1::GemmRequest>* templates = &templates_[TemplateGroup(endpoint)];
  o.problem = [templates](int tmpl) -> const v1::Problem& { return (*templates)[tmpl].problem(); };
  o.complete = [this](Call* c, const grpc::Status& status, const v1::GemmResponse* resp) {
    Complete(c, status, resp);
  };
  o.messages_written = &stream_messages_;
  o.requests_written = &stream_requests_;
  return CallStream::Open(std::move(o));
}

void Runner::Impl::PoisonOutput(const Call& c) {
  if (!options_.workload.shared_memory || !c.verify || c.dslot < 0) return;  // shared slot
  const ShapeData& s = shapes_[c.shape];
  const int64_t off = s.d_off + c.dslot * s.d_stride;
  if (device_shm_ != nullptr) {
    (void)device_shm_->Fill(off, s.response_bytes, 0xFF);  // a failure shows as a mismatch
  } else {
    std::memset(shm_->data() + off, 0xFF, s.response_bytes);
  }
}

void Runner::Impl::PickLocked(Call* c) {
  c->shape = shape_pick_(rng_);
  if (free_dslots_.empty()) {  // more in flight than slots: share one (not returned)
    c->dslot = -1;
  } else {
    c->dslot = free_dslots_.back();
    free_dslots_.pop_back();
  }
  const int variant =
      variants_ > 1 ? std::uniform_int_distribution<int>(0, variants_ - 1)(rng_) : 0;
  c->tmpl = TemplateIndex(c->shape, std::max(0, c->dslot), variant);
  c->verify = options_.verify_fraction > 0 &&
              std::uniform_real_distribution<double>(0, 1)(rng_) < options_.verify_fraction;
  if (options_.workload.streaming) c->id = absl::StrCat(next_id_++);
}

std::chrono::system_clock::time_point Runner::Impl::Deadline() const {
  const auto now = std::chrono::system_clock::now();
  auto deadline =
      now + std::chrono::microseconds(static_cast<int64_t>(options_.rpc_timeout_s * 1e6));
  const int64_t request_us = options_.workload.deadline_us;
  if (request_us > 0) deadline = std::min(deadline, now + std::chrono::microseconds(request_us));
  return deadline;
}

void Runner::Impl::RunSyncCallers(int64_t callers) {
  sync_stop_.store(false);
  std::vector<std::thread> threads;
  try {
    for (int64_t i = 0; i < callers; ++i) {
      threads.emplace_back([this, i] { SyncCaller(static_cast<int>(i)); });
    }
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "\ngemm_loadgen: started %zu of %lld caller threads: %s\n", threads.size(),
                 static_cast<long long>(callers), e.what());
  }
  {
    std::unique_lock<std::mutex> l(dispatch_mu_);
    dispatch_cv_.wait(l, [&] { return stop_dispatch_; });
  }
  sync_stop_.store(true);
  for (std::thread& t : threads) t.join();
}

void Runner::Impl::SyncCaller(int caller) {
  const WorkloadSpec& w = options_.workload;
  const int e = caller % static_cast<int>(endpoints_.size());
  v1::GemmService::Stub* stub = endpoints_[e].stub;
  const std::vector<v1::GemmRequest>& templates = templates_[TemplateGroup(e)];
  std::unique_ptr<grpc::ClientContext> stream_ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::GemmRequest, v1::GemmResponse>> stream;
  v1::GemmRequest wire;  // streaming: the template's Problem is spliced in for each write
  wire.set_priority(w.priority_high ? v1::PRIORITY_HIGH : v1::PRIORITY_NORMAL);
  wire.set_timeout_us(w.deadline_us);
  wire.set_kernel(w.kernel);
  v1::GemmResponse resp;
  while (!sync_stop_.load(std::memory_order_relaxed)) {
    Call* c = new Call;
    c->endpoint = e;
    {
      std::lock_guard<std::mutex> l(issue_mu_);
      PickLocked(c);
    }
    PoisonOutput(*c);
    outstanding_.fetch_add(1);
    issued_.fetch_add(1);
    c->intended_ns = NowNs();
    grpc::Status status;
    bool answered = false;
    if (!w.streaming) {
      grpc::ClientContext ctx;
      ctx.set_deadline(Deadline());
      status = stub->Gemm(&ctx, templates[c->tmpl], &resp);
      answered = status.ok();
    } else {
      if (stream == nullptr) {
        stream_ctx = std::make_unique<grpc::ClientContext>();
        stream = stub->GemmStream(stream_ctx.get());
      }
      wire.set_request_id(c->id);
      // NOTE: as in CallStream, the shared read-only template Problem is borrowed, not copied.
      wire.unsafe_arena_set_allocated_problem(
          const_cast<v1::Problem*>(&templates[c->tmpl].problem()));
      const bool wrote = stream->Write(wire);
      wire.unsafe_arena_release_problem();
      answered = wrote && stream->Read(&resp);
      if (answered && resp.request_id() != c->id) {
        answered = false;
        stream_ctx->TryCancel();
        status = grpc::Status(
            grpc::StatusCode::INTERNAL,
            absl::StrCat("answer to request ", resp.request_id(), " while waiting for ", c->id));
      }
      if (!answered) {
        const grpc::Status finish = stream->Finish();
        if (status.ok()) {
          status = finish.ok()
                       ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream closed by the server")
                       : finish;
        }
        stream.reset();
        stream_ctx.reset();
      }
    }
    const bool ok = answered && !resp.has_error();
    Complete(c, status, answered ? &resp : nullptr);
    if (!ok && options_.error_backoff_ms > 0) {
      std::this_thread::sleep_for(
          std::chrono::microseconds(static_cast<int64_t>(options_.error_backoff_ms * 1e3)));
    }
  }
  if (stream != nullptr) {
    stream->WritesDone();
    (void)stream->Finish();
  }
}

void Runner::Impl::OpenLoopDispatch(double rate, int k, int n) {
  // This thread's share of the arrivals: Poisson streams of rate/n each add up to one Poisson
  // stream of `rate`; constant spacing interleaves the n threads, thread k offset by k/rate.
  const double my_rate = rate / n;
  std::exponential_distribution<double> exp_gap(my_rate);
  std::mt19937_64 gap_rng((options_.seed ^ 0x9e3779b97f4a7c15ull) + static_cast<uint64_t>(k));
  int64_t next = NowNs();
  if (!options_.poisson) next += static_cast<int64_t>(k / rate * 1e9);
  for (;;) {
    {
      std::unique_lock<std::mutex> l(dispatch_mu_);
      dispatch_cv_.wait_until(l, FromNs(next), [&] { return stop_dispatch_; });
      // Past the cap we wait, but the request keeps its intended time: the wait is latency.
      // The claim is made under dispatch_mu_, so it is never made once the point has stopped.
      dispatch_cv_.wait(l, [&] { return stop_dispatch_ || TryClaim(options_.max_outstanding); });
      if (stop_dispatch_) return;
    }
    Issue(next);
    const double gap_s = options_.poisson ? exp_gap(gap_rng) : 1.0 / my_rate;
    next += static_cast<int64_t>(gap_s * 1e9);
  }
}

void Runner::Impl::DispatchLoop(double level) {
  const int64_t concurrency = std::max<int64_t>(1, std::llround(level));
  if (options_.workload.sync_callers) {
    RunSyncCallers(concurrency);
    return;
  }
  inline_limit_.store(concurrency);
  int64_t failures_seen = failures_.load();
  for (;;) {
    {
      std::unique_lock<std::mutex> l(dispatch_mu_);
      dispatch_cv_.wait(l, [&] { return stop_dispatch_ || outstanding_.load() < concurrency; });
      if (stop_dispatch_) return;
      const int64_t failures = failures_.load();
      if (failures != failures_seen && options_.error_backoff_ms > 0) {
        failures_seen = failures;
        dispatch_cv_.wait_for(
            l, std::chrono::microseconds(static_cast<int64_t>(options_.error_backoff_ms * 1e3)),
            [&] { return stop_dispatch_; });
        if (stop_dispatch_) return;
      }
    }
    // Fills the point's concurrency at its start and refills after failed calls; successful
    // calls refill inline (Complete).
    if (TryClaim(concurrency)) Issue(NowNs());
  }
}

WindowStats Runner::Impl::TakeWindow() {
  WindowStats w;
  const int64_t now = NowNs();
  std::lock_guard<std::mutex> l(stats_mu_);
  std::swap(w, current_);
  w.duration_s = static_cast<double>(now - window_start_ns_) / 1e9;
  window_start_ns_ = now;
  return w;
}

bool Runner::Impl::WaitFor(double seconds, const std::string& label, const std::string& phase) {
  const int64_t end = NowNs() + static_cast<int64_t>(seconds * 1e9);
  int64_t next_progress = 0;
  for (;;) {
    if (Stopped()) return false;
    const int64_t now = NowNs();
    if (now >= end) return true;
    if (options_.progress && now >= next_progress) {
      next_progress = now + 250'000'000;
      int64_t ok, failed;
      double p99_ms, elapsed;
      {
        std::lock_guard<std::mutex> l(stats_mu_);
        ok = current_.ok;
        failed = current_.failed;
        p99_ms = current_.latency_ns.Percentile(99) / 1e6;
        elapsed = static_cast<double>(now - window_start_ns_) / 1e9;
      }
      std::fprintf(stderr,
                   "\r\033[K[%s] %s  %.0f req/s  p99 %.3f ms  ok %lld  errors %lld  in flight %lld",
                   label.c_str(), phase.c_str(), elapsed > 0 ? ok / elapsed : 0.0, p99_ms,
                   static_cast<long long>(ok), static_cast<long long>(failed),
                   static_cast<long long>(outstanding_.load()));
      std::fflush(stderr);
    }
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(end - now, 50'000'000)));
  }
}

bool Runner::Impl::IsStable(const PointResult& r) const {
  const int k = std::max(1, options_.stable_windows);
  if (r.windows < k) return false;
  auto within = [&](const std::vector<double>& v) {
    double mean = 0;
    for (int i = r.windows - k; i < r.windows; ++i) mean += v[i];
    mean /= k;
    for (int i = r.windows - k; i < r.windows; ++i) {
      if (std::fabs(v[i] - mean) > options_.stability_pct / 100.0 * mean) return false;
    }
    return true;
  };
  return within(r.window_throughput) && within(r.window_latency_ms);
}

PointResult Runner::Impl::RunPoint(double level, int index, int total) {
  PointResult r;
  r.open_loop = options_.open_loop;
  (options_.open_loop ? r.target_rate : r.concurrency) = level;
  const std::string label = absl::StrCat(index + 1, "/", total, " ", r.Label());
  const int64_t issued_before = issued_.load();
  const int64_t messages_before = stream_messages_.load();
  const int64_t requests_before = stream_requests_.load();
  {
    std::lock_guard<std::mutex> l(dispatch_mu_);
    stop_dispatch_ = false;
  }
  TakeWindow();  // drop completions of earlier points' stragglers before this point starts
  std::vector<std::thread> dispatchers;
  if (options_.open_loop) {
    const int n = std::max(1, options_.dispatch_threads);
    for (int k = 0; k < n; ++k) {
      dispatchers.emplace_back([this, level, k, n] { OpenLoopDispatch(level, k, n); });
    }
  } else {
    dispatchers.emplace_back([this, level] { DispatchLoop(level); });
  }

  std::vector<WindowStats> windows;
  bool running = WaitFor(options_.warmup_s, label, "warm-up");
  WindowStats warmup = TakeWindow();
  while (running) {
    running = WaitFor(options_.window_s, label, absl::StrCat("window ", r.windows + 1));
    WindowStats w = TakeWindow();
    // A window cut short by Ctrl-C still counts when it covers a meaningful span.
    if (!running && w.duration_s < 0.2 * options_.window_s && !windows.empty()) break;
    r.window_throughput.push_back(w.Throughput());
    r.window_latency_ms.push_back(LatencyMetricMs(w.latency_ns));
    windows.push_back(std::move(w));
    ++r.windows;
    if (IsStable(r)) {
      r.stable = true;
      break;
    }
    if (r.windows >= options_.max_windows) break;
  }
  r.interrupted = !running;
  inline_limit_.store(0);  // completions stop sending new requests
  {
    std::lock_guard<std::mutex> l(dispatch_mu_);
    stop_dispatch_ = true;
  }
  dispatch_cv_.notify_all();
  for (std::thread& t : dispatchers) t.join();
  if (options_.progress) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  if (windows.empty()) {
    r.measured = std::move(warmup);  // interrupted during warm-up: report what there is
  } else {
    const int k = std::min<int>(windows.size(), std::max(1, options_.stable_windows));
    for (int i = static_cast<int>(windows.size()) - k; i < static_cast<int>(windows.size()); ++i) {
      r.measured.Merge(windows[i]);
    }
  }
  r.issued = issued_.load() - issued_before;
  r.stream_messages = stream_messages_.load() - messages_before;
  r.stream_requests = stream_requests_.load() - requests_before;
  return r;
}

void Runner::Impl::Finish(double timeout_s) {
  if (finished_) return;
  finished_ = true;
  const auto deadline =
      Clock::now() + std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
  {
    std::unique_lock<std::mutex> l(dispatch_mu_);
    dispatch_cv_.wait_until(l, deadline, [&] { return outstanding_.load() == 0; });
  }
  if (outstanding_.load() > 0) {
    std::lock_guard<std::mutex> l(live_mu_);
    for (Call* c : live_) c->ctx->TryCancel();
  }
  {
    std::lock_guard<std::mutex> l(issue_mu_);
    for (CallStream* s : streams_) s->Close();
  }
  for (auto& s : all_streams_) {
    if (!s->WaitDone(deadline)) s->Cancel();
  }
  {
    std::unique_lock<std::mutex> l(dispatch_mu_);
    dispatch_cv_.wait_for(l, std::chrono::seconds(5), [&] { return outstanding_.load() == 0; });
  }
  for (const auto& [target, handle] : handles_) {
    const absl::Status status = targets_[target].client->ReleaseMatrix(handle);
    if (!status.ok()) {
      std::fprintf(stderr, "gemm_loadgen: releasing %s on %s failed: %s\n", handle.c_str(),
                   targets_[target].name.c_str(), status.ToString().c_str());
    }
  }
  handles_.clear();
  for (int target : shm_targets_) {
    const absl::Status status = targets_[target].client->UnregisterSharedMemory(shm_name_);
    if (!status.ok()) {
      std::fprintf(stderr, "gemm_loadgen: unregistering shared memory on %s failed: %s\n",
                   targets_[target].name.c_str(), status.ToString().c_str());
    }
  }
  shm_targets_.clear();
  shm_.reset();  // unlinks the object
  device_shm_.reset();
}

Runner::Runner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runner::~Runner() = default;

absl::StatusOr<std::unique_ptr<Runner>> Runner::Create(const RunnerOptions& options,
                                                       std::vector<Target> targets) {
  auto impl = std::make_unique<Impl>(options, std::move(targets));
  absl::Status status = impl->Init();
  if (!status.ok()) return status;  // ~Impl releases what was registered
  return std::unique_ptr<Runner>(new Runner(std::move(impl)));
}

PointResult Runner::RunPoint(double level, int index, int total) {
  return impl_->RunPoint(level, index, total);
}

void Runner::Finish(double timeout_s) { impl_->Finish(timeout_s); }

int64_t Runner::issued() const { return impl_->issued(); }

}  // namespace gemm::loadgen
