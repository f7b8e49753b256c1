#!/usr/bin/env python3
"""test_pack_kld.py - `fidelis pack --from-llamacpp-kld`, checked against
../shared/spec/LLAMACPP-KLD.md and docs/PANEL.md as written, not against fidelis' C.

The vector is shared/vectors/gguf/kld/base.kld (llama-perplexity -m llama-spm-F32.gguf -f
text.txt -c 128 --chunks 2 --kl-divergence-base): n_ctx 128, n_vocab 32000, 2 chunks of 63 rows.

* the decode: every stored value of every row (2 x 63 x 32000) equals, bit for bit, a numpy
  float32 decode written here from the spec: header floats scale and min_log_prob, uint16 codes
  q, value = float32(scale * q) + min_log_prob (two float32 roundings);
* the panel, per the spec's chunking: chunk c = the file's tokens [c*128, (c+1)*128) with
  position 0 replaced by the tokenizer's BOS (it adds one), scoring window score_from 64, so
  rows are positions 64..126 (63 per chunk, predicting tokens 65..127);
* the panel against `fidelis panel --tokenizer llama-spm-F32.gguf --like-llama-perplexity
  --context 128 --chunks 2` of text.txt: the same tokens, tokenizer block and scoring window,
  so the same suite token hash (what compare's panel gate reads); they differ only in what
  names the source (header.sources and created_by, and the records' domain, document_id and
  window_id: the .kld is not the text);
* the dataset: validate --verify-tensors exits 0; role derived, lossy_codec set with 16 bits
  and the max_logit-16 clamp, runtime.source llama.cpp, logit form, F32;
* llama.cpp's Mean PPL(base) +- as printed in kld.txt, recomputed with tests/llamacpp_kld_stats.py
  from the dataset's stored rows alone, and a self-comparison (same top 100 %);
* --meta overrides and the keys it may not set; --panel-out; usage conflicts (exit 4);
* hostile files, each refused (exit 3) with a message naming what is wrong and nothing left
  behind (no --out, no staging directory): truncated, wrong magic, n_chunk claiming more than the
  file holds, n_ctx below 4, a negative count, n_vocab not the tokenizer's (message names both),
  a NaN scale (message names chunk and row), an infinite min_log_prob, a token outside the
  vocabulary, a first token that is not BOS; an existing --out is refused and left untouched.
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, check, finish, need_cli  # noqa: E402

need_cli()
SHARED = os.environ.get("FDL_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
KLD_DIR = os.path.join(SHARED, "vectors", "gguf", "kld")
BASE = os.path.join(KLD_DIR, "base.kld")
GGUF = os.path.join(KLD_DIR, "llama-spm-F32.gguf")
TEXT = os.path.join(KLD_DIR, "text.txt")
if not all(os.path.exists(p) for p in (BASE, GGUF, TEXT)):
    print("skip: %s is missing" % KLD_DIR)
    sys.exit(77)

import numpy as np  # noqa: E402

import gguf_util  # noqa: E402
import llamacpp_kld_stats as K  # noqa: E402

ENV = dict(os.environ, SOURCE_DATE_EPOCH="1767225600")


def run(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, env=ENV)
    return p.returncode, p.stdout + p.stderr


def read_safetensors(path):
    with open(path, "rb") as f:
        b = f.read()
    (n,) = struct.unpack_from("<Q", b, 0)
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        lo, hi = v["data_offsets"]
        assert v["dtype"] == "F32", v["dtype"]
        out[k] = np.frombuffer(b, "<f4", (hi - lo) // 4, 8 + n + lo).reshape(v["shape"])
    return out


# ---- the spec's format and decode, written here ---------------------------------------------

def parse_kld(data):
    """header, tokens and per-row (scale, min_log_prob, q) of a .kld, as the spec lays it out."""
    assert data[:8] == b"_logits_"
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<iii", data, 8)
    R = n_ctx - 1 - n_ctx // 2
    nv = 2 * ((n_vocab + 1) // 2) + 4
    assert len(data) == 20 + 4 * n_chunk * n_ctx + 2 * n_chunk * R * nv
    tokens = np.frombuffer(data, "<i4", n_chunk * n_ctx, 20).copy()
    off = 20 + 4 * n_chunk * n_ctx
    rows = []
    for c in range(n_chunk):
        for j in range(R):
            at = off + 2 * nv * (c * R + j)
            scale, lo = struct.unpack_from("<ff", data, at)
            q = np.frombuffer(data, "<u2", n_vocab, at + 8)
            rows.append((np.float32(scale), np.float32(lo), q))
    return n_ctx, n_vocab, n_chunk, R, tokens, rows


def decode(scale, lo, q):
    # log p_i = scale * q_i + min_log_prob, float32: the product rounded, then the sum rounded
    prod = (np.float32(scale) * q.astype(np.float32)).astype(np.float32)
    return (prod + np.float32(lo)).astype(np.float32)


with open(BASE, "rb") as f:
    DATA = f.read()
N_CTX, N_VOCAB, N_CHUNK, R, TOKENS, ROWS = parse_kld(DATA)
check((N_CTX, N_VOCAB, N_CHUNK, R) == (128, 32000, 2, 63), "base.kld header: %r" %
      ((N_CTX, N_VOCAB, N_CHUNK, R),))
META = gguf_util.read_metadata(GGUF)
BOS = int(META["tokenizer.ggml.bos_token_id"])
check(META.get("tokenizer.ggml.add_bos_token", True) is True, "the GGUF's tokenizer adds a BOS")
FIRST = N_CTX // 2

tmp = tempfile.mkdtemp(prefix="fdl-pack-kld-")


def leftovers(d=None):
    d = d or tmp
    return [n for n in os.listdir(d) if n.startswith(".fidelis-staging")]


try:
    # ---- the import ---------------------------------------------------------------------------
    ds = os.path.join(tmp, "ds")
    pout = os.path.join(tmp, "kld-panel.jsonl")
    rc, out = run("pack", "--from-llamacpp-kld", BASE, "--tokenizer", GGUF, "--out", ds,
                  "--panel-out", pout)
    check(rc == 0, "import exits 0 (%d): %s" % (rc, out[-2000:]))
    check(not leftovers(), "no staging directory left after a successful import")
    rc, out = run("validate", ds, "--verify-tensors")
    check(rc == 0, "validate --verify-tensors exits 0 (%d): %s" % (rc, out[-2000:]))
    m = json.load(open(os.path.join(ds, "fidelity-dataset.json")))
    cap = json.load(open(os.path.join(ds, "capture", "manifest.json")))
    panel = json.load(open(os.path.join(ds, "panel", "panel.json")))

    # ---- every row, bit for bit -----------------------------------------------------------------
    recs = sorted(cap["records"], key=lambda r: r["index"])
    check(len(recs) == N_CHUNK, "one record per chunk")
    bad = 0
    stored_rows = []
    for c, r in enumerate(recs):
        t = read_safetensors(os.path.join(ds, "capture", r["file"]))
        x = t.get("logits")
        check(x is not None and x.shape == (R, N_VOCAB), "record %d is [63, 32000] logits" % c)
        if x is None:
            continue
        for j in range(R):
            scale, lo, q = ROWS[c * R + j]
            want = decode(scale, lo, q)
            if not np.array_equal(want.view(np.uint32), x[j].view(np.uint32)):
                bad += 1
                if bad <= 3:
                    k = int(np.nonzero(want.view(np.uint32) != x[j].view(np.uint32))[0][0])
                    print("  chunk %d row %d col %d: stored %r, spec %r" % (c, j, k, x[j][k],
                                                                            want[k]))
            stored_rows.append(x[j])
    check(bad == 0, "all %d rows x %d values equal the spec's float32 decode bit for bit (%d "
          "rows differ)" % (N_CHUNK * R, N_VOCAB, bad))
    s0, lo0, _ = ROWS[0]
    check(abs(float(s0) - 0.00024414435) < 1e-12 and abs(float(lo0) + 18.0381947) < 1e-6,
          "row 0 header as base.kld.check.txt says (scale %r, min_log_prob %r)" % (s0, lo0))

    # ---- the panel, per the spec's chunking -------------------------------------------------------
    want_chunks = []
    for c in range(N_CHUNK):
        ch = [int(v) for v in TOKENS[c * N_CTX:(c + 1) * N_CTX]]
        ch[0] = BOS  # llama-perplexity evaluates position 0 of every chunk as BOS
        want_chunks.append(ch)
    check(int(TOKENS[0]) == BOS, "the file's first token is the BOS (add_special tokenization)")
    check(int(TOKENS[N_CTX]) != BOS, "chunk 1 starts with a text token in the file (so the "
          "substitution is exercised)")
    lines = [json.loads(l) for l in open(pout)]
    hdr, body = lines[0]["header"], lines[1:]
    check([l["tokens"] for l in body] == want_chunks,
          "--panel-out records: the file's chunks with BOS at position 0")
    check([l["index"] for l in body] == list(range(N_CHUNK)), "indices 0..n_chunk-1")
    sw = hdr["scoring_window"]
    check(sw["score_from"] == FIRST == 64, "scoring window starts at n_ctx/2 = 64")
    for r in panel["records"]:
        check(r["num_tokens"] == N_CTX and r["prediction_positions"] == N_CTX - 1 - FIRST == 63,
              "panel record %d: 128 tokens, 63 scored (positions 64..126)" % r["index"])
    check(m["panel"]["scoring_window"] == sw, "the dataset carries the panel's scoring window")
    check(m["panel"]["scored_positions_total"] == N_CHUNK * 63, "126 scored positions in all")
    # tokens in the dataset and the suite hash, recomputed from the spec's chunks
    per = [hashlib.sha256(json.dumps(ch, separators=(",", ":")).encode()).hexdigest()
           for ch in want_chunks]
    suite = hashlib.sha256("\n".join(per).encode("ascii")).hexdigest()
    check(m["panel"]["suite_token_hash_sha256"] == suite,
          "suite_token_hash_sha256 is that of the spec's chunks")
    for c, r in enumerate(panel["records"]):
        with open(os.path.join(ds, r["token_file"])) as f:
            check(json.load(f) == want_chunks[c], "dataset token file %d = chunk %d" % (c, c))

    # ---- against `fidelis panel --like-llama-perplexity` of the same text ------------------------
    ppath = os.path.join(tmp, "text-panel.jsonl")
    rc, out = run("panel", "--tokenizer", GGUF, "--text", TEXT, "--like-llama-perplexity",
                  "--context", "128", "--chunks", "2", "--out", ppath)
    check(rc == 0, "fidelis panel exits 0 (%d): %s" % (rc, out[-1000:]))
    if rc == 0:
        tl = [json.loads(l) for l in open(ppath)]
        th, tb = tl[0]["header"], tl[1:]
        check([l["tokens"] for l in tb] == [l["tokens"] for l in body],
              "fidelis panel of text.txt gives the same tokens as the .kld's panel")
        for k in ("schema", "tokenizer", "scoring_window", "context", "stride", "chunks", "bos",
                  "like_llama_perplexity"):
            check(th.get(k) == hdr.get(k), "panel header %s equal (%r vs %r)" %
                  (k, th.get(k), hdr.get(k)))
        check(set(th) == set(hdr), "the two headers have the same keys")
        check(hdr["sources"][0]["name"] == "base.kld" and
              hdr["sources"][0]["sha256"] == hashlib.sha256(DATA).hexdigest() and
              hdr["sources"][0]["bytes"] == len(DATA),
              "the .kld panel names the .kld (name, bytes, sha256) as its source")
        for a, b in zip(tb, body):
            check(set(a) == set(b), "record keys equal")
            check((b["domain"], b["document_id"]) == ("base", "base.kld"),
                  "the .kld panel's records name the .kld (domain base, document base.kld)")
        # the panel file capture would read packs to the same panel identity
        check(m["panel"]["tokenizer"]["id"] == th["tokenizer"]["id"],
              "the dataset's tokenizer id is the panel's")

    # ---- the dataset's disclosures --------------------------------------------------------------
    check(m["dataset"]["role"] == "derived" and m["dataset"]["base_capture"] is not None,
          "role derived, naming its base capture")
    lc = m["capture"]["lossy_codec"]
    check(isinstance(lc, dict) and lc.get("bits") == 16 and "max_logit - 16" in lc.get("clamp", "")
          and "llama" in lc.get("kind", ""), "lossy_codec: 16-bit llama.cpp code, max_logit-16 "
          "clamp: %r" % lc)
    check(m["runtime"]["source"] == "llama.cpp", "runtime.source is llama.cpp")
    check(m["capture"]["form"] == "logit" and m["capture"]["dtype"] == "F32", "logit form, F32")
    check(m["capture"]["vocab_size"] == N_VOCAB, "vocab_size 32000")
    codes = [d["code"] for d in m["disclosures"]]
    check("llamacpp_kld_lossy_log_probabilities" in codes, "a lossy disclosure: %r" % codes)
    check(m["head"]["shape"] == [N_VOCAB, int(META["llama.embedding_length"])],
          "head.shape [vocab, the GGUF's embedding_length]")

    # ---- llama.cpp's printed statistics from the stored rows alone ---------------------------------
    base = np.stack(stored_rows) if stored_rows else np.zeros((0, N_VOCAB), np.float32)
    targets = np.concatenate([TOKENS[c * N_CTX + FIRST + 1:(c + 1) * N_CTX]
                              for c in range(N_CHUNK)])
    if len(base) == len(targets):
        b = K.base_stats(base, targets)
        check("%.6f" % b["ppl_base"] == "2414089.700772" and
              "%.6f" % b["ppl_base_unc"] == "576591.979079",
              "Mean PPL(base) %.6f +- %.6f as kld.txt prints (2414089.700772 +- 576591.979079)" %
              (b["ppl_base"], b["ppl_base_unc"]))
        s = K.kld_stats(base, base, targets)
        check(s["same_top_p"] == 1.0 and abs(s["mean_kld"]) < 1e-3,
              "self-comparison: same top 100%%, KLD ~0 (%g)" % s["mean_kld"])

    # ---- options ------------------------------------------------------------------------------
    rc, out = run("pack", "--help")
    check(rc == 0 and "--from-llamacpp-kld" in out and "--panel-out" in out,
          "pack --help lists --from-llamacpp-kld")
    for args, what in (
        (["--panel", pout], "--panel"),
        (["--tensors", tmp], "--tensors"),
        (["--allow-partial"], "--allow-partial"),
    ):
        rc, out = run("pack", "--from-llamacpp-kld", BASE, "--tokenizer", GGUF,
                      "--out", os.path.join(tmp, "u"), *args)
        check(rc == 4, "--from-llamacpp-kld with %s is a usage error (%d)" % (what, rc))
    rc, out = run("pack", "--from-llamacpp-kld", BASE, "--out", os.path.join(tmp, "u"))
    check(rc == 4 and "--tokenizer" in out, "--from-llamacpp-kld without --tokenizer: exit 4")
    rc, out = run("pack", "--tokenizer", GGUF, "--panel", pout, "--tensors", tmp, "--meta", pout,
                  "--out", os.path.join(tmp, "u"))
    check(rc == 4, "--tokenizer without --from-llamacpp-kld: exit 4 (%d)" % rc)
    check(not os.path.exists(os.path.join(tmp, "u")), "no output from usage errors")

    # existing --out: refused, untouched
    before = sorted(os.listdir(ds))
    rc, out = run("pack", "--from-llamacpp-kld", BASE, "--tokenizer", GGUF, "--out", ds)
    check(rc == 3 and "exists" in out, "an existing --out is refused (%d): %s" % (rc, out[-300:]))
    check(sorted(os.listdir(ds)) == before, "the existing --out is untouched")
    rc, out = run("pack", "--from-llamacpp-kld", BASE, "--tokenizer", GGUF,
                  "--out", os.path.join(tmp, "ds-again"), "--panel-out", pout)
    check(rc == 3 and not os.path.exists(os.path.join(tmp, "ds-again")),
          "an existing --panel-out is refused before any work")

    # --meta: overrides, and what it may not set
    meta = os.path.join(tmp, "meta.json")
    with open(meta, "w") as f:
        json.dump({"weights": {"repository": "ggml-org/llama-spm-F32"},
                   "engine": {"version": "b9999"}, "device": "cpu",
                   "disclosures": [{"code": "test_note", "severity": "info", "detail": "x",
                                    "affects_comparability": False}]}, f)
    d2 = os.path.join(tmp, "ds-meta")
    rc, out = run("pack", "--from-llamacpp-kld", BASE, "--tokenizer", GGUF, "--meta", meta,
                  "--out", d2)
    check(rc == 0, "import with --meta exits 0 (%d): %s" % (rc, out[-1000:]))
    if rc == 0:
        m2 = json.load(open(os.path.join(d2, "fidelity-dataset.json")))
        check(m2["weights"]["repository"] == "ggml-org/llama-spm-F32", "--meta weights.repository")
        check(m2["disclosures"][-1]["code"] == "test_note" and
              "llamacpp_kld_lossy_log_probabilities" in [d["code"] for d in m2["disclosures"]],
              "--meta disclosures appended after the import's own")
        check(m2["capture"]["capture_content_digest"] == m["capture"]["capture_content_digest"],
              "the same stored values whatever the meta says")
    for bad in ({"form": "hidden"}, {"lossy_codec": None}, {"tokenizer": {"id": "x"}},
                {"runtime_source": "native"}):
        with open(meta, "w") as f:
            json.dump(bad, f)
        d3 = os.path.join(tmp, "ds-bad-meta")
        rc, out = run("pack", "--from-llamacpp-kld", BASE, "--tokenizer", GGUF, "--meta", meta,
                      "--out", d3)
        check(rc == 3 and "decided by the .kld" in out and not os.path.exists(d3),
              "--meta %s refused (%d): %s" % (json.dumps(bad), rc, out[-300:]))

    # ---- hostile files ----------------------------------------------------------------------------
    def hostile(label, data, *needles, tokenizer=GGUF):
        sub = tempfile.mkdtemp(dir=tmp, prefix="h-")
        path = os.path.join(sub, "bad.kld")
        with open(path, "wb") as f:
            f.write(data)
        o = os.path.join(sub, "out")
        rc, out = run("pack", "--from-llamacpp-kld", path, "--tokenizer", tokenizer, "--out", o)
        check(rc == 3, "%s: exit 3 (%d): %s" % (label, rc, out[-400:]))
        for n in needles:
            check(n in out, "%s: the message names %r: %s" % (label, n, out[-400:]))
        check(not os.path.exists(o), "%s: no --out left behind" % label)
        check(not leftovers(sub), "%s: no staging directory left behind" % label)

    def with_header(data, n_ctx=None, n_vocab=None, n_chunk=None):
        h = list(struct.unpack_from("<iii", data, 8))
        for i, v in enumerate((n_ctx, n_vocab, n_chunk)):
            if v is not None:
                h[i] = v
        return data[:8] + struct.pack("<iii", *h) + data[20:]

    row0 = 20 + 4 * N_CHUNK * N_CTX
    nv = 2 * ((N_VOCAB + 1) // 2) + 4

    hostile("truncated file", DATA[:-1], str(len(DATA)), str(len(DATA) - 1))
    hostile("shorter than the header", DATA[:12], "20-byte")
    hostile("wrong magic", b"_logitz_" + DATA[8:], "magic")
    hostile("n_chunk claims more than the file holds", with_header(DATA, n_chunk=3), "n_chunk",
            str(len(DATA)))
    hostile("n_chunk claims 2^31-1", with_header(DATA, n_chunk=2**31 - 1), "n_chunk")
    hostile("n_ctx claims 2^31-1", with_header(DATA, n_ctx=2**31 - 1), "n_ctx")
    hostile("n_vocab claims 2^31-1", with_header(DATA, n_vocab=2**31 - 1), "n_vocab")
    hostile("n_ctx below 4", with_header(DATA, n_ctx=3), "n_ctx", "4")
    hostile("negative n_vocab", with_header(DATA, n_vocab=-5), "n_vocab", "-5")
    hostile("n_chunk 0", with_header(DATA, n_chunk=0), "n_chunk")
    hostile("trailing bytes", DATA + b"\0\0", "too many")

    # n_vocab 31999 with a size that fits it: refused against the tokenizer, naming both
    nv2, ctx2, R2 = 2 * ((31999 + 1) // 2) + 4, 8, 8 - 1 - 4
    small = (b"_logits_" + struct.pack("<iii", ctx2, 31999, 1) + TOKENS[:ctx2].tobytes() +
             b"\0" * (2 * R2 * nv2))
    hostile("n_vocab not the tokenizer's", small, "31999", "32000")

    def patch(data, at, raw):
        b = bytearray(data)
        b[at:at + len(raw)] = raw
        return bytes(b)

    at = row0 + 2 * nv * (1 * R + 5)  # chunk 1 row 5
    hostile("NaN scale", patch(DATA, at, struct.pack("<f", float("nan"))), "chunk 1", "row 5",
            "scale")
    hostile("infinite min_log_prob", patch(DATA, at + 4, struct.pack("<f", float("-inf"))),
            "chunk 1", "row 5", "min_log_prob")
    hostile("negative scale", patch(DATA, at, struct.pack("<f", -1.0)), "chunk 1", "row 5")
    hostile("huge scale decodes to infinity", patch(DATA, at, struct.pack("<f", 3e38)), "chunk 1",
            "row 5")
    hostile("token outside the vocabulary", patch(DATA, 20 + 4 * 130, struct.pack("<i", 32000)),
            "32000", "chunk 1")
    hostile("first token not the BOS", patch(DATA, 20, struct.pack("<i", 2)), "BOS")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

finish()
