// AnswerBatch: answers given together leave together. A backend thread answering several requests
// at once (the requests of one GPU unit) opens an AnswerBatch around them; a responder that would
// start a write per answer (a GemmStreamPacked stream) defers the write with Defer() instead, and
// the deferred writes run when the batch closes, so the answers bound for one stream go out in one
// message. Knows nothing of gRPC.
#pragma once

#include <functional>
#include <vector>

namespace gemm::core {

class AnswerBatch {
 public:
  // Opens a batch on the calling thread. Batches nest: an inner one joins the outermost, whose
  // end runs every deferred call.
  AnswerBatch();
  // Closes the batch; the outermost runs the deferred calls in the order they were deferred
  // (calls deferred while they run run too, before it returns).
  ~AnswerBatch();
  AnswerBatch(const AnswerBatch&) = delete;
  AnswerBatch& operator=(const AnswerBatch&) = delete;

  // If a batch is open on this thread, queues `flush` to run when it closes and returns true;
  // otherwise returns false (and drops `flush`): the caller then does the work itself at once.
  static bool Defer(std::function<void()> flush);

 private:
  bool outermost_;
};

}  // namespace gemm::core
