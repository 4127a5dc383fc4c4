# GPU tests of the SM100 tcgen05 kernel against cuBLASLt. They run only on compute capability
# 10.x (GB200/B200) and skip with a reason elsewhere; the dispatch test runs on any GPU.
if(GEMM_HAVE_CUDA)
  add_executable(sm100_gpu_test ${CMAKE_CURRENT_LIST_DIR}/sm100_gemm_test.cc)
  target_link_libraries(sm100_gpu_test PRIVATE gemm_kernel CUDA::cudart GTest::gtest_main)
  # A broken barrier protocol would hang rather than fail: bound each test.
  gtest_discover_tests(sm100_gpu_test DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
endif()
