#!/bin/sh
# Makes sure the Debian packages a make target needs are installed.
# Usage: scripts/deps.sh PROFILE...   (base, bench, compare, aarch64, ci, python, mpi, fuzz)
# As root it installs what is missing; otherwise it prints the exact
# apt-get line and exits 1. Nothing is fetched from anywhere but apt.
set -eu

need=""
arm64=0
for profile in "$@"; do
  case "$profile" in
  base) need="$need cmake make gcc g++ libc6-dev pkg-config libsleef-dev libhwloc-dev libbenchmark-dev" ;;
  bench) need="$need libbenchmark-dev" ;;
  compare) need="$need libopenblas-dev libdnnl-dev gnuplot-nox python3" ;;
  ci) need="$need qemu-user binutils" ;;
  # the Python binding's tests; python3-wheel because pip --no-build-isolation
  # builds the wheel with the setuptools and wheel already installed
  python) need="$need python3 python3-venv python3-numpy python3-pytest python3-torch python3-wheel" ;;
  # examples/seqpar: mpirun and the MPI C headers/library CMake's FindMPI needs
  mpi) need="$need openmpi-bin libopenmpi-dev" ;;
  # make fuzz: clang and its runtimes (libFuzzer, ASan, UBSan), Debian 12's 14
  fuzz) need="$need clang libclang-rt-14-dev" ;;
  aarch64) need="$need qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross libsleef-dev:arm64 libhwloc-dev:arm64"; arm64=1 ;;
  *) echo "deps.sh: unknown profile '$profile'" >&2; exit 2 ;;
  esac
done

missing=""
for pkg in $need; do
  case " $missing " in *" $pkg "*) continue ;; esac
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  case "$status" in
  *"install ok installed"*) ;;
  *) missing="$missing $pkg" ;;
  esac
done
[ -z "$missing" ] && exit 0

arch_step=""
if [ "$arm64" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  arch_step="dpkg --add-architecture arm64 && "
fi
line="${arch_step}apt-get update && apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" != 0 ]; then
  echo "simdattn needs these Debian packages:$missing" >&2
  echo "Install them as root with:" >&2
  echo "  $line" >&2
  exit 1
fi
echo "simdattn: installing$missing" >&2
[ -n "$arch_step" ] && dpkg --add-architecture arm64
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
