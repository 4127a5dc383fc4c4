# GPU tests of the CUDA backend's copy kernels: the device copy of CUDA IPC operands
# (server/gpu/device_copy.cu) and the gather of a request's A out of the pieces it was received
# in (server/gpu/piece_gather.cu); skip without a GPU.
if(TARGET gemm_gpu_backend)
  foreach(kernel device_copy piece_gather)
    add_executable(${kernel}_gpu_test ${CMAKE_CURRENT_LIST_DIR}/${kernel}_test.cc)
    target_include_directories(${kernel}_gpu_test PRIVATE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${kernel}_gpu_test PRIVATE gemm_gpu_backend CUDA::cudart
                                                     absl::random_random GTest::gtest_main)
    gtest_discover_tests(${kernel}_gpu_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 120)
  endforeach()
endif()
