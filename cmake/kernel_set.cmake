# sa_kernel_flags_ok(<out> <what> <flag>...): <out> is true when the C
# compiler accepts the flags together (cached as SA_CC_HAS_<WHAT>); says so
# when it does not.
function(sa_kernel_flags_ok out what)
  string(TOUPPER "SA_CC_HAS_${what}" have)
  string(MAKE_C_IDENTIFIER "${have}" have)
  list(JOIN ARGN " " flags)
  check_c_compiler_flag("${flags}" ${have})
  if(NOT ${have})
    message(STATUS "simdattn: the compiler cannot build ${what} (${flags}): left out")
  endif()
  set(${out} ${${have}} PARENT_SCOPE)
endfunction()

# sa_add_kernel_set(<isa> SOURCES <file>... [FLAGS <flag>...]
#                   [OPTIONS <option>...] [DEFINES <define>...])
#
# Builds kernels/<isa>/<file>... as the OBJECT library sa_kernels_<isa>, the
# only code compiled with FLAGS (the ISA's -m flags). FLAGS are checked first:
# a compiler that cannot build them leaves the set out, with a message, never
# an error. OPTIONS are further options for every file of the set, not
# checked (-ffp-contract=off). DEFINES go to the rest of the library when the
# set is built (SA_HAVE_<ISA>=1 makes the registry list it).
#
# The objects and the defines are collected in the global properties
# SA_KERNEL_OBJECTS and SA_KERNEL_DEFS, read once every set is declared.
function(sa_add_kernel_set isa)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;FLAGS;OPTIONS;DEFINES")
  if(arg_FLAGS)
    sa_kernel_flags_ok(ok ${isa} ${arg_FLAGS})
    if(NOT ok)
      return()
    endif()
  endif()
  list(TRANSFORM arg_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/kernels/${isa}/)
  add_library(sa_kernels_${isa} OBJECT ${arg_SOURCES})
  target_include_directories(sa_kernels_${isa} PRIVATE
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR})
  target_compile_options(sa_kernels_${isa} PRIVATE ${SA_WARNINGS} ${arg_FLAGS} ${arg_OPTIONS})
  if(arg_FLAGS)
    target_compile_options(sa_kernels_${isa} PRIVATE ${SA_KERNEL_SANITIZE_OPTIONS})
  endif()
  target_link_libraries(sa_kernels_${isa} PRIVATE PkgConfig::SLEEF)
  set_property(GLOBAL APPEND PROPERTY SA_KERNEL_OBJECTS $<TARGET_OBJECTS:sa_kernels_${isa}>)
  set_property(GLOBAL APPEND PROPERTY SA_KERNEL_DEFS ${arg_DEFINES})
endfunction()

# sa_add_kernel_source(<isa> <file> FLAGS <flag>... [DEFINES <define>...])
#
# One more file of kernel set <isa>, compiled with FLAGS on top of the set's:
# a CPU feature that only a further set requires (AVX512_BF16 for
# avx512-bf16), so no other file of the set may be compiled where the
# compiler could use it. Left out when the set was not built or the compiler
# cannot build FLAGS; DEFINES as for sa_add_kernel_set.
function(sa_add_kernel_source isa file)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "FLAGS;DEFINES")
  if(NOT TARGET sa_kernels_${isa})
    return()
  endif()
  get_target_property(set_options sa_kernels_${isa} COMPILE_OPTIONS)
  # only the set's machine flags: the check links its test program without
  # the build's link options, so a sanitizer's compile flags there failed
  # it, and the sanitizer builds left this file (and its set) out
  list(FILTER set_options INCLUDE REGEX "^-m")
  get_filename_component(stem ${file} NAME_WE)
  sa_kernel_flags_ok(ok ${isa}_${stem} ${set_options} ${arg_FLAGS})
  if(NOT ok)
    return()
  endif()
  set(path ${PROJECT_SOURCE_DIR}/kernels/${isa}/${file})
  target_sources(sa_kernels_${isa} PRIVATE ${path})
  set_property(SOURCE ${path} TARGET_DIRECTORY sa_kernels_${isa}
    APPEND PROPERTY COMPILE_OPTIONS ${arg_FLAGS})
  set_property(GLOBAL APPEND PROPERTY SA_KERNEL_DEFS ${arg_DEFINES})
endfunction()
