#!/bin/sh
# test_rocm_hiprtc — every kernel module that backend-rocm.so embeds, through
# a real hiprtc, for CDNA (wave64) and RDNA (wave32) architectures (set
# HIPRTC_ARCHS for others: ROCm 5.2, Debian 12's, knows nothing newer than
# gfx90a and gfx1030 and crashes on gfx942 or gfx1100). This is
# the only check the HIP sources get without AMD hardware: it proves they
# compile, not that they compute the right numbers (see
# docs/backend-rocm.md). Skipped ("SKIP: <reason>", exit 77) where ROCm is not
# installed (Debian: apt-get install libamdhip64-5 rocm-device-libs, or
# HIPRTC_LIB=/path/to/libhiprtc.so).
here=$(cd "$(dirname "$0")" && pwd)
lib=${HIPRTC_LIB:-}
if [ -z "$lib" ]; then
  for c in /opt/rocm/lib/libhiprtc.so /usr/lib/x86_64-linux-gnu/libhiprtc.so.6 \
           /usr/lib/x86_64-linux-gnu/libhiprtc.so.5 \
           /usr/lib/x86_64-linux-gnu/libamdhip64.so.5; do
    [ -e "$c" ] && { lib=$c; break; }
  done
fi
if [ -z "$lib" ]; then
  echo "SKIP: no hiprtc installed (apt-get install libamdhip64-5 rocm-device-libs, or set HIPRTC_LIB)"
  exit 77
fi
failed=0
for arch in ${HIPRTC_ARCHS:-gfx90a:sramecc+:xnack- gfx908 gfx1030}; do
  "$here/test_rocm_hiprtc_check" "$lib" "$arch" || failed=$((failed + 1))
done
echo "test_rocm_hiprtc: $failed architectures failed ($lib)"
[ "$failed" -eq 0 ]
