#!/bin/sh
# bp and manifests: `bp devices --no-load` lists the build's plugins from
# their manifests alone (table and JSON, a bad manifest shown with its
# rule), and `bp conformance` checks that a manifest matches its plugin.
set -eu
b=$(cd "${LD_LIBRARY_PATH%%:*}/.." && pwd)
bp=$b/bin/bp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi; }
unset BACKPLANE_PLUGIN_PATH BACKPLANE_LAYERS || true
command -v python3 >/dev/null || { echo "SKIP: no python3 to read the JSON"; exit 77; }
command -v sha256sum >/dev/null || { echo "SKIP: no sha256sum to compare with"; exit 77; }

# 1. --no-load: the build's plugins, from $(B)/plugins/*.json.
"$bp" devices --no-load > "$tmp/table"
check "--no-load lists cpu with its version and ABI" 'grep -Eq "^  cpu +0\.1\.0 +1\.[0-9]+ +cpu " "$tmp/table"'
check "--no-load names what cpu dlopens" 'grep -q "dlopens: libhwloc.so.15" "$tmp/table"'
"$bp" devices --no-load --json > "$tmp/json"
check "--no-load --json is JSON with cpu's manifest" \
  'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d[\"loaded\"] is False; \
m=[x for x in d[\"manifests\"] if x.get(\"name\")==\"cpu\"][0]; assert m[\"ok\"] and len(m[\"sha256\"])==64" "$tmp/json"'

# 2. A bad manifest is listed with its rule, not skipped.
mkdir "$tmp/p" && chmod 755 "$tmp/p"
printf '{"manifest_version": 1, "name": ' > "$tmp/p/backend-torn.json"
BACKPLANE_PLUGIN_PATH=$tmp/p "$bp" devices --no-load > "$tmp/table2"
check "a torn manifest is listed with rule MANIFEST-3" 'grep -q "(bad).*backend-torn.json.*MANIFEST-3" "$tmp/table2"'

# 3. bp conformance: a matching manifest passes, a tampered plugin fails.
cp "$b/test/broken/backend-good.so" "$tmp/p/"
"$b/bin/bp-manifest" "$tmp/p/backend-good.so" "$tmp/p/backend-good.json"
"$bp" conformance --quick "$tmp/p/backend-good.so" > "$tmp/conf1" 2>&1 || true
check "conformance: the manifest matches" 'grep -Eq "manifest matches the plugin +pass" "$tmp/conf1"'
printf '\0' >> "$tmp/p/backend-good.so"
"$bp" conformance --quick "$tmp/p/backend-good.so" > "$tmp/conf2" 2>&1 || true
check "conformance: a tampered plugin fails on MANIFEST-7" \
  'grep -Eq "manifest matches the plugin +FAIL .*MANIFEST-7" "$tmp/conf2"'
# 4. The hash is SHA-256, on the SHA-extension path and the portable one.
want=$(sha256sum "$b/plugins/backend-cpu.so" | cut -d' ' -f1)
"$b/bin/bp-manifest" "$b/plugins/backend-cpu.so" "$tmp/fast.json"
"$b/bin/bp-manifest" --portable "$b/plugins/backend-cpu.so" "$tmp/slow.json"
check "bp-manifest's sha256 is sha256sum's" 'grep -q "\"sha256\": \"$want\"" "$tmp/fast.json"'
check "the portable sha256 is sha256sum's" 'grep -q "\"sha256\": \"$want\"" "$tmp/slow.json"'
exit $fail
