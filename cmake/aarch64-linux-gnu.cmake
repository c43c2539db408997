# Cross-compiling for AArch64 Linux on a Debian 12 x86-64 host, and running the
# result under qemu-user:
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# Packages (scripts/deps.sh aarch64): gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross, libsleef-dev:arm64, libhwloc-dev:arm64, qemu-user.
#
# Debian's cross gcc is multiarch-aware: besides its own sysroot
# (/usr/aarch64-linux-gnu) it already searches /usr/include/aarch64-linux-gnu
# and /usr/lib/aarch64-linux-gnu, where the :arm64 packages put sleef and hwloc.
# So no CMAKE_SYSROOT: setting one would hide those multiarch directories.
# What CMake and pkg-config need is to look only at arm64 things.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(SA_CROSS_TRIPLE aarch64-linux-gnu)
set(SA_CROSS_SYSROOT /usr/${SA_CROSS_TRIPLE})         # the cross libc
set(SA_CROSS_LIBDIR /usr/lib/${SA_CROSS_TRIPLE})      # multiarch :arm64 libs

find_program(SA_CROSS_CC ${SA_CROSS_TRIPLE}-gcc)
if(NOT SA_CROSS_CC)
  message(FATAL_ERROR "${SA_CROSS_TRIPLE}-gcc not found: install gcc-aarch64-linux-gnu "
    "(sh scripts/deps.sh aarch64)")
endif()
set(CMAKE_C_COMPILER ${SA_CROSS_CC})
# The library is C only; a C++ cross compiler is needed only if some optional
# part (the benchmarks) enables C++, so name it only when it is installed.
find_program(SA_CROSS_CXX ${SA_CROSS_TRIPLE}-g++)
if(SA_CROSS_CXX)
  set(CMAKE_CXX_COMPILER ${SA_CROSS_CXX})
endif()

# Headers and libraries: the cross libc first, then the multiarch tree ("/"
# re-roots /usr/lib/aarch64-linux-gnu onto itself). CMAKE_LIBRARY_ARCHITECTURE
# (detected from the compiler as aarch64-linux-gnu) keeps find_library in the
# arm64 directories; programs (pkg-config, qemu) are always the host's.
set(CMAKE_FIND_ROOT_PATH ${SA_CROSS_SYSROOT} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config: only the arm64 .pc files (sleef.pc, hwloc.pc), never the host's
# x86-64 ones. PKG_CONFIG_LIBDIR replaces the default search path;
# PKG_CONFIG_PATH would be searched before it, so it is cleared. The toolchain
# file is read again on every (re)configure, so these hold for the whole run.
set(ENV{PKG_CONFIG_LIBDIR} "${SA_CROSS_LIBDIR}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# Tests run under qemu-user. -L makes the dynamic loader and libc those of the
# cross libc (one glibc build: ld.so and libc.so must match). The guest's
# LD_LIBRARY_PATH=/lib (seen through -L: /usr/aarch64-linux-gnu/lib) keeps libc
# and libm from that same build even though the host's libc6:arm64 also sits in
# /lib/aarch64-linux-gnu, which is where the loader's default path then finds
# libsleef, libhwloc and their dependencies (qemu falls back to host paths for
# files missing under -L).
find_program(SA_QEMU_AARCH64 qemu-${CMAKE_SYSTEM_PROCESSOR})
if(NOT SA_QEMU_AARCH64)
  set(SA_QEMU_AARCH64 qemu-${CMAKE_SYSTEM_PROCESSOR})
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR
  "${SA_QEMU_AARCH64};-L;${SA_CROSS_SYSROOT};-E;LD_LIBRARY_PATH=/lib:${SA_CROSS_LIBDIR}")

# CMake (3.25) puts the emulator in front of a test only when the test's
# COMMAND starts with an executable target's *name*; tests/CMakeLists.txt
# starts it with ${SA_TEST_LAUNCHER} $<TARGET_FILE:...>, a generator expression,
# which CMake runs as is. So the emulator is also handed to the project as its
# test launcher, unless the user gave one (-D wins over a CACHE default). With
# the launcher first, CMake never adds the emulator a second time.
set(SA_TEST_LAUNCHER "${CMAKE_CROSSCOMPILING_EMULATOR}" CACHE STRING
  "Command prefix for every test (an emulator such as qemu-x86_64;-cpu;qemu64)")
