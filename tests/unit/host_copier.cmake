# CPU unit test of the CUDA backend's host copy pool (server/gpu/host_copier.cc). That file is
# plain C++ (no CUDA), so the test compiles it directly and runs in builds without CUDA too.
add_executable(host_copier_test ${CMAKE_CURRENT_LIST_DIR}/host_copier_test.cc
                                ${PROJECT_SOURCE_DIR}/server/gpu/host_copier.cc)
target_include_directories(host_copier_test PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(host_copier_test PRIVATE gemm_common gemm_test_shm_util
                                               absl::synchronization Threads::Threads
                                               GTest::gtest_main)
gtest_discover_tests(host_copier_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)
