# Prometheus metrics sources of gemm_core (included by server/core/CMakeLists.txt). /metrics is
# served by our own MetricsHttpServer, so only prometheus-cpp's core (registry, text format) is used.
target_sources(gemm_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/metrics.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/metrics_http.cc)
target_link_libraries(gemm_core PUBLIC prometheus-cpp::core)
