#!/bin/sh
# Installs backplane into a temporary DESTDIR, then builds every program in
# docs/examples against the installed copy with pkg-config, builds the
# out-of-tree "hello" plugin against the installed plugin-api.h, drops it in
# a plugin directory and runs everything.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
case "${BP_UNDER_SANITIZER:-}" in ?*) echo "SKIP: under sanitizers (the examples build uninstrumented programs)"; exit 77;; esac
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config missing (sh tools/deps.sh)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The prefix this build was configured with, so the install does not rebuild
# the library (a change of PREFIX would, $(B)/gen/config.h).
prefix=$(sed -n 's|^#define BP_PLUGIN_INSTALL_DIR "\(.*\)/lib/backplane"$|\1|p' "$b/gen/config.h" 2>/dev/null)
dest=$tmp/root prefix=${prefix:-/usr/local}
make -s -C "$here" B="$b" install DESTDIR="$dest" PREFIX="$prefix" >/dev/null
export PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_PATH="$dest$prefix/lib/pkgconfig" PKG_CONFIG_LIBDIR=""
cflags=$(pkg-config --cflags backplane) libs=$(pkg-config --libs backplane)
ex=$here/docs/examples
# The headers install under include/backplane/, none bare in include/, and
# the application header does not leak the plugin ABI.
for h in backplane.h plugin-api.h backplane_types.h; do
  [ -f "$dest$prefix/include/backplane/$h" ] || { echo "FAILED: $h not installed under include/backplane/"; exit 1; }
  [ ! -e "$dest$prefix/include/$h" ] || { echo "FAILED: $h installed bare in include/"; exit 1; }
done
printf '#include <backplane.h>\nint main(void) { return (int)sizeof(bp_plugin_descriptor_t); }\n' > "$tmp/leak.c"
if cc -std=c11 $cflags -fsyntax-only "$tmp/leak.c" 2>/dev/null; then
  echo "FAILED: backplane.h exposes the plugin ABI (bp_plugin_descriptor_t)"; exit 1
fi
printf '#include <backplane.h>\nint main(void) { return BP_OP_GEMM + BP_F32 + BP_OK; }\n' > "$tmp/shared.c"
cc -std=c11 $cflags -fsyntax-only "$tmp/shared.c" || { echo "FAILED: backplane.h lacks the shared types"; exit 1; }
export LD_LIBRARY_PATH="$dest$prefix/lib"
# The installed plugins are found beside the library; only hello needs the path.
export BACKPLANE_PLUGIN_PATH="$tmp/plugins"
mkdir -p "$tmp/plugins" && chmod 755 "$tmp/plugins"
fail=0
run() { echo "--- $*"; "$@" || { echo "FAILED: $*"; fail=1; }; }
for p in devices gemm attention graph custom_kernel several_devices; do
  cc -std=c11 -Wall -Wextra -Werror $cflags -o "$tmp/$p" "$ex/$p.c" $libs -lm
done
cc -shared -fPIC $cflags -o "$tmp/libscale.so" "$ex/scale_kernel.c"
cc -shared -fPIC -fvisibility=hidden -std=c11 -Wall -Wextra -Werror $cflags \
  -o "$tmp/plugins/backend-hello.so" "$ex/hello-plugin/backend-hello.c"
chmod 755 "$tmp/plugins/backend-hello.so"
cc -std=c11 -Wall -Wextra -Werror $cflags -o "$tmp/use_hello" "$ex/hello-plugin/use_hello.c" $libs -lm
run "$tmp/devices"
run "$tmp/gemm"
run "$tmp/attention"
run "$tmp/graph"
run "$tmp/custom_kernel" "$tmp/libscale.so"
run "$tmp/several_devices"
run "$tmp/use_hello"
run "$dest$prefix/bin/bp" devices
[ "$fail" = 0 ] && echo "test_examples: all examples built against the install and ran"
exit "$fail"
