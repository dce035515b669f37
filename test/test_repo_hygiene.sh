#!/bin/sh
# Files that tools regenerate must not be tracked: python/*.egg-info is
# rewritten by every `pip install` (issue 23, item 14). Checks that git
# tracks no *.egg-info and that .gitignore covers python/backplane.egg-info.
here=$(cd "$(dirname "$0")/.." && pwd)
command -v git >/dev/null || { echo "SKIP: git missing"; exit 77; }
git -C "$here" rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: not a git checkout"; exit 77; }
fail=0
tracked=$(git -C "$here" ls-files | grep '\.egg-info/' || true)
if [ -n "$tracked" ]; then
  echo "FAILED: generated egg-info tracked by git:"; echo "$tracked"; fail=1
fi
if ! git -C "$here" check-ignore -q --no-index python/backplane.egg-info/PKG-INFO; then
  echo "FAILED: .gitignore does not ignore python/backplane.egg-info"; fail=1
fi
[ "$fail" = 0 ] && echo "test_repo_hygiene: no generated files tracked"
exit "$fail"
