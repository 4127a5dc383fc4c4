# Integration tests of the stream and upload RPCs against the real gemm_server: streams that end
# early, messages that do not parse, a drain with streams open, answer backpressure, idle and
# cancelled uploads.
add_executable(stream_service_test
  ${CMAKE_CURRENT_LIST_DIR}/stream_backpressure_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/stream_cancel_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/stream_drain_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/upload_lifecycle_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/wire_parse_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_util.cc)
target_link_libraries(stream_service_test PRIVATE gemm_test_server_process gemm_common
                                                  GTest::gtest_main absl::random_random)
gtest_discover_tests(stream_service_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)
