"""Writes a Hugging Face tokenizer directory (tokenizer.json + tokenizer_config.json) that carries
the same tokenizer as a GGUF vocabulary file, so that the two loaders of `fidelis tokenize` can
be held to the same ids.

    write_hf_dir(gguf_path, out_dir)
    python3 tok_json_from_gguf.py VOCAB.gguf OUT_DIR

Two GGUF tokenizer models are handled:
- "gpt2" (byte-level BPE): the vocabulary and the GGUF's merges as they are, a ByteLevel
  decoder, and the pre-tokenizer that tokenizer.ggml.pre names (gpt-2, starcoder,
  deepseek-llm), written the way those models' own tokenizer.json files write it.
- "llama" (SentencePiece BPE with scores and <0xXX> byte fallback): a BPE model with
  byte_fallback, whose merges are derived from the scores as Hugging Face's SentencePiece
  converter derives them, with the Prepend/Replace normalizer and the Replace, ByteFallback,
  Fuse, Strip decoder of Llama's tokenizer.json.
Tokens of type 3 (control) and 4 (user-defined) become added tokens."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_util  # noqa: E402

T_NORMAL, T_UNKNOWN, T_CONTROL, T_USER, T_UNUSED, T_BYTE = 1, 2, 3, 4, 5, 6

BYTELEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": True}

# DeepSeek LLM's split regexes, in order (its published tokenizer.json; llama.cpp's
# "deepseek-llm" entry, which src/tokenizer/pre_table.c copies - test_tokenizer_vectors.py
# checks that the two lists are equal).
DEEPSEEK_LLM_REGEXES = [
    "[\r\n]",
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-"
    "\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1"
    "\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-"
    "\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-"
    "\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4"
    "\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-"
    "\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-"
    "\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-"
    "\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-"
    "\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-"
    "\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-"
    "\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+",
    "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
    "\\s+$",
    "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
    "\\p{N}+",
]


def _pre_tokenizer(pre):
    if pre == "gpt-2":
        return dict(BYTELEVEL)
    if pre == "starcoder":
        return {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, dict(BYTELEVEL)]}
    if pre == "deepseek-llm":
        steps = [{"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated",
                  "invert": False} for r in DEEPSEEK_LLM_REGEXES]
        steps.append({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                      "use_regex": False})
        return {"type": "Sequence", "pretokenizers": steps}
    raise ValueError("tokenizer.ggml.pre %r: no tokenizer.json form is known here" % pre)


def _vocab(tokens):
    """{token: id}; a text given to two ids keeps the first (a JSON object has one entry per
    key: deepseek-llm's user-defined "ø" is also the byte-level spelling of byte 0xF8)."""
    v = {}
    for i, t in enumerate(tokens):
        v.setdefault(t, i)
    return v


def _added(tokens, types):
    return [{"id": i, "content": tokens[i], "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": ty == T_USER, "special": ty == T_CONTROL}
            for i, ty in enumerate(types) if ty in (T_CONTROL, T_USER)]


def spm_merges(tokens, types, scores):
    """The merges Hugging Face's SentencePiece converter derives from scores: each pair (a, b)
    of normal tokens whose join is a normal token, ordered by the join's score (higher first),
    then the join's id, a's id and b's id."""
    normal = {}
    for i, t in enumerate(tokens):
        if types[i] == T_NORMAL:
            normal.setdefault(t, i)
    found = []
    for t, i in normal.items():
        for k in range(1, len(t)):
            a, b = t[:k], t[k:]
            ia, ib = normal.get(a), normal.get(b)
            if ia is not None and ib is not None:
                found.append((-scores[i], i, ia, ib, a, b))
    found.sort()
    return ["%s %s" % (f[4], f[5]) for f in found]


def build(meta):
    """(tokenizer.json object, tokenizer_config.json object) for GGUF metadata meta."""
    model = meta.get("tokenizer.ggml.model")
    tokens = meta["tokenizer.ggml.tokens"]
    types = meta.get("tokenizer.ggml.token_type") or [T_NORMAL] * len(tokens)
    bos, eos = meta.get("tokenizer.ggml.bos_token_id"), meta.get("tokenizer.ggml.eos_token_id")
    if model == "gpt2":
        tj = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": _added(tokens, types),
            "normalizer": None,
            "pre_tokenizer": _pre_tokenizer(meta.get("tokenizer.ggml.pre", "default")),
            "post_processor": None,
            "decoder": dict(BYTELEVEL),
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": _vocab(tokens),
                      "merges": list(meta.get("tokenizer.ggml.merges", []))},
        }
        add_bos_default = False
    elif model == "llama":
        scores = meta["tokenizer.ggml.scores"]
        special = [i for i, t in enumerate(tokens) if t in ("<unk>", "<s>", "</s>")]
        tj = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [{"id": i, "content": tokens[i], "single_word": False,
                              "lstrip": False, "rstrip": False, "normalized": False,
                              "special": True} for i in special],
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Prepend", "prepend": "\u2581"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
            "pre_tokenizer": None,
            "post_processor": None,
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                      "vocab": _vocab(tokens),
                      "merges": spm_merges(tokens, types, scores)},
        }
        add_bos_default = True
    else:
        raise ValueError("tokenizer.ggml.model %r: only gpt2 and llama are converted" % model)
    cfg = {
        "add_bos_token": bool(meta.get("tokenizer.ggml.add_bos_token", add_bos_default)),
        "add_eos_token": bool(meta.get("tokenizer.ggml.add_eos_token", False)),
    }
    if bos is not None:
        cfg["bos_token"] = tokens[bos]
    if eos is not None:
        cfg["eos_token"] = tokens[eos]
    return tj, cfg


def write_hf_dir(gguf_path, out_dir):
    """Writes out_dir/tokenizer.json and out_dir/tokenizer_config.json; returns out_dir."""
    tj, cfg = build(gguf_util.read_metadata(gguf_path))
    os.makedirs(out_dir, exist_ok=True)
    for name, obj in (("tokenizer.json", tj), ("tokenizer_config.json", cfg)):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=None)
            f.write("\n")
    return out_dir


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: tok_json_from_gguf.py VOCAB.gguf OUT_DIR")
    print(write_hf_dir(sys.argv[1], sys.argv[2]))
