# GPU tests of the CUDA backend (server/gpu); built when the backend is, skip without a GPU.
if(TARGET gemm_gpu_backend)
  add_executable(engine_gpu_tests ${CMAKE_CURRENT_LIST_DIR}/engine_backend_test.cc)
  target_link_libraries(engine_gpu_tests PRIVATE gemm_gpu_backend gemm_core gemm_common
                                                 absl::random_random absl::synchronization
                                                 GTest::gtest_main)
  gtest_discover_tests(engine_gpu_tests DISCOVERY_MODE PRE_TEST)
endif()
