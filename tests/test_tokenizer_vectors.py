"""Conformance of `fidelis tokenize` with llama.cpp's tokenizer vectors (FDL_SHARED/vectors/
tokenizer, README.md there), through both loaders: each vocabulary GGUF as it is, and a Hugging
Face tokenizer directory (tokenizer.json + tokenizer_config.json) that tok_json_from_gguf.py
writes from the same GGUF.

Groups, for every vocabulary x loader:
- inp:    the 46 .inp strings, encoded with --no-special, id for id against the .out lines (the
          ids Hugging Face gave, add_special_tokens=False).
- corpus: english/code/multilingual.txt against <vocab>.<corpus>.ids.json (llama-tokenize
          --no-bos --no-parse-special, i.e. --no-special here).
- decode: `--decode @IDS` of each string's expected ids, and of each corpus's ids, must give
          back the exact bytes.
          Rule for the decode check: byte-level BPE (gpt2 vocabularies) is lossless. For
          llama-spm (SentencePiece BPE with byte fallback) it is lossless too under Hugging
          Face's semantics: the normalizer turns s into "\u2581" + s with every " " written
          "\u2581", and the decoder (Replace "\u2581" -> " ", ByteFallback, Fuse, then Strip of
          at most one leading " " from the fused text) undoes exactly that one prepended space,
          so a string that itself starts with spaces keeps them, and every byte outside the
          vocabulary comes back through its <0xXX> token. So every string must round-trip,
          for every vocabulary and both loaders - with one exception, on the tokenizer.json
          side only. Hugging Face tokenizers passes added tokens through the decoder too
          (tokenizers issues #1392, #1915; PR #1513 tried to change that), so deepseek-llm's
          user-defined tokens "\u00f8", "\u00f6", ... (ids 100002-100014), whose texts are
          also byte-level stand-ins, come back there as the single bytes 0xF8, 0xF6, ...
          (which Python's str then shows as U+FFFD). llama.cpp copies a user-defined token's
          text as written, so the GGUF side must give the exact bytes. fidelis decodes to
          bytes, so the tokenizer.json side is held to the bytes Hugging Face's ByteLevel
          decoder makes (hf_decode below), before its from_utf8_lossy step.

The CLI takes one text per call, so every string is its own call (46 x 4 x 2 encodes and as
many decodes); the calls run on a small thread pool to keep the test fast."""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time

TESTS = os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TESTS)
from cli_util import CLI, check, finish, need_cli  # noqa: E402
import tok_json_from_gguf  # noqa: E402

SHARED = os.environ.get("FDL_SHARED", os.path.join(TESTS, "..", "..", "shared"))
VEC = os.path.join(SHARED, "vectors", "tokenizer")
VOCABS = ["gpt-2", "llama-spm", "deepseek-llm", "starcoder"]
CORPORA = ["english", "code", "multilingual"]
SEP = b"\n__ggml_vocab_test__\n"
JOBS = max(2, min(8, os.cpu_count() or 2))

if not os.path.isdir(VEC):
    print("skip: no %s" % VEC)
    sys.exit(77)
need_cli()


def cli(*args):
    """(exit code, stdout bytes, stderr text) of `fidelis ARGS`."""
    p = subprocess.run([CLI, *args], capture_output=True, timeout=300)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def read_inp(vocab):
    with open(os.path.join(VEC, "ggml-vocab-%s.gguf.inp" % vocab), "rb") as f:
        pieces = f.read().split(SEP)
    assert pieces[-1] == b"", "the .inp file does not end in the separator"
    return pieces[:-1]


def read_out(vocab):
    with open(os.path.join(VEC, "ggml-vocab-%s.gguf.out" % vocab), "rb") as f:
        lines = f.read().decode("utf-8").split("\n")
    if lines and lines[-1] == "" and len(lines) == 47:
        lines = lines[:-1]
    return [[int(x) for x in ln.split()] for ln in lines]


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def encode(path, text_file):
    rc, out, err = cli("tokenize", "--tokenizer", path, "--text", text_file, "--no-special",
                       "--json")
    if rc != 0:
        return None, "exit %d: %s" % (rc, err.strip()[:300])
    return json.loads(out.decode("utf-8"))["ids"], None


def decode(path, ids_file):
    rc, out, err = cli("tokenize", "--tokenizer", path, "--decode", "@" + ids_file)
    if rc != 0:
        return None, "exit %d: %s" % (rc, err.strip()[:300])
    return out, None


def report(label, results, what):
    """results: [(index, expected, got, error)]; one ok/FAIL line for the group."""
    bad = [r for r in results if r[3] is not None or r[1] != r[2]]
    msg = "%s: %d/%d %s match" % (label, len(results) - len(bad), len(results), what)
    if bad:
        i, exp, got, e = bad[0]
        if e is not None:
            msg += "; first mismatch: #%s fails (%s)" % (i, e)
        else:
            p = first_diff(exp, got)
            msg += ("; first mismatch: #%s at position %d (expected %r, got %r; lengths %d/%d)"
                    % (i, p, exp[p:p + 6], got[p:p + 6], len(exp), len(got)))
    check(not bad, msg)
    return bad


def byte_decoder():
    """GPT-2's byte-level alphabet, stand-in character -> byte."""
    bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, extra = list(bs), 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(bs, cs)}


BYTE_OF = byte_decoder()


def hf_decode(texts, ids):
    """The bytes Hugging Face's ByteLevel decoder gives for ids (before from_utf8_lossy): each
    token, added ones included, becomes its bytes char by char when every char is a stand-in,
    else its UTF-8 as written."""
    out = bytearray()
    for i in ids:
        t = texts[i]
        if all(c in BYTE_OF for c in t):
            out += bytes(BYTE_OF[c] for c in t)
        else:
            out += t.encode("utf-8")
    return bytes(out)


def c_literals(src, name):
    """The strings of `static const char *const NAME[] = {...}` in C source, escapes decoded."""
    m = re.search(r"\b%s\[\]\s*=\s*\{(.*?)NULL\s*\}" % re.escape(name), src, re.S)
    if not m:
        return None
    items, cur = [], None
    for tok in re.finditer(r'"((?:[^"\\]|\\.)*)"|(,)', m.group(1)):
        if tok.group(2):
            if cur is not None:
                items.append(cur)
            cur = None
            continue
        cur = (cur or "") + re.sub(
            r"\\(U[0-9a-fA-F]{8}|u[0-9a-fA-F]{4}|.)",
            lambda e: (chr(int(e.group(1)[1:], 16)) if e.group(1)[0] in "uU" and len(e.group(1)) > 1
                       else {"n": "\n", "r": "\r", "t": "\t"}.get(e.group(1), e.group(1))),
            tok.group(1))
    if cur is not None:
        items.append(cur)
    return items


# The converter's DeepSeek LLM regexes must be the ones fidelis's pre-tokenizer table lists.
table = os.path.join(TESTS, "..", "src", "tokenizer", "pre_table.c")
if os.path.exists(table):
    with open(table, encoding="utf-8") as f:
        listed = c_literals(f.read(), "R_DEEPSEEK_LLM")
    check(listed == tok_json_from_gguf.DEEPSEEK_LLM_REGEXES,
          "deepseek-llm regexes of tok_json_from_gguf.py equal pre_table.c's (%s vs %d)"
          % (None if listed is None else len(listed), len(tok_json_from_gguf.DEEPSEEK_LLM_REGEXES)))

t0 = time.time()
tmp = tempfile.TemporaryDirectory(prefix="fdl-tokvec-")
W = tmp.name
pool = concurrent.futures.ThreadPoolExecutor(JOBS)

work = []  # (vocab, loader name, path, strings, expected)
texts = {}  # the gpt2 vocabularies: id -> token text
for v in VOCABS:
    gguf = os.path.join(VEC, "ggml-vocab-%s.gguf" % v)
    meta = tok_json_from_gguf.gguf_util.read_metadata(gguf)
    if meta["tokenizer.ggml.model"] == "gpt2":
        texts[v] = meta["tokenizer.ggml.tokens"]
    hf = tok_json_from_gguf.write_hf_dir(gguf, os.path.join(W, "hf-" + v))
    strings, expected = read_inp(v), read_out(v)
    check(len(strings) == 46 and len(expected) == 46,
          "%s: 46 strings and 46 id lines (%d, %d)" % (v, len(strings), len(expected)))
    sdir = os.path.join(W, "str-" + v)
    os.makedirs(sdir)
    for i, s in enumerate(strings):
        with open(os.path.join(sdir, "%02d.txt" % i), "wb") as f:
            f.write(s)
        with open(os.path.join(sdir, "%02d.ids" % i), "w") as f:
            f.write(" ".join(map(str, expected[i])))
    for loader, path in (("gguf", gguf), ("tokenizer.json", hf)):
        work.append((v, loader, path, sdir, strings, expected))

# Submit everything first, then read the results group by group.
enc, dec, cenc, cdec = {}, {}, {}, {}
for v, loader, path, sdir, strings, expected in work:
    for i in range(len(strings)):
        enc[v, loader, i] = pool.submit(encode, path, os.path.join(sdir, "%02d.txt" % i))
        dec[v, loader, i] = pool.submit(decode, path, os.path.join(sdir, "%02d.ids" % i))
corpus_ids = {}
for v in VOCABS:
    for c in CORPORA:
        with open(os.path.join(VEC, "%s.%s.ids.json" % (v, c))) as f:
            corpus_ids[v, c] = json.load(f)
        idf = os.path.join(W, "%s.%s.ids" % (v, c))
        with open(idf, "w") as f:
            f.write(" ".join(map(str, corpus_ids[v, c])))
for v, loader, path, sdir, strings, expected in work:
    for c in CORPORA:
        cenc[v, loader, c] = pool.submit(encode, path, os.path.join(VEC, c + ".txt"))
        cdec[v, loader, c] = pool.submit(decode, path, os.path.join(W, "%s.%s.ids" % (v, c)))

failures = []
for v, loader, path, sdir, strings, expected in work:
    label = "%-12s %-14s" % (v, loader)
    res = [(i, expected[i]) + enc[v, loader, i].result() for i in range(len(strings))]
    bad = report(label + " inp", res, "strings' ids")
    failures += [(v, loader, "inp", b) for b in bad]
    res = []
    for c in CORPORA:
        got, e = cenc[v, loader, c].result()
        res.append((c, corpus_ids[v, c], got, e))
    bad = report(label + " corpus", res, "corpora's ids")
    failures += [(v, loader, "corpus", b) for b in bad]
    hf = loader == "tokenizer.json" and v in texts
    wants = [(i, strings[i], expected[i]) for i in range(len(strings))]
    for c in CORPORA:
        with open(os.path.join(VEC, c + ".txt"), "rb") as f:
            wants.append((c, f.read(), corpus_ids[v, c]))
    res, lossy = [], 0
    for i, text, ids in wants:
        want = hf_decode(texts[v], ids) if hf else text
        lossy += want != text
        res.append((i, want) + (dec[v, loader, i] if isinstance(i, int)
                                else cdec[v, loader, i]).result())
    bad = report(label + " decode", res,
                 "decodes" + (" (%d held to HF's lossy bytes)" % lossy if hf else ""))
    failures += [(v, loader, "decode", b) for b in bad]

pool.shutdown()
# Details of every mismatch, to read in the log (each string's text and both id lists).
for v, loader, group, (i, exp, got, e) in failures[:40]:
    what = repr(read_inp(v)[i]) if isinstance(i, int) else i
    if e is not None:
        print("  %s %s %s #%s %s: %s" % (v, loader, group, i, what[:80], e))
    else:
        p = first_diff(exp, got)
        print("  %s %s %s #%s %s: first difference at %d: expected %r got %r"
              % (v, loader, group, i, what[:80], p, exp[max(0, p - 3):p + 8],
                 got[max(0, p - 3):p + 8]))
print("time: %.1f s (%d calls, %d threads)"
      % (time.time() - t0, len(enc) + len(dec) + len(cenc) + len(cdec), JOBS))
tmp.cleanup()
finish()
