# Prometheus metrics sources of gemm_core (included by server/core/CMakeLists.txt).
target_sources(gemm_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/metrics.cc)
target_link_libraries(gemm_core PUBLIC prometheus-cpp::core prometheus-cpp::pull)
