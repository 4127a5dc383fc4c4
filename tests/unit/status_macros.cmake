# Unit tests of common/status_macros.h (GEMM_RETURN_IF_ERROR, GEMM_ASSIGN_OR_RETURN). Links only
# the header-only target and GoogleTest, which also shows the header needs nothing but Abseil.
add_executable(status_macros_test ${CMAKE_CURRENT_LIST_DIR}/status_macros_test.cc)
target_link_libraries(status_macros_test PRIVATE gemm_status_macros GTest::gtest_main)
gtest_discover_tests(status_macros_test DISCOVERY_MODE PRE_TEST)
