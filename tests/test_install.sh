#!/usr/bin/env bash
# `make install PREFIX=...` must give a usable library: headers, libfidelis, and a fidelis.pc
# that points at the prefix it was installed to (not the configure-time one). The installed
# headers are the public tier alone (docs/layers.tsv): each compiles by itself in strict C17 with
# nothing but the installed tree, and fidelis.h includes every one of them.
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
# Each installed header alone, and the umbrella names each.
inc="$tmp/inst/include/fidelis"
n=0
for h in "$inc"/*.h; do
  b=$(basename "$h")
  printf '#include <fidelis/%s>\nint main(void) { return 0; }\n' "$b" > "$tmp/h.c"
  cc -std=c17 -Wall -Wextra -Wpedantic -Werror -c "$tmp/h.c" -o "$tmp/h.o" $(pkg-config --cflags fidelis) ||
    { echo "FAIL: the installed <fidelis/$b> does not compile alone"; exit 1; }
  if [ "$b" != fidelis.h ] && ! grep -q "^#include \"$b\"" "$inc/fidelis.h"; then
    echo "FAIL: the installed fidelis.h does not include $b"
    exit 1
  fi
  n=$((n + 1))
done
[ "$n" -ge 2 ] || { echo "FAIL: only $n headers installed"; exit 1; }
echo "3 passed, 0 failed"
