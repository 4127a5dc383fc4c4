# GPU tests of the kernel library (skip at run time without a GPU): cuBLASLt reference vs a
# float64 CPU reference, the SM90 kernel vs cuBLASLt, and an opt-in timing table.
if(GEMM_HAVE_CUDA)
  add_executable(kernel_gpu_tests ${CMAKE_CURRENT_LIST_DIR}/kernel_reference_test.cc
                                  ${CMAKE_CURRENT_LIST_DIR}/kernel_sm90_test.cc
                                  ${CMAKE_CURRENT_LIST_DIR}/kernel_sm90_perf_test.cc
                                  ${CMAKE_CURRENT_LIST_DIR}/kernel_test_device.cu)
  set_target_properties(kernel_gpu_tests PROPERTIES CUDA_ARCHITECTURES "90a;100a")
  # The timing experiments use the SM90 tuning hook (kernel/src/sm90/sm90_gemm.h).
  target_include_directories(kernel_gpu_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../../kernel/src)
  target_link_libraries(kernel_gpu_tests PRIVATE gemm_kernel CUDA::cudart absl::strings
                                                 GTest::gtest_main)
  gtest_discover_tests(kernel_gpu_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60)
endif()
