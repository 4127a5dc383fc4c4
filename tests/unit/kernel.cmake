# CPU unit tests of the kernel library's pure host parts (tile scheduler, SM90 heuristics and
# tail split-K plan).
# They compile those sources directly, so they run in builds without CUDA too.
add_executable(kernel_unit_tests ${CMAKE_CURRENT_LIST_DIR}/kernel_scheduler_test.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/kernel_heuristics_test.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/kernel_split_test.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/../../kernel/src/heuristics_sm90.cc)
target_include_directories(kernel_unit_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../../kernel/src)
target_link_libraries(kernel_unit_tests PRIVATE GTest::gtest_main)
gtest_discover_tests(kernel_unit_tests DISCOVERY_MODE PRE_TEST)

# kernel::ChooseKernel (which kernel serves a request on a device): pure host logic of the kernel
# library, run without a GPU (needs the CUDA runtime library, so built where the library is).
if(TARGET gemm_kernel)
  add_executable(kernel_choice_test ${CMAKE_CURRENT_LIST_DIR}/kernel_choice_test.cc)
  target_link_libraries(kernel_choice_test PRIVATE gemm_kernel CUDA::cudart GTest::gtest_main)
  gtest_discover_tests(kernel_choice_test DISCOVERY_MODE PRE_TEST)
endif()
