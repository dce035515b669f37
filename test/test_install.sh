#!/bin/sh
# An installed tree finds its plugins beside the library ($libdir/backplane,
# found with dladdr), even moved elsewhere, without BACKPLANE_PLUGIN_PATH;
# and a change of PREFIX rebuilds what was compiled with the old directories
# ($(B)/gen/config.h is replaced only when they change).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
case "${BP_UNDER_SANITIZER:-}" in ?*) echo "SKIP: under sanitizers (builds uninstrumented programs)"; exit 77;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi; }

# 1. PREFIX=/a then PREFIX=/b: the objects that bake the directories in are
# rebuilt with /b's, and a third run with /b rebuilds nothing. A scratch
# build directory, so this build's library is left alone.
s=$tmp/scratch objs="$tmp/scratch/obj/core/loader.o $tmp/scratch/obj/core/isolate.o $tmp/scratch/obj/tools/bp/common.o"
make -s -C "$here" B="$s" PREFIX=/bp-test-a $objs >/dev/null
check "PREFIX=/a is compiled in" 'grep -q /bp-test-a/lib/backplane "$s/obj/core/loader.o"'
make -s -C "$here" B="$s" PREFIX=/bp-test-b $objs >/dev/null
for o in $objs; do
  check "PREFIX=/b rebuilds $(basename "$o")" \
    'grep -q /bp-test-b/lib/backplane "$o" && ! grep -q /bp-test-a/ "$o"'
done
before=$(stat -c %y $objs "$s/gen/config.h")
make -s -C "$here" B="$s" PREFIX=/bp-test-b $objs >/dev/null
check "the same PREFIX again rebuilds nothing" '[ "$(stat -c %y $objs "$s/gen/config.h")" = "$before" ]'

# 2. Install with the directories this build was configured with (so the
# library is not rebuilt), move the tree, and run from the new place.
prefix=$(sed -n 's|^#define BP_PLUGIN_INSTALL_DIR "\(.*\)/lib/backplane"$|\1|p' "$b/gen/config.h")
[ -n "$prefix" ] || { echo "SKIP: $b was configured with a LIBDIR or PLUGIN_INSTALL_DIR of its own"; exit 77; }
dest=$tmp/root
make -s -C "$here" B="$b" install DESTDIR="$dest" PREFIX="$prefix" >/dev/null
moved=$tmp/elsewhere/opt
mkdir -p "$tmp/elsewhere" && mv "$dest$prefix" "$moved"
unset BACKPLANE_PLUGIN_PATH
out=$(env -u LD_LIBRARY_PATH "$moved/bin/bp" devices --explain 2>&1) || true
echo "$out" | sed 's/^/  | /'
check "bp devices (moved tree) searched \$libdir/backplane" \
  'echo "$out" | grep -q "$moved/lib/backplane"'
check "bp devices (moved tree) loaded the cpu plugin from there" \
  'echo "$out" | grep -q "$moved/lib/backplane/backend-cpu"'
cc -std=c11 -I"$moved/include/backplane" -o "$tmp/devices" "$here/docs/examples/devices.c" \
  -L"$moved/lib" -Wl,-rpath,"$moved/lib" -lbackplane -lm
check "a program linked against the moved tree finds a device" \
  'env -u LD_LIBRARY_PATH "$tmp/devices" >"$tmp/devices.out" 2>&1 && grep -q cpu-ref "$tmp/devices.out"'
sed 's/^/  | /' "$tmp/devices.out"
[ "$fail" = 0 ] && echo "test_install: moved install finds its plugins; PREFIX changes rebuild"
exit "$fail"
