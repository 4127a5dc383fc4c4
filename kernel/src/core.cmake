# Kernel library core: public-API dispatch, validation, cuBLASLt reference/fallback, SM90
# heuristics. Host C++ only.
target_sources(${GEMM_KERNEL_LIB} PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/dispatch.cc
  ${CMAKE_CURRENT_LIST_DIR}/validate.cc
  ${CMAKE_CURRENT_LIST_DIR}/heuristics_sm90.cc
  ${CMAKE_CURRENT_LIST_DIR}/qualification_cases.cc
  ${CMAKE_CURRENT_LIST_DIR}/wait_timeout.cc
  ${CMAKE_CURRENT_LIST_DIR}/../reference/cublaslt_gemm.cc)
# reference/ headers are included as "reference/..." from the kernel root.
target_include_directories(${GEMM_KERNEL_LIB} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
