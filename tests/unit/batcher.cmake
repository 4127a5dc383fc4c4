# Unit tests of the dynamic batcher, the Prometheus metrics and the gRPC layer's peer check and
# response packing (no GPU, no network but loopback).
add_executable(batcher_test ${CMAKE_CURRENT_LIST_DIR}/batcher_test.cc)
target_link_libraries(batcher_test PRIVATE gemm_core GTest::gtest_main)
gtest_discover_tests(batcher_test DISCOVERY_MODE PRE_TEST)

add_executable(metrics_test ${CMAKE_CURRENT_LIST_DIR}/metrics_test.cc)
target_link_libraries(metrics_test PRIVATE gemm_core gemm_test_loopback_http GTest::gtest_main)
gtest_discover_tests(metrics_test DISCOVERY_MODE PRE_TEST)

add_executable(metrics_http_test ${CMAKE_CURRENT_LIST_DIR}/metrics_http_test.cc)
target_link_libraries(metrics_http_test PRIVATE gemm_core gemm_test_loopback_http GTest::gtest_main)
gtest_discover_tests(metrics_http_test DISCOVERY_MODE PRE_TEST)

# Peer classification of the gRPC layer (which callers may register shared memory).
add_executable(peer_test ${CMAKE_CURRENT_LIST_DIR}/peer_test.cc)
target_link_libraries(peer_test PRIVATE gemm_grpc_service GTest::gtest_main)
gtest_discover_tests(peer_test DISCOVERY_MODE PRE_TEST)

# How GemmStreamPacked groups ready responses into messages (the byte limit per pack).
add_executable(response_pack_test ${CMAKE_CURRENT_LIST_DIR}/response_pack_test.cc)
target_link_libraries(response_pack_test PRIVATE gemm_grpc_service GTest::gtest_main)
gtest_discover_tests(response_pack_test DISCOVERY_MODE PRE_TEST)

# Groups over resident matrices on several devices: one part per device, answered as one
# (DeviceSplit alone, and through GemmEngine with a fake two-device backend).
add_executable(device_split_test ${CMAKE_CURRENT_LIST_DIR}/device_split_test.cc)
target_link_libraries(device_split_test PRIVATE gemm_core GTest::gtest_main)
gtest_discover_tests(device_split_test DISCOVERY_MODE PRE_TEST)
add_executable(engine_split_test ${CMAKE_CURRENT_LIST_DIR}/engine_split_test.cc)
target_link_libraries(engine_split_test PRIVATE gemm_core GTest::gtest_main)
gtest_discover_tests(engine_split_test DISCOVERY_MODE PRE_TEST)

# AnswerBatch: answers given together leave together (deferred writes per thread).
add_executable(answer_batch_test ${CMAKE_CURRENT_LIST_DIR}/answer_batch_test.cc)
target_link_libraries(answer_batch_test PRIVATE gemm_core GTest::gtest_main)
gtest_discover_tests(answer_batch_test DISCOVERY_MODE PRE_TEST)

# GemmStreamPacked in one process over a fake backend: a message's requests run as one batch and
# the batch's answers leave in one message.
add_executable(stream_packing_test ${CMAKE_CURRENT_LIST_DIR}/stream_packing_test.cc)
target_link_libraries(stream_packing_test PRIVATE gemm_grpc_service GTest::gtest_main)
gtest_discover_tests(stream_packing_test DISCOVERY_MODE PRE_TEST)

# SharedMemoryRegistry's GPU-memory (CUDA IPC) regions over a fake backend: range checks.
add_executable(shared_memory_registry_test ${CMAKE_CURRENT_LIST_DIR}/shared_memory_registry_test.cc)
target_link_libraries(shared_memory_registry_test PRIVATE gemm_core GTest::gtest_main)
gtest_discover_tests(shared_memory_registry_test DISCOVERY_MODE PRE_TEST)

# Which requests coalesce (core::CoalescingKeyOf), the rule shared by the batcher and the CUDA
# executor.
add_executable(coalescing_test ${CMAKE_CURRENT_LIST_DIR}/coalescing_test.cc)
target_link_libraries(coalescing_test PRIVATE gemm_core GTest::gtest_main)
gtest_discover_tests(coalescing_test DISCOVERY_MODE PRE_TEST)
