#!/usr/bin/env bash
# `fidelis tokenize` on a multi-megabyte text with the GPT-2 (byte-level BPE) and Llama-SPM
# (SentencePiece, byte fallback) vocabularies of ../shared/vectors/tokenizer/, side by side with
# a floor written in Python in the same script (bench/tokenize_bench.py says what it is).
# Targets: >= 20 MB/s per core on byte-level BPE; peak RSS <= the vocabulary + 32 MiB, the
# 16 MiB text included ("the vocabulary": the same command's peak on one word).
#
# Usage: bench/run-tokenize.sh BUILD_DIR
# Knobs: FDL_BENCH_TOK_MB (16), FDL_BENCH_TOK_FLOOR_MB (1), FDL_BENCH_REPEATS (3, best of).
set -euo pipefail
build=${1:-build}
cli="$build/fidelis"
[ -x "$cli" ] || { echo "run-tokenize: $cli not built" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
vectors="$here/../../shared/vectors/tokenizer"
[ -d "$vectors" ] || { echo "run-tokenize: $vectors not found (../shared)" >&2; exit 1; }
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
"${FDL_PYTHON:-/usr/bin/python3}" "$here/tokenize_bench.py" "$cli" "$vectors" \
  "${FDL_BENCH_TOK_MB:-16}" "${FDL_BENCH_TOK_FLOOR_MB:-1}" "${FDL_BENCH_REPEATS:-3}"
