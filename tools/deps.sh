#!/bin/sh
# Installs the Debian packages backplane needs to build and test.
# Idempotent: does nothing when everything is present. When it cannot install
# (not root, no apt-get), prints the exact command to run and exits 0 so the
# build can go on with whatever is present; the tests then skip what is
# missing with a clear message.
#
# usage: tools/deps.sh [build|bench]   (default: build)
set -eu

BUILD_PKGS="gcc make pkg-config libcmocka-dev libhwloc-dev libffi-dev \
glslc libshaderc1 libvulkan1 libvulkan-dev mesa-vulkan-drivers \
opencl-headers ocl-icd-libopencl1 ocl-icd-opencl-dev pocl-opencl-icd \
clang libclang-rt-14-dev valgrind python3 python3-numpy python3-pytest \
openmpi-bin libopenmpi-dev libjson-c-dev"
BENCH_PKGS="libopenblas0 python3-torch python3-numpy libclblast1 python3-venv \
python3-matplotlib"

case "${1:-build}" in
  build) want="$BUILD_PKGS" ;;
  bench) want="$BUILD_PKGS $BENCH_PKGS" ;;
  *) echo "usage: $0 [build|bench]" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$status" in
    *"install ok installed"*) ;;
    *) missing="$missing $p" ;;
  esac
done
[ -z "$missing" ] && exit 0

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: missing Debian packages:$missing" >&2
  echo "deps: install them with: sudo $cmd" >&2
  exit 0
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# A stale package list makes installs fail; refresh it once if it is old.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ]; then
  apt-get update -qq >&2 || echo "deps: apt-get update failed; trying anyway" >&2
fi
if ! $cmd >&2; then
  echo "deps: install failed; run: $cmd" >&2
fi
exit 0
