# Unit tests of the weight repository: safetensors/.npy indexing (every malformed header), BF16
# conversion, scans and rescans over the CPU backend's registry, and stable matrix names (no GPU,
# no network).
add_executable(weights_unit_test ${CMAKE_CURRENT_LIST_DIR}/weight_format_test.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/weight_repository_test.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/matrix_naming_test.cc)
target_link_libraries(weights_unit_test PRIVATE gemm_core gemm_cpu_backend gemm_test_weight_files
                                                GTest::gtest_main)
gtest_discover_tests(weights_unit_test DISCOVERY_MODE PRE_TEST)
