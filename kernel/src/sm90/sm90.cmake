# SM90 (H100/H200) persistent WGMMA kernel. Device code is guarded by __CUDA_ARCH_FEAT_SM90_ALL,
# so the sm_100a pass of gemm_kernel compiles empty kernel bodies (never launched: the dispatch
# checks for compute capability 9.0 exactly).
target_sources(gemm_kernel PRIVATE ${CMAKE_CURRENT_LIST_DIR}/sm90_gemm.cc
                                   ${CMAKE_CURRENT_LIST_DIR}/sm90_inst_bn128.cu
                                   ${CMAKE_CURRENT_LIST_DIR}/sm90_inst_bn256.cu
                                   ${CMAKE_CURRENT_LIST_DIR}/sm90_inst_bm256.cu
                                   ${CMAKE_CURRENT_LIST_DIR}/sm90_inst_bm64.cu)
# The decode engineer's small-M kernel, when present.
include(${CMAKE_CURRENT_LIST_DIR}/small_m.cmake OPTIONAL RESULT_VARIABLE _gemm_small_m)
if(_gemm_small_m)
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/../dispatch.cc PROPERTIES
                              COMPILE_DEFINITIONS GEMM_HAVE_SMALL_M=1)
endif()
