// Names of domain enums.
#include "server/core/types.h"

namespace gemm::core {

const char* DTypeName(DType t) { return t == DType::kBF16 ? "bf16" : "fp32"; }
const char* BLayoutName(BLayout l) { return l == BLayout::kKN ? "kn" : "nk"; }

}  // namespace gemm::core
