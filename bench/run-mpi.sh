#!/usr/bin/env bash
# `mpirun fidelis compare` (docs/SCALE.md) on a hidden pair at Qwen3.5-4B shapes (H 2560,
# V 248320, BF16, --own-heads), 8 contexts of 32 scored positions (256 positions): the program
# built without MPI, then the MPI program at R = 1 and R = 2 ranks on this machine, one thread
# per process (--threads 1), so the ratios measure the decomposition: R=1 vs the plain program
# (target: within 5 %) and R=2 vs R=1 (target: >= 1.8x on two idle cores). The plain program on
# all cores is the last row (what one machine gives without MPI). Three rounds run every
# configuration once each, interleaved; each one's fastest run is printed with its least user
# CPU time (all processes) and the peak RSS of its biggest process. FDL_MPI_BENCH_EXTRA="3 4"
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

# One run of a configuration: appends "WALL USER SYS RSS_KIB" to $work/t-LABEL and keeps the
# output as $work/out-LABEL. GNU time measures mpirun, whose CPU times include its children and
# whose peak RSS is the largest of them.
once() {
  local label=$1 rc=0
  shift
  rm -rf "$work/o"
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" compare "${args[@]}" --out "$work/o" \
    >/dev/null 2>"$work/err" || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
    echo "$label exited $rc:" >&2
    cat "$work/err" >&2
    exit 1
  fi
  tail -n 1 "$work/time" >>"$work/t-$label"
  rm -rf "$work/out-$label"
  mv "$work/o" "$work/out-$label"
}
# "WALL USER RSS_KIB": a label's fastest run, its least user CPU time over the rounds (the
# computation's own cost, which the VM's page faulting, counted as system time, does not move)
# and the fastest run's peak RSS.
best() {
  local user
  user=$(sort -n -k2 "$work/t-$1" | head -n 1 | cut -d' ' -f2)
  sort -n "$work/t-$1" | head -n 1 | awk -v u="$user" '{print $1, u, $4}'
}

# The rounds interleave the configurations (plain, R=1, R=2, ...), so a slow spell of the VM
# (these guests back fresh memory on first touch at a rate that moves from run to run: the
# same plain run spends 1 to 14 s of system time faulting the heads' 2.5 GB) falls on every
# configuration alike rather than on whichever ran during it.
echo "mpirun fidelis compare, hidden pair, $((contexts * 32)) positions, best of 3 interleaved" \
  "rounds ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)):"
one=(--threads 1)
base_args=("${args[@]}")
for round in 1 2 3; do
  args=("${base_args[@]}" "${one[@]}")
  once plain "$cli"
  once r1 "${mpi[@]}" -n 1 "$mcli"
  once r2 "${mpi[@]}" -n 2 "$mcli"
  for n in ${FDL_MPI_BENCH_EXTRA:-}; do once "r$n" "${mpi[@]}" -n "$n" "$mcli"; done
  args=("${base_args[@]}")
  once all "$cli"
done
for k in r1 r2 $(for n in ${FDL_MPI_BENCH_EXTRA:-}; do echo "r$n"; done) all; do
  if ! diff -r "$work/out-plain" "$work/out-$k" >/dev/null; then
    echo "FAIL: the $k output differs from the plain program's" >&2
    exit 1
  fi
done
mib() { awk "BEGIN{printf \"%.0f\", $1/1024}"; }
read -r t0 c0 r0 < <(best plain)
read -r t1 c1 r1 < <(best r1)
read -r t2 c2 r2 < <(best r2)
read -r ta ca ra < <(best all)
row() { printf '  %-18s %6.2f s  user %6.2f s  %6s MiB   %s\n' "$1" "$2" "$3" "$(mib "$4")" "$5"; }
row "plain fidelis" "$t0" "$c0" "$r0" "(1 thread)"
row "mpirun -n 1" "$t1" "$c1" "$r1" "$(awk "BEGIN{printf \"vs plain %.3fx, user %.3fx (target within 5%%)\", $t0/$t1, $c0/$c1}")"
row "mpirun -n 2" "$t2" "$c2" "$r2" "$(awk "BEGIN{printf \"vs R=1 %.2fx (target >= 1.8x)\", $t1/$t2}")"
for n in ${FDL_MPI_BENCH_EXTRA:-}; do
  read -r tn cn rn < <(best "r$n")
  row "mpirun -n $n" "$tn" "$cn" "$rn" "$(awk "BEGIN{printf \"vs R=1 %.2fx (oversubscribed)\", $t1/$tn}")"
done
row "plain, all cores" "$ta" "$ca" "$ra" "$(awk "BEGIN{printf \"(%d threads; R=2 vs this %.2fx)\", $(nproc), $ta/$t2}")"
echo "  outputs byte-identical to the plain program's"
