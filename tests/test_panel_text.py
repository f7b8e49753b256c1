"""test_panel_text.py - `fidelis panel` cuts texts into pack panels, checked against the rules
as written (the spec and `fidelis panel --help`), not against fidelis' code.

The tokenizers are written here: byte-level BPE with 256 single-byte tokens in GPT-2
byte-to-unicode form and no merges, so a text's ids are its UTF-8 bytes, plus <|bos|> = 256.
Three configs: `bos` (tokenizer_config add_bos_token true), `nobos` (a bos_token named but not
added), `nobostok` (no BOS at all). `fidelis tokenize` is checked to agree first.

* --like-llama-perplexity -c N (/work/shared/spec/LLAMACPP-KLD.md): the text tokenized with
  add_special (BOS first when the tokenizer adds one), cut into n_chunk = floor(len / N)
  consecutive chunks [c*N, (c+1)*N); position 0 of every chunk REPLACED by BOS when add_bos
  (so the text token there is dropped, not shifted); scored positions N/2..N-2, i.e. header
  scoring_window.score_from == N/2 (floor, also for odd N); without a BOS the chunks are the
  bare text; --chunks K takes min(K, n_chunk).
* --context/--stride windows (help): records of N tokens, BOS included (auto: when the
  tokenizer adds one; always; never); window starts 0, S, 2S, ... in text tokens, default S =
  the text tokens of one record; only windows that fit whole; --score-from M in the header.
* --chunks K per text, --domain per --text (default: the file name without its extension),
  two texts -> records of the first then the second, indices 0..n-1.
* the header: the tokenizer files' names, bytes and sha256 = hashlib over the files; sources'
  name, bytes, sha256 and token count.
* the text is read as text ('<|bos|>', NUL, CR LF are bytes); a GGUF vocabulary as --tokenizer
  (the header names the .gguf with its bytes and sha256).
* refusals: an existing --out (exit 3, untouched), --stride with --like-llama-perplexity (4),
  a text too short for one record (nonzero, a message, no output; boundary lengths accepted),
  --bos always without a BOS token (nonzero, a message), a GGUF whose add_bos_token BOS id
  is not a token (refused, not a panel silently without BOS), text not UTF-8 (the message names byte
  offset 3), a missing --text (4), --domain counts that do not match, --score-from leaving no
  scored row, more than 16 texts.
* end to end with `fidelis model init`'s tiny model (its own tokenizer.json): panel -> capture
  -> validate exit 0; the dataset's panel.tokenizer is the panel header's, not the
  "unknown-tokenizer-vocab-N" placeholder; with --like-llama-perplexity (a copy whose
  tokenizer_config adds BOS) the dataset scores n_chunk * (N - 1 - N/2) positions.
"""
import hashlib
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, check, finish, need_cli  # noqa: E402

BOS = 256


def run(*args):
    """(returncode, stdout, stderr) of `fidelis ARGS`; a hang or a signal is reported as such."""
    try:
        p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None, "", "(killed after 60 s)"
    return p.returncode, p.stdout, p.stderr


def short(s):
    s = s.strip().replace("\n", " | ")
    return s if len(s) < 300 else s[:300] + "..."


def byte_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def tokenizer_json():
    b2u = byte_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    vocab["<|bos|>"] = BOS
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": BOS, "content": "<|bos|>", "single_word": False,
                              "lstrip": False, "rstrip": False, "normalized": False,
                              "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                              "trim_offsets": True, "use_regex": False},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                        "use_regex": False},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": []}}


def make_tokenizer(d, config):
    os.makedirs(d)
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tokenizer_json(), f)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    return d


def vocab_gguf(path, add_bos, bos_id=BOS):
    """A GGUF holding only the same byte-level vocabulary (gpt2 model, gpt-2 pre-tokenizer)."""
    def st(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b

    def kv(key, typ, val):
        return st(key) + struct.pack("<I", typ) + val
    b2u = byte_to_unicode()
    toks = [b2u[b] for b in range(256)] + ["<|bos|>"]
    kvs = [kv("general.architecture", 8, st("llama")),
           kv("tokenizer.ggml.model", 8, st("gpt2")),
           kv("tokenizer.ggml.pre", 8, st("gpt-2")),
           kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, len(toks))
              + b"".join(st(x) for x in toks)),
           kv("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, len(toks))
              + struct.pack("<%di" % len(toks), *([1] * 256 + [3]))),
           kv("tokenizer.ggml.merges", 9, struct.pack("<IQ", 8, 0)),
           kv("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", bos_id)),
           kv("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", BOS)),
           kv("tokenizer.ggml.add_bos_token", 7, struct.pack("<B", 1 if add_bos else 0))]
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))
    return path


def file_entry(path):
    data = open(path, "rb").read()
    return {"name": os.path.basename(path), "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest()}


def load_panel(path):
    """(header, [records]) of a panel file, or (None, None) when it does not parse."""
    try:
        lines = [json.loads(x) for x in open(path, encoding="utf-8") if x.strip()]
    except (OSError, ValueError):
        return None, None
    if not lines or "header" not in lines[0]:
        return None, None
    return lines[0]["header"], lines[1:]


def text(seed, nbytes):
    """Deterministic text of about nbytes UTF-8 bytes, multi-byte characters included."""
    r = random.Random(seed)
    words = ["the", "garden", "water", "stone", "river", "light", "north", "wall", "tomato",
             "caf\u00e9", "\u00fcn\u00efcode", "\u65e5\u672c", "na\u00efve", "\U0001f600", "42;"]
    out = []
    n = 0
    while n < nbytes:
        w = r.choice(words)
        out.append(w)
        n += len(w.encode()) + 1
    return " ".join(out) + "\n"


class Panel:
    """Runs `fidelis panel` into a fresh output file and loads what it wrote."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.n = 0

    def __call__(self, *args):
        self.n += 1
        out = os.path.join(self.tmp, "panel-%03d.jsonl" % self.n)
        rc, so, se = run("panel", *args, "--out", out)
        h, recs = load_panel(out) if os.path.exists(out) else (None, None)
        return rc, so + se, out, h, recs


def expect_llama(ids, n, add_bos, chunks=None):
    """llama-perplexity's chunks per LLAMACPP-KLD.md: tokens = tokenize(text, add_special),
    n_chunk = len // n (capped by --chunks), chunk c = tokens[c*n:(c+1)*n] with position 0
    replaced by BOS when add_bos."""
    toks = ([BOS] if add_bos else []) + list(ids)
    k = len(toks) // n
    if chunks is not None:
        k = min(k, chunks)
    out = []
    for c in range(k):
        ch = toks[c * n:(c + 1) * n]
        if add_bos:
            ch[0] = BOS
        out.append(ch)
    return out


def expect_windows(ids, n, bos, stride=None, chunks=None):
    """The help's rule: records of n tokens, BOS included; w = text tokens per record; window
    starts 0, S, 2S, ... (S defaults to w); only whole windows; at most `chunks` of them."""
    w = n - 1 if bos else n
    s = w if stride is None else stride
    out = []
    off = 0
    while off + w <= len(ids) and (chunks is None or len(out) < chunks):
        out.append(([BOS] if bos else []) + list(ids[off:off + w]))
        off += s
    return out


def check_records(what, recs, want, domain, doc_prefix_ok=True, first_index=0):
    if not check(recs is not None, f"{what}: the panel parses"):
        return
    check(len(recs) == len(want), f"{what}: {len(recs)} records (want {len(want)})")
    bad = [i for i, (r, w) in enumerate(zip(recs, want)) if r.get("tokens") != w]
    check(not bad, f"{what}: every record's tokens are the expected ones"
          + (f" (first differing record {bad[0]}: got {recs[bad[0]].get('tokens')[:12]}..., "
             f"want {want[bad[0]][:12]}...)" if bad else ""))
    check([r.get("index") for r in recs] == list(range(first_index, first_index + len(recs))),
          f"{what}: indices {first_index}..{first_index + len(recs) - 1} in order")
    check(all(r.get("domain") == domain for r in recs),
          f"{what}: every record's domain is {domain!r}: "
          f"{sorted(set(str(r.get('domain')) for r in recs))}")
    check(all(isinstance(r.get("document_id"), str) and r["document_id"] for r in recs)
          and all(isinstance(r.get("window_id"), str) and r["window_id"] for r in recs),
          f"{what}: every record has a document_id and a window_id")


def main():
    need_cli()
    tmp = tempfile.TemporaryDirectory(prefix="fdl-panel-text-")
    t = tmp.name
    P = lambda *a: os.path.join(t, *a)  # noqa: E731
    panel = Panel(t)

    tok_bos = make_tokenizer(P("bos"), {"add_bos_token": True, "bos_token": "<|bos|>"})
    tok_nobos = make_tokenizer(P("nobos"), {"bos_token": "<|bos|>"})
    tok_none = make_tokenizer(P("nobostok"), {})

    story = P("story.txt")
    with open(story, "w", encoding="utf-8") as f:
        f.write(text(1, 1500))
    ids = list(open(story, "rb").read())
    T = len(ids)

    # ---- the tokenizers do what this test assumes ---------------------------------------------
    rc, so, se = run("tokenize", "--tokenizer", tok_bos, "--text", story, "--no-special", "--json")
    got = None
    try:
        got = json.loads(so)["ids"]
    except (ValueError, KeyError):
        pass
    if not check(rc == 0 and got == ids,
                 f"tokenize --no-special: story.txt's ids are its {T} UTF-8 bytes: "
                 f"{rc} {short(se)}"):
        finish()
    for d, want in ((tok_bos, [BOS]), (tok_nobos, []), (tok_none, [])):
        rc, so, se = run("tokenize", "--tokenizer", d, "--string", "ab", "--json")
        got = None
        try:
            got = json.loads(so)["ids"]
        except (ValueError, KeyError):
            pass
        if not check(rc == 0 and got == want + [97, 98],
                     f"tokenize {os.path.basename(d)}: 'ab' with special tokens is "
                     f"{want + [97, 98]}: {rc} {got} {short(se)}"):
            finish()

    tok_files = [file_entry(P("bos", "tokenizer.json")),
                 file_entry(P("bos", "tokenizer_config.json"))]
    story_src = dict(file_entry(story), tokens=T)

    def check_header(what, h, context, score_from, llama, files, sources):
        if not check(isinstance(h, dict), f"{what}: the first line is {{\"header\": {{...}}}}"):
            return
        check(h.get("context") == context,
              f"{what}: header context {h.get('context')} == {context}")
        sw = h.get("scoring_window") or {}
        check(sw.get("score_from") == score_from,
              f"{what}: header scoring_window.score_from {sw.get('score_from')} == {score_from}")
        check(h.get("like_llama_perplexity") is llama,
              f"{what}: header like_llama_perplexity {h.get('like_llama_perplexity')} is {llama}")
        hf = (h.get("tokenizer") or {}).get("files")
        got = sorted(({k: x.get(k) for k in ("name", "bytes", "sha256")} for x in hf or []),
                     key=lambda x: str(x["name"]))
        check(got == sorted(files, key=lambda x: x["name"]),
              f"{what}: header tokenizer files == hashlib over the files: {got}")
        hs = h.get("sources") or []
        got = [{k: x.get(k) for k in ("name", "bytes", "sha256", "tokens")} for x in hs]
        want = [{k: x[k] for k in ("name", "bytes", "sha256", "tokens")} for x in sources]
        check(got == want, f"{what}: header sources {got} == {want}")

    # ---- --like-llama-perplexity -------------------------------------------------------------
    for n in (64, 33, 17):
        what = f"llama-perplexity -c {n}, BOS tokenizer"
        rc, out, path, h, recs = panel("--tokenizer", tok_bos, "--text", story, "--context",
                                       str(n), "--like-llama-perplexity")
        if check(rc == 0, f"{what}: exit {rc}: {short(out)}"):
            want = expect_llama(ids, n, True)
            check(len(want) == (T + 1) // n, f"{what}: (self-check) floor((T+1)/N) chunks")
            check_records(what, recs, want, "story")
            check_header(what, h, n, n // 2, True, tok_files, [story_src])
            # the replaced text token is dropped, not shifted: record 1 starts at text token N
            if recs and len(recs) > 1:
                check(recs[1]["tokens"][1:] == ids[n:2 * n - 1],
                      f"{what}: record 1 = BOS + text tokens {n}..{2 * n - 2} (token {n - 1} "
                      f"replaced by BOS, not shifted)")
    n = 64
    what = "llama-perplexity -c 64 --chunks 5"
    rc, out, path, h, recs = panel("--tokenizer", tok_bos, "--text", story, "--context", "64",
                                   "--like-llama-perplexity", "--chunks", "5")
    if check(rc == 0, f"{what}: exit {rc}: {short(out)}"):
        check_records(what, recs, expect_llama(ids, 64, True, chunks=5), "story")
    what = "llama-perplexity -c 64, tokenizer without BOS"
    rc, out, path, h, recs = panel("--tokenizer", tok_nobos, "--text", story, "--context", "64",
                                   "--like-llama-perplexity")
    if check(rc == 0, f"{what}: exit {rc}: {short(out)}"):
        check_records(what, recs, expect_llama(ids, 64, False), "story")
        nf = [file_entry(P("nobos", "tokenizer.json")),
              file_entry(P("nobos", "tokenizer_config.json"))]
        check_header(what, h, 64, 32, True, nf, [story_src])
    # boundaries: with BOS, N-1 text tokens make one chunk, N-2 none
    for tlen, ok in ((63, True), (62, False)):
        f = P("len-%d.txt" % tlen)
        with open(f, "wb") as fh:
            fh.write((b"abcdefghij" * 10)[:tlen])
        what = f"llama-perplexity -c 64, BOS, a text of {tlen} tokens"
        rc, out, path, h, recs = panel("--tokenizer", tok_bos, "--text", f, "--context", "64",
                                       "--like-llama-perplexity")
        if ok:
            if check(rc == 0, f"{what}: one chunk: exit {rc}: {short(out)}"):
                check_records(what, recs, expect_llama(list(open(f, "rb").read()), 64, True),
                              "len-%d" % tlen)
        else:
            check(rc is not None and rc > 0 and not os.path.exists(path),
                  f"{what}: refused, no output: exit {rc}: {short(out)}")
            check(out.strip() != "", f"{what}: with a message")

    # ---- --context / --stride windows ---------------------------------------------------------
    for tk, bos_flag, bos, label in ((tok_bos, None, True, "BOS tokenizer, --bos auto"),
                                     (tok_nobos, None, False, "no-BOS tokenizer, --bos auto"),
                                     (tok_nobos, "always", True, "no-BOS tokenizer, --bos always"),
                                     (tok_bos, "never", False, "BOS tokenizer, --bos never")):
        for n, stride, chunks in ((64, None, None), (48, 17, None), (32, 100, None),
                                  (40, 7, 9), (64, 64, None)):
            extra = []
            if bos_flag:
                extra += ["--bos", bos_flag]
            if stride is not None:
                extra += ["--stride", str(stride)]
            if chunks is not None:
                extra += ["--chunks", str(chunks)]
            what = f"windows {label} --context {n}" + (f" --stride {stride}" if stride else "") \
                + (f" --chunks {chunks}" if chunks else "")
            rc, out, path, h, recs = panel("--tokenizer", tk, "--text", story, "--context",
                                           str(n), *extra)
            if check(rc == 0, f"{what}: exit {rc}: {short(out)}"):
                want = expect_windows(ids, n, bos, stride, chunks)
                check_records(what, recs, want, "story")
                if h is not None:
                    sw = h.get("scoring_window") or {}
                    check(sw.get("score_from") == 0 and h.get("like_llama_perplexity") is False,
                          f"{what}: header score_from 0, like_llama_perplexity false: "
                          f"{sw.get('score_from')} {h.get('like_llama_perplexity')}")
    what = "windows --score-from 10"
    rc, out, path, h, recs = panel("--tokenizer", tok_bos, "--text", story, "--context", "32",
                                   "--score-from", "10")
    if check(rc == 0, f"{what}: exit {rc}: {short(out)}"):
        check_records(what, recs, expect_windows(ids, 32, True), "story")
        check(h is not None and (h.get("scoring_window") or {}).get("score_from") == 10,
              f"{what}: header score_from 10")
    # boundaries: exactly one record's worth of text
    for tk, bos, tlen, ok in ((tok_bos, True, 31, True), (tok_bos, True, 30, False),
                              (tok_nobos, False, 32, True), (tok_nobos, False, 31, False)):
        f = P("w-%s-%d.txt" % (os.path.basename(tk), tlen))
        with open(f, "wb") as fh:
            fh.write(b"x" * tlen)
        what = f"windows --context 32, {os.path.basename(tk)}, a text of {tlen} tokens"
        rc, out, path, h, recs = panel("--tokenizer", tk, "--text", f, "--context", "32")
        if ok:
            if check(rc == 0, f"{what}: one record: exit {rc}: {short(out)}"):
                check_records(what, recs, expect_windows(list(b"x" * tlen), 32, bos),
                              os.path.basename(f)[:-4])
        else:
            check(rc is not None and rc > 0 and not os.path.exists(path) and out.strip(),
                  f"{what}: refused with a message, no output: exit {rc}: {short(out)}")

    # ---- several texts, --domain, --chunks per text -----------------------------------------
    second = P("notes.md")
    with open(second, "w", encoding="utf-8") as f:
        f.write(text(2, 900))
    ids2 = list(open(second, "rb").read())
    src2 = dict(file_entry(second), tokens=len(ids2))
    what = "two texts, default domains"
    rc, out, path, h, recs = panel("--tokenizer", tok_bos, "--text", story, "--text", second,
                                   "--context", "32")
    if check(rc == 0, f"{what}: exit {rc}: {short(out)}"):
        w1, w2 = expect_windows(ids, 32, True), expect_windows(ids2, 32, True)
        check_records(what + " (story.txt part)", recs[:len(w1)], w1, "story")
        check_records(what + " (notes.md part)", recs[len(w1):], w2, "notes", first_index=len(w1))
        check_header(what, h, 32, 0, False, tok_files, [story_src, src2])
        docs = {r.get("document_id") for r in recs[:len(w1)]} & \
            {r.get("document_id") for r in recs[len(w1):]}
        check(not docs, f"{what}: the two texts' records have different document_ids")
        wids = [r.get("window_id") for r in recs]
        check(len(set(wids)) == len(wids), f"{what}: window_ids are unique")
    what = "two texts, --domain prose --domain code, --chunks 3"
    rc, out, path, h, recs = panel("--tokenizer", tok_bos, "--text", story, "--domain", "prose",
                                   "--text", second, "--domain", "code", "--context", "32",
                                   "--chunks", "3")
    if check(rc == 0, f"{what}: exit {rc}: {short(out)}"):
        check_records(what + " (first)", recs[:3], expect_windows(ids, 32, True, chunks=3), "prose")
        check_records(what + " (second)", recs[3:], expect_windows(ids2, 32, True, chunks=3),
                      "code", first_index=3)
        check(h is not None
              and [s.get("domain") for s in h.get("sources", [])] == ["prose", "code"],
              f"{what}: header sources' domains prose, code")
    what = "two texts in llama-perplexity mode, --chunks 2 (per text)"
    rc, out, path, h, recs = panel("--tokenizer", tok_bos, "--text", story, "--text", second,
                                   "--context", "64", "--like-llama-perplexity", "--chunks", "2")
    if check(rc == 0, f"{what}: exit {rc}: {short(out)}"):
        check_records(what + " (first)", recs[:2], expect_llama(ids, 64, True, chunks=2), "story")
        check_records(what + " (second)", recs[2:], expect_llama(ids2, 64, True, chunks=2),
                      "notes", first_index=2)

    # ---- the text is read as text: special-token spellings, NUL, CR LF are bytes -------------
    sp = P("special.txt")
    with open(sp, "wb") as f:
        f.write(b"abc<|bos|>def\x00ghi\r\njkl" * 6)
    sp_ids = list(open(sp, "rb").read())
    what = "a text holding '<|bos|>', NUL and CR LF"
    rc, out, path, h, recs = panel("--tokenizer", tok_bos, "--text", sp, "--context", "16")
    if check(rc == 0, f"{what}: exit {rc}: {short(out)}"):
        check_records(what, recs, expect_windows(sp_ids, 16, True), "special")
        check(h is not None and (h.get("sources") or [{}])[0].get("tokens") == len(sp_ids),
              f"{what}: header sources tokens == {len(sp_ids)} bytes")

    # ---- a GGUF vocabulary as the tokenizer --------------------------------------------------
    for add_bos in (True, False):
        g = vocab_gguf(P("vocab-%d.gguf" % add_bos), add_bos)
        what = f"a GGUF tokenizer (add_bos_token {add_bos}), llama-perplexity -c 64"
        rc, out, path, h, recs = panel("--tokenizer", g, "--text", story, "--context", "64",
                                       "--like-llama-perplexity")
        if check(rc == 0, f"{what}: exit {rc}: {short(out)}"):
            check_records(what, recs, expect_llama(ids, 64, add_bos), "story")
            check_header(what, h, 64, 32, True, [file_entry(g)], [story_src])

    # ---- refusals -----------------------------------------------------------------------------
    exists = P("exists.jsonl")
    with open(exists, "w") as f:
        f.write("keep me\n")
    rc, so, se = run("panel", "--tokenizer", tok_bos, "--text", story, "--context", "32",
                     "--out", exists)
    check(rc == 3, f"an existing --out: exit {rc} (want 3): {short(so + se)}")
    check(open(exists).read() == "keep me\n", "an existing --out is left untouched")

    def refused(what, args, want_rc=None, names=()):
        rc, out, path, h, recs = panel(*args)
        if rc is None or rc < 0:
            check(False, f"{what}: crashed or hung: {rc} {short(out)}")
            return
        ok = rc == want_rc if want_rc is not None else rc > 0
        check(ok, f"{what}: exit {rc} (want {want_rc if want_rc is not None else 'nonzero'}): "
              f"{short(out)}")
        check(not os.path.exists(path), f"{what}: no output file")
        check(out.strip() != "", f"{what}: a message")
        for n in names:
            check(re.search(n, out, re.I) is not None, f"{what}: the message matches /{n}/: "
                  f"{short(out)}")

    refused("--stride with --like-llama-perplexity",
            ["--tokenizer", tok_bos, "--text", story, "--context", "32", "--like-llama-perplexity",
             "--stride", "16"], want_rc=4)
    refused("--bos with --like-llama-perplexity (its rule decides the BOS)",
            ["--tokenizer", tok_bos, "--text", story, "--context", "32", "--like-llama-perplexity",
             "--bos", "never"], want_rc=4)
    tiny = P("tiny.txt")
    with open(tiny, "w") as f:
        f.write("too short\n")
    refused("a text too short for one record", ["--tokenizer", tok_bos, "--text", tiny,
                                                "--context", "64"], want_rc=3)
    refused("a text too short for one llama-perplexity chunk",
            ["--tokenizer", tok_bos, "--text", tiny, "--context", "64", "--like-llama-perplexity"],
            want_rc=3)
    empty = P("empty.txt")
    open(empty, "w").close()
    refused("an empty text", ["--tokenizer", tok_bos, "--text", empty, "--context", "8"],
            want_rc=3)
    refused("a second text too short (nothing written for the first either)",
            ["--tokenizer", tok_bos, "--text", story, "--text", tiny, "--context", "64"],
            want_rc=3)
    refused("--bos always with a tokenizer without a BOS token",
            ["--tokenizer", tok_none, "--text", story, "--context", "32", "--bos", "always"],
            want_rc=3, names=(r"bos",))
    bad = P("bad.txt")
    with open(bad, "wb") as f:
        f.write(b"abc\xff def and some more text to be long enough for a window\n")
    refused("a text not UTF-8 at byte 3", ["--tokenizer", tok_bos, "--text", bad, "--context", "8"],
            want_rc=3, names=(r"utf-?8", r"(?<![0-9])3(?![0-9])"))
    refused("a second text not UTF-8 at byte 3",
            ["--tokenizer", tok_bos, "--text", story, "--text", bad, "--context", "8"],
            want_rc=3, names=(r"utf-?8", r"(?<![0-9])3(?![0-9])"))
    refused("a GGUF with add_bos_token true and bos_token_id 100000 outside its 257 tokens",
            ["--tokenizer", vocab_gguf(P("bad-bos.gguf"), True, 100000), "--text", story,
             "--context", "32"], want_rc=3, names=(r"100000|bos",))
    refused("a missing --text file", ["--tokenizer", tok_bos, "--text", P("no-such.txt"),
                                      "--context", "8"], want_rc=4)
    refused("no --text", ["--tokenizer", tok_bos, "--context", "8"], want_rc=4)
    refused("--context 1", ["--tokenizer", tok_bos, "--text", story, "--context", "1"], want_rc=4)
    refused("--stride 0", ["--tokenizer", tok_bos, "--text", story, "--context", "8",
                           "--stride", "0"], want_rc=4)
    refused("--bos sometimes", ["--tokenizer", tok_bos, "--text", story, "--context", "8",
                                "--bos", "sometimes"], want_rc=4)
    refused("one --domain for two --text", ["--tokenizer", tok_bos, "--text", story, "--text",
                                            second, "--domain", "a", "--context", "8"], want_rc=4)
    refused("two --domain for one --text", ["--tokenizer", tok_bos, "--text", story, "--domain",
                                            "a", "--domain", "b", "--context", "8"], want_rc=4)
    refused("--score-from 31 with --context 32 (no scored row)",
            ["--tokenizer", tok_bos, "--text", story, "--context", "32", "--score-from", "31"])
    refused("17 --text (at most 16)", ["--tokenizer", tok_bos, *sum((["--text", story]
                                                                      for _ in range(17)), []),
                                       "--context", "8"], want_rc=4)

    # ---- end to end: panel -> capture -> validate ------------------------------------------
    model = P("model")
    rc, so, se = run("model", "init", "--preset", "tiny-random", "--seed", "1", model)
    if not check(rc == 0 and os.path.exists(os.path.join(model, "tokenizer.json")),
                 f"model init tiny-random writes a model with a tokenizer.json: {rc} {short(se)}"):
        finish()
    vocab = json.load(open(os.path.join(model, "config.json")))["vocab_size"]
    m_files = [file_entry(os.path.join(model, "tokenizer.json")),
               file_entry(os.path.join(model, "tokenizer_config.json"))]
    m_bos = P("model-bos")
    os.mkdir(m_bos)
    for f in os.listdir(model):
        data = open(os.path.join(model, f), "rb").read()
        if f == "tokenizer_config.json":
            cfg = json.loads(data)
            cfg["add_bos_token"] = True
            data = json.dumps(cfg, indent=2).encode()
        with open(os.path.join(m_bos, f), "wb") as fh:
            fh.write(data)
    mb_files = [file_entry(os.path.join(m_bos, "tokenizer.json")),
                file_entry(os.path.join(m_bos, "tokenizer_config.json"))]

    for mdir, files, n, extra, label in (
            (model, m_files, 32, [], "windows -c 32"),
            (m_bos, mb_files, 32, ["--like-llama-perplexity"], "llama-perplexity -c 32, BOS")):
        what = f"end to end ({label})"
        rc, out, path, h, recs = panel("--tokenizer", mdir, "--text", story, "--context", str(n),
                                       *extra)
        if not check(rc == 0 and recs, f"{what}: panel: exit {rc}: {short(out)}"):
            continue
        check_header(what, h, n, n // 2 if extra else 0, bool(extra), files, [story_src])
        ref = P("ref-%d" % len(extra))
        rc, so, se = run("capture", "--model", mdir, "--panel", path, "--out", ref,
                         "--created-utc", "2026-11-01T00:00:00Z", "--quiet")
        if not check(rc == 0, f"{what}: capture: exit {rc}: {short(so + se)}"):
            continue
        rc, so, se = run("validate", ref)
        check(rc == 0, f"{what}: validate exit {rc}: {short(so + se)}")
        try:
            ds = json.load(open(os.path.join(ref, "fidelity-dataset.json")))
        except (OSError, ValueError) as e:
            check(False, f"{what}: fidelity-dataset.json reads: {e}")
            continue
        pt = (ds.get("panel") or {}).get("tokenizer") or {}
        tid = pt.get("id")
        check(isinstance(tid, str) and tid and tid != "unknown-tokenizer-vocab-%d" % vocab
              and not tid.startswith("unknown-tokenizer"),
              f"{what}: the dataset's panel.tokenizer.id {tid!r} is not the unknown placeholder")
        check(tid == (h.get("tokenizer") or {}).get("id"),
              f"{what}: the dataset's panel.tokenizer.id == the panel header's")
        got = sorted(({k: x.get(k) for k in ("name", "bytes", "sha256")}
                      for x in pt.get("files") or []), key=lambda x: str(x["name"]))
        check(got == sorted(files, key=lambda x: x["name"]),
              f"{what}: the dataset's panel.tokenizer files == hashlib over the model's files")
        sw = (ds.get("panel") or {}).get("scoring_window") or {}
        check(sw == h.get("scoring_window"),
              f"{what}: the dataset's scoring_window is the panel header's: {sw}")
        per = (n - 1 - n // 2) if extra else (n - 1)
        tot = (ds.get("panel") or {}).get("scored_positions_total")
        check(tot == len(recs) * per,
              f"{what}: scored_positions_total {tot} == {len(recs)} records x {per}")
        check((ds.get("panel") or {}).get("contexts") == len(recs),
              f"{what}: panel.contexts == {len(recs)}")
    finish()


if __name__ == "__main__":
    main()
