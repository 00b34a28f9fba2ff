# The PTX builder and kernel generators: plain C++ with no GPU dependency, built once as an
# object library that goes into rayo and into the fast-building rayo-ptx-tests.
file(GLOB _rayo_ptx_sources CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/src/ptx/*.cpp
    ${PROJECT_SOURCE_DIR}/src/ptx/kernels/*.cpp)
add_library(rayo-ptx OBJECT ${_rayo_ptx_sources})
target_compile_features(rayo-ptx PUBLIC cxx_std_20)
set_target_properties(rayo-ptx PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_include_directories(rayo-ptx PUBLIC ${PROJECT_SOURCE_DIR}/include PRIVATE ${PROJECT_SOURCE_DIR}/src)
rayo_target_warnings(rayo-ptx)
# Instructions are designated initialisers that name only the fields they set.
target_compile_options(rayo-ptx PRIVATE $<$<CXX_COMPILER_ID:GNU,Clang>:-Wno-missing-field-initializers>)

# ptxas from an installed CUDA toolkit assembles every generated kernel in the tests; without
# one those tests skip with a message.
find_package(CUDAToolkit QUIET)
find_program(RAYO_PTXAS ptxas HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin
    DOC "ptxas from the CUDA toolkit, used by the tests to assemble the generated PTX")
