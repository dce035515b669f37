#!/bin/sh
# gpu-pack.sh — a relocatable copy of a build with what tools/gpu-check.sh
# runs on a GPU machine that has no Debian packages: the library, bp and
# its probe helper, the plugins, the test programs of the CUDA checks, and
# the shared libraries they link from this system (cmocka, json-c, libffi);
# programs stripped (not the plugins: their manifests hold their digests),
# so that it travels well under the device tool's 64 MiB.
# usage: tools/gpu-pack.sh [BUILD_DIR [PACK_DIR]]   (default build gpu-pack)
set -eu
cd "$(dirname "$0")/.."
b=${1:-build} p=${2:-gpu-pack}
rm -rf "$p"
mkdir -p "$p/bin" "$p/lib/backplane" "$p/plugins" "$p/test"
cp -P "$b"/lib/libbackplane.so* "$p/lib/"
cp "$b/lib/backplane/bp-probe" "$p/lib/backplane/"
cp "$b/bin/bp" "$p/bin/"
for f in backend-cpu backend-cuda backend-rocm comm-nccl comm-mpi; do
  cp "$b/plugins/$f.so" "$p/plugins/"
  [ -f "$b/plugins/$f.json" ] && cp "$b/plugins/$f.json" "$p/plugins/"
done
for t in test_cuda_ops test_ops_blas test_ops_dnn test_ops_attention test_ops_elementwise \
         test_ops_reduce test_ops_norm test_ops_data test_parity test_ops_model_gpu test_model test_quant_gpu \
         test_qgemm_u8_gpu test_qgemm_fp8_gpu test_gemm_epilogue comm_rank; do
  cp "$b/test/$t" "$p/test/"
done
# test_gemm_epilogue's composition case loads this fixture plugin.
cp -r "$b/test/plain-gemm-plugin" "$p/test/"
# The system libraries the programs link (found through their $ORIGIN/../lib rpath).
for lib in $(ldd "$p"/bin/bp "$p"/lib/libbackplane.so "$p"/plugins/*.so "$p"/test/test_* "$p"/test/comm_rank 2>/dev/null |
             awk '/=> \// {print $3}' | grep -E 'cmocka|json-c|libffi|hwloc' | sort -u); do
  cp -L "$lib" "$p/lib/"
done
find "$p" -type f \( -name '*.so*' -o -perm -u+x \) ! -name 'test_cuda_ops' ! -path '*/plugins/*' -exec strip --strip-unneeded {} + 2>/dev/null || true
git rev-parse --short HEAD >"$p/COMMIT"
chmod -R go-w "$p"
du -sh "$p"
