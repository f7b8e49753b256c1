#!/usr/bin/env bash
# `make install PREFIX=...` must give a usable library: headers, libfidelis, and a fidelis.pc
# that points at the prefix it was installed to (not the configure-time one).
set -euo pipefail
# Not registered in the sanitizer build (tests/CMakeLists.txt): a sanitized library cannot be
# linked by a plain program.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$FDL_BUILD" --prefix "$tmp/inst" >/dev/null
cat > "$tmp/t.c" <<'C'
#include <fidelis/fidelis.h>
#include <stdio.h>
int main(void) {
  char s[FDL_FLOAT_REPR_MAX];
  fdl_float_repr(1e-05, s);
  printf("%s %s\n", fdl_version(), s);
  return 0;
}
C
export PKG_CONFIG_PATH="$tmp/inst/lib/pkgconfig"
flags=$(pkg-config --cflags --libs fidelis)
cc "$tmp/t.c" $flags -o "$tmp/t"
out=$(LD_LIBRARY_PATH="$tmp/inst/lib" "$tmp/t")
[ "${out#* }" = "1e-05" ] || { echo "unexpected output: $out"; exit 1; }
[ -x "$tmp/inst/bin/fidelis" ] || { echo "fidelis binary not installed"; exit 1; }
"$tmp/inst/bin/fidelis" --version >/dev/null
echo "1 passed, 0 failed"
