#!/usr/bin/env bash
# Every global symbol that libfidelis.a defines carries the project prefix (fdl_ or FDL_), so a
# program that links the static library can never clash with an internal helper. And the
# library multiplies matrices with its own GEMM only: no BLAS symbol is referenced and the
# shared library needs no BLAS (a BLAS picks its kernel per CPU, which would move the bits).
# The public tier is pinned (docs/layers.tsv, fidelis/fidelis.h): libfidelis.so exports exactly
# the names of tests/exported_symbols.txt, and they are exactly the names declared FDL_API in
# the installed headers (include/fidelis/). A change to the public API edits that list:
#   nm -D --defined-only build/libfidelis.so | awk '$3 ~ /^(fdl_|FDL_)/ {print $3}' | LC_ALL=C sort \
#     > tests/exported_symbols.txt
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
pinned="$root/tests/exported_symbols.txt"
lib="$FDL_BUILD/libfidelis.a"
[ -f "$lib" ] || { echo "skipped: $lib not built"; exit 77; }
fail=0
# AddressSanitizer adds its own globals (__odr_asan.NAME, __asan_*) beside each of ours.
bad=$(nm -g --defined-only "$lib" | awk 'NF == 3 && $3 !~ /^(fdl_|FDL_|__odr_asan|__asan)/ {print $3}' | sort -u)
if [ -n "$bad" ]; then
  echo "FAIL: unprefixed global symbols in libfidelis.a:"
  echo "$bad"
  fail=$((fail + 1))
fi
blas=$(nm -u "$lib" | grep -Ei '\b(cblas_|sgemm|openblas)' | sort -u || true)
if [ -n "$blas" ]; then
  echo "FAIL: libfidelis.a references BLAS symbols:"
  echo "$blas"
  fail=$((fail + 1))
fi
so=$(ls "$FDL_BUILD"/libfidelis.so.* 2>/dev/null | head -1 || true)
[ -n "$so" ] || { echo "skipped: no libfidelis.so in $FDL_BUILD"; exit 77; }
if readelf -d "$so" | grep -Ei 'NEEDED.*(blas|lapack)'; then
  echo "FAIL: $so needs a BLAS"
  fail=$((fail + 1))
fi
exported=$(nm -D --defined-only "$so" | awk '$3 ~ /^(fdl_|FDL_)/ {print $3}' | sort -u)
if ! diff <(echo "$exported") "$pinned" >"$FDL_BUILD/exported_symbols.diff"; then
  echo "FAIL: $so exports other names than tests/exported_symbols.txt (< exported, > pinned):"
  cat "$FDL_BUILD/exported_symbols.diff"
  fail=$((fail + 1))
fi
# The FDL_API declarations of the installed headers, joined into one line: the name before the
# parameter list (a function) or the bounds (an array).
declared=$(cat "$root"/include/fidelis/*.h | tr '\n' ' ' | grep -oE 'FDL_API [^;{]*' |
  sed -E 's/\(.*//; s/\[.*//' | grep -oE '(fdl_|FDL_)[A-Za-z0-9_]+$' | sort -u)
if ! diff <(echo "$declared") "$pinned" >"$FDL_BUILD/declared_symbols.diff"; then
  echo "FAIL: the FDL_API names of include/fidelis/ differ from tests/exported_symbols.txt" \
    "(< declared, > pinned):"
  cat "$FDL_BUILD/declared_symbols.diff"
  fail=$((fail + 1))
fi
if [ "$fail" -ne 0 ]; then
  echo "$((5 - fail)) passed, $fail failed"
  exit 1
fi
echo "5 passed, 0 failed"
