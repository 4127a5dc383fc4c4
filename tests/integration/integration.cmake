# Integration tests: the real gemm_server binary on loopback, called with the real client library.
add_library(gemm_test_server_process STATIC ${CMAKE_CURRENT_LIST_DIR}/server_process.cc)
target_link_libraries(gemm_test_server_process PUBLIC gemm_client_lib)
target_include_directories(gemm_test_server_process PUBLIC ${PROJECT_SOURCE_DIR})
target_compile_definitions(gemm_test_server_process
                           PRIVATE GEMM_SERVER_PATH="$<TARGET_FILE:gemm_server>")
add_dependencies(gemm_test_server_process gemm_server)

add_executable(integration_test
  ${CMAKE_CURRENT_LIST_DIR}/gemm_requests_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/bad_input_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/lifecycle_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/metrics_endpoint_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/shared_memory_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_util.cc)
target_link_libraries(integration_test PRIVATE gemm_test_server_process gemm_test_loopback_http
                                               gemm_common GTest::gtest_main absl::random_random)
gtest_discover_tests(integration_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)

add_test(NAME cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli_test.sh $<TARGET_FILE:gemm_server>
                               $<TARGET_FILE:gemm_client>)
set_tests_properties(cli_test PROPERTIES TIMEOUT 120)
add_test(NAME server_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/server_cli_test.sh
                                      $<TARGET_FILE:gemm_server> ${PROJECT_SOURCE_DIR})
set_tests_properties(server_cli_test PROPERTIES TIMEOUT 60)

# The tiny-output sweep over every request path, shared with the CUDA backend's test (tests/gpu).
add_library(gemm_test_output_sweep STATIC ${CMAKE_CURRENT_LIST_DIR}/output_size_sweep.cc
                                          ${CMAKE_CURRENT_LIST_DIR}/test_util.cc)
target_link_libraries(gemm_test_output_sweep PUBLIC gemm_test_server_process gemm_common
                                                    GTest::gtest absl::random_random
                                                    absl::synchronization)

# One process and one server for all paths (the whole sweep takes seconds).
add_executable(output_size_test ${CMAKE_CURRENT_LIST_DIR}/output_size_test.cc)
target_link_libraries(output_size_test PRIVATE gemm_test_output_sweep GTest::gtest_main)
add_test(NAME output_size_test COMMAND output_size_test)
set_tests_properties(output_size_test PROPERTIES TIMEOUT 180)
