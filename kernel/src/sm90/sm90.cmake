# SM90 (H100/H200) kernel sources. Device code is sm_90a only.
target_sources(gemm_kernel PRIVATE ${CMAKE_CURRENT_LIST_DIR}/sm90_stub.cc)
# The decode engineer's small-M kernel, when present.
include(${CMAKE_CURRENT_LIST_DIR}/small_m.cmake OPTIONAL RESULT_VARIABLE _gemm_small_m)
if(_gemm_small_m)
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/../dispatch.cc PROPERTIES
                              COMPILE_DEFINITIONS GEMM_HAVE_SMALL_M=1)
endif()
