# SM100 (GB200/B200) 2-SM persistent tcgen05 kernel. Included from kernel/CMakeLists.txt.
# Host entry points (plain C++) go into gemm_kernel directly. All SM100 device code lives in
# sm100_launch.cu, compiled for sm_100a ONLY: CMake 3.25 has no per-source CUDA_ARCHITECTURES,
# so it is an object library of its own whose objects are added to gemm_kernel. (Its kernel
# bodies are also guarded on the sm_100a feature macros, so any other target compiles empty.)
target_sources(gemm_kernel PRIVATE ${CMAKE_CURRENT_LIST_DIR}/sm100_gemm.cc)
add_library(gemm_kernel_sm100_device OBJECT ${CMAKE_CURRENT_LIST_DIR}/sm100_launch.cu)
target_include_directories(gemm_kernel_sm100_device PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..
                                                            ${CMAKE_CURRENT_LIST_DIR}/../../include)
set_target_properties(gemm_kernel_sm100_device PROPERTIES CUDA_ARCHITECTURES 100a
                                                          CUDA_SEPARABLE_COMPILATION OFF
                                                          POSITION_INDEPENDENT_CODE ON)
target_compile_options(gemm_kernel_sm100_device PRIVATE
                       $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)
target_sources(gemm_kernel PRIVATE $<TARGET_OBJECTS:gemm_kernel_sm100_device>)
