# Weight repository sources of gemm_core (included by server/core/CMakeLists.txt): weight file
# indexing (safetensors headers are JSON, parsed with protobuf's JSON utilities) and loading.
target_sources(gemm_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/weight_repository.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/weight_repository_format.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/weight_repository_reloader.cc)
target_link_libraries(gemm_core PUBLIC protobuf::libprotobuf)
