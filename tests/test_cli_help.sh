#!/usr/bin/env bash
# Every command answers --help on stdout with exit 0, a usage line and its exit codes; unknown
# commands, subcommands and missing arguments are usage errors (exit 4) that name the bad word.
set -uo pipefail
[ -x "${FDL_CLI:-}" ] || { echo "skip: FDL_CLI is not an executable"; exit 77; }
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

for c in verify json tensor pack validate inspect compare synth logits layers check divergence attribute model quantize capture generate report fetch; do
  out=$("$FDL_CLI" "$c" --help 2>/dev/null)
  rc=$?
  if [ $rc -eq 0 ] && grep -q "usage: fidelis $c" <<<"$out"; then ok; else bad "$c --help (exit $rc)"; fi
  # The codes are listed where a user looks first, and each one the README rule uses is named.
  if grep -q "^exit codes: 0 " <<<"$out" && grep -q "4 bad usage" <<<"$out"; then ok; else
    bad "$c --help lists no exit codes"
  fi
  grep -q "^  $c " <<<"$("$FDL_CLI" --help)" && ok || bad "$c missing from fidelis --help"
done
# Subcommands answer --help after their word too.
for c in "json canon" "tensor ls" "logits diff" "layers diff" "model init"; do
  # Captured first: `grep -q` in a pipe quits at its match, and under pipefail a help text longer
  # than the pipe's buffer would then fail on SIGPIPE.
  # shellcheck disable=SC2086
  out=$("$FDL_CLI" $c --help)
  grep -q "^exit codes: " <<<"$out" && ok || bad "$c --help lists no exit codes"
done
"$FDL_CLI" --version | grep -q '^fidelis [0-9]' && ok || bad "--version"
"$FDL_CLI" no-such-command >/dev/null 2>&1
[ $? -eq 4 ] && ok || bad "unknown command should exit 4"
"$FDL_CLI" >/dev/null 2>&1
[ $? -eq 4 ] && ok || bad "no command should exit 4"
for c in verify validate inspect compare pack synth json tensor logits layers check divergence attribute model quantize capture generate report fetch; do
  "$FDL_CLI" "$c" >/dev/null 2>&1
  [ $? -eq 4 ] && ok || bad "$c without arguments should exit 4"
done
for c in tensor json logits layers model; do
  err=$("$FDL_CLI" $c bogus 2>&1 >/dev/null)
  rc=$?
  [ $rc -eq 4 ] && grep -q "'bogus'" <<<"$err" && ok || bad "$c bogus: exit $rc, must name the word: $err"
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
