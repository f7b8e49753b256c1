"""test_tokenizer_hostile.py - hostile inputs to `fidelis tokenize`.

Every hostile input must be refused cleanly: a nonzero exit (3 = refused, a malformed tokenizer
or text), a message that names what is wrong, no signal (a negative returncode is a FAIL), and
quickly (each run has a hard timeout; a hang is a FAIL). The GGUF cases run under a 512 MiB
address-space limit, so a reader that trusts a claimed element count and allocates for it fails
instead of passing by luck.

* text that is not UTF-8 (--text FILE): the message names the byte offset;
* a tokenizer.json nested 10^6 deep (objects, arrays);
* a BPE merge naming tokens that are not in the vocabulary;
* a Split pre-tokenizer whose regex PCRE2 rejects: the message names the pattern;
* model type WordPiece / Unigram / unknown, an unknown pre_tokenizer and normalizer type:
  the message names the type;
* GGUF vocabularies written here byte by byte: a valid one first (tokenizes "hello" to its
  bytes, so the refusals below are for the stated reason), then a tokens array claiming 2^31
  and 2^63-1 strings in a ~1 KB file, tokenizer.ggml.pre "no-such-pre", tokenizer.ggml.model
  "bert", a string length past EOF, a truncated file, a wrong magic, version 1;
* vocabulary ids out of range or given twice; add_bos_token true with a BOS that is not a
  token (tokenizer_config.json and GGUF alike);
* --decode with an id outside the vocabulary (exit 3) and with garbage (exit 4 or 3).

Every tokenizer and text here is written by this test (standard library only).
"""
import json
import os
import re
import resource
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, check, finish, need_cli  # noqa: E402

TIMEOUT = 20          # seconds: a refusal is expected in well under one
FAST = 5.0            # a hostile input must be refused within this many seconds
AS_LIMIT = 512 << 20  # address-space limit for the GGUF runs


def limit_as():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


# AddressSanitizer reserves terabytes of shadow address space, so the limit applies only to a
# build without it (CI runs this test in both; ASan's allocator reports a huge request itself).
SANITIZED = "ASAN_OPTIONS" in os.environ or "asan" in os.path.abspath(CLI)


def tok(*args, limit=False, stdin=None):
    """(returncode or None on a hang, combined output, seconds) of `fidelis tokenize ARGS`."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([CLI, "tokenize", *args], capture_output=True, timeout=TIMEOUT,
                           preexec_fn=limit_as if limit and not SANITIZED else None, input=stdin)
    except subprocess.TimeoutExpired:
        return None, "(killed after %d s)" % TIMEOUT, time.monotonic() - t0
    out = (p.stdout + p.stderr).decode("utf-8", "replace")
    return p.returncode, out, time.monotonic() - t0


def short(out):
    out = out.strip().replace("\n", " | ")
    return out if len(out) < 300 else out[:300] + "..."


def refused(what, args, want_rc=(3,), names=(), limit=False):
    """Checks that `tokenize ARGS` is a clean, fast refusal whose output contains every regex in
    names (case-insensitive)."""
    rc, out, dt = tok(*args, limit=limit)
    if rc is None:
        check(False, f"{what}: hung (no exit within {TIMEOUT} s)")
        return
    if rc < 0:
        check(False, f"{what}: killed by signal {-rc}: {short(out)}")
        return
    check(rc in want_rc, f"{what}: exit {rc} (want {'/'.join(map(str, want_rc))}): {short(out)}")
    check(dt < FAST, f"{what}: finished in {dt:.2f} s (< {FAST} s)")
    for n in names:
        check(re.search(n, out, re.I) is not None,
              f"{what}: the message matches /{n}/: {short(out)}")


# ---- byte-level tokenizer.json ---------------------------------------------------------------

def byte_to_unicode():
    """GPT-2's byte -> unicode character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = byte_to_unicode()


def tokenizer_json(**over):
    """A byte-level BPE tokenizer.json: ids 0..255 = the bytes, 256 = <|bos|>, no merges."""
    vocab = {B2U[b]: b for b in range(256)}
    vocab["<|bos|>"] = 256
    t = {"version": "1.0", "truncation": None, "padding": None,
         "added_tokens": [{"id": 256, "content": "<|bos|>", "single_word": False, "lstrip": False,
                           "rstrip": False, "normalized": False, "special": True}],
         "normalizer": None,
         "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                           "use_regex": False},
         "post_processor": None,
         "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                     "use_regex": False},
         "model": {"type": "BPE", "dropout": None, "unk_token": None,
                   "continuing_subword_prefix": None, "end_of_word_suffix": None,
                   "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                   "vocab": vocab, "merges": []}}
    t.update(over)
    return t


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


def write_json(path, obj):
    return write(path, json.dumps(obj))


# ---- GGUF ------------------------------------------------------------------------------------

T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64 = 4, 5, 6, 7, 8, 9, 10


def g_str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def g_val(t, v):
    if t == T_U32:
        return struct.pack("<I", v)
    if t == T_I32:
        return struct.pack("<i", v)
    if t == T_F32:
        return struct.pack("<f", v)
    if t == T_BOOL:
        return struct.pack("<B", 1 if v else 0)
    if t == T_STR:
        return g_str(v)
    if t == T_U64:
        return struct.pack("<Q", v)
    raise ValueError(t)


def g_kv(key, t, v):
    return g_str(key) + struct.pack("<I", t) + g_val(t, v)


def g_arr(key, et, items, count=None):
    n = len(items) if count is None else count
    return (g_str(key) + struct.pack("<I", T_ARR) + struct.pack("<IQ", et, n)
            + b"".join(g_val(et, x) for x in items))


def gguf(kvs, version=3, magic=b"GGUF", n_kv=None):
    n = len(kvs) if n_kv is None else n_kv
    return magic + struct.pack("<IQQ", version, 0, n) + b"".join(kvs)


def vocab_kvs(model="gpt2", pre="gpt-2", tokens=None, tokens_count=None):
    toks = [B2U[b] for b in range(256)] + ["<|bos|>"] if tokens is None else tokens
    ntok = len(toks) if tokens_count is None else tokens_count
    return [g_kv("general.architecture", T_STR, "llama"),
            g_kv("tokenizer.ggml.model", T_STR, model),
            g_kv("tokenizer.ggml.pre", T_STR, pre),
            g_arr("tokenizer.ggml.tokens", T_STR, toks, count=tokens_count),
            g_arr("tokenizer.ggml.token_type", T_I32,
                  [1] * min(ntok, 256) + [3] * max(0, min(ntok, 257) - 256)),
            g_arr("tokenizer.ggml.merges", T_STR, []),
            g_kv("tokenizer.ggml.bos_token_id", T_U32, 256),
            g_kv("tokenizer.ggml.eos_token_id", T_U32, 256),
            g_kv("tokenizer.ggml.add_bos_token", T_BOOL, False)]


def main():
    need_cli()
    tmp = tempfile.TemporaryDirectory(prefix="fdl-tok-hostile-")
    t = tmp.name
    P = lambda *a: os.path.join(t, *a)  # noqa: E731

    # ---- the good tokenizer, so the refusals below are for the stated reason ----------------
    good = write_json(P("good.json"), tokenizer_json())
    rc, out, _ = tok("--tokenizer", good, "--string", "hello", "--no-special", "--json")
    ok = rc == 0
    if ok:
        try:
            ok = json.loads(out.splitlines()[0])["ids"] == list(b"hello")
        except (ValueError, KeyError, IndexError):
            ok = False
    if not check(ok, "the byte-level tokenizer.json tokenizes 'hello' to its bytes: "
                 f"{rc} {short(out)}"):
        finish()

    # ---- text that is not UTF-8 ---------------------------------------------------------------
    for name, data, off in (("a stray 0xFF", b"hello world\xff tail", 11),
                            ("an overlong '/'", b"abcd\xc0\xaf", 4),
                            ("a UTF-16 surrogate", b"x\xed\xa0\x80yz", 1),
                            ("a sequence cut at EOF", b"ab\xe2\x82", 2),
                            ("a lone continuation byte", b"abcdefg\x80", 7),
                            ("a code point past U+10FFFF", b"abcde\xf4\x90\x80\x80", 5)):
        f = write(P("bad-%d.txt" % off), data)
        refused(f"--text with {name} at byte {off}", ["--tokenizer", good, "--text", f],
                names=(r"utf-?8", r"(?<![0-9])%d(?![0-9])" % off))
    rc, out, dt = tok("--tokenizer", good, "--text", "-", stdin=b"abc\xff def")
    check(rc == 3 and re.search(r"(?<![0-9])3(?![0-9])", out) is not None,
          f"--text - (stdin) with 0xFF at byte 3: exit {rc}, names offset 3: {short(out)}")

    # ---- a tokenizer.json nested 10^6 deep ------------------------------------------------
    deep = 10 ** 6
    for name, data in (("objects", '{"a":' * deep + "1" + "}" * deep),
                       ("arrays", "[" * deep + "1" + "]" * deep),
                       ("arrays, unclosed", "[" * deep),
                       ("model.vocab nested", '{"model":{"type":"BPE","vocab":' + '{"a":' * deep
                        + "1" + "}" * deep + ',"merges":[]}}')):
        f = write(P("deep-%s.json" % name.replace(" ", "").replace(",", "-")), data)
        refused(f"tokenizer.json nested 10^6 deep ({name})",
                ["--tokenizer", f, "--string", "hello"])

    # ---- BPE merges naming unknown tokens ------------------------------------------------------
    t1 = tokenizer_json()
    t1["model"]["merges"] = ["zz qq"]
    refused("a BPE merge 'zz qq' of tokens not in the vocabulary",
            ["--tokenizer", write_json(P("merge-unknown.json"), t1), "--string", "hello"],
            names=(r"merge",))
    t1 = tokenizer_json()
    t1["model"]["merges"] = [["zz", "qq"]]
    refused("a BPE merge ['zz','qq'] (list form) of tokens not in the vocabulary",
            ["--tokenizer", write_json(P("merge-unknown2.json"), t1), "--string", "hello"],
            names=(r"merge",))
    t1 = tokenizer_json()
    t1["model"]["merges"] = ["h e"]  # both parts known, the merged "he" is not in the vocabulary
    refused("a BPE merge 'h e' whose result 'he' is not in the vocabulary",
            ["--tokenizer", write_json(P("merge-result.json"), t1), "--string", "hello"],
            names=(r"merge",))

    # ---- a Split pre-tokenizer whose regex PCRE2 rejects ----------------------------------
    for pat in ("(?<=a+)b", "[z-a]", "(unclosed"):
        t1 = tokenizer_json(pre_tokenizer={"type": "Split", "pattern": {"Regex": pat},
                                           "behavior": "Isolated", "invert": False})
        f = write_json(P("split-%d.json" % len(pat)), t1)
        refused(f"a Split pre-tokenizer with regex {pat!r}",
                ["--tokenizer", f, "--string", "hello"],
                names=(re.escape(pat) + r"|regex|pattern",))
        rc, out, _ = tok("--tokenizer", f, "--string", "hello")
        check(pat in out or "regex" in out.lower() or "pattern" in out.lower(),
              f"regex {pat!r}: the message names the pattern or the regex: {short(out)}")
    # the same refusal inside a Sequence
    t1 = tokenizer_json(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated",
         "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]})
    refused("a Sequence whose Split has regex '(unclosed'",
            ["--tokenizer", write_json(P("seq-split.json"), t1), "--string", "hello"],
            names=(r"\(unclosed|regex|pattern",))

    # ---- model / pre_tokenizer / normalizer types fidelis does not run -----------------------
    wp = tokenizer_json()
    wp["model"] = {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                   "max_input_chars_per_word": 100,
                   "vocab": {"[UNK]": 0, "h": 1, "##ello": 2, "hello": 3}}
    wp["pre_tokenizer"] = {"type": "BertPreTokenizer"}
    wp["added_tokens"] = []
    refused("model type WordPiece", ["--tokenizer", write_json(P("wordpiece.json"), wp),
                                     "--string", "hello"], names=(r"WordPiece",))
    for name, model in (("with scores", {"type": "Unigram", "unk_id": 0, "byte_fallback": False,
                                         "vocab": [["<unk>", 0.0], ["h", -1.5], ["ello", -2.0],
                                                   ["hello", -3.0]]}),
                        ("without scores", {"type": "Unigram", "unk_id": 0,
                                            "vocab": [["<unk>"], ["h"], ["ello"]]})):
        u = tokenizer_json(pre_tokenizer={"type": "Metaspace", "replacement": "\u2581",
                                          "prepend_scheme": "always", "split": True})
        u["model"] = model
        u["added_tokens"] = []
        refused(f"model type Unigram ({name})",
                ["--tokenizer", write_json(P("unigram-%d.json" % len(name)), u),
                 "--string", "hello"], names=(r"Unigram",))
    u = tokenizer_json()
    u["model"] = {"type": "NoSuchModel", "vocab": {}}
    refused("model type NoSuchModel", ["--tokenizer", write_json(P("model-unk.json"), u),
                                       "--string", "hello"], names=(r"NoSuchModel",))
    refused("pre_tokenizer type NoSuchPre",
            ["--tokenizer", write_json(P("pre-unk.json"),
                                       tokenizer_json(pre_tokenizer={"type": "NoSuchPre"})),
             "--string", "hello"], names=(r"NoSuchPre",))
    refused("normalizer type NoSuchNorm",
            ["--tokenizer", write_json(P("norm-unk.json"),
                                       tokenizer_json(normalizer={"type": "NoSuchNorm"})),
             "--string", "hello"], names=(r"NoSuchNorm",))
    refused("a Sequence normalizer holding type NoSuchNorm2",
            ["--tokenizer", write_json(P("norm-seq-unk.json"), tokenizer_json(
                normalizer={"type": "Sequence", "normalizers": [{"type": "NFC"},
                                                                {"type": "NoSuchNorm2"}]})),
             "--string", "hello"], names=(r"NoSuchNorm2",))

    # ---- ids a vocabulary cannot hold, and a BOS that is not there ---------------------------
    for name, tid in (("2^31-1", 2 ** 31 - 1), ("10^15", 10 ** 15), ("-1", -1)):
        t1 = tokenizer_json()
        t1["model"]["vocab"]["zz"] = tid
        refused(f"a vocabulary id {name}", ["--tokenizer", write_json(P("id-%s.json" % name), t1),
                                            "--string", "hello"], names=(r"\bid\b",), limit=True)
    t1 = tokenizer_json()
    t1["added_tokens"].append({"id": 2 ** 31 - 2, "content": "<x>", "special": True})
    refused("an added token with id 2^31-2", ["--tokenizer", write_json(P("added-big.json"), t1),
                                              "--string", "hello"], names=(r"\bid\b",), limit=True)
    t1 = tokenizer_json()
    t1["model"]["vocab"]["zz"] = 5
    refused("two vocabulary tokens with id 5", ["--tokenizer", write_json(P("dup-id.json"), t1),
                                                "--string", "hello"], names=(r"\b5\b",))
    os.mkdir(P("bos-missing"))
    write_json(P("bos-missing", "tokenizer.json"), tokenizer_json())
    write_json(P("bos-missing", "tokenizer_config.json"),
               {"add_bos_token": True, "bos_token": "<|nope|>"})
    refused("tokenizer_config add_bos_token true naming a BOS '<|nope|>' not in the vocabulary",
            ["--tokenizer", P("bos-missing"), "--string", "hello"], names=(r"bos",))
    for pid in (4096, 2**40, -1):
        t1 = tokenizer_json(post_processor={
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [pid], "tokens": ["<s>"]}}})
        refused("a post_processor BOS id %d outside the vocabulary" % pid,
                ["--tokenizer", write_json(P("pp-%d.json" % (pid & 0xffff)), t1), "--string",
                 "hello"], names=(r"\bid\b",))
    t1 = tokenizer_json(post_processor={"type": "RobertaProcessing", "cls": ["<s>", 70000],
                                        "sep": ["</s>", 2]})
    refused("a RobertaProcessing cls id outside the vocabulary",
            ["--tokenizer", write_json(P("pp-roberta.json"), t1), "--string", "hello"],
            names=(r"vocabulary",))

    # ---- GGUF vocabularies ----------------------------------------------------------------------
    gv = write(P("valid.gguf"), gguf(vocab_kvs()))
    rc, out, _ = tok("--tokenizer", gv, "--string", "hello", "--no-special", "--json", limit=True)
    ok = rc == 0
    if ok:
        try:
            ok = json.loads(out.splitlines()[0])["ids"] == list(b"hello")
        except (ValueError, KeyError, IndexError):
            ok = False
    check(ok, f"the valid GGUF vocabulary tokenizes 'hello' to its bytes: {rc} {short(out)}")
    rc, out, _ = tok("--tokenizer", gv, "--decode", "104,101,108,108,111", limit=True)
    check(rc == 0 and out.startswith("hello"), f"the valid GGUF decodes 104..111 to 'hello': "
          f"{rc} {short(out)}")

    for n in (2 ** 31, 2 ** 63 - 1, 2 ** 64 - 1):
        kv = vocab_kvs(tokens=[B2U[b] for b in range(16)], tokens_count=n)
        f = write(P("count-%d.gguf" % n), gguf(kv))
        check(len(open(f, "rb").read()) < 2048, f"count {n}: the file is small "
              f"({os.path.getsize(f)} bytes)")
        refused(f"GGUF tokenizer.ggml.tokens claiming {n} strings in a "
                f"{os.path.getsize(f)}-byte file", ["--tokenizer", f, "--string", "hello"],
                limit=True)
    # an array of strings whose count is huge and whose elements are empty strings (8 bytes each)
    f = write(P("count-empty.gguf"), gguf([g_kv("general.architecture", T_STR, "llama"),
                                           g_kv("tokenizer.ggml.model", T_STR, "gpt2"),
                                           g_str("tokenizer.ggml.tokens")
                                           + struct.pack("<IIQ", T_ARR, T_STR, 2 ** 40)
                                           + g_str("") * 8]))
    refused("GGUF tokens array of 2^40 strings, 8 present", ["--tokenizer", f, "--string", "hi"],
            limit=True)
    # a huge n_kv
    f = write(P("nkv.gguf"), gguf(vocab_kvs(), n_kv=2 ** 62))
    refused("GGUF n_kv 2^62 in a small file", ["--tokenizer", f, "--string", "hi"], limit=True)

    refused("GGUF tokenizer.ggml.pre 'no-such-pre'",
            ["--tokenizer", write(P("pre.gguf"), gguf(vocab_kvs(pre="no-such-pre"))),
             "--string", "hello"], names=(r"no-such-pre",), limit=True)
    refused("GGUF tokenizer.ggml.model 'bert'",
            ["--tokenizer", write(P("bert.gguf"), gguf(vocab_kvs(model="bert"))),
             "--string", "hello"], names=(r"bert",), limit=True)

    valid = gguf(vocab_kvs())
    # a string length pointing past EOF: the value of tokenizer.ggml.pre claims 2^32 bytes
    kvs = vocab_kvs()
    kvs[2] = g_str("tokenizer.ggml.pre") + struct.pack("<I", T_STR) + struct.pack("<Q", 2 ** 32) \
        + b"gpt-2"
    refused("GGUF string length 2^32 past EOF",
            ["--tokenizer", write(P("strlen.gguf"), gguf(kvs)), "--string", "hello"], limit=True)
    kvs = vocab_kvs()
    kvs[2] = (g_str("tokenizer.ggml.pre") + struct.pack("<I", T_STR)
              + struct.pack("<Q", 2 ** 64 - 1) + b"gpt-2")
    refused("GGUF string length 2^64-1",
            ["--tokenizer", write(P("strlen2.gguf"), gguf(kvs)), "--string", "hello"], limit=True)
    # a key length past EOF
    kvs = vocab_kvs()
    kvs.append(struct.pack("<Q", 10 ** 12) + b"tokenizer")
    refused("GGUF key length 10^12 past EOF",
            ["--tokenizer", write(P("keylen.gguf"), gguf(kvs)), "--string", "hello"], limit=True)
    for cut in (len(valid) // 2, len(valid) - 1, 20, 10):
        refused(f"GGUF truncated to {cut} of {len(valid)} bytes",
                ["--tokenizer", write(P("trunc-%d.gguf" % cut), valid[:cut]), "--string", "hello"],
                limit=True)
    refused("GGUF with magic 'GGUX'",
            ["--tokenizer", write(P("magic.gguf"), gguf(vocab_kvs(), magic=b"GGUX")),
             "--string", "hello"], limit=True)
    refused("GGUF version 1",
            ["--tokenizer", write(P("v1.gguf"), gguf(vocab_kvs(), version=1)),
             "--string", "hello"], names=(r"version",), limit=True)
    refused("GGUF with an unknown value type 99",
            ["--tokenizer", write(P("type99.gguf"), gguf(vocab_kvs() + [
                g_str("x.y") + struct.pack("<I", 99) + b"\0" * 8])), "--string", "hello"],
            limit=True)
    refused("GGUF token_type array shorter than tokens",
            ["--tokenizer", write(P("ttype.gguf"), gguf(
                [kv if i != 4 else g_arr("tokenizer.ggml.token_type", T_I32, [1] * 10)
                 for i, kv in enumerate(vocab_kvs())])), "--string", "hello"], limit=True)
    # add_bos_token true: the BOS is used. With a valid id it is prepended; with an id outside
    # the vocabulary there is no BOS to prepend, and the text must not silently lose it.
    kvs = vocab_kvs()
    kvs[8] = g_kv("tokenizer.ggml.add_bos_token", T_BOOL, True)
    rc, out, _ = tok("--tokenizer", write(P("bos-ok.gguf"), gguf(kvs)), "--string", "hello",
                     limit=True)
    check(rc == 0 and out.split() == [str(x) for x in [256] + list(b"hello")],
          f"GGUF add_bos_token true, bos 256: 'hello' is 256 + its bytes: {rc} {short(out)}")
    kvs[6] = g_kv("tokenizer.ggml.bos_token_id", T_U32, 100000)
    refused("GGUF add_bos_token true with bos_token_id 100000 outside a vocabulary of 257",
            ["--tokenizer", write(P("bos-bad.gguf"), gguf(kvs)), "--string", "hello"],
            names=(r"100000|bos",), limit=True)

    # ---- --decode ----------------------------------------------------------------------------
    refused("--decode 300 (outside a vocabulary of 257)", ["--tokenizer", good, "--decode", "300"],
            names=(r"300",))
    refused("--decode 104,-1", ["--tokenizer", good, "--decode", "104,-1"], want_rc=(3, 4))
    refused("--decode 99999999999999999999 (overflow)",
            ["--tokenizer", good, "--decode", "99999999999999999999"], want_rc=(3, 4))
    refused("--decode '1,x'", ["--tokenizer", good, "--decode", "1,x"], want_rc=(3, 4),
            names=(r"decode|id",))
    refused("--decode @missing-file", ["--tokenizer", good, "--decode", "@" + P("no-such-ids")],
            want_rc=(4,))
    finish()


if __name__ == "__main__":
    main()
