#!/bin/sh
# Runs the Python package's pytest suite against the library test/run.sh
# points at (LD_LIBRARY_PATH's first entry). Uses Debian's python3, which has
# python3-numpy and python3-pytest from tools/deps.sh.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if [ -n "${BP_UNDER_SANITIZER:-}" ]; then
  echo "SKIP: under sanitizers (python is not instrumented)"; exit 77
fi
if ! "$py" -c "import numpy, pytest" 2>/dev/null; then
  echo "SKIP: needs python3-numpy and python3-pytest (sh tools/deps.sh)"; exit 77
fi
here=$(cd "$(dirname "$0")/.." && pwd)
libdir=${LD_LIBRARY_PATH%%:*}
export BACKPLANE_LIBRARY="$(cd "$libdir" && pwd)/libbackplane.so"
export PYTHONPATH="$here/python${PYTHONPATH:+:$PYTHONPATH}"
export BACKPLANE_DEBUG=error
exec "$py" -m pytest -q -p no:cacheprovider "$here/python/tests"
