// The kernel library's qualification case list: for a device's native kernel family, problems
// that together run every compiled variant (both B layouts, both output dtypes, beta, grouped,
// batched, split-K, Cluster Launch Control on and off), each naming the variants it runs. Pure
// host C++: the list is computed and unit-tested without a GPU; the server runs it in a child
// process (server/gpu/qualify_main.cc) before its own context may use a variant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gemm/kernel.h"

namespace gemm::kernel {

// One problem of a case (operands are made up by the runner: dense, pitch = row length).
struct QualificationProblem {
  int64_t m = 0, n = 0, k = 0;
  BLayout b_layout = BLayout::kKN;
  DType d_dtype = DType::kBF16;
  float alpha = 1.0f, beta = 0.0f;  // beta != 0: the runner supplies C
};

struct QualificationCase {
  std::string name;
  std::vector<QualificationProblem> problems;  // a group when more than one
  int64_t batch = 1;                           // strided batch count (one problem)
  bool clc = false;                            // SM100: Cluster Launch Control scheduling
  int m_waves = 0;                             // SM100: force the wide kernel's M-waves (0: auto)
  std::vector<int> variants;                   // indices into NativeVariantNames(kind)
};

// Names of the native variants of `kind` in index order (bit i of
// LaunchOptions::usable_variants): the 12 of kSm100, one for the kSm90 family, none otherwise.
std::vector<std::string> NativeVariantNames(KernelKind kind);

// The cases that qualify `kind` on a device with `sm_count` SMs (kCublasLt: one case that checks
// cuBLASLt against the float64 reference).
std::vector<QualificationCase> QualificationCases(KernelKind kind, int sm_count);

// Mask with the bits of every variant of `kind` set.
uint64_t AllVariants(KernelKind kind);

}  // namespace gemm::kernel
