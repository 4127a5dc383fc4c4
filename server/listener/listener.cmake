# The gRPC listener's guards, built into gemm_server itself (included by server/CMakeLists.txt):
# the open-file limit and connection cap, the taken-port check, and the accept guard, whose
# accept4() and close() definitions must be exported from the executable so that libgrpc's calls
# bind to them.
target_sources(gemm_server PRIVATE ${CMAKE_CURRENT_LIST_DIR}/accept_guard.cc
                                   ${CMAKE_CURRENT_LIST_DIR}/open_connections.cc
                                   ${CMAKE_CURRENT_LIST_DIR}/open_files.cc
                                   ${CMAKE_CURRENT_LIST_DIR}/port_in_use.cc)
target_link_options(gemm_server PRIVATE "LINKER:--export-dynamic-symbol=accept4"
                    "LINKER:--export-dynamic-symbol=close")
target_link_libraries(gemm_server PRIVATE ${CMAKE_DL_LIBS})
