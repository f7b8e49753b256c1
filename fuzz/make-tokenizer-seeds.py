#!/usr/bin/env python3
"""Seeds for fuzz_tokenizer_load: small tokenizer.json files (byte-level BPE with the GPT-2
regex, a Split sequence, Digits, normalizers, a SentencePiece-style byte-fallback BPE, with and
without tokenizer_config.json) and small GGUF vocabularies (gpt2 with merges under several pre
names, llama with scores), each in the target's input layout: a selector byte, a u16 length, the
file, then the config. The builders are the hostile-input test's (tests/test_tokenizer_hostile.py).
Usage: make-tokenizer-seeds.py OUTDIR"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import test_tokenizer_hostile as H  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def seed(name, sel, body, config=b""):
    body = body if isinstance(body, bytes) else body.encode()
    config = config if isinstance(config, bytes) else config.encode()
    assert len(body) < 65536
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([sel]) + struct.pack("<H", len(body)) + body + config)


merges = ["t h", "th e", "\u0120 the", "i n", "\u0120 a", "1 2"]
extra = ["th", "the", "\u0120the", "in", "\u0120a", "12"]
byte = H.tokenizer_json()
byte["model"]["vocab"].update({t: 257 + i for i, t in enumerate(extra)})
byte["model"]["merges"] = merges
byte["pre_tokenizer"]["use_regex"] = True
seed("json-byte-level", 0, json.dumps(byte))
cfg = json.dumps({"add_bos_token": True, "bos_token": "<|bos|>", "add_eos_token": False})
seed("json-byte-level-config", 2, json.dumps(byte), cfg)
split = dict(byte, pre_tokenizer={"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated",
     "invert": False},
    {"type": "Digits", "individual_digits": True},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
    normalizer={"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]})
seed("json-split-sequence", 0, json.dumps(split))
spm_vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
spm_vocab.update({"<0x%02X>" % b: 3 + b for b in range(256)})
spm_vocab.update({"\u2581": 259, "a": 260, "b": 261, "\u2581a": 262, "ab": 263})
spm = {"version": "1.0", "added_tokens": [
    {"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
     "normalized": False, "special": True} for i, c in enumerate(["<unk>", "<s>", "</s>"])],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
    "pre_tokenizer": None, "post_processor": None,
    "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
              "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
              "byte_fallback": True, "vocab": spm_vocab,
              "merges": ["\u2581 a", "a b"]}}
seed("json-spm", 2, json.dumps(spm), json.dumps({"add_bos_token": True, "bos_token": "<s>"}))
meta = json.dumps({"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                                     "prepend_scheme": "always", "split": True}})
seed("json-metaspace", 0, json.dumps(dict(spm, normalizer=None, **json.loads(meta))))

toks = [H.B2U[b] for b in range(256)] + ["<|bos|>"] + extra
for pre in ("gpt-2", "llama3", "deepseek-llm", "starcoder", "qwen2"):
    kv = H.vocab_kvs(pre=pre, tokens=toks)
    kv[4] = H.g_arr("tokenizer.ggml.token_type", H.T_I32, [1] * 256 + [3] + [1] * len(extra))
    kv[5] = H.g_arr("tokenizer.ggml.merges", H.T_STR, merges)
    seed("gguf-gpt2-" + pre, 1, H.gguf(kv))
ltoks = list(spm_vocab)
kv = H.vocab_kvs(model="llama", pre="default", tokens=ltoks)
kv[4] = H.g_arr("tokenizer.ggml.token_type", H.T_I32, [2, 3, 3] + [6] * 256 + [1] * 5)
kv[5] = H.g_arr("tokenizer.ggml.scores", H.T_F32, [0.0] * 259 + [-1.0, -2.0, -3.0, -1.5, -2.5])
kv[6] = H.g_kv("tokenizer.ggml.bos_token_id", H.T_U32, 1)
kv[7] = H.g_kv("tokenizer.ggml.eos_token_id", H.T_U32, 2)
kv[8] = H.g_kv("tokenizer.ggml.add_bos_token", H.T_BOOL, True)
seed("gguf-llama", 1, H.gguf(kv))
