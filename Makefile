# simdattn: the README's commands. CMake does the building; this file only
# makes sure the Debian packages are there and picks build directories.
#
#   make test           build (Release) and run the whole CTest suite
#   make compare        build, benchmark every kernel set here (1 thread, then the
#                       summary shapes on 2), print + write results and summary.csv
#   make compare QUICK=1  the same on a tiny suite (about a minute); THREADS=n for n workers
#   make accuracy       the accuracy table alone: every kernel set's error against
#                       double precision, beside plain fp32 (QUICK=1: shorter rows)
#   make test-aarch64   cross-build for AArch64 and run the suite under qemu
#   make test-emulated  the suite on emulated x86 CPUs (AVX2-only, no AVX), less
#                       the kernel sweeps that run natively (EMU_SKIP= for all)
#   make test-sanitize  the suite under AddressSanitizer+UBSan, then ThreadSanitizer
#   make test-python    the Python binding (python/), pip-installed into build/venv
#   make fuzz           the libFuzzer harness (fuzz/) for SECONDS seconds (default 60)

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
CTEST = ctest --output-on-failure -j$(JOBS)
# Kernel sets `make test` requires to run here (SIMDATTN_REQUIRE_SETS; every
# test that enumerates sets fails if one is missing). Only scalar runs on
# every CPU; a runner known to have more names it: make test
# REQUIRE_SETS=avx512,avx2.
REQUIRE_SETS ?= scalar
# Debian's python3, where python3-numpy and python3-torch are installed (a
# python3 earlier in PATH, such as pyenv's, would not see them).
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
VENV = build/venv

.PHONY: all build test compare accuracy test-aarch64 test-emulated test-sanitize clean deps \
  test-python python-venv python-check fuzz

all: build

deps:
	@sh scripts/deps.sh base

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSA_WERROR=ON $(CMAKE_FLAGS)
	cmake --build build -j$(JOBS)

test: build
	cd build && SIMDATTN_REQUIRE_SETS=$(REQUIRE_SETS) $(CTEST)
	@if $(PYTHON) -c 'import numpy, pytest, ensurepip, wheel' >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory python-check; \
	else \
	  echo "make test: Python binding not tested ($(PYTHON) cannot import numpy, pytest, ensurepip and wheel; sh scripts/deps.sh python installs them)"; \
	fi

# The Python binding: installed offline (Debian's setuptools, no index) into a
# venv that sees Debian's numpy, torch and pytest, then its suite runs from
# build/ on that installed copy and the library just built.
test-python: build
	@sh scripts/deps.sh python
	@$(MAKE) --no-print-directory python-check

python-venv:
	mkdir -p build
	test -x $(VENV)/bin/python || $(PYTHON) -m venv --system-site-packages $(VENV)
	$(VENV)/bin/pip install -q --no-index --no-build-isolation ./python

python-check: python-venv
	cd build && SIMDATTN_LIBRARY=$(CURDIR)/build/libsimdattn.so SIMDATTN_TEST_INSTALLED=1 \
	  venv/bin/python -m pytest -q -p no:cacheprovider $(CURDIR)/python/tests

compare:
	@sh scripts/deps.sh base compare
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSA_WERROR=ON $(CMAKE_FLAGS)
	cmake --build build -j$(JOBS)
	sh scripts/compare.sh $(if $(QUICK),--quick,) $(if $(THREADS),--threads $(THREADS),)

# Builds only the library and bench/accuracy.c (no Google Benchmark needed) and
# writes results/<cpu>/accuracy.{md,csv}; make compare runs the same program.
accuracy: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSA_WERROR=ON $(CMAKE_FLAGS)
	cmake --build build -j$(JOBS) --target simdattn_accuracy
	build/bench/simdattn_accuracy $(if $(QUICK),--quick,)

# Emulated x86 CPUs: the same binaries' suite under qemu-user. SIMDATTN_EXPECT_BEST
# makes test_dispatch assert what detection must pick on that CPU, and
# SIMDATTN_REQUIRE_SETS makes every set-enumerating test fail if a set that CPU
# has does not run (a skip is otherwise only printed).
# Under emulation the suite checks what differs on those CPUs: detection, the
# fallbacks, every driver path end to end, no SIGILL. The exhaustive kernel
# and type sweeps (EMU_SKIP) execute the same instructions natively on any
# x86 machine with AVX2, and under qemu ran 150-300x slower (an Intel Xeon
# VM: test_dtypes alone 26 minutes), so they are not repeated there.
# EMU_SKIP= runs everything.
EMU_SKIP ?= test_kernels|test_dtypes|test_determinism
EMU_CTEST = $(CTEST) $(if $(EMU_SKIP),-E '$(EMU_SKIP)')

test-emulated: deps
	@sh scripts/deps.sh ci
	cmake -S . -B build-qemu -DCMAKE_BUILD_TYPE=Release -DSA_BUILD_BENCH=OFF \
	  "-DSA_TEST_LAUNCHER=qemu-x86_64;-cpu;Haswell" $(CMAKE_FLAGS)
	cmake --build build-qemu -j$(JOBS)
	cd build-qemu && SIMDATTN_EXPECT_BEST=avx2-polyexp \
	  SIMDATTN_REQUIRE_SETS=avx2,avx2-polyexp,scalar $(EMU_CTEST)
	cmake -S . -B build-qemu64 -DCMAKE_BUILD_TYPE=Release -DSA_BUILD_BENCH=OFF \
	  "-DSA_TEST_LAUNCHER=qemu-x86_64;-cpu;qemu64" $(CMAKE_FLAGS)
	cmake --build build-qemu64 -j$(JOBS)
	cd build-qemu64 && SIMDATTN_EXPECT_BEST=scalar SIMDATTN_REQUIRE_SETS=scalar $(EMU_CTEST)

test-sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSA_BUILD_BENCH=OFF \
	  -DSA_SANITIZE=address,undefined $(CMAKE_FLAGS)
	cmake --build build-asan -j$(JOBS)
	cd build-asan && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $(CTEST)
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSA_BUILD_BENCH=OFF \
	  -DSA_SANITIZE=thread $(CMAKE_FLAGS)
	cmake --build build-tsan -j$(JOBS)
	# the kernel sweeps start no thread: TSan would only make them 20x slower
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 $(CTEST) -E 'test_kernels|test_scalar_kernels'

test-aarch64:
	@sh scripts/deps.sh base aarch64
	cmake -S . -B build-aarch64 -DCMAKE_BUILD_TYPE=Release -DSA_BUILD_BENCH=OFF -DSA_WERROR=ON \
	  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake $(CMAKE_FLAGS)
	cmake --build build-aarch64 -j$(JOBS)
	# qemu-aarch64's default CPU is "max" (FEAT_BF16): neon-bf16 is the best
	# set there; on a Cortex-A72 (no BF16) neon-polyexp wins and neon-bf16 is
	# refused, so both dispatch outcomes run for real.
	cd build-aarch64 && QEMU_CPU=max SIMDATTN_EXPECT_BEST=neon-bf16 \
	  SIMDATTN_REQUIRE_SETS=neon,neon-polyexp,neon-bf16 $(CTEST)
	cd build-aarch64 && QEMU_CPU=cortex-a72 SIMDATTN_EXPECT_BEST=neon-polyexp \
	  SIMDATTN_REQUIRE_SETS=neon,neon-polyexp $(CTEST)

# The fuzzer against the oracle (fuzz/README.md): clang, ASan and UBSan on the
# whole library, run for SECONDS seconds on a fresh copy of the committed
# seeds (what it adds goes to build-fuzz/corpus, never into fuzz/corpus).
# A finding fails the target and is kept in build-fuzz/findings/. FUZZ_ARGS
# adds libFuzzer flags (-jobs=2, -seed=N, ...).
SECONDS ?= 60
FUZZ_ARGS ?=
fuzz:
	@sh scripts/deps.sh base fuzz
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSA_BUILD_TESTS=OFF -DSA_BUILD_BENCH=OFF -DSA_SANITIZE=address,undefined \
	  -DSA_FUZZ=ON $(CMAKE_FLAGS)
	cmake --build build-fuzz -j$(JOBS) --target attention_fuzz
	rm -rf build-fuzz/corpus
	mkdir -p build-fuzz/corpus build-fuzz/findings
	cp fuzz/corpus/* build-fuzz/corpus/
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 SA_FUZZ_VERBOSE=1 \
	  build-fuzz/fuzz/attention_fuzz -max_total_time=$(SECONDS) -max_len=512 \
	  -timeout=60 -print_final_stats=1 -artifact_prefix=build-fuzz/findings/ \
	  $(FUZZ_ARGS) build-fuzz/corpus

clean:
	rm -rf build build-qemu build-qemu64 build-asan build-tsan build-aarch64 build-fuzz
	rm -rf python/build python/simdattn.egg-info
