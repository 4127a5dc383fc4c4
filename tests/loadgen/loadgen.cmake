# Load-generator tests: unit tests of the histogram, workload parsing and report writers
# (loadgen.unit.*), and short bounded runs of gemm_loadgen against the real gemm_server on the
# CPU backend whose JSON/CSV/HTML are parsed back (loadgen.e2e.*: closed, open, verify, shm,
# sync, packed, stopped, late_server, rejected, usage, interrupt, experts, scripts: the scripts
# under scripts/lib read the JSON the tool writes; echo: against grpc_echo_server). The e2e driver runs
# with Debian's /usr/bin/python3 (python3-grpcio, numpy).
add_executable(loadgen_unit_test ${CMAKE_CURRENT_LIST_DIR}/histogram_test.cc
                                 ${CMAKE_CURRENT_LIST_DIR}/stability_test.cc)
target_link_libraries(loadgen_unit_test PRIVATE gemm_loadgen_lib GTest::gtest GTest::gtest_main)
gtest_discover_tests(loadgen_unit_test TEST_PREFIX "loadgen.unit." DISCOVERY_TIMEOUT 60)

set(GEMM_TEST_PYTHON /usr/bin/python3 CACHE FILEPATH
    "Python with python3-grpcio and python3-numpy for the Python client and loadgen tests")
if(EXISTS ${GEMM_TEST_PYTHON})
  foreach(_case closed open verify shm sync packed stopped late_server rejected usage interrupt
                experts scripts)
    add_test(NAME loadgen.e2e.${_case}
             COMMAND ${GEMM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/run_loadgen_test.py
                     --case ${_case} --loadgen $<TARGET_FILE:gemm_loadgen>
                     --server $<TARGET_FILE:gemm_server>
                     --workdir ${CMAKE_CURRENT_BINARY_DIR}/loadgen_e2e/${_case})
    set_tests_properties(loadgen.e2e.${_case} PROPERTIES TIMEOUT 90 LABELS "loadgen;integration")
  endforeach()
  if(GEMM_BUILD_BENCH)
    add_test(NAME loadgen.e2e.echo
             COMMAND ${GEMM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/run_loadgen_test.py
                     --case echo --loadgen $<TARGET_FILE:gemm_loadgen>
                     --server $<TARGET_FILE:gemm_server> --echo $<TARGET_FILE:grpc_echo_server>
                     --workdir ${CMAKE_CURRENT_BINARY_DIR}/loadgen_e2e/echo)
    set_tests_properties(loadgen.e2e.echo PROPERTIES TIMEOUT 90 LABELS "loadgen;integration")
  endif()
endif()
