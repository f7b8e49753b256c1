#!/usr/bin/env bash
# `mpirun fidelis compare` (docs/SCALE.md) on a hidden pair at Qwen3.5-4B shapes (H 2560,
# V 248320, BF16, --own-heads), 8 contexts of 32 scored positions (256 positions): the program
# built without MPI, then the MPI program at R = 1 and R = 2 ranks on this machine, one thread
# per process (--threads 1), so the ratios measure the decomposition: R=1 vs the plain program
# (target: within 5 %) and R=2 vs R=1 (target: >= 1.8x on two idle cores). The plain program on
# all cores is the last row (what one machine gives without MPI). Each runs three times; the
# best wall time and the peak RSS of the biggest process are printed. FDL_MPI_BENCH_EXTRA="3 4"
# adds oversubscribed runs. Every output is checked byte-identical to the plain program's.
# Usage: bench/run-mpi.sh BUILD_DIR (the MPI program is taken from $FDL_MPI_BUILD, default
# build-mpi; `make bench` builds it).
set -euo pipefail
build=${1:-build}
mbuild=${FDL_MPI_BUILD:-build-mpi}
cli="$build/fidelis"
mcli="$mbuild/fidelis"
if ! command -v mpirun >/dev/null || [ ! -x "$mcli" ]; then
  echo "skipped: no mpirun or no $mcli (make build-mpi)"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Open MPI as root, in a container, more ranks than cores: for these runs only.
mpi=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl=self,vader
  mpirun --allow-run-as-root --oversubscribe --bind-to none)
contexts=${FDL_MPI_BENCH_CONTEXTS:-8}
export SOURCE_DATE_EPOCH=1767225600 # one created_utc, so the outputs can be compared byte for byte
"$cli" synth --out "$work/hidden" --vocab 248320 --hidden 2560 --contexts "$contexts" \
  --tokens-per-context 33 >/dev/null
args=("$work/hidden/reference" "$work/hidden/candidate" --own-heads --quiet)
one=(--threads 1)

# Prints "SECONDS RSS_KIB" of the best of three runs of the command; the output is kept as
# $work/out-LABEL. GNU time measures mpirun, whose peak RSS is the largest of its children.
best() {
  local label=$1 t rss best_t="" best_rss="" i rc
  shift
  for i in 1 2 3; do
    rm -rf "$work/o"
    rc=0
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" compare "${args[@]}" "${threads[@]}" --out "$work/o" \
      >/dev/null 2>"$work/err" || rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
      echo "$label exited $rc:" >&2
      cat "$work/err" >&2
      return 1
    fi
    read -r t rss < <(tail -n 1 "$work/time")
    if [ -z "$best_t" ] || awk "BEGIN{exit !($t < $best_t)}"; then best_t=$t best_rss=$rss; fi
  done
  rm -rf "$work/out-$label"
  mv "$work/o" "$work/out-$label"
  echo "$best_t $best_rss"
}

echo "mpirun fidelis compare, hidden pair, $((contexts * 32)) positions, best of 3 ($(nproc) cores," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)):"
threads=("${one[@]}")
read -r t0 r0 < <(best plain "$cli")
read -r t1 r1 < <(best r1 "${mpi[@]}" -n 1 "$mcli")
read -r t2 r2 < <(best r2 "${mpi[@]}" -n 2 "$mcli")
for k in r1 r2; do
  if ! diff -r "$work/out-plain" "$work/out-$k" >/dev/null; then
    echo "FAIL: the $k output differs from the plain program's" >&2
    exit 1
  fi
done
mib() { awk "BEGIN{printf \"%.0f\", $1/1024}"; }
printf '  plain fidelis      %6.2f s  %6s MiB   (1 thread)\n' "$t0" "$(mib "$r0")"
printf '  mpirun -n 1        %6.2f s  %6s MiB   vs plain %.3fx (target within 5%%)\n' "$t1" \
  "$(mib "$r1")" "$(awk "BEGIN{print $t0/$t1}")"
printf '  mpirun -n 2        %6.2f s  %6s MiB   vs R=1 %.2fx (target >= 1.8x)\n' "$t2" \
  "$(mib "$r2")" "$(awk "BEGIN{print $t1/$t2}")"
# Oversubscribed runs on request (FDL_MPI_BENCH_EXTRA="3 4"): more ranks than cores.
for n in ${FDL_MPI_BENCH_EXTRA:-}; do
  read -r tn rn < <(best "r$n" "${mpi[@]}" -n "$n" "$mcli")
  diff -r "$work/out-plain" "$work/out-r$n" >/dev/null || {
    echo "FAIL: the r$n output differs from the plain program's" >&2
    exit 1
  }
  printf '  mpirun -n %-2s       %6.2f s  %6s MiB   vs R=1 %.2fx (oversubscribed)\n' "$n" "$tn" \
    "$(mib "$rn")" "$(awk "BEGIN{print $t1/$tn}")"
done
threads=()
read -r ta ra < <(best all "$cli")
printf '  plain, all cores   %6.2f s  %6s MiB   (%d threads; R=2 vs this %.2fx)\n' "$ta" \
  "$(mib "$ra")" "$(nproc)" "$(awk "BEGIN{print $ta/$t2}")"
echo "  outputs byte-identical to the plain program's"
