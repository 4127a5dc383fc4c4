# The service layer's tokens and certificate-roles files and its authorizer (no network).
add_executable(auth_unit_test ${CMAKE_CURRENT_LIST_DIR}/auth_test.cc)
target_link_libraries(auth_unit_test PRIVATE gemm_grpc_service GTest::gtest_main)
gtest_discover_tests(auth_unit_test DISCOVERY_MODE PRE_TEST)
