#!/bin/sh
# test_cuda_ptx — checks the committed PTX of kernels/cuda:
#  1. ptxas assembles every kernels/cuda/*.ptx for sm_80 and sm_90;
#  2. nvcc regenerates each .ptx from its .cu byte for byte (the committed
#     file is what the source says), when the local nvcc is the release that
#     wrote the committed files (their header names it); another release
#     emits different text, so that check is skipped with a message.
# Without ptxas and nvcc it checks nothing: "SKIP: <reason>", exit 77 (the
# convention of test/run.sh). With one of them, the other part's skip is
# printed as a "SKIP: " line and the test passes on what it checked.
# usage: test_cuda_ptx [SOURCE_DIR]   (default: the current directory)
src=${1:-.}
cuda=${CUDA_HOME:-/usr/local/cuda}
PTXAS=${PTXAS:-$(command -v ptxas || echo "$cuda/bin/ptxas")}
NVCC=${NVCC:-$(command -v nvcc || echo "$cuda/bin/nvcc")}
names="elementwise reduce norm gemm conv attention adam random model quant"
if [ ! -d "$src/kernels/cuda" ]; then
  echo "SKIP: no kernels/cuda under '$src' (run from the source tree)"
  exit 77
fi
if [ ! -x "$PTXAS" ] && [ ! -x "$NVCC" ]; then
  echo "SKIP: no CUDA toolkit (ptxas and nvcc not found; set CUDA_HOME, PTXAS or NVCC)"
  exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0; checked=0

if [ -x "$PTXAS" ]; then
  for n in $names; do
    for arch in sm_80 sm_90; do
      if "$PTXAS" -arch=$arch "$src/kernels/cuda/$n.ptx" -o "$tmp/$n.$arch.cubin" 2>"$tmp/err"; then
        echo "ok   ptxas $arch $n.ptx"; checked=$((checked + 1))
      else
        echo "FAIL ptxas $arch $n.ptx:"; cat "$tmp/err"; failed=$((failed + 1))
      fi
    done
  done
  # The custom-kernel fixture of test_cuda is PTX that a GPU runs too.
  f="$src/test/fixtures/cuda_custom.ptx"
  if [ -f "$f" ]; then
    if "$PTXAS" -arch=sm_80 "$f" -o "$tmp/custom.cubin" 2>"$tmp/err"; then
      echo "ok   ptxas sm_80 test/fixtures/cuda_custom.ptx"; checked=$((checked + 1))
    else
      echo "FAIL ptxas test/fixtures/cuda_custom.ptx:"; cat "$tmp/err"; failed=$((failed + 1))
    fi
  fi
else
  echo "SKIP: ptxas not found, the committed PTX is not assembled (set PTXAS)"
fi

if [ -x "$NVCC" ]; then
  have=$("$NVCC" --version | sed -n 's/.*\(release [0-9.]*, V[0-9.]*\).*/\1/p')
  for n in $names; do
    want=$(sed -n 's|^// Cuda compilation tools, \(release [0-9.]*, V[0-9.]*\).*|\1|p' "$src/kernels/cuda/$n.ptx")
    if [ "$have" != "$want" ]; then
      echo "SKIP: regenerating $n.ptx: committed by nvcc $want, local nvcc is $have"
      continue
    fi
    if "$NVCC" -ptx -arch=compute_80 -I"$src/kernels/cuda" "$src/kernels/cuda/$n.cu" -o "$tmp/$n.ptx" 2>"$tmp/err" &&
       cmp -s "$tmp/$n.ptx" "$src/kernels/cuda/$n.ptx"; then
      echo "ok   $n.ptx matches $n.cu"; checked=$((checked + 1))
    else
      echo "FAIL $n.ptx is stale: run 'make ptx' and commit kernels/cuda/*.ptx"
      cat "$tmp/err"; failed=$((failed + 1))
    fi
  done
else
  echo "SKIP: nvcc not found, the committed PTX is not compared with its source (set NVCC)"
fi
if [ "$failed" -eq 0 ] && [ "$checked" -eq 0 ]; then
  echo "SKIP: nothing checked (see the SKIP lines above)"
  exit 77
fi
echo "test_cuda_ptx: $checked checked, $failed failed"
[ "$failed" -eq 0 ]
