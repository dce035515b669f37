#!/bin/sh
# Installs bp bench's library anchors from PyPI into a private virtual
# environment (make bench; bp bench finds it as bench-venv/ in the build
# folder, or through BP_BENCH_ANCHORS / --anchors).
#
# usage: tools/bench_venv.sh VENV PACKAGE...
#
# A package already there is left alone. One pip cannot install leaves its
# reason in VENV/missing-PACKAGE.txt (bp bench prints it beside the anchor)
# and the full log in VENV/pip-PACKAGE.log; the script still exits 0, so
# the bench runs with the anchors it has.
set -u
venv=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
sh "$here/deps.sh" bench # python3-venv, python3-matplotlib, ...
mkdir -p "$venv"
missing() { # missing PACKAGE REASON
  echo "$2" > "$venv/missing-$1.txt"
  echo "bench-venv: $1 not installed: $2" >&2
}
if [ ! -x "$venv/bin/pip" ]; then
  # Debian's python3 (python3-venv gives it ensurepip), else the one in PATH
  for py in /usr/bin/python3 python3; do
    "$py" -m venv "$venv" > "$venv/venv.log" 2>&1 && break
  done
fi
if [ ! -x "$venv/bin/pip" ]; then
  reason="python3 -m venv failed: $(tail -1 "$venv/venv.log" 2>/dev/null)"
  for p in "$@"; do missing "$p" "$reason"; done
  exit 0
fi
for p in "$@"; do
  rm -f "$venv/missing-$p.txt"
  "$venv/bin/pip" show -q "$p" > /dev/null 2>&1 && continue
  echo "bench-venv: pip install $p" >&2
  if ! "$venv/bin/pip" install --disable-pip-version-check --no-input "$p" \
      > "$venv/pip-$p.log" 2>&1; then
    reason=$(grep -E '^(ERROR|error):' "$venv/pip-$p.log" | tail -1)
    missing "$p" "${reason:-pip install $p failed; see $venv/pip-$p.log}"
  fi
done
exit 0
