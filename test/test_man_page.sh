#!/bin/sh
# Checks docs/bp.1 against the bp it documents (issue 23, item 8):
#  - every subcommand `bp --help` lists has a SYNOPSIS line and a
#    ".SS bp CMD" section;
#  - every long option `bp CMD --help` lists appears in that command's
#    SYNOPSIS line and section, and every option the section documents is
#    one `bp CMD --help` lists;
#  - every BACKPLANE_* variable any --help names is in ENVIRONMENT;
#  - SEE ALSO is the last section, and no make variable ($(...)) is left.
here=$(cd "$(dirname "$0")/.." && pwd)
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
bp=$b/bin/bp
man=$here/docs/bp.1
[ -x "$bp" ] || { echo "SKIP: $bp not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAILED: $*"; fail=1; }
# The page with roff's \- turned into -, one section per .SH/.SS.
sed 's/\\-/-/g' "$man" > "$tmp/man"
section() { # section TITLE (as after .SH or .SS): its lines
  awk -v t="$1" '/^\.S[HS] /{ on = (substr($0, 5) == t); next } on' "$tmp/man"
}
opts() { grep -o -- '--[a-z][a-z-]*' | grep -v -- '^--help$' | sort -u; }
# The options a --help lists: its usage lines and the option table (lines
# that start with an option), not options named in passing in the prose.
listed() { grep -E '^(usage: | +\[| +-)' "$1" | opts; }
section SYNOPSIS > "$tmp/synopsis"
section ENVIRONMENT > "$tmp/env"
"$bp" --help > "$tmp/help" || err "bp --help failed"
cmds=$(sed -n '/^commands:/,/^$/p' "$tmp/help" | awk 'NF && !/^commands:/ { print $1 }')
[ -n "$cmds" ] || err "bp --help lists no commands"
: > "$tmp/allhelp"; cat "$tmp/help" >> "$tmp/allhelp"
for c in $cmds; do
  "$bp" "$c" --help > "$tmp/h.$c" 2>&1 || err "bp $c --help failed"
  cat "$tmp/h.$c" >> "$tmp/allhelp"
  grep -q "^\.B bp $c\$" "$tmp/synopsis" || err "bp.1 SYNOPSIS lacks 'bp $c'"
  grep -q "^\.SS bp $c\$" "$tmp/man" || err "bp.1 has no section '.SS bp $c'"
  # this command's SYNOPSIS lines: from ".B bp CMD" to the next .br or end
  awk -v c=".B bp $c" '$0 == c { on = 1; next } on && /^\.(br|B bp |PP)/ { on = 0 } on' \
    "$tmp/synopsis" > "$tmp/syn.$c"
  section "bp $c" > "$tmp/sec.$c"
  for o in $(listed "$tmp/h.$c"); do
    grep -q -- "$o" "$tmp/syn.$c" || err "bp.1 SYNOPSIS of 'bp $c' lacks $o"
    grep -q -- "$o" "$tmp/sec.$c" || err "bp.1 section 'bp $c' lacks $o"
  done
  for o in $(grep '^\.[BI]' "$tmp/sec.$c" | opts); do
    listed "$tmp/h.$c" | grep -qx -- "$o" || err "bp.1 documents $o for 'bp $c', which 'bp $c --help' does not list"
  done
done
for v in $(grep -o 'BACKPLANE_[A-Z_]*' "$tmp/allhelp" | sort -u); do
  grep -q "$v" "$tmp/env" || err "bp.1 ENVIRONMENT lacks $v"
done
last=$(grep '^\.SH ' "$tmp/man" | tail -n 1)
[ "$last" = ".SH SEE ALSO" ] || err "bp.1's last section is '$last', not SEE ALSO"
grep -n '\$(' "$man" | sed 's/^/FAILED: bp.1 has a make variable: /' | grep . && fail=1
[ "$fail" = 0 ] && echo "test_man_page: bp.1 matches bp --help ($(echo $cmds | wc -w) commands)"
exit "$fail"
