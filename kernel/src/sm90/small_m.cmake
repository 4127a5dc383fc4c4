# Small-M (decode) kernel of the SM90 family: swap-AB mma.sync + cp.async + split-K.
# Included from sm90.cmake (always built). NOTE: the .cu builds for every architecture of
# gemm_kernel (its instructions, mma.sync / ldmatrix / cp.async, exist on sm_90a and sm_100a
# alike), so a call on any device computes the right result; the dispatch uses it on compute
# capability 9.0.
target_sources(${GEMM_KERNEL_LIB} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/small_m_heuristics.cc
                                   ${CMAKE_CURRENT_LIST_DIR}/small_m_launch.cu)
