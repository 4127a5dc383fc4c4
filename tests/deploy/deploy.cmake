# Deployment checks (container image recipe + Kubernetes manifests), see check_deploy.py.
#   deploy.checker_selftest  the checker's own parser and drift detection (no server needed)
#   deploy.manifests         renders every overlay with `kubectl kustomize`, runs yamllint, and
#                            compares probes, ports, GPU requests, node selectors, termination
#                            timing and the Dockerfile's EXPOSE with `gemm_server --helpfull`
# Both exit 77 (reported as skipped) when kubectl or yamllint is not installed.
# The system interpreter first: Debian's yamllint package brings PyYAML (python3-yaml) to it,
# while a pyenv/venv python3 earlier on PATH may lack it.
if(EXISTS /usr/bin/python3)
  set(_gemm_deploy_python /usr/bin/python3)
else()
  find_package(Python3 COMPONENTS Interpreter)
  if(NOT Python3_Interpreter_FOUND)
    message(STATUS "gemm: no Python 3 interpreter; deploy checks not registered")
    return()
  endif()
  set(_gemm_deploy_python ${Python3_EXECUTABLE})
endif()

set(_gemm_deploy_check ${CMAKE_CURRENT_LIST_DIR}/check_deploy.py)

add_test(NAME deploy.checker_selftest
         COMMAND ${_gemm_deploy_python} ${_gemm_deploy_check} --repo ${PROJECT_SOURCE_DIR}
                 --self-test)
set_tests_properties(deploy.checker_selftest PROPERTIES LABELS deploy SKIP_RETURN_CODE 77
                                                        TIMEOUT 120)

if(TARGET gemm_server)
  add_test(NAME deploy.manifests
           COMMAND ${_gemm_deploy_python} ${_gemm_deploy_check} --repo ${PROJECT_SOURCE_DIR}
                   --server $<TARGET_FILE:gemm_server>)
  set_tests_properties(deploy.manifests PROPERTIES LABELS deploy SKIP_RETURN_CODE 77
                                                   TIMEOUT 300)
else()
  message(STATUS "gemm: no gemm_server target; deploy.manifests not registered")
endif()
