# SM90 (H100/H200) persistent WGMMA kernel. Device code is guarded by __CUDA_ARCH_FEAT_SM90_ALL,
# so the sm_100a pass of gemm_kernel compiles empty kernel bodies (never launched: the dispatch
# checks for compute capability 9.0 exactly).
target_sources(${GEMM_KERNEL_LIB} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/sm90_gemm.cc
                                   ${CMAKE_CURRENT_LIST_DIR}/sm90_inst_bn128.cu
                                   ${CMAKE_CURRENT_LIST_DIR}/sm90_inst_bn256.cu
                                   ${CMAKE_CURRENT_LIST_DIR}/sm90_inst_bm256.cu
                                   ${CMAKE_CURRENT_LIST_DIR}/sm90_inst_bm64.cu
                                   ${CMAKE_CURRENT_LIST_DIR}/sm90_inst_swap_narrow.cu
                                   ${CMAKE_CURRENT_LIST_DIR}/sm90_inst_swap_wide.cu)
# The small-M (decode) kernel of the same family; the dispatch always routes M <= 16 to it.
include(${CMAKE_CURRENT_LIST_DIR}/small_m.cmake)
