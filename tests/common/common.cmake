# Helpers shared by unit and integration tests.
add_library(gemm_test_loopback_http STATIC ${CMAKE_CURRENT_LIST_DIR}/loopback_http.cc)
target_include_directories(gemm_test_loopback_http PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(gemm_test_loopback_http PUBLIC absl::strings)
