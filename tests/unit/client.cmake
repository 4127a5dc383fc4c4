# Unit tests of gemm_client's request building (shapes from flags and .npy files, the messages
# when they disagree) and of its --verify reference (cblas_dgemm against the float64 loop), and
# of the command-line helper's source paths (no GPU, no network).
add_executable(client_unit_test
  ${CMAKE_CURRENT_LIST_DIR}/gemm_request_builder_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/verify_response_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/cli_flags_test.cc)
target_link_libraries(client_unit_test PRIVATE gemm_cli_lib gemm_cli_flags gemm_common
                                               GTest::gtest_main)
gtest_discover_tests(client_unit_test TEST_PREFIX "client." DISCOVERY_MODE PRE_TEST)
