# Server tests of the weight repository (--weights): serving weights by name, pinning, SIGHUP
# rescans, chosen handles, a malformed file at start; and the three-replica rolling restart under
# a verified round_robin load (CPU backend; about 20 s on a loaded 2-core machine).
add_library(gemm_test_weights_fixture STATIC ${CMAKE_CURRENT_LIST_DIR}/weights_fixture.cc
                                             ${CMAKE_CURRENT_LIST_DIR}/test_util.cc)
target_link_libraries(gemm_test_weights_fixture PUBLIC gemm_test_server_process
                                                       gemm_test_weight_files gemm_common
                                                       GTest::gtest absl::random_random)

add_executable(weights_integration_test ${CMAKE_CURRENT_LIST_DIR}/weights_test.cc)
target_link_libraries(weights_integration_test PRIVATE gemm_test_weights_fixture GTest::gtest_main)
gtest_discover_tests(weights_integration_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)

add_executable(rolling_restart_test ${CMAKE_CURRENT_LIST_DIR}/rolling_restart_test.cc)
target_link_libraries(rolling_restart_test PRIVATE gemm_test_weights_fixture absl::synchronization
                                                   GTest::gtest_main)
add_test(NAME rolling_restart_test COMMAND rolling_restart_test)
set_tests_properties(rolling_restart_test PROPERTIES TIMEOUT 120)
