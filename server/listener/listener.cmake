# The gRPC listener's guards, built into gemm_server itself (included by server/CMakeLists.txt):
# the taken-port check.
target_sources(gemm_server PRIVATE ${CMAKE_CURRENT_LIST_DIR}/port_in_use.cc)
