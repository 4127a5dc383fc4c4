# SM100 (GB200/B200) 2-SM persistent tcgen05 kernel. Included from kernel/CMakeLists.txt
# (gemm_kernel_library).
# Host entry points (plain C++) go into the library directly. All SM100 device code lives in
# sm100_launch.cu, compiled for sm_100a ONLY: CMake 3.25 has no per-source CUDA_ARCHITECTURES,
# so it is an object library of its own whose objects are added to the library. (Its kernel
# bodies are also guarded on the sm_100a feature macros, so any other target compiles empty.)
target_sources(${GEMM_KERNEL_LIB} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/sm100_gemm.cc)
add_library(${GEMM_KERNEL_LIB}_sm100_device OBJECT ${CMAKE_CURRENT_LIST_DIR}/sm100_launch.cu)
target_include_directories(${GEMM_KERNEL_LIB}_sm100_device PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..
                                                            ${CMAKE_CURRENT_LIST_DIR}/../../include)
set_target_properties(${GEMM_KERNEL_LIB}_sm100_device PROPERTIES CUDA_ARCHITECTURES 100a
                                                          CUDA_SEPARABLE_COMPILATION OFF
                                                          POSITION_INDEPENDENT_CODE ON)
target_compile_options(${GEMM_KERNEL_LIB}_sm100_device PRIVATE
                       $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)
target_sources(${GEMM_KERNEL_LIB} PRIVATE $<TARGET_OBJECTS:${GEMM_KERNEL_LIB}_sm100_device>)
