# TLS, mutual TLS, tokens with roles, ownership and per-caller limits on the real gemm_server,
# with certificates the test makes with openssl.
find_program(GEMM_OPENSSL openssl REQUIRED)
add_executable(security_test ${CMAKE_CURRENT_LIST_DIR}/security_test.cc)
target_link_libraries(security_test PRIVATE gemm_test_server_process gemm_common
                                            GTest::gtest_main)
gtest_discover_tests(security_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
