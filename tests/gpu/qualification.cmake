# The server's side of kernel qualification against fake gemm_qualify children (shell scripts):
# missing binary, hung case, CUDA error, cuBLASLt mismatch. Built with the CUDA backend; needs no
# GPU (the parent makes no CUDA call), so it runs in CI.
if(TARGET gemm_gpu_backend)
  add_executable(device_qualification_test ${CMAKE_CURRENT_LIST_DIR}/device_qualification_test.cc)
  target_link_libraries(device_qualification_test PRIVATE gemm_gpu_backend gemm_kernel absl::time
                                                          GTest::gtest_main)
  gtest_discover_tests(device_qualification_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 60)
endif()
