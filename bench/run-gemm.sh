#!/usr/bin/env bash
# GEMM benchmark, measured side by side in one run: fidelis' own GEMM (contract fdl-gemm-1,
# reading BF16 B as stored) against OpenBLAS sgemm on the float32 widening of the same B, at the
# head-replay shapes: M positions x K hidden against an lm_head of N = 248320 rows.
# For each shape: fidelis (auto ISA), fidelis --isa avx2 (when the CPU has AVX2), and OpenBLAS
# with OPENBLAS_CORETYPE unset, SkylakeX and Haswell (read when the library loads, hence one
# process each). One process at a time: B is 2.5 GB as BF16 at K = 5120, and 5 GB as float32.
# Every process does one untimed warm-up call before its timed ones.
# Usage: bench/run-gemm.sh BUILD_DIR
#   env: FDL_BENCH_GEMM_N (default 248320; shrink for a quick run), FDL_BENCH_GEMM_M
#   ("64 128 256"), FDL_BENCH_GEMM_K ("2560 5120"), FDL_BENCH_GEMM_TYPE (bf16), FDL_BENCH_GEMM_REPS
#   (timed calls after the warm-up; default 3, or 2 above 100 GFLOP per call)
# Expect +-10% from run to run on a shared virtual machine (seconds= is the best timed call;
# cpu_util= below ~0.95 in the raw lines means another process took a core).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
bin="$build/bench/bench_gemm"
N=${FDL_BENCH_GEMM_N:-248320}
MS=${FDL_BENCH_GEMM_M:-64 128 256}
KS=${FDL_BENCH_GEMM_K:-2560 5120}
TYPE=${FDL_BENCH_GEMM_TYPE:-bf16}
th=$(nproc)
get() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
g() { local v; v=$(get "$1" "$2"); echo "${v:--}"; } # "-" for a run that was not made
has_avx2=0
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo && has_avx2=1
failed=0

# fidelis runs never call OpenBLAS (linked into this program only); keep its pool at one thread.
fid() { OPENBLAS_NUM_THREADS=1 "$bin" fidelis --threads "$th" "$@"; }
ob() {
  local core=$1
  shift
  if [ "$core" = default ]; then
    env -u OPENBLAS_CORETYPE "$bin" openblas --threads "$th" "$@"
  else
    OPENBLAS_CORETYPE=$core "$bin" openblas --threads "$th" "$@"
  fi
}

echo "-- $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), B $TYPE," \
  "N $N, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "-- OpenBLAS environment: $(env | grep '^OPENBLAS_' | sort | tr '\n' ' ')(OPENBLAS_CORETYPE" \
  "is set per run below)"
echo "-- the contract, bit for bit against fdl_gemm_dot_ref (small odd shape, every kernel)"
isas="scalar avx512"
[ $has_avx2 = 1 ] && isas="scalar avx2 avx512"
for isa in $isas; do
  for t in bf16 f16 f32; do
    if ! r=$(fid --m 67 --n 1003 --k 517 --type "$t" --isa "$isa" --reps 1 --check 2>&1); then
      if [[ $r == *"cannot run on this CPU"* ]]; then continue; fi
      echo "FAILED: $isa $t: $r"
      failed=1
      continue
    fi
    printf '%s/%s: %s  ' "$(get isa "$r")" "$t" "$(get check "$r")"
  done
done
echo

declare -a rows rss_rows
t_start=$(date +%s)
for M in $MS; do
  for K in $KS; do
    reps=${FDL_BENCH_GEMM_REPS:-$(awk -v m="$M" -v n="$N" -v k="$K" 'BEGIN{print (2*m*n*k > 1e11) ? 2 : 3}')}
    shape=(--m "$M" --n "$N" --k "$K" --type "$TYPE" --reps "$reps")
    echo "-- M $M, K $K, N $N, $TYPE, reps $reps"
    f=$(fid "${shape[@]}" --check) || { echo "FAILED: $f"; failed=1; }
    echo "fidelis:           $f"
    f2=""
    if [ $has_avx2 = 1 ]; then
      f2=$(fid "${shape[@]}" --isa avx2) || { echo "FAILED: $f2"; failed=1; }
      echo "fidelis avx2:      $f2"
      if [ "$(get checksum "$f")" != "$(get checksum "$f2")" ]; then
        echo "FAILED: the avx2 and $(get isa "$f") kernels gave different bits"
        failed=1
      fi
    fi
    o0=$(ob default "${shape[@]}")
    echo "openblas (unset):  $o0"
    o1=$(ob SkylakeX "${shape[@]}")
    echo "openblas SkylakeX: $o1"
    o2=$(ob Haswell "${shape[@]}")
    echo "openblas Haswell:  $o2"
    rows+=("$(awk -v s="${M}x${K}x${N}" -v f="$(g gflops "$f")" -v f2="$(g gflops "$f2")" \
      -v a="$(g gflops "$o0")" -v ca="$(g core "$o0")" -v b="$(g gflops "$o1")" \
      -v c="$(g gflops "$o2")" -v cf="$(g checksum "$f")" -v c0="$(g checksum "$o0")" \
      -v c1="$(g checksum "$o1")" -v c2="$(g checksum "$o2")" 'BEGIN{
        best = a; if (b > best) best = b; if (c > best) best = c;
        d = 0; split(c0 " " c1 " " c2, cs, " ");
        for (i = 1; i <= 3; i++) { e = (cs[i] - cf) / (cf == 0 ? 1 : cf); e = e < 0 ? -e : e; if (e > d) d = e }
        printf "%-18s %8s %8s %8s %-12s %8s %8s %7.2f %7.2f %10.1e", s, f, f2, a, "(" ca ")", b, c,
          f / best, f / c, d }')")
    rss_rows+=("$(printf '%-18s %8s %8s %8s %8s %8s' "${M}x${K}x${N}" "$(g peak_rss_mib "$f")" \
      "$(g peak_rss_mib "$f2")" "$(g peak_rss_mib "$o0")" "$(g peak_rss_mib "$o1")" \
      "$(g peak_rss_mib "$o2")")")
  done
done

echo "-- GFLOP/s (2 M N K / best timed call), $th threads; ratios > 1: fidelis faster"
printf '%-18s %8s %8s %8s %-12s %8s %8s %7s %7s %10s\n' "MxKxN" fidelis "f-avx2" "ob-unset" \
  "(core)" "ob-SkyX" "ob-Hasw" "f/best" "f/Hasw" "cs-reldiff"
for r in "${rows[@]}"; do echo "$r"; done
echo "-- peak RSS, MiB (fidelis holds B as stored; OpenBLAS its float32 copy)"
printf '%-18s %8s %8s %8s %8s %8s\n' "MxKxN" fidelis "f-avx2" "ob-unset" "ob-SkyX" "ob-Hasw"
for r in "${rss_rows[@]}"; do echo "$r"; done
echo "(cs-reldiff: largest relative difference of the OpenBLAS checksums from fidelis'; a sanity" \
  "check that both computed the same product. $(($(date +%s) - t_start)) s," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg))"
exit $failed
