// OutcomeRecorder (see outcome_recorder.h).
#include "client/loadgen/outcome_recorder.h"

#include <cstdio>
#include <string>

namespace gemm::loadgen {
namespace {

// Mismatches logged in full; later ones are only counted.
constexpr int kMaxMismatchLogs = 5;

}  // namespace

bool OutcomeRecorder::Record(const Call& c, const grpc::Status& status,
                             const v1::GemmResponse* resp) {
  const int64_t latency = NowNs() - c.intended_ns;
  const bool stream_error = resp != nullptr && resp->has_error();
  const bool ok = status.ok() && resp != nullptr && !stream_error;
  if (ok) {
    bool verified = false, mismatch = false;
    Check(c, *resp, &verified, &mismatch);
    window_.RecordSuccess(shapes_[c.shape], latency, *resp, verified, mismatch);
  } else {
    window_.RecordFailure(stream_error ? resp->error().code()
                                       : static_cast<int>(status.error_code()));
  }
  return ok;
}

void OutcomeRecorder::Check(const Call& c, const v1::GemmResponse& resp, bool* verified,
                            bool* mismatch) {
  std::string why;
  const bool size_ok = checker_.SizesOk(c.shape, resp, &why);
  *verified = c.verify || !size_ok;
  *mismatch = !size_ok || (c.verify && !checker_.Verify(c.shape, c.dslot, resp, &why));
  if (*mismatch && mismatch_logs_.fetch_add(1) < kMaxMismatchLogs) {
    std::fprintf(stderr, "\ngemm_loadgen: MISMATCH in %s response: %s\n",
                 shapes_[c.shape].spec.Name().c_str(), why.c_str());
  }
}

}  // namespace gemm::loadgen
