#!/usr/bin/env bash
# Messages that name what is wrong (issue 9, item 15): a file that starts with a NUL byte, an
# empty file and a /proc file (whose size reads 0 but which holds text) each get their own
# message, never "truncated document".
set -uo pipefail
F="$FDL_CLI"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
expect() { # want-rc needle label -- command...
  local want=$1 needle=$2 label=$3
  shift 4
  local err rc
  err=$(timeout 20 "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -eq "$want" ] && [[ "$err" == *"$needle"* ]] && [[ "$err" != *"truncated document"* ]]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $label: exit $rc (want $want), message: $err"
  fi
}
printf '\0{"a":1}' >"$W/nul.json"
: >"$W/empty.json"
printf ' \n\t' >"$W/blank.json"
expect 3 "NUL byte at offset 0" "leading NUL" -- "$F" json canon "$W/nul.json"
expect 3 "empty document (0 bytes)" "empty file" -- "$F" json canon "$W/empty.json"
expect 3 "all whitespace" "whitespace only" -- "$F" json canon "$W/blank.json"
expect 3 "invalid JSON syntax at line 1" "a /proc file is read, then refused as not JSON" -- \
  "$F" json canon /proc/self/status
expect 3 "NUL byte at offset 0" "verify names the NUL too" -- "$F" verify "$W/nul.json"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
