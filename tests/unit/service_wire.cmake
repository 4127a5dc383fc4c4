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

# The inline path in one process (server over loopback, fake backend): operands reach the backend
# in the pieces they arrived in; answers sent from buffers the backend keeps are released when
# written or dropped.
add_executable(inline_bytes_test ${CMAKE_CURRENT_LIST_DIR}/inline_bytes_test.cc)
target_link_libraries(inline_bytes_test PRIVATE gemm_grpc_service GTest::gtest_main)
gtest_discover_tests(inline_bytes_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)

# Requests parsed with their bytes fields left in the received slices.
add_executable(received_message_test ${CMAKE_CURRENT_LIST_DIR}/received_message_test.cc)
target_link_libraries(received_message_test PRIVATE gemm_grpc_wire GTest::gtest_main)
gtest_discover_tests(received_message_test DISCOVERY_MODE PRE_TEST)
