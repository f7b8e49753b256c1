#!/usr/bin/env bash
# Every global symbol that libfidelis.a defines carries the project prefix (fdl_ or FDL_), so a
# program that links the static library can never clash with an internal helper. And the
# library multiplies matrices with its own GEMM only: no BLAS symbol is referenced and the
# shared library needs no BLAS (a BLAS picks its kernel per CPU, which would move the bits).
set -euo pipefail
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
if [ "$fail" -ne 0 ]; then
  echo "$((3 - fail)) passed, $fail failed"
  exit 1
fi
echo "3 passed, 0 failed"
