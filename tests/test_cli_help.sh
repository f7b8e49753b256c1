#!/usr/bin/env bash
# Every command answers --help on stdout with exit 0 and a usage line; unknown commands and
# missing arguments are usage errors (exit 4).
set -uo pipefail
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

for c in verify json tensor pack validate inspect compare synth; do
  out=$("$FDL_CLI" "$c" --help 2>/dev/null)
  rc=$?
  if [ $rc -eq 0 ] && grep -q "usage: fidelis $c" <<<"$out"; then ok; else bad "$c --help (exit $rc)"; fi
  grep -q "^  $c " <<<"$("$FDL_CLI" --help)" && ok || bad "$c missing from fidelis --help"
done
"$FDL_CLI" --version | grep -q '^fidelis [0-9]' && ok || bad "--version"
"$FDL_CLI" no-such-command >/dev/null 2>&1
[ $? -eq 4 ] && ok || bad "unknown command should exit 4"
"$FDL_CLI" >/dev/null 2>&1
[ $? -eq 4 ] && ok || bad "no command should exit 4"
for c in verify validate inspect compare; do
  "$FDL_CLI" "$c" >/dev/null 2>&1
  [ $? -eq 4 ] && ok || bad "$c without arguments should exit 4"
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
