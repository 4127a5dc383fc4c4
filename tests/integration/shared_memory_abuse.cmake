# Integration: the real server (CPU backend) against clients that shrink registered shared-memory
# objects, register regions without end, or pass bad keys.
add_executable(shared_memory_abuse_test ${CMAKE_CURRENT_LIST_DIR}/shared_memory_abuse_test.cc
                                        ${CMAKE_CURRENT_LIST_DIR}/test_util.cc)
target_link_libraries(shared_memory_abuse_test PRIVATE gemm_test_server_process gemm_test_shm_util
                                                       gemm_common GTest::gtest_main
                                                       absl::random_random)
gtest_discover_tests(shared_memory_abuse_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
