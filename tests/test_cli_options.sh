#!/usr/bin/env bash
# The one option parser and the input rules behind it (issue 7 section 5, issue 9 items 2, 3, 7,
# 14, 15, 16): repeated, conflicting and empty options, numbers read one way everywhere,
# --quiet, inputs that must not hang (FIFO, endless stdin), a bad .npy magic named as such, and
# synth byte-for-byte deterministic. Each reproduction here failed before the parser existed.
set -uo pipefail
[ -x "${FDL_CLI:-}" ] || { echo "skip: FDL_CLI is not an executable"; exit 77; }
F=$FDL_CLI
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
SMALL=(--vocab 64 --hidden 32 --contexts 2 --tokens-per-context 8)

# expect CODE WORD DESCRIPTION -- ARGS...: exit CODE within 60 s, and stderr contains WORD.
expect() {
  local want=$1 word=$2 what=$3
  shift 4
  local err rc
  err=$(timeout 60 "$F" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -eq "$want" ] && { [ -z "$word" ] || grep -qF -- "$word" <<<"$err"; }; then
    ok
  else
    bad "$what: exit $rc (want $want, stderr naming '$word'): ${err:0:300}"
  fi
}

"$F" synth --out "$W/pair" "${SMALL[@]}" >/dev/null || { echo "synth failed"; exit 1; }
R=$W/pair/reference C=$W/pair/candidate

# ---- repeated and conflicting options ------------------------------------------------------
expect 4 "more than once" "repeated --panel" -- pack --panel a --panel b --tensors t --meta m --out "$W/o1"
expect 4 "more than once" "repeated --json" -- validate --json --json "$R"
expect 4 "more than once" "alias repeated" -- compare "$R" "$C" --out "$W/o2" --position-block 8 --chunk-positions 8
expect 4 "cannot be used together" "own-heads vs disclose" -- compare "$R" "$C" --own-heads --disclose-head-substitution --out "$W/o3"
expect 4 "cannot be used together" "verify vs no-verify" -- validate "$R" --verify-tensors --no-verify-tensors
expect 4 "cannot be used together" "js vs no-js" -- compare "$R" "$C" --js --no-js --out "$W/o4"
expect 4 "unknown option '--nope'" "unknown option" -- inspect "$R" --nope
expect 4 "takes no value" "flag with a value" -- validate "$R" --json=yes

# ---- empty paths are usage errors, caught before any work ----------------------------------
expect 4 "--out" "pack --out ''" -- pack --panel a --tensors t --meta m --out ""
expect 4 "--report" "validate --report ''" -- validate "$R" --report ""
expect 4 "--out" "compare --out=" -- compare "$R" "$C" --out=
expect 4 "empty" "verify ''" -- verify ""
expect 4 "empty" "tensor ls ''" -- tensor ls ""
expect 4 "--out" "synth --out ''" -- synth --out ""
[ ! -e "$W/o1" ] && [ ! -e "$W/o3" ] && ok || bad "a usage error left output behind"

# ---- numbers: one parser, one --threads range ----------------------------------------------
expect 4 "4294967296" "synth --threads 2^32" -- synth --out "$W/o5" --threads 4294967296
expect 4 "--threads" "pack --threads ''" -- pack --panel a --tensors t --meta m --out "$W/o6" --threads ""
for c in validate pack compare synth; do
  case $c in
  validate) args=("$R") ;;
  pack) args=(--panel a --tensors t --meta m --out "$W/o7") ;;
  compare) args=("$R" "$C" --out "$W/o8") ;;
  synth) args=(--out "$W/o9") ;;
  esac
  for v in 0 1025 -1 +1 " 1" 1e3 0x10; do
    expect 4 "--threads" "$c --threads '$v'" -- "$c" "${args[@]}" --threads "$v"
  done
done
"$F" validate "$R" --threads 1024 >/dev/null && ok || bad "--threads 1024 is the documented maximum"
# --vocab-chunk is accepted and unused (the chunk is fixed), but it must still be a number >= 1.
for v in 0 -5 ""; do
  expect 4 "--vocab-chunk" "compare --vocab-chunk '$v'" -- compare "$R" "$C" --out "$W/o10" --vocab-chunk "$v"
done
expect 4 "--chunk-positions" "the alias is named as typed" -- compare "$R" "$C" --out "$W/o11" --chunk-positions 5000
expect 4 "--isa" "unknown --isa" -- compare "$R" "$C" --out "$W/o12" --isa sse9
[ ! -e "$W/o10" ] && ok || bad "a refused --vocab-chunk wrote output"

# ---- --quiet prints errors only ------------------------------------------------------------
out=$("$F" compare "$R" "$C" --own-heads --out "$W/q1" --quiet 2>&1)
rc=$?
[ $rc -eq 2 ] && [ -z "$out" ] && [ -f "$W/q1/comparison-receipt.json" ] && ok ||
  bad "compare --quiet: exit $rc, printed: ${out:0:200}"
out=$("$F" compare "$R" "$C" --out "$W/q2" --quiet 2>/dev/null)
err=$("$F" compare "$R" "$C" --out "$W/q3" --quiet 2>&1 >/dev/null)
[ -z "$out" ] && grep -q "^REFUSED \[" <<<"$err" && ok || bad "compare --quiet must still print its refusal: $err"
out=$("$F" compare "$R" "$C" --own-heads --out "$W/q4" 2>/dev/null)
grep -q "KL(reference || candidate)" <<<"$out" && ok || bad "compare without --quiet prints the summary"

# ---- inputs that must not hang -------------------------------------------------------------
mkfifo "$W/fifo"
ln -s "$W/fifo" "$W/fifo-link"
expect 4 "fifo" "tensor ls FIFO" -- tensor ls "$W/fifo"
expect 4 "fifo-link" "tensor ls symlink to a FIFO" -- tensor ls "$W/fifo-link"
expect 4 "fifo" "pack --panel FIFO" -- pack --panel "$W/fifo" --tensors "$W/t" --meta "$W/fifo" --out "$W/o13"
err=$(timeout 120 "$F" json canon - </dev/zero 2>&1 >/dev/null)
rc=$?
[ $rc -eq 4 ] && grep -q "268435456" <<<"$err" && ok || bad "json canon - </dev/zero: exit $rc: $err"

# ---- a bad .npy magic is named in .npy terms -----------------------------------------------
printf '\x93NUMPZ\x01\x00\x76\x00{}' >"$W/bad.npy"
err=$("$F" tensor ls "$W/bad.npy" 2>&1 >/dev/null)
rc=$?
[ $rc -eq 3 ] && grep -q "\.npy" <<<"$err" && grep -q "magic" <<<"$err" &&
  ! grep -q "header length" <<<"$err" && ok || bad "bad .npy magic: exit $rc: $err"
printf 'XNUMPY\x01\x00\x76\x00{}' >"$W/bad2.npy"
err=$("$F" tensor ls "$W/bad2.npy" 2>&1 >/dev/null)
grep -q "magic" <<<"$err" && ok || bad "bad first byte of the .npy magic: $err"

# ---- pack: a refusal of what was read is 3 and names its code ------------------------------
printf 'garbage\n' >"$W/panel.jsonl"
printf '{}' >"$W/meta.json"
mkdir "$W/t"
expect 3 "REFUSED [" "pack on malformed inputs" -- pack --panel "$W/panel.jsonl" --tensors "$W/t" --meta "$W/meta.json" --out "$W/o14"

# ---- synth is deterministic ----------------------------------------------------------------
"$F" synth --out "$W/s1" --seed 7 "${SMALL[@]}" >/dev/null &&
  "$F" synth --out "$W/s2" --seed 7 "${SMALL[@]}" >/dev/null &&
  diff -r "$W/s1" "$W/s2" >/dev/null && ok || bad "two synth runs with the same seed differ"
"$F" synth --out "$W/s3" --seed 8 "${SMALL[@]}" >/dev/null
a=$(grep -h '"created_utc"' "$W/s1/reference/fidelity-dataset.json")
b=$(grep -h '"created_utc"' "$W/s3/reference/fidelity-dataset.json")
[ -n "$a" ] && [ "$a" != "$b" ] && ok || bad "created_utc must come from the seed: '$a' vs '$b'"
"$F" synth --out "$W/s4" --created-utc 2027-03-04T05:06:07Z "${SMALL[@]}" >/dev/null
grep -q '"created_utc": "2027-03-04T05:06:07Z"' "$W/s4/reference/fidelity-dataset.json" && ok ||
  bad "--created-utc is not used"
for t in 2026-02-30T12:00:00Z 2026-01-01T25:61:61Z 2026-1-01T00:00:00Z 2026-01-01T00:00:00 ""; do
  expect 4 "--created-utc" "synth --created-utc '$t'" -- synth --out "$W/s5" --created-utc "$t"
done
"$F" synth --help | grep -q "byte-identical" && ok || bad "synth --help must say it is deterministic"

# ---- model init and quantize: the same parser rules ------------------------------------------
expect 4 "more than once" "model init --seed twice" -- model init --preset tiny-random --seed 1 --seed 2 "$W/m1"
expect 4 "--preset" "model init --preset ''" -- model init --preset "" "$W/m2"
expect 4 "empty" "model init ''" -- model init --preset tiny-random ""
expect 4 "--seed" "model init --seed -1" -- model init --preset tiny-random --seed -1 "$W/m3"
expect 4 "unknown subcommand 'inti'" "model inti" -- model inti --preset tiny-random "$W/m4"
expect 4 "empty" "quantize '' OUT" -- quantize "" "$W/m5"
expect 4 "empty" "quantize MODEL ''" -- quantize "$W/m6" ""
expect 4 "more than once" "quantize --scope twice" -- quantize --scope mlp --scope mlp "$W/m7" "$W/m8"
for v in 0 -1 1048577 x ""; do
  expect 4 "--group-size" "quantize --group-size '$v'" -- quantize --group-size "$v" "$W/m9" "$W/m10"
done
[ ! -e "$W/m1" ] && [ ! -e "$W/m10" ] && ok || bad "a usage error of model init or quantize left output behind"
"$F" model init --help | grep -q "byte-identical" && ok || bad "model init --help must say it is deterministic"

# ---- capture and generate: the same parser rules ---------------------------------------------
expect 4 "--model" "capture without --model" -- capture --panel p.jsonl --out "$W/c1"
expect 4 "more than once" "capture --path twice" -- capture --model m --panel p --out "$W/c2" --path prefill --path decode
expect 4 "--form" "capture --form nope" -- capture --model m --panel p --out "$W/c3" --form nope
expect 4 "--created-utc" "capture --created-utc bad" -- capture --model m --panel p --out "$W/c4" --created-utc 2026-02-30T00:00:00Z
expect 4 "cannot be used together" "capture --progress --quiet" -- capture --model m --panel p --out "$W/c5" --progress --quiet
expect 4 "nothing to write" "generate without an output" -- generate --model m --ids "[1]"
expect 4 "cannot be used together" "generate --ids with --panel" -- generate --model m --ids "[1]" --panel p --context 0 --prompt-tokens 1 --ids-out "$W/g1"
expect 4 "--new N and --tokens-out" "generate --new without --tokens-out" -- generate --model m --ids "[1]" --new 3 --ids-out "$W/g2"
expect 4 "--rows steps needs --request" "generate --rows steps" -- generate --model m --ids "[1]" --rows steps --greedy-out "$W/g3"
for v in 0 4097 x ""; do
  expect 4 "--new" "generate --new '$v'" -- generate --model m --ids "[1]" --new "$v" --tokens-out "$W/g4"
done
[ ! -e "$W/c1" ] && [ ! -e "$W/g4" ] && ok || bad "a usage error of capture or generate left output behind"

# ---- report: the same parser rules -----------------------------------------------------------
expect 4 "more than once" "report --out twice" -- report "$W/r" --out "$W/r1.html" --out "$W/r2.html"
expect 4 "--out" "report --out ''" -- report "$W/r" --out ""
expect 4 "empty" "report ''" -- report ""
expect 4 "cannot be used together" "report --markdown --out" -- report "$W/r" --markdown --out "$W/r3.html"
expect 4 "takes no value" "report --compare=yes" -- report --compare=yes "$W/r" "$W/r"
expect 4 "--compare" "report with two directories" -- report "$W/r" "$W/r"
[ ! -e "$W/r1.html" ] && [ ! -e "$W/r3.html" ] && ok || bad "a usage error of report left output behind"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
