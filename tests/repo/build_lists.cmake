# repo.build_lists: the build names every fragment and source it needs (no OPTIONAL includes, no
# if(EXISTS) guards on project paths, no file globs), so a renamed or missing file is a configure
# error instead of a silently missing component (build_lists_test.sh lists the rules).
include_guard(GLOBAL)
add_test(NAME repo.build_lists
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/build_lists_test.sh ${PROJECT_SOURCE_DIR} .)
set_tests_properties(repo.build_lists PROPERTIES LABELS repo SKIP_RETURN_CODE 77 TIMEOUT 60)
