// Flags of the weight repository: which files the server loads as named resident matrices at
// start-up, their layout, how strictly files are taken, rescans, and whether clients may release
// them.
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "server/options/flag_groups.h"

namespace gemm::core {

// --weights_layout=nk|kn.
bool AbslParseFlag(absl::string_view text, BLayout* layout, std::string* error) {
  const std::string v = absl::AsciiStrToLower(text);
  if (v == "nk") {
    *layout = BLayout::kNK;
  } else if (v == "kn") {
    *layout = BLayout::kKN;
  } else {
    *error = "must be nk or kn";
    return false;
  }
  return true;
}

std::string AbslUnparseFlag(BLayout layout) { return BLayoutName(layout); }

}  // namespace gemm::core

namespace {
const gemm::core::WeightRepository::Options kWeights;
}  // namespace

ABSL_FLAG(std::vector<std::string>, weights, kWeights.paths,
          "Weight repository: files or folders (searched recursively) of .safetensors and .npy "
          "files, comma-separated. Loaded before the server listens; each 2-D tensor becomes a "
          "resident matrix named <file stem>/<tensor> (.npy: <file stem>). BF16 loads as is, "
          "FP16 and FP32 are rounded to BF16. Default: none.");
ABSL_FLAG(gemm::core::BLayout, weights_layout, kWeights.layout,
          "How the repository's tensors are used as B: nk ([N,K], PyTorch's Linear weight) or kn "
          "([K,N]). Default nk.");
ABSL_FLAG(bool, weights_strict, kWeights.strict,
          "A repository tensor of another dtype than BF16/F16/F32 or not 2-D stops the start "
          "(or fails the rescan) instead of being skipped with a log line. Default false.");
ABSL_FLAG(int32_t, weights_poll_s,
          static_cast<int32_t>(absl::ToInt64Seconds(kWeights.poll_interval)),
          "Seconds between rescans of the weight repository (new files load, changed ones "
          "replace their tensors, removed ones are released); 0: only on SIGHUP. Default 0.");
ABSL_FLAG(bool, allow_release_repository_weights,
          gemm::core::GemmEngine::Options{}.release_repository_weights,
          "Let clients release (ReleaseMatrix) and replace (RegisterMatrix) the repository's "
          "weights. Default false: FAILED_PRECONDITION.");

namespace gemm::server {

void ApplyWeightsFlags(ServerOptions& options) {
  options.weights.paths = absl::GetFlag(FLAGS_weights);
  options.weights.layout = absl::GetFlag(FLAGS_weights_layout);
  options.weights.strict = absl::GetFlag(FLAGS_weights_strict);
  options.weights.poll_interval = absl::Seconds(absl::GetFlag(FLAGS_weights_poll_s));
  options.engine.release_repository_weights = absl::GetFlag(FLAGS_allow_release_repository_weights);
}

}  // namespace gemm::server
