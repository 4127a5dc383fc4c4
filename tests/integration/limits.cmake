# Integration: the server's limits seen from a client, on servers of their own flags (start-up
# refusal of flags that make no sense, the response size limit).
add_executable(limits_integration_test ${CMAKE_CURRENT_LIST_DIR}/limits_test.cc)
target_link_libraries(limits_integration_test PRIVATE gemm_test_server_process GTest::gtest_main)
gtest_discover_tests(limits_integration_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
