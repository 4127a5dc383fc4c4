// AnswerBatch: a thread-local list of deferred calls.
#include "server/core/answer_batch.h"

#include <utility>

namespace gemm::core {
namespace {

struct OpenBatch {
  int depth = 0;
  std::vector<std::function<void()>> deferred;
};

thread_local OpenBatch t_batch;

}  // namespace

AnswerBatch::AnswerBatch() : outermost_(t_batch.depth == 0) { ++t_batch.depth; }

AnswerBatch::~AnswerBatch() {
  if (outermost_) {
    // Still open while the calls run: one that defers again is run by this loop.
    for (size_t i = 0; i < t_batch.deferred.size(); ++i) {
      std::function<void()> f = std::move(t_batch.deferred[i]);
      f();
    }
    t_batch.deferred.clear();
  }
  --t_batch.depth;
}

bool AnswerBatch::Defer(std::function<void()> flush) {
  if (t_batch.depth == 0) return false;
  t_batch.deferred.push_back(std::move(flush));
  return true;
}

}  // namespace gemm::core
