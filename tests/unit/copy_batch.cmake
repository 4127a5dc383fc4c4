# CPU unit test of the CUDA backend's copy merging (server/gpu/copy_batch.cc): runs without a GPU
# (needs the CUDA runtime headers and library, so it is built where the CUDA backend is).
if(TARGET gemm_gpu_backend)
  add_executable(copy_batch_test ${CMAKE_CURRENT_LIST_DIR}/copy_batch_test.cc)
  target_include_directories(copy_batch_test PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(copy_batch_test PRIVATE gemm_gpu_backend CUDA::cudart GTest::gtest_main)
  gtest_discover_tests(copy_batch_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)
endif()
