# CPU unit tests of the SM100 kernel's pure pieces (descriptors, scheduler, pipeline phases,
# epilogue address math, shared-memory layout). Plain host C++: no CUDA toolkit, no GPU and no
# gemm_kernel target needed, so they run in CI everywhere.
add_executable(sm100_unit_test
  ${CMAKE_CURRENT_LIST_DIR}/sm100_desc_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sm100_scheduler_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sm100_pipeline_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sm100_epilogue_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sm100_config_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sm100_layout_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sm100_protocol_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sm100_split_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sm100_clc_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/sm100_geometry_test.cc)
target_include_directories(sm100_unit_test PRIVATE ${PROJECT_SOURCE_DIR}/kernel/src)
target_link_libraries(sm100_unit_test PRIVATE GTest::gtest_main)
gtest_discover_tests(sm100_unit_test DISCOVERY_MODE PRE_TEST)

# PTX check of the SM100 kernel (tensor-map fence, no GPU-wide fences in the loops): needs only
# nvcc, no GPU; skipped (exit 77) where nvcc is absent.
add_test(NAME sm100_ptx_check
         COMMAND ${PROJECT_SOURCE_DIR}/kernel/tools/check_sm100_ptx.sh ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CUDA_COMPILER})
set_tests_properties(sm100_ptx_check PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
