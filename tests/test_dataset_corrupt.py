#!/usr/bin/env python3
"""The corruption suite: each damaged dataset or bad pack input gives its code, and nothing is
written (validate leaves the tree byte-identical; a refused pack leaves no output and no staging
directory). Dataset edits that would otherwise trip the seals are re-sealed in Python
(test_dataset_lib.reseal) so each case isolates the one rule it targets."""

import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import test_dataset_lib as L  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def codes(rep):
    return {(e["code"], e["rule"]) for e in rep["errors"]} if rep else set()


def validated(label, root, expect, flags=(), exit_code=3, structural_ok=False):
    """Validates root, expecting the (code, rule) pair `expect`; the tree must not change."""
    before = L.tree_snapshot(root)
    rc, rep, p = L.validate(root, *flags)
    check(L.tree_snapshot(root) == before, "%s: validate wrote into the dataset" % label)
    check(rc == exit_code, "%s: exit %d, expected %d\n%s" % (label, rc, exit_code, p.stdout[:3000]))
    if expect:
        got = codes(rep)
        ok = expect in got if isinstance(expect[1], str) else any(c == expect[0] for c, _ in got)
        check(ok, "%s: expected %s, got %s" % (label, expect, sorted(got)))
    check(rep is None or rep["receipt_sha256"] == L.seal_of(rep, "receipt_sha256"), "%s: report seal" % label)
    return rep


def copy_of(base, tmp, label):
    d = os.path.join(tmp, label)
    shutil.copytree(base, d, symlinks=True)
    return d


def refused_pack(label, inp, out, code, needle=None, extra=()):
    p = L.pack(inp, out, extra=extra)
    check(p.returncode == 3, "%s: pack exit %d (%s)" % (label, p.returncode, p.stderr))
    check("REFUSED [%s]" % code in p.stderr, "%s: expected code %s: %s" % (label, code, p.stderr))
    if needle:
        check(needle in p.stderr, "%s: message lacks %r: %s" % (label, needle, p.stderr))
    check(not os.path.exists(out), "%s: a refused pack left %s" % (label, out))
    check(not glob.glob(os.path.join(os.path.dirname(out), ".fidelis-staging-*")), "%s: a refused pack left a staging directory" % label)
    return p


def headerless_masks(tmp):
    """The reference dataset builder writes masks as raw little-endian int64 with no .npy header:
    accepted (with a headerless_mask warning) when the size is exactly tokens x 8 (or x 1) and
    every value is 0 or 1; anything else stays refused."""
    inp = L.make_inputs(os.path.join(tmp, "in-masks"), n=3, length=16, padded=True, seed=4)
    base = os.path.join(tmp, "masked")
    p = L.pack(inp, base)
    check(p.returncode == 0, "masked pack: %s" % p.stderr)

    def with_mask(label, make):
        d = copy_of(base, tmp, label)
        panel = json.load(open(os.path.join(d, "panel", "panel.json")))
        rec = panel["records"][1]
        path = os.path.join(d, rec["attention_mask_file"])
        mask = np.load(path).reshape(-1)
        raw = make(mask)
        open(path, "wb").write(raw)
        digest = L.sha(raw)

        def edit(docs):
            for key in ("panel", "capture"):
                for r in docs[key]["records"]:
                    if r["index"] == rec["index"]:
                        r["attention_mask_sha256"] = digest
        L.reseal(d, edit)
        return d

    for label, dtype in (("int64", "<i8"), ("uint8", "u1")):
        d = with_mask("mask-" + label, lambda m: m.astype(dtype).tobytes())
        rep = validated("headerless %s mask" % label, d, None, exit_code=2)
        warns = {(w["code"], w["rule"]) for w in (rep or {}).get("warnings", [])}
        check(rep and rep["error_count"] == 0 and warns == {("headerless_mask", "BIND-3")},
              "headerless %s mask: one warning, no error: %s %s" % (label, codes(rep), warns))
    d = with_mask("mask-two", lambda m: np.where(m > 0, 2, 0).astype("<i8").tobytes())
    validated("headerless mask with a 2", d, ("panel_binding", "BIND-3"))
    d = with_mask("mask-short", lambda m: m.astype("<i8").tobytes()[:-8])
    validated("headerless mask of the wrong size", d, ("panel_binding", "BIND-3"))


def unreadable_as_nobody(base, tmp):
    """A subdirectory the user cannot list is a refusal naming it (run as nobody; root can read
    everything). Needs root to drop privileges: otherwise the case is reported as not run."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("note: not root or no setpriv: the unreadable-directory case did not run")
        return
    d = copy_of(base, tmp, "unreadable")
    for dirpath, dirs, files in os.walk(d):
        os.chmod(dirpath, 0o755)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o644)
    os.chmod(tmp, 0o755)
    os.chmod(os.path.join(d, "panel", "tokens"), 0)
    try:
        p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                            L.cli_for_nobody(tmp), "validate", d, "--json"], capture_output=True,
                           text=True)
        check(p.returncode == 3, "unreadable: exit %d: %s" % (p.returncode, p.stderr))
        rep = json.loads(p.stdout) if p.stdout.strip() else {}
        where = [e["where"] for e in rep.get("errors", []) if e["code"] == "tree_unreadable"]
        check(where == ["panel/tokens"], "unreadable: names panel/tokens, got %s" % where)
    finally:
        os.chmod(os.path.join(d, "panel", "tokens"), 0o755)
        os.chmod(tmp, 0o700)


def main():
    tmp = tempfile.mkdtemp(prefix="fdl-ds-bad-")
    try:
        inp = L.make_inputs(os.path.join(tmp, "in"), n=5, length=16, padded=True)
        base = os.path.join(tmp, "base")
        p = L.pack(inp, base)
        if p.returncode != 0:
            print("FAIL: base pack: %s" % p.stderr)
            return 1
        validated("base", base, None, exit_code=0)
        validated("base sealed", base, None, ("--verify-tensors",), exit_code=0)

        # 1. A flipped tensor byte is caught by default (every listed file is hashed, as the
        #    reference validator does) and by the sealed level; --structural hashes nothing and
        #    says so.
        d = copy_of(base, tmp, "flip")
        path = os.path.join(d, "capture", "hidden_0001.safetensors")
        raw = bytearray(open(path, "rb").read())
        raw[-3] ^= 0x01
        open(path, "wb").write(raw)
        rep = validated("flip default", d, ("tensor_mismatch", "SEAL-1(c)/SEAL-2"))
        check(rep and rep["conformance_level"] == "invalid", "flip: invalid by default")
        rep = validated("flip --structural", d, None, ("--structural",), exit_code=0)
        check(rep and rep["conformance_level"] == "manifests", "flip: --structural claims manifests")
        check(rep and "seal.checksums(listed, nothing hashed)" in rep["checks_run"],
              "flip: --structural says nothing was hashed")
        rep = validated("flip sealed", d, ("tensor_mismatch", "SEAL-1(d)"), ("--verify-tensors",))
        check(("tensor_mismatch", "SEAL-1(c)/SEAL-2") in codes(rep), "flip: checksums line also mismatches")
        check(rep and rep["conformance_level"] == "invalid", "flip: invalid level")
        rep = validated("base default", base, None, exit_code=0)
        check(rep and rep["conformance_level"] == "structural", "base: structural by default")

        # 1b. Sizes are stat'ed at every level: an emptied capture tensor and a half-truncated
        #     head are errors even when nothing is hashed.
        d = copy_of(base, tmp, "sizes")
        open(os.path.join(d, "capture", "hidden_0002.safetensors"), "wb").close()
        head = os.path.join(d, "head", "weight.safetensors")
        hraw = open(head, "rb").read()
        open(head, "wb").write(hraw[:len(hraw) // 2])
        rep = validated("sizes --structural", d, ("size_mismatch", "SEAL-1(d)"), ("--structural",))
        check(("size_mismatch", "HEAD-IDENT") in codes(rep), "sizes: the truncated head is found")

        # 1c. A NaN is an error at the sealed level, named by record, row and column.
        d = copy_of(base, tmp, "nan")
        path = os.path.join(d, "capture", "hidden_0003.safetensors")
        raw = bytearray(open(path, "rb").read())
        n = struct.unpack("<Q", raw[:8])[0]
        hdr = json.loads(raw[8:8 + n])
        key = next(k for k in hdr if k != "__metadata__")
        width = hdr[key]["shape"][1]
        esize = {"BF16": 2, "F16": 2, "F32": 4}[hdr[key]["dtype"]]
        at = 8 + n + hdr[key]["data_offsets"][0] + (2 * width + 5) * esize
        raw[at:at + esize] = {2: b"\xc0\x7f", 4: b"\x00\x00\xc0\x7f"}[esize]
        open(path, "wb").write(raw)
        rep = validated("nan sealed", d, ("non_finite", "SEAL-1(d)"), ("--verify-tensors",))
        msg = [e["message"] for e in (rep or {}).get("errors", []) if e["code"] == "non_finite"]
        check(msg and "record 3" in msg[0] and "row 2, column 5" in msg[0], "nan: located %s" % msg)

        # 1d. A tree that cannot be walked (nested past the limit) is a refusal naming where,
        #     never a crash, in validate and in compare.
        d = copy_of(base, tmp, "deep")
        os.makedirs(os.path.join(d, *(["d"] * 70)))
        rep = validated("deep tree", d, ("tree_unreadable", "PATH-4"))
        where = [e["where"] for e in (rep or {}).get("errors", []) if e["code"] == "tree_unreadable"]
        check(where and where[0].startswith("d/d/d/"), "deep: the finding names the directory %s" % where)
        unreadable_as_nobody(base, tmp)

        # 1e. validate checks the calendar of the sealed created_utc too.
        d = copy_of(base, tmp, "when")
        L.reseal(d, lambda docs: docs["manifest"].__setitem__("created_utc", "2026-02-30T25:61:61Z"))
        validated("impossible created_utc", d, ("bad_timestamp", "created_utc"))
        headerless_masks(tmp)

        # 2. An edited manifest value.
        d = copy_of(base, tmp, "edit")
        m = json.load(open(os.path.join(d, "fidelity-dataset.json")))
        m["dataset"]["name"] = "a different name"
        L.write_pretty(os.path.join(d, "fidelity-dataset.json"), m)
        validated("edited manifest", d, ("seal_failed", "SEAL-1(a)"))

        # 3. An extra file.
        d = copy_of(base, tmp, "extra")
        open(os.path.join(d, "panel", "notes.txt"), "w").write("hello\n")
        validated("extra file", d, ("unlisted_file", "SEAL-1(c)/SEAL-2"))

        # 4. A missing file.
        d = copy_of(base, tmp, "missing")
        os.remove(os.path.join(d, "panel", "tokens", "context-0002.json"))
        rep = validated("missing file", d, ("missing_file", "SEAL-1(c)/SEAL-2"))
        check(("missing_file", "3") in codes(rep), "missing token file named by BIND-6")
        d = copy_of(base, tmp, "missing-tensor")
        os.remove(os.path.join(d, "capture", "hidden_0004.safetensors"))
        validated("missing tensor", d, ("missing_file", "SEAL-1(c)/SEAL-2"), ("--verify-tensors",))
        validated("missing tensor, --allow-partial", d, None, ("--verify-tensors", "--allow-partial"), exit_code=0)

        # 5. A symlink (file, and directory), never followed.
        d = copy_of(base, tmp, "symlink")
        os.symlink("README.md", os.path.join(d, "README2.md"))
        validated("symlink file", d, ("symlink", "PATH-4"))
        d = copy_of(base, tmp, "symlink-dir")
        shutil.move(os.path.join(d, "panel", "tokens"), os.path.join(tmp, "tokens-elsewhere"))
        os.symlink(os.path.join(tmp, "tokens-elsewhere"), os.path.join(d, "panel", "tokens"))
        rep = validated("symlinked directory", d, ("symlink", "PATH-4"))
        check(rep and rep["structural_status"] == "invalid", "symlinked directory: invalid")
        d = copy_of(base, tmp, "symlink-manifest")
        os.rename(os.path.join(d, "capture", "manifest.json"), os.path.join(tmp, "manifest-elsewhere.json"))
        os.symlink(os.path.join(tmp, "manifest-elsewhere.json"), os.path.join(d, "capture", "manifest.json"))
        validated("symlinked sub-manifest", d, ("symlink", "CAPTURE"))

        # 6. An absolute path and a '..' escape (re-sealed, so only the path rule fires).
        d = copy_of(base, tmp, "absolute")
        L.reseal(d, lambda docs: docs["capture"]["records"][0].__setitem__("file", "/etc/hostname"))
        validated("absolute path", d, ("path_escape", "PATH-1/PATH-3"), ("--verify-tensors",))
        d = copy_of(base, tmp, "dotdot")
        L.reseal(d, lambda docs: docs["panel"]["records"][1].__setitem__("token_file", "../outside.json"))
        validated("'..' escape", d, ("path_escape", "PATH-1/PATH-3"))
        d = copy_of(base, tmp, "dotdot-runtime")
        L.reseal(d, lambda docs: docs["capture"].__setitem__("runtime_manifest", "../../runtime/capture-runtime.json"))
        validated("runtime_manifest escaping the root", d, ("path_escape", "PATH-1/PATH-3"))
        d = copy_of(base, tmp, "checksums-escape")
        with open(os.path.join(d, "checksums.txt"), "a") as f:
            f.write("%s  ../../etc/passwd\n" % ("0" * 64))
        m = json.load(open(os.path.join(d, "fidelity-dataset.json")))
        m["seal"]["checksums_sha256"] = L.sha_file(os.path.join(d, "checksums.txt"))
        m["dataset_sha256"] = L.seal_of(m, "dataset_sha256")
        L.write_pretty(os.path.join(d, "fidelity-dataset.json"), m)
        validated("checksums.txt naming '..'", d, ("seal_failed", "SEAL-1(c)/SEAL-2"))

        # 7. A duplicate record index (re-sealed).
        d = copy_of(base, tmp, "duplicate")
        L.reseal(d, lambda docs: docs["capture"]["records"][1].__setitem__("index", 0))
        rep = validated("duplicate index", d, ("digest_mismatch", "REC-1"))
        check(("digest_mismatch", "5.2") in codes(rep), "duplicate index: content digest refuses it")

        # 8. A mask / row-count mismatch (re-sealed): prediction_positions no longer what the
        #    mask selects, and no longer what the capture stored.
        d = copy_of(base, tmp, "mask-rows")
        def bump(docs):
            r = docs["panel"]["records"][2]
            r["prediction_positions"] += 1
            docs["panel"]["scored_positions_total"] += 1
        L.reseal(d, bump)
        rep = validated("mask/row mismatch", d, ("panel_binding", "7.3"))
        check(("panel_binding", "BIND-4") in codes(rep), "mask/row mismatch: BIND-4")
        d = copy_of(base, tmp, "mask-bytes")
        mp = os.path.join(d, "panel", "masks", "context-0000.npy")
        arr = np.load(mp)
        arr[3] = 1 - arr[3]
        np.save(mp, arr)
        L.reseal(d)
        validated("mask bytes changed", d, ("panel_digest_mismatch", "BIND-3"))

        # 9. A truncated tensor file inside a dataset (listing re-sealed): bad_tensor_file.
        d = copy_of(base, tmp, "truncated")
        path = os.path.join(d, "capture", "hidden_0002.safetensors")
        raw = open(path, "rb").read()
        open(path, "wb").write(raw[:len(raw) - 10])
        L.rewrite_checksums(d)
        m = json.load(open(os.path.join(d, "fidelity-dataset.json")))
        m["seal"]["checksums_sha256"] = L.sha_file(os.path.join(d, "checksums.txt"))
        m["dataset_sha256"] = L.seal_of(m, "dataset_sha256")
        L.write_pretty(os.path.join(d, "fidelity-dataset.json"), m)
        validated("truncated tensor", d, ("bad_tensor_file", "SEAL-1(d)"), ("--verify-tensors",))

        # 10. A credential in the tree.
        d = copy_of(base, tmp, "credential")
        open(os.path.join(d, ".hf_token"), "w").write("hf_secret\n")
        validated("credential", d, ("credential_in_tree", "CREDENTIAL"))

        # 11. Head rules: a hidden-form dataset whose head digest is gone (re-sealed).
        d = copy_of(base, tmp, "head")
        def drop_head(docs):
            for h in (docs["manifest"]["head"], docs["head"]):
                h["tensor_content_sha256"] = None
                h["raw_tensor_sha256"] = None
        L.reseal(d, drop_head)
        validated("head digest missing", d, ("head_mismatch", "HEAD-4"))

        # 12. Coverage: a record dropped from the capture manifest but still declared.
        d = copy_of(base, tmp, "coverage")
        L.reseal(d, lambda docs: docs["capture"]["records"].pop())
        validated("incomplete", d, ("incomplete", "COV-1"))

        # 12b. The remaining rules, one re-sealed edit each.
        def edit_case(label, edit, expect, flags=(), exit_code=3):
            d = copy_of(base, tmp, label)
            L.reseal(d, edit)
            return validated(label, d, expect, flags, exit_code=exit_code)

        def scope_rows(docs):
            return docs["manifest"]["scope"]["assignments"]
        edit_case("scope duplicate", lambda docs: scope_rows(docs).append(dict(scope_rows(docs)[0])),
                  ("scope_duplicate_assignment", "SCOPE-004"))
        edit_case("scope keys", lambda docs: scope_rows(docs)[1].__setitem__("bits", 4),
                  ("scope_assignment_keys", "SCOPE-004"))
        edit_case("scope coverage", lambda docs: docs["manifest"]["scope"].__setitem__(
            "assignments", [a for a in scope_rows(docs) if a["tensor_class"] != "embed_tokens"]),
            ("scope_coverage", "SCOPE-004"))
        edit_case("raw chunks", lambda docs: docs["capture"]["records"][0].__setitem__("raw_chunks_retained", True),
                  ("path_escape", "REC-4"))
        edit_case("head.json", lambda docs: docs["head"].__setitem__("source", "unknown"),
                  ("head_mismatch", "HEAD-JSON"))
        edit_case("hidden head applied", lambda docs: [h.__setitem__("applied_in_capture", True)
                                                      for h in (docs["manifest"]["head"], docs["head"])],
                  ("schema_invalid", "HEAD-5"))
        edit_case("runtime lane", lambda docs: docs["runtime"].__setitem__("lane", "streaming"),
                  ("schema_invalid", "9.1"))
        edit_case("determinism container", lambda docs: docs["manifest"]["determinism"].__setitem__(
            "evidence_hashes", [docs["manifest"]["runtime"]["file_sha256"]]), ("schema_invalid", "DET-D2"))
        # warnings: exit 2, and --strict makes them errors
        def no_disclosure(docs):
            docs["manifest"]["disclosures"] = [d for d in docs["manifest"]["disclosures"] if d["code"] != "reduced_run_count"]
        rep = edit_case("DET-D4", no_disclosure, None, exit_code=2)
        check(rep and [(w["code"], w["rule"]) for w in rep["warnings"]] == [("reduced_run_count", "DET-D4")], "DET-D4 warning")
        d = copy_of(base, tmp, "DET-D4-strict")
        L.reseal(d, no_disclosure)
        validated("DET-D4 --strict", d, ("reduced_run_count", "DET-D4"), ("--strict",))
        def same_file_digest(docs):
            for h in (docs["manifest"]["head"], docs["head"]):
                h["file_sha256"] = h["tensor_content_sha256"]
        rep = edit_case("O-6", same_file_digest, None, exit_code=2)
        check(rep and ("schema_invalid", "HEAD-IDENT/O-6") in {(w["code"], w["rule"]) for w in rep["warnings"]}, "O-6 warning")
        rep = edit_case("legacy aggregate", lambda docs: docs["panel"].__setitem__("panel_token_sha256_legacy", "3" * 64),
                        None, exit_code=2)
        check(rep and ("panel_digest_mismatch", "5.1") in {(w["code"], w["rule"]) for w in rep["warnings"]}, "legacy aggregate warning")
        d = copy_of(base, tmp, "no head payload")
        os.remove(os.path.join(d, "head", "weight.safetensors"))
        L.reseal(d)
        rep = validated("root without its head payload", d, None, exit_code=2)
        check(rep and ("missing_file", "3") in {(w["code"], w["rule"]) for w in rep["warnings"]}, "absent root head: warning")
        # a remap whose target does not hash to its key
        d = copy_of(base, tmp, "remap")
        remap = {"schema": "malaiwah.fidelity-path-remap.v1", "receipt_sha256": "",
                 "entries": {"4" * 64: "panel/tokens/context-0000.json"}, "resolution_rule": "by digest"}
        remap["receipt_sha256"] = L.seal_of(remap, "receipt_sha256")
        L.write_pretty(os.path.join(d, "panel", "panel-remap.json"), remap)
        L.reseal(d, lambda docs: docs["manifest"]["panel"].__setitem__("remap_file", "panel/panel-remap.json"))
        validated("remap", d, ("remap_invalid", "REMAP-2"))

        # 13. A missing manifest, and not a dataset at all.
        d = copy_of(base, tmp, "nomanifest")
        os.remove(os.path.join(d, "fidelity-dataset.json"))
        validated("no manifest", d, ("bad_schema", "SCHEMA"))

        # ---- pack refusals: the code, the message, and nothing written ---------------------
        out = os.path.join(tmp, "out")

        bad = L.make_inputs(os.path.join(tmp, "nan"), n=4, length=16)
        path = os.path.join(bad["tensors"], "0002.safetensors")
        n, header = L.read_safetensors_header(path)
        raw = bytearray(open(path, "rb").read())
        width = header["hidden_states"]["shape"][1]
        at = 8 + n + 2 * (5 * width + 7)  # row 5, column 7
        raw[at:at + 2] = struct.pack("<H", 0x7FC0)  # a BF16 NaN
        open(path, "wb").write(raw)
        refused_pack("NaN", bad, out, "non_finite", "record 2 row 5")

        bad = L.make_inputs(os.path.join(tmp, "rows"), n=3, length=16, padded=True)
        path = os.path.join(bad["tensors"], "0001.safetensors")
        n, header = L.read_safetensors_header(path)
        rows, width = header["hidden_states"]["shape"]
        vals = L.bf16_bits(np.zeros((rows + 1, width), dtype=np.float32))
        L.write_safetensors(path, [("hidden_states", "BF16", (rows + 1, width), vals.tobytes())])
        refused_pack("row count", bad, out, "panel_binding", "record 1")

        bad = L.make_inputs(os.path.join(tmp, "trunc"), n=3)
        path = os.path.join(bad["tensors"], "0000.safetensors")
        raw = open(path, "rb").read()
        open(path, "wb").write(raw[:len(raw) - 7])
        refused_pack("truncated safetensors", bad, out, "bad_tensor_file")

        bad = L.make_inputs(os.path.join(tmp, "dup"), n=3)
        lines = open(bad["panel"]).read().splitlines()
        first = json.loads(lines[0])
        lines.append(json.dumps(dict(first, tokens=first["tokens"])))
        open(bad["panel"], "w").write("\n".join(lines) + "\n")
        refused_pack("duplicate panel index", bad, out, "digest_mismatch", "duplicate record index")

        bad = L.make_inputs(os.path.join(tmp, "masklen"), n=3, padded=True)
        lines = [json.loads(l) for l in open(bad["panel"])]
        lines[0]["mask"] = lines[0]["mask"][:-1]
        open(bad["panel"], "w").write("".join(json.dumps(l) + "\n" for l in lines))
        refused_pack("mask length", bad, out, "panel_binding", "'mask'")

        bad = L.make_inputs(os.path.join(tmp, "nohead"), n=2, role="quant", with_head=False)
        refused_pack("hidden form without a head digest", bad, out, "head_mismatch", "HEAD-4")

        bad = L.make_inputs(os.path.join(tmp, "ragged"), n=3)
        lines = [json.loads(l) for l in open(bad["panel"])]
        lines[1]["tokens"] = lines[1]["tokens"][:-1]
        open(bad["panel"], "w").write("".join(json.dumps(l) + "\n" for l in lines))
        refused_pack("ragged panel", bad, out, "panel_binding", "ragged")

        bad = L.make_inputs(os.path.join(tmp, "vocab"), n=2, vocab=50)
        lines = [json.loads(l) for l in open(bad["panel"])]
        lines[0]["tokens"][3] = 50
        open(bad["panel"], "w").write("".join(json.dumps(l) + "\n" for l in lines))
        refused_pack("token outside the vocabulary", bad, out, "panel_binding", "outside the vocabulary")

        bad = L.make_inputs(os.path.join(tmp, "stray"), n=2)
        shutil.copy(os.path.join(bad["tensors"], "0000.safetensors"), os.path.join(bad["tensors"], "0007.safetensors"))
        refused_pack("tensor without a panel record", bad, out, "panel_binding", "0007")

        bad = L.make_inputs(os.path.join(tmp, "meta"), n=2, meta_extra={"lanee": "other"})
        p = L.pack(bad, out)
        check(p.returncode == 3 and "REFUSED [bad_input]" in p.stderr and "lanee" in p.stderr and not os.path.exists(out),
              "unknown meta key: %s" % p.stderr)

        # created_utc must be exactly YYYY-MM-DDTHH:MM:SSZ (it is sealed into the dataset verbatim).
        # It must also be a real time: the calendar is checked, not just the shape.
        for k, stamp in enumerate(("2026-1-02T03:04:05Zx", "+026-01-02T03:04:05Z", " 026-01-02T03:04:05Z",
                                   "2026-01-02T03:04:05z", "2026-02-30T25:61:61Z",
                                   "2026-02-29T00:00:00Z")):
            bad = L.make_inputs(os.path.join(tmp, "created%d" % k), n=2, meta_extra={"created_utc": stamp})
            p = L.pack(bad, out)
            check(p.returncode == 3 and "REFUSED [bad_input]" in p.stderr and "created_utc" in p.stderr
                  and not os.path.exists(out), "created_utc %r: %s" % (stamp, p.stderr))
            shutil.rmtree(out, ignore_errors=True)

        bad = L.make_inputs(os.path.join(tmp, "rootq"), n=2, meta_extra={"weights": {
            "repository": "x/y", "revision": None, "quantized": True}})
        refused_pack("quantized root", bad, out, "schema_invalid", "ROOT-1")

        # an existing output is refused and untouched
        os.makedirs(out)
        open(os.path.join(out, "keep.txt"), "w").write("mine\n")
        before = L.tree_snapshot(out)
        p = L.pack(inp, out)
        check(p.returncode == 3 and "REFUSED [destination_exists]" in p.stderr, "existing output: %s" % p.stderr)
        check(L.tree_snapshot(out) == before and not glob.glob(os.path.join(os.path.dirname(out), ".fidelis-staging-*")), "existing output untouched")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
