#!/bin/bash
# Proves ISA flags stayed inside kernels/<isa>/: disassembles every object of
# the library that is not an AVX kernel and fails on any ymm/zmm/opmask
# register or VEX/EVEX-encoded (v-prefixed) instruction. Those would raise
# SIGILL on a CPU without AVX, however rarely the code path runs.
# Usage: scripts/check_isa_leaks.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
case "$(uname -m)" in x86_64) ;; *) echo "not x86-64: nothing to check"; exit 0 ;; esac
# Every object of the build but the AVX kernel sets: the library's baseline
# code, the bench and the tests (the peak probes are in the kernel sets).
mapfile -t objs < <(find "$build" -name '*.o' ! -path '*sa_kernels_avx*' | sort)
[ "${#objs[@]}" -gt 0 ] || { echo "no objects under $build"; exit 1; }
bad=0
for o in "${objs[@]}"; do
  hits=$(objdump -d --no-show-raw-insn "$o" |
    grep -E '%[yz]mm[0-9]+|%k[0-7]\b|^\s+[0-9a-f]+:\s+v[a-z0-9]+\s' || true)
  if [ -n "$hits" ]; then
    echo "AVX code in baseline object $o:"
    echo "$hits" | head -5
    bad=1
  fi
done
[ "$bad" = 0 ] && echo "isa-leak check: ${#objs[@]} baseline objects, no AVX instruction"
exit $bad
