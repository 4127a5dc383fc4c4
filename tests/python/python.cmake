# Python client tests (client/python/gemm_client): BF16 conversion against an exact reference and
# every client call against the real gemm_server (CPU backend); plus a check that the committed
# generated stubs match proto/gemm/v1/gemm_service.proto. Run with Debian's /usr/bin/python3.
set(GEMM_TEST_PYTHON /usr/bin/python3 CACHE FILEPATH
    "Python with python3-grpcio and python3-numpy for the Python client and loadgen tests")
if(EXISTS ${GEMM_TEST_PYTHON})
  add_test(NAME python.stubs_up_to_date
           COMMAND ${GEMM_TEST_PYTHON} ${PROJECT_SOURCE_DIR}/client/python/regen_stubs.py --check)
  set_tests_properties(python.stubs_up_to_date PROPERTIES TIMEOUT 60 LABELS "python")
  if(TARGET gemm_server)
    add_test(NAME python.client
             COMMAND ${GEMM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_gemm_client.py
                     --server $<TARGET_FILE:gemm_server>)
    set_tests_properties(python.client PROPERTIES TIMEOUT 120 LABELS "python;integration")
  endif()
endif()
