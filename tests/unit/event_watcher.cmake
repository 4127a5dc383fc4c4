# CPU unit test of the CUDA backend's event watcher (server/gpu/event_watcher.cc) with a fake
# event query: runs without a GPU (needs the CUDA runtime headers and library, so it is built
# where the CUDA backend is).
if(TARGET gemm_gpu_backend)
  add_executable(event_watcher_test ${CMAKE_CURRENT_LIST_DIR}/event_watcher_test.cc)
  target_include_directories(event_watcher_test PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(event_watcher_test PRIVATE gemm_gpu_backend CUDA::cudart absl::random_random
                                                   absl::synchronization GTest::gtest_main)
  gtest_discover_tests(event_watcher_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)
endif()
