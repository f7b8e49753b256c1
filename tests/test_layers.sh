#!/usr/bin/env bash
# Layering rules (docs/ARCHITECTURE.md) that a grep can check: the library reads no environment
# and ends no process; the CLI includes only public headers; compare does not reach up into
# synth or engine; synth, engine and the json/tensor/num helpers do not reach into compare.
set -uo pipefail
root="${FDL_TESTS:-$(dirname "$0")}/.."
src="$root/src"
[ -d "$src" ] || { echo "skipped: $src not found"; exit 77; }
fail=0
bad() { echo "FAIL: $1"; echo "$2" | sed 's/^/  /'; fail=$((fail + 1)); }

lib=$(find "$src" -name '*.[ch]' ! -path "$src/cli/*")
# Comments may name these; code may not. Strip // and /* */ lines crudely: a hit on a line that
# starts a comment is not counted.
hits=$(grep -nE '\b(getenv|secure_getenv|exit|_exit|abort)\s*\(' $lib | grep -vE ':[0-9]+:\s*(/\*|\*|//)')
[ -z "$hits" ] || bad "the library reads the environment or ends the process" "$hits"

hits=$(grep -nE '^#include "' "$src"/cli/*.c "$src"/cli/*.h | grep -vE '#include "(fidelis|cli)/')
[ -z "$hits" ] || bad "src/cli includes a non-public header" "$hits"

hits=$(grep -nE '^#include "(synth|engine)/|fidelis/synth\.h' "$src"/compare/*.[ch])
[ -z "$hits" ] || bad "compare depends on synth or engine internals" "$hits"

hits=$(grep -nE '^#include "(compare|dataset)/' "$src"/synth/*.c "$src"/engine/*.c "$src"/json/*.[ch] \
  "$src"/tensor/*.[ch] "$src"/num/*.[ch] "$src"/digest/*.c 2>/dev/null)
[ -z "$hits" ] || bad "a lower layer includes compare or dataset internals" "$hits"

if [ "$fail" -ne 0 ]; then
  echo "0 passed, $fail failed"
  exit 1
fi
echo "4 passed, 0 failed"
