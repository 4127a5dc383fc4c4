# SM100 kernel sources (placeholder until the sm100 kernel lands: every call is UNIMPLEMENTED,
# so the dispatch falls back to cuBLASLt).
target_sources(gemm_kernel PRIVATE ${CMAKE_CURRENT_LIST_DIR}/sm100_unimplemented.cc)
