# CPU unit test of the CUDA backend's unit planner (server/gpu/unit_plan.cc): runs without a GPU
# (needs the CUDA runtime headers and library, so it is built where the CUDA backend is).
if(TARGET gemm_gpu_backend)
  add_executable(unit_plan_test ${CMAKE_CURRENT_LIST_DIR}/unit_plan_test.cc)
  target_include_directories(unit_plan_test PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(unit_plan_test PRIVATE gemm_gpu_backend gemm_kernel CUDA::cudart GTest::gtest_main)
  gtest_discover_tests(unit_plan_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)
endif()
