# GPU tests of the CUDA backend (server/gpu); built when the backend is, skip without a GPU.
#   engine_gpu_tests          the backend driven directly through a fake WorkSource (and its
#                             inline answers sent from pinned staging, requests' A pinned on arrival)
#   engine_gpu_service_tests  the real gemm_server (--backend=cuda) + client on loopback
if(TARGET gemm_gpu_backend)
  add_executable(engine_gpu_tests ${CMAKE_CURRENT_LIST_DIR}/engine_backend_test.cc
                                  ${CMAKE_CURRENT_LIST_DIR}/pinned_answers_gpu_test.cc
                                  ${CMAKE_CURRENT_LIST_DIR}/request_pinning_gpu_test.cc)
  target_link_libraries(engine_gpu_tests PRIVATE gemm_gpu_backend gemm_kernel gemm_core gemm_common
                                                 absl::random_random absl::synchronization
                                                 GTest::gtest_main)
  # The qualification child the backend execs at start-up.
  add_dependencies(engine_gpu_tests gemm_qualify)
  target_compile_definitions(engine_gpu_tests PRIVATE
                             GEMM_QUALIFY_BINARY="$<TARGET_FILE:gemm_qualify>")
  gtest_discover_tests(engine_gpu_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT 600)

  # gemm_test_server_process is defined by tests/integration/integration.cmake.
  add_executable(engine_gpu_service_tests
    ${CMAKE_CURRENT_LIST_DIR}/engine_service_test.cc
    ${PROJECT_SOURCE_DIR}/tests/integration/test_util.cc)
  target_link_libraries(engine_gpu_service_tests PRIVATE gemm_test_server_process
                        gemm_gpu_backend gemm_common absl::random_random absl::synchronization
                        CUDA::cudart GTest::gtest_main)
  gtest_discover_tests(engine_gpu_service_tests DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT 600)
endif()
