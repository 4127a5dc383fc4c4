# Python tests. The client's (client/python/gemm_client): BF16 conversion against an exact
# reference and every client call against the real gemm_server (CPU backend); a check that the
# committed generated stubs match proto/gemm/v1/gemm_service.proto; and `pip install
# ./client/python` into a fresh virtual environment (Debian's packages, no download) whose
# example prints OK. The bench's m_sweep plot and variant analysis on synthetic lines. Run with
# Debian's /usr/bin/python3 (python3-grpcio, python3-numpy, python3-venv, python3-setuptools).
set(GEMM_TEST_PYTHON /usr/bin/python3 CACHE FILEPATH
    "Python with python3-grpcio and python3-numpy for the Python client and loadgen tests")
if(EXISTS ${GEMM_TEST_PYTHON})
  add_test(NAME python.stubs_up_to_date
           COMMAND ${GEMM_TEST_PYTHON} ${PROJECT_SOURCE_DIR}/client/python/regen_stubs.py --check)
  set_tests_properties(python.stubs_up_to_date PROPERTIES TIMEOUT 60 LABELS "python")
  # The m_sweep plot and variant analysis (bench/plot_m_sweep.py, bench/best_variants.py) on
  # synthetic gemm_bench lines: standard library only.
  add_test(NAME python.bench_scripts
           COMMAND ${GEMM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/bench_scripts_test.py
                   --bench ${PROJECT_SOURCE_DIR}/bench)
  set_tests_properties(python.bench_scripts PROPERTIES TIMEOUT 60 LABELS "python")
  if(TARGET gemm_server)
    add_test(NAME python.client
             COMMAND ${GEMM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_gemm_client.py
                     --server $<TARGET_FILE:gemm_server>)
    set_tests_properties(python.client PROPERTIES TIMEOUT 120 LABELS "python;integration")
    add_test(NAME python.pip_install
             COMMAND ${GEMM_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/pip_install_test.py
                     --server $<TARGET_FILE:gemm_server>
                     --workdir ${CMAKE_CURRENT_BINARY_DIR}/pip_install)
    set_tests_properties(python.pip_install PROPERTIES TIMEOUT 300 LABELS "python;integration")
  endif()
endif()
