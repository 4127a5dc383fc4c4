# Unit tests of the foundation: BF16 rounding, .npy files, request validation, the resident
# matrix registry, uninitialized string sizing, --grpc_arg parsing, operand bytes in pieces and the
# CPU GEMM against float64 (no GPU, no network).
add_executable(foundation_unit_test
  ${CMAKE_CURRENT_LIST_DIR}/bf16_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/npy_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/validation_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu_gemm_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/uninitialized_string_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/channel_args_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/operand_bytes_test.cc)
target_link_libraries(foundation_unit_test PRIVATE gemm_core gemm_common gemm_cpu_backend
                                                   gemm_uninitialized_string
                                                   GTest::gtest_main)
gtest_discover_tests(foundation_unit_test DISCOVERY_MODE PRE_TEST)
