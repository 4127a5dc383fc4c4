# Helpers shared by unit and integration tests.
add_library(gemm_test_loopback_http STATIC ${CMAKE_CURRENT_LIST_DIR}/loopback_http.cc)
target_include_directories(gemm_test_loopback_http PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(gemm_test_loopback_http PUBLIC absl::strings)

# Weight repository files (safetensors, .npy) written by unit and integration tests.
add_library(gemm_test_weight_files STATIC ${CMAKE_CURRENT_LIST_DIR}/weight_files.cc)
target_include_directories(gemm_test_weight_files PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(gemm_test_weight_files PUBLIC gemm_common GTest::gtest absl::strings)
