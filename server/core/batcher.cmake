# Dynamic batcher sources of gemm_core (included by server/core/CMakeLists.txt).
target_sources(gemm_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/batcher.cc)
