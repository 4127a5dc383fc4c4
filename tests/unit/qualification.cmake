# Unit tests of the kernel qualification: the child-process harness with fake case runners (a hang,
# a sticky error, a crash) and the SM100 and SM90 case lists covering every compiled variant. No
# GPU.
add_executable(qualification_test ${CMAKE_CURRENT_LIST_DIR}/qualification_test.cc)
target_link_libraries(qualification_test PRIVATE gemm_core GTest::gtest_main)
gtest_discover_tests(qualification_test DISCOVERY_MODE PRE_TEST)

# The case list is pure host code: compiled here directly, so the check runs without CUDA.
add_executable(qualification_cases_test ${CMAKE_CURRENT_LIST_DIR}/qualification_cases_test.cc
                                        ${PROJECT_SOURCE_DIR}/kernel/src/qualification_cases.cc
                                        ${PROJECT_SOURCE_DIR}/kernel/src/heuristics_sm90.cc
                                        ${PROJECT_SOURCE_DIR}/kernel/src/sm90/small_m_heuristics.cc)
target_include_directories(qualification_cases_test PRIVATE ${PROJECT_SOURCE_DIR}/kernel/src
                                                            ${PROJECT_SOURCE_DIR}/kernel/include)
target_link_libraries(qualification_cases_test PRIVATE absl::status absl::statusor
                                                       GTest::gtest_main)
gtest_discover_tests(qualification_cases_test DISCOVERY_MODE PRE_TEST)
