# No function in server/ or client/ longer than 120 lines (Universal Ctags finds them; the
# allow-list names the ones still being split), and a test of that check on generated sources.
find_program(GEMM_CTAGS NAMES ctags-universal universal-ctags ctags)
if(NOT GEMM_CTAGS)
  set(GEMM_CTAGS ctags)  # the check then fails, saying which package it needs
endif()
add_test(NAME lint.function_size
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/check_function_size.py --ctags ${GEMM_CTAGS}
                 --chdir ${PROJECT_SOURCE_DIR} --allow scripts/function_size_allowlist.txt
                 server client)
add_test(NAME lint.function_size_check_detects
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/function_size_test.py
                 --script ${PROJECT_SOURCE_DIR}/scripts/check_function_size.py
                 --ctags ${GEMM_CTAGS})
set_tests_properties(lint.function_size lint.function_size_check_detects
                     PROPERTIES TIMEOUT 60 LABELS "lint")
