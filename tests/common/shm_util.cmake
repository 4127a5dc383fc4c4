# Shared-memory helpers for unit and integration tests (objects a test can shrink under others).
add_library(gemm_test_shm_util STATIC ${CMAKE_CURRENT_LIST_DIR}/shm_util.cc)
target_include_directories(gemm_test_shm_util PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(gemm_test_shm_util PUBLIC gemm_common absl::status absl::statusor
                                                absl::strings)
