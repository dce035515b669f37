#!/bin/sh
# Compiles every ```c block in README.md and docs/*.md (issue 23, item 2), and
# fails naming the file and line of each block that does not compile.
#
# How a block is compiled (cc -std=c11 -Wall -Wextra -Werror, -I. -Icore):
#   - a block with main() is a whole program: compiled as it stands (no
#     headers added) and linked against the build's libbackplane; it must
#     then run with the build's plugins and exit 0, and without any plugin it
#     must either succeed or say why on stderr (never fail silently);
#   - any other block is a translation unit, checked with -fsyntax-only after
#     the standard headers (stdio, stdlib, string, stdint, stddef, stdbool);
#   - a block that is deliberately a fragment is preceded, on the line right
#     above its fence, by an HTML comment (invisible when rendered):
#         <!-- doc-block: fragment
#         declarations the fragment assumes, at file scope
#         -->
#     Its statements are compiled -fsyntax-only inside a function body, after
#     the standard headers and those declarations. "<!-- doc-block: unit"
#     gives declarations to a translation unit the same way.
# Code that is not C (OpenCL C, GLSL, shell) is fenced with its own language.
here=$(cd "$(dirname "$0")/.." && pwd)
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
case "${BP_UNDER_SANITIZER:-}" in ?*) echo "SKIP: under sanitizers (the blocks build uninstrumented programs)"; exit 77;; esac
command -v cc >/dev/null || { echo "SKIP: no C compiler (cc)"; exit 77; }
[ -f "$b/lib/libbackplane.so" ] || { echo "SKIP: $b/lib/libbackplane.so not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$here" || exit 1
# Split the blocks: $tmp/N.where (file:line of the fence), N.kind, N.ctx
# (declarations from the marker comment) and N.c (the block).
n=0
for f in README.md docs/*.md; do
  n=$(awk -v f="$f" -v n="$n" -v d="$tmp" '
    /^<!-- doc-block: / { kind = $3; ctx = ""; inmark = ($0 !~ /-->/); pend = !inmark; next }
    inmark { if ($0 ~ /^-->/) { inmark = 0; pend = 1 } else ctx = ctx $0 "\n"; next }
    /^```c[ \t]*$/ && !on {
      n++; on = 1
      print f ":" NR > (d "/" n ".where"); close(d "/" n ".where")
      print (pend ? kind : "auto") > (d "/" n ".kind"); close(d "/" n ".kind")
      printf "%s", (pend ? ctx : "") > (d "/" n ".ctx"); close(d "/" n ".ctx")
      printf "" > (d "/" n ".c")
      pend = 0; next
    }
    on && /^```/ { on = 0; close(d "/" n ".c"); next }
    on { print >> (d "/" n ".c"); next }
    { pend = 0 }
    END { print n }' "$f")
done
[ "$n" -gt 0 ] || { echo "FAILED: no \`\`\`c blocks found"; exit 1; }
cflags="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I$here -I$here/core"
prelude='#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>'
fail=0 programs=0
mkdir "$tmp/noplugins"
i=0
while [ "$i" -lt "$n" ]; do
  i=$((i + 1))
  where=$(cat "$tmp/$i.where") kind=$(cat "$tmp/$i.kind")
  src=$tmp/src$i.c
  if [ "$kind" = auto ] && grep -q '\bmain *(' "$tmp/$i.c"; then
    kind=program
  elif [ "$kind" = auto ]; then
    kind=unit
  fi
  case $kind in
    program) cp "$tmp/$i.c" "$src" ;;
    unit) { echo "$prelude"; cat "$tmp/$i.ctx"; echo "#line $((${where##*:} + 1)) \"${where%:*}\""; cat "$tmp/$i.c"; } > "$src" ;;
    fragment) { echo "$prelude"; cat "$tmp/$i.ctx"; echo "void doc_block_$i(void);"; echo "void doc_block_$i(void) {";
                echo "#line $((${where##*:} + 1)) \"${where%:*}\""; cat "$tmp/$i.c"; echo "}"; } > "$src" ;;
    *) echo "FAILED: $where: unknown doc-block kind '$kind'"; fail=1; continue ;;
  esac
  if [ "$kind" = program ]; then
    if ! cc $cflags -o "$tmp/prog$i" "$src" -L"$b/lib" -lbackplane -Wl,-rpath,"$b/lib" > "$tmp/log" 2>&1; then
      echo "FAILED: $where: the C block does not compile:"; sed 's/^/  /' "$tmp/log"; fail=1; continue
    fi
    programs=$((programs + 1))
    if ! (cd "$tmp" && BACKPLANE_PLUGIN_PATH="$b/plugins" "./prog$i") > "$tmp/out" 2>&1; then
      echo "FAILED: $where: the program fails with the build's plugins:"; sed 's/^/  /' "$tmp/out"; fail=1
    fi
    if ! (cd "$tmp" && BACKPLANE_PLUGIN_PATH="$tmp/noplugins" "./prog$i") > /dev/null 2> "$tmp/err" && [ ! -s "$tmp/err" ]; then
      echo "FAILED: $where: with no plugin the program fails without a word on stderr"; fail=1
    fi
  elif ! cc $cflags -fsyntax-only "$src" > "$tmp/log" 2>&1; then
    echo "FAILED: $where: the C block ($kind) does not compile:"; sed 's/^/  /' "$tmp/log"; fail=1
  fi
done
[ "$fail" = 0 ] && echo "test_doc_blocks: $n C blocks compile ($programs programs built and run)"
exit "$fail"
