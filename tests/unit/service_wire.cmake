# The gRPC layer's stream answer budget (backpressure caps, answer sizes) and its parsing of raw
# request bytes (no server, no network).
add_executable(answer_budget_test ${CMAKE_CURRENT_LIST_DIR}/answer_budget_test.cc)
target_link_libraries(answer_budget_test PRIVATE gemm_grpc_service GTest::gtest_main)
gtest_discover_tests(answer_budget_test DISCOVERY_MODE PRE_TEST)

add_executable(wire_message_test ${CMAKE_CURRENT_LIST_DIR}/wire_message_test.cc)
target_link_libraries(wire_message_test PRIVATE gemm_grpc_service GTest::gtest_main)
gtest_discover_tests(wire_message_test DISCOVERY_MODE PRE_TEST)

# Responses serialized with their output data as slices, and the transport settings as channel
# arguments.
add_executable(response_wire_test ${CMAKE_CURRENT_LIST_DIR}/response_wire_test.cc
                                  ${CMAKE_CURRENT_LIST_DIR}/transport_options_test.cc)
target_link_libraries(response_wire_test PRIVATE gemm_grpc_wire gemm_common GTest::gtest_main)
gtest_discover_tests(response_wire_test DISCOVERY_MODE PRE_TEST)

# Answers sent from buffers the backend keeps, released when written or dropped (in-process
# server over loopback, fake backend).
add_executable(response_release_test ${CMAKE_CURRENT_LIST_DIR}/response_release_test.cc)
target_link_libraries(response_release_test PRIVATE gemm_grpc_service GTest::gtest_main)
gtest_discover_tests(response_release_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
