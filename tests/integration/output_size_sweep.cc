// OutputSizeSweep: the cases, the request paths and the per-answer check (see the header).
#include "tests/integration/output_size_sweep.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/posix_shm.h"
#include "common/reference_gemm.h"

namespace gemm::testing {
namespace {

constexpr int64_t kMaxDim = 9;                                   // M and N run over 1..kMaxDim
constexpr int64_t kKs[] = {1, 7, 64};                            // K of every (M, N)
constexpr int64_t kCoalescedRows = kMaxDim * (kMaxDim + 1) / 2;  // M = 1..kMaxDim in one batch
constexpr int kThreads = 4;  // concurrent callers of the unary paths
constexpr absl::Duration kTimeout = absl::Seconds(60);
// NOTE: BF16's tolerance for both dtypes: a 1x1 output has nothing to average its rounding with,
// and an FP32 sum that nearly cancels keeps only FP32's absolute precision. Sizes are exact.
constexpr double kTolerance = 8e-3;
// Layout of one case's slot in a shared-memory region: A, B, C, then D followed by untouched
// bytes (the largest operands: A and B 64*9*2 = 1152 bytes, C and D 9*9*4 = 324).
constexpr int64_t kSlotBytes = 4096, kBAt = 1280, kCAt = 2560, kDAt = 3072;
constexpr char kPoison = '\xff';  // unwritten BF16 and FP32 values read as NaN

struct Case {
  int64_t m, n, k;
  bool fp32;
  int index;    // position in Cases()
  int variant;  // picks the case's options (B layout, scalars, the path's choices)
};

// The variant of the index-th shape (or weight, or N) with output dtype `fp32`: neighbouring
// shapes differ in it, and so do a shape's two dtypes, so every option meets both dtypes.
int Variant(int64_t index, bool fp32) { return static_cast<int>(index) + (fp32 ? 1 : 0); }

// Where a batch's B comes from.
enum BSource { kPerEntryB, kSharedB, kResidentB };

// Every swept (M, N, K, dtype), K outermost.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (int64_t k : kKs) {
    for (int64_t m = 1; m <= kMaxDim; ++m) {
      for (int64_t n = 1; n <= kMaxDim; ++n) {
        for (bool fp32 : {false, true}) {
          const int index = static_cast<int>(cases.size());
          cases.push_back({m, n, k, fp32, index, Variant(index / 2, fp32)});
        }
      }
    }
  }
  return cases;
}

// Scalars of a variant: alpha 0.5 or 1; beta -0.5 (with C) or 0.
float AlphaOf(int variant) { return variant % 3 == 1 ? 0.5f : 1.0f; }
float BetaOf(int variant) { return variant % 4 == 3 ? -0.5f : 0.0f; }

// Fresh random operands for `c`; its variant picks B's layout and the scalars.
HostProblem MakeProblem(const Case& c, absl::BitGen& gen) {
  return RandomProblem(c.m, c.n, c.k, c.variant % 2 == 1, c.fp32, AlphaOf(c.variant),
                       BetaOf(c.variant), gen);
}

std::string Label(const HostProblem& p) {
  return absl::StrCat(p.m, "x", p.n, "x", p.k, p.fp32 ? " fp32" : " bf16");
}

int64_t OutputBytes(const HostProblem& p) { return p.m * p.n * (p.fp32 ? 4 : 2); }

// Failures of one path, collected from any thread.
class Failures {
 public:
  // Records `why` about `what` unless `why` is empty.
  void Add(const std::string& what, const std::string& why) {
    if (why.empty()) return;
    absl::MutexLock lock(&mu_);
    list_.push_back(absl::StrCat(what, ": ", why));
  }
  std::vector<std::string> Take() {
    absl::MutexLock lock(&mu_);
    return std::move(list_);
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> list_ ABSL_GUARDED_BY(mu_);
};

// Runs fn(i, gen) for every i in [0, n) on kThreads threads, each with its own generator.
void ParallelFor(int n, const std::function<void(int, absl::BitGen&)>& fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      absl::BitGen gen;
      for (int i = next++; i < n; i = next++) fn(i, gen);
    });
  }
  for (auto& t : threads) t.join();
}

// "" when `out` answers `entries` (one problem, or the entries of a batch when `batched`): its
// dtype and shape, exactly the output's bytes in `data`, values within kTolerance of float64.
std::string CheckOutput(absl::Span<const HostProblem> entries, bool batched,
                        const v1::Output& out) {
  const HostProblem& p = entries[0];
  const int64_t want = static_cast<int64_t>(entries.size()) * OutputBytes(p);
  if (static_cast<int64_t>(out.data().size()) != want) {
    return absl::StrCat("Output.data holds ", out.data().size(), " bytes, not ", want);
  }
  std::vector<int64_t> shape = {p.m, p.n};
  if (batched) shape.insert(shape.begin(), static_cast<int64_t>(entries.size()));
  if (!std::equal(shape.begin(), shape.end(), out.shape().begin(), out.shape().end())) {
    return absl::StrCat("shape [", absl::StrJoin(out.shape(), ","), "], not [",
                        absl::StrJoin(shape, ","), "]");
  }
  if (out.dtype() != (p.fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16)) {
    return absl::StrCat("dtype ", v1::DType_Name(out.dtype()));
  }
  for (size_t e = 0; e < entries.size(); ++e) {
    const double err = OutputError(entries[e], out, static_cast<int64_t>(e));
    if (!(err <= kTolerance)) return absl::StrCat("entry ", e, ": relative error ", err);
  }
  return "";
}

// "" when `r` answers the single problem `p` with its output in the response.
std::string ResponseError(const HostProblem& p, const v1::GemmResponse& r) {
  if (r.error().code() != 0) {
    return absl::StrCat("error ", r.error().code(), ": ", r.error().message());
  }
  if (r.outputs_size() != 1) return absl::StrCat(r.outputs_size(), " outputs");
  return CheckOutput(absl::MakeConstSpan(&p, 1), false, r.outputs(0));
}

std::string AnswerError(const HostProblem& p, const absl::StatusOr<v1::GemmResponse>& r) {
  return r.ok() ? ResponseError(p, *r) : r.status().ToString();
}

v1::GemmRequest SingleRequest(const HostProblem& p, const std::string& id) {
  v1::GemmRequest req;
  req.set_request_id(id);
  FillProto(p, req.mutable_problem());
  return req;
}

void SetRef(v1::SharedMemoryRef* ref, const std::string& region, int64_t offset, int64_t bytes) {
  ref->set_region(region);
  ref->set_offset(offset);
  ref->set_byte_size(bytes);
}

// Every case as a stream request, with the problems by request id.
struct StreamCases {
  std::map<std::string, HostProblem> problems;
  std::vector<v1::GemmRequest> requests;
};

StreamCases MakeStreamCases() {
  StreamCases s;
  absl::BitGen gen;
  for (const Case& c : Cases()) {
    const std::string id = absl::StrCat(c.index);
    HostProblem p = MakeProblem(c, gen);
    s.requests.push_back(SingleRequest(p, id));
    s.problems.emplace(id, std::move(p));
  }
  return s;
}

// Writes `messages` on `stream` while another thread reads the answers; returns them once the
// stream has ended (a failure unless it ended OK).
template <typename Request, typename Response>
std::vector<Response> Exchange(grpc::ClientReaderWriter<Request, Response>& stream,
                               const std::vector<Request>& messages, Failures& failures) {
  std::vector<Response> answers;
  std::thread reader([&] {
    Response r;
    while (stream.Read(&r)) answers.push_back(r);
  });
  for (const Request& m : messages) {
    if (!stream.Write(m)) {
      failures.Add("stream", "a write failed: the server ended the stream early");
      break;
    }
  }
  stream.WritesDone();
  reader.join();
  const grpc::Status s = stream.Finish();
  if (!s.ok())
    failures.Add("stream", absl::StrCat("ended ", s.error_code(), ": ", s.error_message()));
  return answers;
}

// Every request of `sent` answered exactly once, right.
void CheckStreamAnswers(const StreamCases& sent, const std::vector<v1::GemmResponse>& answers,
                        Failures& failures) {
  std::set<std::string> seen;
  for (const v1::GemmResponse& r : answers) {
    auto it = sent.problems.find(r.request_id());
    if (it == sent.problems.end()) {
      failures.Add("stream", absl::StrCat("an answer to unknown request '", r.request_id(), "'"));
    } else if (!seen.insert(r.request_id()).second) {
      failures.Add(Label(it->second), "answered twice");
    } else {
      failures.Add(Label(it->second), ResponseError(it->second, r));
    }
  }
  if (seen.size() != sent.problems.size()) {
    failures.Add("stream", absl::StrCat(sent.problems.size() - seen.size(), " of ",
                                        sent.problems.size(), " requests unanswered"));
  }
}

// Runs `p` with its operands in the slot at `slot` of `region`: A, B and C from the region and D
// in the response, or (`d_to_region`) A inline and D into the region, where the bytes after D
// must keep their poison. "" when the answer is right.
std::string RegionCaseError(client::GemmClient& client, SweepRegion& region, const HostProblem& p,
                            int64_t slot, bool d_to_region) {
  v1::GemmRequest req = SingleRequest(p, "shm");
  v1::Problem* q = req.mutable_problem();
  auto put = [&](int64_t at, const std::string& bytes, v1::SharedMemoryRef* ref) {
    SetRef(ref, region.name(), slot + at, static_cast<int64_t>(bytes.size()));
    return region.Write(slot + at, bytes);
  };
  absl::Status s = put(kBAt, p.b, q->mutable_b_shm());  // replaces the inline B (one oneof)
  if (s.ok() && !p.c.empty()) {
    q->clear_c();
    s = put(kCAt, p.c, q->mutable_c_shm());
  }
  if (s.ok() && !d_to_region) {
    q->clear_a();
    s = put(0, p.a, q->mutable_a_shm());
  }
  if (!s.ok()) return s.ToString();
  if (!d_to_region) return AnswerError(p, client.Gemm(req, kTimeout));

  SetRef(q->mutable_d_shm(), region.name(), slot + kDAt, OutputBytes(p));
  auto resp = client.Gemm(req, kTimeout);
  if (!resp.ok()) return resp.status().ToString();
  if (resp->outputs_size() != 1) return absl::StrCat(resp->outputs_size(), " outputs");
  if (!resp->outputs(0).data().empty()) {
    return absl::StrCat("D went to the region, yet Output.data holds ",
                        resp->outputs(0).data().size(), " bytes");
  }
  auto written = region.Read(slot + kDAt, kSlotBytes - kDAt);
  if (!written.ok()) return written.status().ToString();
  const size_t past = written->find_first_not_of(kPoison, OutputBytes(p));
  if (past != std::string::npos) {
    return absl::StrCat("the byte ", past - OutputBytes(p), " after D in the region was written");
  }
  v1::Output out = resp->outputs(0);
  out.set_data(written->substr(0, OutputBytes(p)));
  return CheckOutput(absl::MakeConstSpan(&p, 1), false, out);
}

// A POSIX shared-memory object registered as a region.
class HostRegion : public SweepRegion {
 public:
  HostRegion(client::GemmClient& client, std::string name, std::unique_ptr<PosixShm> shm)
      : client_(client), name_(std::move(name)), shm_(std::move(shm)) {}
  ~HostRegion() override { (void)client_.UnregisterSharedMemory(name_); }

  const std::string& name() const override { return name_; }
  absl::Status Write(int64_t offset, absl::string_view bytes) override {
    if (!Inside(offset, static_cast<int64_t>(bytes.size()))) {
      return absl::OutOfRangeError("write past the region");
    }
    std::memcpy(shm_->data() + offset, bytes.data(), bytes.size());
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> Read(int64_t offset, int64_t bytes) override {
    if (!Inside(offset, bytes)) return absl::OutOfRangeError("read past the region");
    return std::string(shm_->data() + offset, bytes);
  }

 private:
  bool Inside(int64_t offset, int64_t bytes) const {
    return offset >= 0 && bytes >= 0 && offset + bytes <= shm_->size();
  }
  client::GemmClient& client_;
  std::string name_;
  std::unique_ptr<PosixShm> shm_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ServerProcess>> StartSweepServer(const std::string& backend) {
  const char* binary = std::getenv("GEMM_SERVER_BINARY");
  return ServerProcess::Start(
      {absl::StrCat("--backend=", backend), absl::StrCat("--max_batch_rows=", kCoalescedRows),
       "--dispatch_when_idle=false", "--max_queue_delay_us=2000000"},
      absl::Seconds(120), binary != nullptr ? binary : "");
}

absl::StatusOr<std::unique_ptr<SweepRegion>> RegisterHostRegion(client::GemmClient& client,
                                                                const std::string& name,
                                                                int64_t bytes) {
  auto shm = PosixShm::Create(absl::StrCat("/gemm_sweep_", getpid(), "_", name), bytes);
  if (!shm.ok()) return shm.status();
  auto info = client.RegisterSharedMemory(name, (*shm)->key(), 0, bytes);
  if (!info.ok()) return info.status();
  return std::make_unique<HostRegion>(client, name, std::move(*shm));
}

int64_t SweepRegionBytes() { return static_cast<int64_t>(Cases().size()) * kSlotBytes; }

void ExpectNoFailures(const std::vector<std::string>& failures) {
  for (size_t i = 0; i < failures.size() && i < 10; ++i) ADD_FAILURE() << failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures (the first 10 above)";
}

absl::StatusOr<std::unique_ptr<OutputSizeSweep>> OutputSizeSweep::Create(
    client::GemmClient* client) {
  std::unique_ptr<OutputSizeSweep> sweep(new OutputSizeSweep(client));
  absl::BitGen gen;
  for (int64_t n = 1; n <= kMaxDim; ++n) {
    for (int64_t k : kKs) {
      Weight w{n, k, "", RandomBf16Bytes(n * k, gen)};
      auto info = RegisterNkWeight(*client, absl::StrCat("sweep-", n, "x", k), n, k, w.bytes);
      if (!info.ok()) return info.status();
      w.handle = info->handle();
      sweep->weights_.push_back(std::move(w));
    }
  }
  return sweep;
}

OutputSizeSweep::~OutputSizeSweep() {
  for (const Weight& w : weights_) (void)client_->ReleaseMatrix(w.handle);
}

const OutputSizeSweep::Weight& OutputSizeSweep::WeightFor(int64_t n, int64_t k) const {
  for (const Weight& w : weights_) {
    if (w.n == n && w.k == k) return w;
  }
  std::abort();  // every swept (N, K) has a weight
}

std::vector<std::string> OutputSizeSweep::Unary() {
  const std::vector<Case> cases = Cases();
  Failures failures;
  ParallelFor(static_cast<int>(cases.size()), [&](int i, absl::BitGen& gen) {
    const HostProblem p = MakeProblem(cases[i], gen);
    failures.Add(Label(p), AnswerError(p, client_->Gemm(SingleRequest(p, "unary"), kTimeout)));
  });
  return failures.Take();
}

std::vector<std::string> OutputSizeSweep::Stream() {
  const StreamCases sent = MakeStreamCases();
  Failures failures;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
  auto stream = client_->stub()->GemmStream(&ctx);
  CheckStreamAnswers(sent, Exchange(*stream, sent.requests, failures), failures);
  return failures.Take();
}

std::vector<std::string> OutputSizeSweep::Packed() {
  const StreamCases sent = MakeStreamCases();
  std::vector<v1::GemmRequestPack> packs;
  constexpr int kPackSizes[] = {1, 8, 27};
  for (size_t i = 0; i < sent.requests.size();) {
    v1::GemmRequestPack& pack = packs.emplace_back();
    const int size = kPackSizes[packs.size() % 3];
    for (int j = 0; j < size && i < sent.requests.size(); ++j) {
      *pack.add_requests() = sent.requests[i++];
    }
  }
  Failures failures;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
  auto stream = client_->stub()->GemmStreamPacked(&ctx);
  std::vector<v1::GemmResponse> answers;
  for (const v1::GemmResponsePack& pack : Exchange(*stream, packs, failures)) {
    answers.insert(answers.end(), pack.responses().begin(), pack.responses().end());
  }
  CheckStreamAnswers(sent, answers, failures);
  return failures.Take();
}

std::vector<std::string> OutputSizeSweep::SharedMemory(SweepRegion& region) {
  Failures failures;
  if (absl::Status s = region.Write(0, std::string(SweepRegionBytes(), kPoison)); !s.ok()) {
    failures.Add(region.name(), s.ToString());
    return failures.Take();
  }
  const std::vector<Case> cases = Cases();
  ParallelFor(static_cast<int>(cases.size()), [&](int i, absl::BitGen& gen) {
    const HostProblem p = MakeProblem(cases[i], gen);
    const bool d_to_region = cases[i].variant / 2 % 2 == 1;
    failures.Add(absl::StrCat(Label(p), d_to_region ? " D to region" : " operands from region"),
                 RegionCaseError(*client_, region, p, i * kSlotBytes, d_to_region));
  });
  return failures.Take();
}

std::vector<std::string> OutputSizeSweep::Coalesced() {
  Failures failures;
  std::vector<std::thread> threads;
  // NOTE: the threads go through the weights in the same order, so the nine requests of a weight
  // and dtype are in the queue together; their batch is released when full (StartSweepServer).
  for (int64_t m = 1; m <= kMaxDim; ++m) {
    threads.emplace_back([&, m] {
      absl::BitGen gen;
      for (size_t i = 0; i < weights_.size(); ++i) {
        const Weight& w = weights_[i];
        for (bool fp32 : {false, true}) {
          const int v = Variant(i, fp32);  // the same in every thread: one batching key
          HostProblem p = RandomProblem(m, w.n, w.k, true, fp32, AlphaOf(v), BetaOf(v), gen);
          p.b = w.bytes;
          v1::GemmRequest req = SingleRequest(p, "coalesced");
          req.mutable_problem()->set_b_handle(w.handle);
          auto resp = client_->Gemm(req, kTimeout);
          std::string why = AnswerError(p, resp);
          if (why.empty() && (resp->timing().batch_requests() != kMaxDim ||
                              resp->timing().batch_rows() != kCoalescedRows)) {
            why = absl::StrCat("ran in a batch of ", resp->timing().batch_requests(),
                               " requests and ", resp->timing().batch_rows(), " rows, not ",
                               kMaxDim, " and ", kCoalescedRows);
          }
          failures.Add(absl::StrCat(Label(p), " against a resident weight"), why);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return failures.Take();
}

std::vector<std::string> OutputSizeSweep::Grouped() {
  std::vector<std::pair<int64_t, int64_t>> groups;  // (M, K)
  for (int64_t k : kKs) {
    for (int64_t m = 1; m <= kMaxDim; ++m) groups.emplace_back(m, k);
  }
  Failures failures;
  ParallelFor(static_cast<int>(groups.size()), [&](int g, absl::BitGen& gen) {
    const auto [m, k] = groups[g];
    std::vector<HostProblem> ps;
    v1::GemmRequest req;
    for (int64_t n = 1; n <= kMaxDim; ++n) {
      for (bool fp32 : {false, true}) {
        const int v = Variant(n, fp32);
        const bool resident = n % 2 == 1;
        HostProblem p =
            RandomProblem(m, n, k, resident || v % 3 == 0, fp32, AlphaOf(v), BetaOf(v), gen);
        v1::Problem* q = req.mutable_group()->add_problems();
        FillProto(p, q);
        if (resident) {
          p.b = WeightFor(n, k).bytes;
          q->set_b_handle(WeightFor(n, k).handle);
        }
        ps.push_back(std::move(p));
      }
    }
    const std::string what = absl::StrCat("group of M=", m, " K=", k);
    auto resp = client_->Gemm(req, kTimeout);
    if (!resp.ok() || resp->outputs_size() != static_cast<int>(ps.size())) {
      failures.Add(what, resp.ok() ? absl::StrCat(resp->outputs_size(), " outputs")
                                   : resp.status().ToString());
      return;
    }
    for (size_t i = 0; i < ps.size(); ++i) {
      failures.Add(absl::StrCat(what, ", ", Label(ps[i])),
                   CheckOutput(absl::MakeConstSpan(&ps[i], 1), false, resp->outputs(i)));
    }
  });
  return failures.Take();
}

std::vector<std::string> OutputSizeSweep::Batched() {
  const std::vector<Case> cases = Cases();
  Failures failures;
  ParallelFor(static_cast<int>(cases.size()), [&](int i, absl::BitGen& gen) {
    const Case& c = cases[i];
    const int64_t count = 2 + c.variant / 2 % 2;
    const BSource b_source = static_cast<BSource>(c.variant % 3);
    std::vector<HostProblem> ps;
    std::string a, b, cs;
    for (int64_t e = 0; e < count; ++e) {
      HostProblem p = MakeProblem(c, gen);
      if (b_source == kResidentB) {
        p.b_nk = true;
        p.b = WeightFor(c.n, c.k).bytes;
      } else if (b_source == kSharedB && e > 0) {
        p.b = ps[0].b;
      }
      a += p.a;
      if (b_source == kPerEntryB) b += p.b;
      cs += p.c;
      ps.push_back(std::move(p));
    }
    v1::GemmRequest req;
    req.mutable_batch()->set_count(count);
    v1::Problem* q = req.mutable_batch()->mutable_problem();
    FillProto(ps[0], q);  // with the shared B
    q->set_a(a);
    if (b_source == kPerEntryB) q->set_b(b);
    if (b_source == kResidentB) q->set_b_handle(WeightFor(c.n, c.k).handle);
    if (!cs.empty()) q->set_c(cs);
    auto resp = client_->Gemm(req, kTimeout);
    std::string why;
    if (!resp.ok()) {
      why = resp.status().ToString();
    } else if (resp->outputs_size() != 1) {
      why = absl::StrCat(resp->outputs_size(), " outputs");
    } else {
      why = CheckOutput(ps, true, resp->outputs(0));
    }
    failures.Add(absl::StrCat(Label(ps[0]), " batch of ", count), why);
  });
  return failures.Take();
}

ServerProcess* OutputSizeSweepTest::server_ = nullptr;
OutputSizeSweep* OutputSizeSweepTest::sweep_ = nullptr;

void OutputSizeSweepTest::StartSuite(const std::string& backend) {
  auto server = StartSweepServer(backend);
  ASSERT_TRUE(server.ok()) << server.status();
  server_ = server->release();
  auto sweep = OutputSizeSweep::Create(&server_->client());
  ASSERT_TRUE(sweep.ok()) << sweep.status();
  sweep_ = sweep->release();
}

void OutputSizeSweepTest::TearDownTestSuite() {
  delete sweep_;
  sweep_ = nullptr;
  if (server_ != nullptr) EXPECT_EQ(server_->Stop(SIGTERM), 0);
  delete server_;
  server_ = nullptr;
}

void OutputSizeSweepTest::SetUp() {
  if (sweep_ == nullptr) GTEST_SKIP() << "no server for this suite (see its set-up)";
}

}  // namespace gemm::testing
