# Client shared memory on the host, against clients that pass bad keys or objects: key and object
# checks of PosixShm (no GPU, no network).
add_executable(shared_memory_unit_test ${CMAKE_CURRENT_LIST_DIR}/posix_shm_test.cc)
target_link_libraries(shared_memory_unit_test PRIVATE gemm_common gemm_test_shm_util
                                                       GTest::gtest_main)
gtest_discover_tests(shared_memory_unit_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
