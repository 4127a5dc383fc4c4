# Tiny-output sweep against the real gemm_server --backend=cuda (every request path, CUDA IPC
# regions too); skips without a GPU. One process and one server for all paths.
if(TARGET gemm_gpu_backend)
  # gemm_test_output_sweep is defined by tests/integration/integration.cmake.
  add_executable(output_size_gpu_test ${CMAKE_CURRENT_LIST_DIR}/output_size_gpu_test.cc)
  target_link_libraries(output_size_gpu_test PRIVATE gemm_test_output_sweep gemm_gpu_backend
                                                     CUDA::cudart GTest::gtest_main)
  add_test(NAME output_size_gpu_test COMMAND output_size_gpu_test)
  set_tests_properties(output_size_gpu_test PROPERTIES TIMEOUT 600)
endif()
