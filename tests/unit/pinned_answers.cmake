# CPU unit tests of the inline answers sent from pinned staging (server/gpu/pinned_answer_limit.cc,
# server/gpu/pinned_answers.cc). The limit is plain C++ and is compiled directly, so its test runs
# in builds without CUDA too; the answer blocks need the staging pool (CUDA runtime library, run
# here over ordinary host memory), so their test is built where the CUDA backend is.
add_executable(pinned_answer_limit_test ${CMAKE_CURRENT_LIST_DIR}/pinned_answer_limit_test.cc
                                        ${PROJECT_SOURCE_DIR}/server/gpu/pinned_answer_limit.cc)
target_include_directories(pinned_answer_limit_test PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(pinned_answer_limit_test PRIVATE Threads::Threads GTest::gtest_main)
gtest_discover_tests(pinned_answer_limit_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)

if(TARGET gemm_gpu_backend)
  add_executable(pinned_answers_test ${CMAKE_CURRENT_LIST_DIR}/pinned_answers_test.cc)
  target_include_directories(pinned_answers_test PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(pinned_answers_test PRIVATE gemm_gpu_backend CUDA::cudart GTest::gtest_main)
  gtest_discover_tests(pinned_answers_test DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300)
endif()
