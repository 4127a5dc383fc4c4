# Client shared memory on the host, against clients that shrink their objects or register without
# end: SIGBUS-guarded copies (common/guarded_copy.h), key and object checks of PosixShm, and the
# registry and CPU backend with shrunk regions and region caps (no GPU, no network).
add_executable(shared_memory_unit_test
  ${CMAKE_CURRENT_LIST_DIR}/guarded_copy_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/posix_shm_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/shared_memory_host_test.cc)
target_link_libraries(shared_memory_unit_test PRIVATE gemm_core gemm_cpu_backend gemm_common
                                                       gemm_test_shm_util GTest::gtest_main)
gtest_discover_tests(shared_memory_unit_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
