# GPU tests of the kernel library (skip at run time without a GPU): cuBLASLt reference vs a
# float64 CPU reference, and the SM90 kernel vs cuBLASLt.
if(GEMM_HAVE_CUDA)
  add_executable(kernel_gpu_tests ${CMAKE_CURRENT_LIST_DIR}/kernel_reference_test.cc)
  target_link_libraries(kernel_gpu_tests PRIVATE gemm_kernel CUDA::cudart GTest::gtest_main)
  gtest_discover_tests(kernel_gpu_tests DISCOVERY_MODE PRE_TEST)
endif()
