# GPU test of the CUDA backend's copy kernel (server/gpu/device_copy.cu): CUDA IPC operands and a
# request's A read out of the pieces it was received in; skips without a GPU.
if(TARGET gemm_gpu_backend)
  add_executable(device_copy_gpu_test ${CMAKE_CURRENT_LIST_DIR}/device_copy_test.cc)
  target_include_directories(device_copy_gpu_test PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(device_copy_gpu_test PRIVATE gemm_gpu_backend CUDA::cudart
                                                     absl::random_random GTest::gtest_main)
  gtest_discover_tests(device_copy_gpu_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
endif()
