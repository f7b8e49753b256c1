#!/usr/bin/env bash
# Every global symbol that libfidelis.a defines carries the project prefix (fdl_ or FDL_), so a
# program that links the static library can never clash with an internal helper.
set -euo pipefail
lib="$FDL_BUILD/libfidelis.a"
[ -f "$lib" ] || { echo "skipped: $lib not built"; exit 77; }
# AddressSanitizer adds its own globals (__odr_asan.NAME, __asan_*) beside each of ours.
bad=$(nm -g --defined-only "$lib" | awk 'NF == 3 && $3 !~ /^(fdl_|FDL_|__odr_asan|__asan)/ {print $3}' | sort -u)
if [ -n "$bad" ]; then
  echo "unprefixed global symbols in libfidelis.a:"
  echo "$bad"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed"
