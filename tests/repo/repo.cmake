# Repository checks:
#   repo.process_words    no tracked text talks about how the work was done (the rules are
#                         listed in process_words_test.sh)
#   repo.readme_commands  every runnable command block of README.md passes against this build
#                         on the CPU backend
#   repo.wgmma_generated  kernel/src/ptx/wgmma_bf16.cuh is what scripts/gen_wgmma.py writes
# Both exit 77 (reported as skipped) where there is nothing to check: no git checkout (a
# container build context), no README.
include_guard(GLOBAL)
add_test(NAME repo.process_words
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/process_words_test.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(repo.process_words PROPERTIES LABELS repo SKIP_RETURN_CODE 77 TIMEOUT 60)
if(TARGET gemm_server AND TARGET gemm_client AND TARGET gemm_loadgen)
  add_test(NAME repo.readme_commands
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/readme_commands_test.sh ${PROJECT_SOURCE_DIR}
                   ${CMAKE_BINARY_DIR})
  set_tests_properties(repo.readme_commands PROPERTIES LABELS "repo;integration"
                                                       SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  add_test(NAME repo.wgmma_generated COMMAND ${Python3_EXECUTABLE}
                                             ${PROJECT_SOURCE_DIR}/scripts/gen_wgmma.py --check)
  set_tests_properties(repo.wgmma_generated PROPERTIES LABELS repo TIMEOUT 60)
endif()
