"""`fidelis tokenize` throughput and peak RSS on a multi-megabyte text, side by side with a
floor written here in Python: the standard library's `re` for the split and a plain rank-ordered
BPE loop with a word cache (byte-level, GPT-2's table), or a plain score-ordered pair-merge loop
(SentencePiece with byte fallback). llama.cpp is not installed here; these floors are what a
user without fidelis would write.

`re` has no \\p{L}/\\p{N}, so the GPT-2 floor spells letters [^\\W\\d_] and numbers \\d, which is
the same split on English and code but not on every script; how far the floor's ids agree with
fidelis' on the slice (the share before the first difference) is printed so the floor is seen
to do the same work. The floor runs on a slice (pure Python is
slow) and its MB/s is that slice's; fidelis runs on the whole text, as a user would.

Usage: tokenize_bench.py FIDELIS VOCAB_DIR MEGABYTES FLOOR_MEGABYTES REPEATS"""
import heapq
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

cli, vdir = sys.argv[1], sys.argv[2]
mb, floor_mb, repeats = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import gguf_util  # noqa: E402

corpus = b"".join(open(os.path.join(vdir, n), "rb").read()
                  for n in ("english.txt", "code.txt", "multilingual.txt"))
text = (corpus * (int(mb * 2**20) // len(corpus) + 1))[: int(mb * 2**20)]
text = text[: len(text.decode("utf-8", "ignore").encode())]  # whole characters only
work = tempfile.mkdtemp(prefix="fdl-bench-tok-")
big = os.path.join(work, "text.txt")
open(big, "wb").write(text)
cut = len(text[: int(floor_mb * 2**20)].decode("utf-8", "ignore").encode())
small = os.path.join(work, "slice.txt")
open(small, "wb").write(text[:cut])


def run_cli(vocab, path, string=None):
    """(best wall seconds, peak RSS bytes, ids) of fidelis tokenize over path (or a string)."""
    best, rss, out = None, 0, b""
    what = ["--string", string] if string is not None else ["--text", path]
    for _ in range(repeats):
        t0 = time.perf_counter()
        # GNU time reports its own child's peak: a child forked from this process would count
        # the pages this script holds (the floor's id lists) until its exec.
        p = subprocess.run(["/usr/bin/time", "-f", "%M", cli, "tokenize", "--tokenizer", vocab]
                           + what + ["--no-special"], capture_output=True)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit("tokenize failed on %s: %s" % (vocab, p.stderr.decode()[-300:]))
        out = p.stdout
        best = dt if best is None else min(best, dt)
        rss = max(rss, int(p.stderr.split()[-1]) * 1024)
    return best, rss, [int(x) for x in out.split()]


def byte_table():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, k = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + k)
            k += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


GPT2 = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


def floor_gpt2(meta, data):
    tokens = meta["tokenizer.ggml.tokens"]
    vocab = {t: i for i, t in enumerate(tokens)}
    ranks = {tuple(m.split(" ", 1)): r for r, m in enumerate(meta["tokenizer.ggml.merges"])}
    table = byte_table()
    cache, ids = {}, []
    for word in GPT2.findall(data.decode()):
        got = cache.get(word)
        if got is None:
            parts = [table[b] for b in word.encode()]
            while len(parts) > 1:
                best = min(range(len(parts) - 1),
                           key=lambda i: ranks.get((parts[i], parts[i + 1]), 1 << 30))
                if (parts[best], parts[best + 1]) not in ranks:
                    break
                parts[best:best + 2] = [parts[best] + parts[best + 1]]
            got = cache[word] = [vocab[p] for p in parts]
        ids.extend(got)
    return ids


def floor_spm(meta, data):
    tokens, scores = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.scores"]
    types = meta["tokenizer.ggml.token_type"]
    vocab = {t: i for i, t in enumerate(tokens) if types[i] == 1}
    s = "\u2581" + data.decode().replace(" ", "\u2581")
    parts = list(s)
    # One pass of highest-score-first pair merges over the whole text (a heap of candidates,
    # stale entries skipped), then unknown pieces to their UTF-8 byte tokens.
    nxt, prv = list(range(1, len(parts) + 1)), list(range(-1, len(parts) - 1))
    heap = []

    def push(i):
        j = nxt[i]
        if j < len(parts):
            m = parts[i] + parts[j]
            if m in vocab:
                heapq.heappush(heap, (-scores[vocab[m]], i, parts[i], parts[j]))

    for i in range(len(parts) - 1):
        push(i)
    while heap:
        _, i, a, b = heapq.heappop(heap)
        j = nxt[i] if parts[i] is not None else len(parts)
        if parts[i] != a or j >= len(parts) or parts[j] != b:
            continue
        parts[i] = a + b
        parts[j] = None
        nxt[i] = nxt[j]
        if nxt[j] < len(parts):
            prv[nxt[j]] = i
        if prv[i] >= 0:
            push(prv[i])
        push(i)
    ids = []
    for p in parts:
        if p is None:
            continue
        if p in vocab:
            ids.append(vocab[p])
        else:
            ids.extend(tokens.index("<0x%02X>" % b) for b in p.encode())
    return ids


def agree(a, b):
    """The share of fidelis' ids before the first place the floor's differ (1.0: identical)."""
    n = min(len(a), len(b))
    k = next((i for i in range(n) if a[i] != b[i]), n)
    return 1.0 if a == b else k / max(len(a), 1)


rows = []
for name, floor in (("gpt-2", floor_gpt2), ("llama-spm", floor_spm)):
    vocab = os.path.join(vdir, "ggml-vocab-%s.gguf" % name)
    meta = gguf_util.read_metadata(vocab)
    t, rss, _ = run_cli(vocab, big)
    # "the vocabulary": the peak of the same command on one word (program, libraries, the
    # loaded vocabulary and its tables)
    _, loaded, _ = run_cli(vocab, None, "hello")
    ts, _, ids_small = run_cli(vocab, small)
    t0 = time.perf_counter()
    fl = floor(meta, text[:cut])
    tf = time.perf_counter() - t0
    rows.append((name, len(text) / t / 2**20, cut / ts / 2**20, cut / tf / 2**20, rss, loaded,
                 agree(ids_small, fl)))
print("text: %.1f MiB (english, code, multilingual corpora repeated); floor slice %.2f MiB; "
      "best of %d; one thread (tokenize is single-threaded)" % (len(text) / 2**20, cut / 2**20,
                                                                 repeats))
print("%-10s %12s %14s %14s %8s %10s %11s %8s" % ("vocab", "fidelis MB/s", "fidelis slice",
                                                  "python floor", "ratio", "RSS MiB",
                                                  "loaded MiB", "agree"))
ok = True
for name, full, sl, fl, rss, vb, ag in rows:
    print("%-10s %12.1f %14.1f %14.2f %7.0fx %10.1f %11.1f %7.1f%%" % (
        name, full, sl, fl, sl / fl, rss / 2**20, vb / 2**20, 100 * ag))
    if name == "gpt-2" and full < 20:
        ok = False
        print("  below the target: 20 MB/s per core on byte-level BPE")
    if rss > vb + 32 * 2**20:
        ok = False
        print("  above the target: peak RSS <= the loaded vocabulary + 32 MiB (the text included)")
os.unlink(big)
os.unlink(small)
os.rmdir(work)
sys.exit(0 if ok else 1)
