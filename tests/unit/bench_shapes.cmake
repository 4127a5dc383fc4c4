# CPU test of gemm_bench's shape-file parser and of the shape files it ships (bench/shapes/).
add_executable(bench_shapes_test ${CMAKE_CURRENT_LIST_DIR}/bench_shapes_test.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/../../bench/bench_shapes.cc)
target_include_directories(bench_shapes_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../../bench)
target_compile_definitions(bench_shapes_test
                           PRIVATE GEMM_SHAPES_DIR="${CMAKE_CURRENT_LIST_DIR}/../../bench/shapes")
target_link_libraries(bench_shapes_test PRIVATE absl::status absl::statusor absl::strings
                                                GTest::gtest_main)
gtest_discover_tests(bench_shapes_test DISCOVERY_MODE PRE_TEST)
