# Unit tests of the server's limits: resolution against the host's memory, the in-flight budget
# and admission by the engine, overflow-checked sizes, request conversion checks before
# converting, and bounded status messages (no GPU, no network).
add_executable(limits_test ${CMAKE_CURRENT_LIST_DIR}/limits_test.cc)
target_link_libraries(limits_test PRIVATE gemm_core GTest::gtest_main)
gtest_discover_tests(limits_test DISCOVERY_MODE PRE_TEST)

add_executable(engine_admission_test ${CMAKE_CURRENT_LIST_DIR}/engine_admission_test.cc)
target_link_libraries(engine_admission_test PRIVATE gemm_core gemm_cpu_backend GTest::gtest_main)
gtest_discover_tests(engine_admission_test DISCOVERY_MODE PRE_TEST)

add_executable(convert_test ${CMAKE_CURRENT_LIST_DIR}/convert_test.cc)
target_link_libraries(convert_test PRIVATE gemm_grpc_service gemm_cpu_backend GTest::gtest_main)
gtest_discover_tests(convert_test DISCOVERY_MODE PRE_TEST)
