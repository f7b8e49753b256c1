#!/usr/bin/env python3
"""Writes the named seeds of fuzz/corpus/fuzz_validate_tree/ (the issue 9 and 14 reproductions).

Usage (from the repository root): fuzz/make-validate-tree-seeds.py OUT_DIR SEED_DATASET
SEED_DATASET is DIR/reference of `fidelis synth --out DIR --vocab 64 --hidden 32 --contexts 2
--tokens-per-context 6`, the dataset the harness makes for itself. Each seed is a level byte
and a list of edits in the harness encoding (see fuzz/fuzz_validate_tree.c).
"""
import json, os, sys
out, seedds = sys.argv[1], sys.argv[2]

def name(path):
    """A chosen path (pick_path with sel >= 160): 1-3 components of 1-32 bytes."""
    parts = path.split(b"/")
    assert 1 <= len(parts) <= 3
    b = bytes([160 + len(parts) - 1])
    for p in parts:
        assert 1 <= len(p) <= 32
        b += bytes([len(p) - 1]) + p
    return b

def op(code, path, extra=b""):
    return bytes([code]) + name(path) + extra

def write(path, data):
    return op(0, path, len(data).to_bytes(2, "big") + data)

crash = open("fuzz/corpus/fuzz_manifest/issue14-long-multibyte-path.json", "rb").read()
m = json.load(open(os.path.join(seedds, "fidelity-dataset.json"), encoding="utf-8"))
m["head"]["file"] = json.loads(crash)["daset"]["file"]
hostile = json.dumps(m, ensure_ascii=False, indent=2).encode("utf-8")
m = json.load(open(os.path.join(seedds, "fidelity-dataset.json"), encoding="utf-8"))
m["dataset"]["id"] = "fidelity--x\x1b]0;pwned\x07"
esc_id = json.dumps(m, ensure_ascii=False, indent=2).encode("utf-8")
seeds = {
    "valid-structural": b"\x00",
    "valid-sealed": b"\x03",
    "valid-manifests-only": b"\x01",
    "valid-manifest-only": b"\x02",
    # issue 9 defect 1, trigger 1: empty directories nested 70 deep
    "issue9-deep-nesting-70": b"\x00" + op(5, b"d", bytes([70])),
    # issue 9 defect 1, trigger 2: a subdirectory that cannot be listed
    "issue9-unlistable-panel-tokens": b"\x00" + op(6, b"panel/tokens", b"\x00"),
    # issue 9 defect 2: FIFOs where files are expected (a blocking open would hang)
    "issue9-fifo-checksums": b"\x00" + op(8, b"checksums.txt"),
    "issue9-fifo-manifest": b"\x00" + op(8, b"fidelity-dataset.json"),
    "issue9-fifo-head": b"\x03" + op(8, b"head/weight.safetensors"),
    "fifo-panel-json": b"\x00" + op(8, b"panel/panel.json"),
    # issue 9 defect 11: a truncated tensor and a 0-byte one
    "issue9-truncated-head": b"\x00" + op(3, b"head/weight.safetensors", b"\x80"),
    "issue9-empty-capture": b"\x00" + op(3, b"capture/hidden_0000.safetensors", b"\x00"),
    # symlinks inside the dataset: outwards, to a device, a loop
    "symlink-up": b"\x00" + op(7, b"head/head.json", b"\x02"),
    "symlink-dev-zero": b"\x03" + op(7, b"checksums.txt", b"\x04"),
    "symlink-loop": b"\x00" + op(7, b"panel/loop", b"\xff"),
    "dir-for-file": b"\x00" + op(9, b"capture/manifest.json"),
    # hostile names; the issue-14 path in a real manifest; an id with terminal escapes
    "escape-names": b"\x00" + write(b"\x1b[2J\xff\xfe", b"x") + op(9, b"a\x01b\x07/c\x9b"),
    "issue14-head-file": b"\x00" + write(b"fidelity-dataset.json", hostile),
    "issue14-head-file-sealed": b"\x03" + write(b"fidelity-dataset.json", hostile),
    "issue9-escape-in-id": b"\x00" + write(b"fidelity-dataset.json", esc_id),
    "checksums-nul-path": b"\x00" + op(1, b"checksums.txt", (71).to_bytes(2, "big") + b"a" * 64 + b"  x\x00y\n"),
}
for k, v in seeds.items():
    open(os.path.join(out, k), "wb").write(v)
print(len(seeds))
