# Integration tests of the server process's guards: the gRPC listener (taken port, descriptor
# limit, connection cap) and requests that expire while queued behind a long job.
add_executable(process_guard_test ${CMAKE_CURRENT_LIST_DIR}/listener_test.cc
                                  ${CMAKE_CURRENT_LIST_DIR}/queue_deadline_test.cc
                                  ${CMAKE_CURRENT_LIST_DIR}/test_util.cc)
target_link_libraries(process_guard_test PRIVATE gemm_test_server_process gemm_test_loopback_http
                                                 gemm_common GTest::gtest_main absl::random_random)
target_compile_definitions(process_guard_test PRIVATE GEMM_SERVER_PATH="$<TARGET_FILE:gemm_server>")
gtest_discover_tests(process_guard_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)
