# Chaos test: many misbehaving and well-behaved clients against one real gemm_server (CPU
# backend) at once, then SIGTERM under load (one to three minutes; alone: ctest -R Chaos).
add_executable(chaos_test
  ${CMAKE_CURRENT_LIST_DIR}/chaos_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/chaos_drain.cc
  ${CMAKE_CURRENT_LIST_DIR}/chaos_garbage.cc
  ${CMAKE_CURRENT_LIST_DIR}/chaos_ledger.cc
  ${CMAKE_CURRENT_LIST_DIR}/chaos_requests.cc
  ${CMAKE_CURRENT_LIST_DIR}/chaos_shm.cc
  ${CMAKE_CURRENT_LIST_DIR}/chaos_streams.cc
  ${CMAKE_CURRENT_LIST_DIR}/chaos_unary.cc
  ${CMAKE_CURRENT_LIST_DIR}/process_stats.cc
  ${PROJECT_SOURCE_DIR}/tests/integration/test_util.cc)
target_link_libraries(chaos_test PRIVATE gemm_test_server_process gemm_common GTest::gtest_main
                                         absl::random_random)
gtest_discover_tests(chaos_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 420 LABELS chaos)
