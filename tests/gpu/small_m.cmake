# Tests of the SM90 small-M (decode) kernel: plan tests (CPU only) and GPU tests against cuBLAS
# (skip without a compute-capability-9.x GPU). Built when the CUDA kernel library is.
if(TARGET gemm_kernel)
  add_executable(small_m_test ${CMAKE_CURRENT_LIST_DIR}/small_m_test.cc
                              ${CMAKE_CURRENT_LIST_DIR}/small_m_plan_test.cc)
  target_include_directories(small_m_test PRIVATE ${PROJECT_SOURCE_DIR}/kernel/src)
  target_link_libraries(small_m_test PRIVATE gemm_kernel CUDA::cudart CUDA::cublas GTest::gtest_main)
  gtest_discover_tests(small_m_test DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60)
endif()
