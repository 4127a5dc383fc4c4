# Ownership of resident matrices and shared-memory regions, and per-caller caps (no GPU, no
# network).
add_executable(ownership_unit_test ${CMAKE_CURRENT_LIST_DIR}/ownership_test.cc)
target_link_libraries(ownership_unit_test PRIVATE gemm_core gemm_cpu_backend gemm_common
                                                  gemm_test_shm_util GTest::gtest_main)
gtest_discover_tests(ownership_unit_test DISCOVERY_MODE PRE_TEST)
