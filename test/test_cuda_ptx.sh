#!/bin/sh
# test_cuda_ptx — checks the committed PTX of kernels/cuda:
#  1. ptxas assembles every kernels/cuda/*.ptx for sm_80 and sm_90;
#  2. nvcc regenerates each .ptx from its .cu byte for byte (the committed
#     file is what the source says), when the local nvcc is the release that
#     wrote the committed files (their header names it); another release
#     emits different text, so that check is skipped with a message.
# Without the toolkit both are skipped with a message (exit 0).
# usage: test_cuda_ptx [SOURCE_DIR]   (default: the current directory)
src=${1:-.}
cuda=${CUDA_HOME:-/usr/local/cuda}
PTXAS=${PTXAS:-$(command -v ptxas || echo "$cuda/bin/ptxas")}
NVCC=${NVCC:-$(command -v nvcc || echo "$cuda/bin/nvcc")}
names="elementwise reduce norm gemm conv attention adam random"
if [ ! -d "$src/kernels/cuda" ]; then
  echo "skip: no kernels/cuda under '$src' (run from the source tree)"
  exit 0
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

if [ -x "$PTXAS" ]; then
  for n in $names; do
    for arch in sm_80 sm_90; do
      if "$PTXAS" -arch=$arch "$src/kernels/cuda/$n.ptx" -o "$tmp/$n.$arch.cubin" 2>"$tmp/err"; then
        echo "ok   ptxas $arch $n.ptx"
      else
        echo "FAIL ptxas $arch $n.ptx:"; cat "$tmp/err"; failed=$((failed + 1))
      fi
    done
  done
  # The custom-kernel fixture of test_cuda is PTX that a GPU runs too.
  f="$src/test/fixtures/cuda_custom.ptx"
  if [ -f "$f" ]; then
    if "$PTXAS" -arch=sm_80 "$f" -o "$tmp/custom.cubin" 2>"$tmp/err"; then
      echo "ok   ptxas sm_80 test/fixtures/cuda_custom.ptx"
    else
      echo "FAIL ptxas test/fixtures/cuda_custom.ptx:"; cat "$tmp/err"; failed=$((failed + 1))
    fi
  fi
else
  echo "skip: ptxas not found (set PTXAS or install the CUDA toolkit)"
fi

if [ -x "$NVCC" ]; then
  have=$("$NVCC" --version | sed -n 's/.*\(release [0-9.]*, V[0-9.]*\).*/\1/p')
  for n in $names; do
    want=$(sed -n 's|^// Cuda compilation tools, \(release [0-9.]*, V[0-9.]*\).*|\1|p' "$src/kernels/cuda/$n.ptx")
    if [ "$have" != "$want" ]; then
      echo "skip regenerate $n.ptx: committed by nvcc $want, local nvcc is $have"
      continue
    fi
    if "$NVCC" -ptx -arch=compute_80 -I"$src/kernels/cuda" "$src/kernels/cuda/$n.cu" -o "$tmp/$n.ptx" 2>"$tmp/err" &&
       cmp -s "$tmp/$n.ptx" "$src/kernels/cuda/$n.ptx"; then
      echo "ok   $n.ptx matches $n.cu"
    else
      echo "FAIL $n.ptx is stale: run 'make ptx' and commit kernels/cuda/*.ptx"
      cat "$tmp/err"; failed=$((failed + 1))
    fi
  done
else
  echo "skip: nvcc not found; the committed PTX is not compared with its source"
fi
[ "$failed" -eq 0 ]
