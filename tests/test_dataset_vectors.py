#!/usr/bin/env python3
"""The upstream fixture's manifests (shared/vectors/fidelity/fixture-qwen3-5-tiny-root, a real
dataset's manifests without tensor bytes) pass every check that needs no tensor bytes:
`fidelis validate --manifests-only` over them, laid out as the dataset had them. Then single
edits must be caught with the right code, and the reference-order checks run as expected."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import test_dataset_lib as L  # noqa: E402

FX = os.path.join(L.SHARED, "vectors", "fidelity", "fixture-qwen3-5-tiny-root")
LAYOUT = {
    "dataset.json": "fidelity-dataset.json",
    "capture.json": "capture/manifest.json",
    "panel.json": "panel/panel.json",
    "runtime.json": "runtime/capture-runtime.json",
    "panel_receipt.json": "panel/panel-receipt.json",
}
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def lay_out(dst):
    for src, rel in LAYOUT.items():
        os.makedirs(os.path.dirname(os.path.join(dst, rel)) or dst, exist_ok=True)
        shutil.copyfile(os.path.join(FX, src), os.path.join(dst, rel))


def codes(rep):
    return sorted({(e["code"], e["rule"]) for e in rep["errors"]})


def main():
    if not os.path.isdir(FX):
        print("skipped: ../shared/vectors not present")
        return 77  # a recorded skip (CTest SKIP_RETURN_CODE), never a pass
    tmp = tempfile.mkdtemp(prefix="fdl-ds-vec-")
    try:
        root = os.path.join(tmp, "fixture")
        lay_out(root)
        rc, rep, p = L.validate(root, "--manifests-only")
        check(rc == 0, "fixture manifests: exit %d\n%s" % (rc, p.stdout))
        check(rep and rep["error_count"] == 0 and rep["warning_count"] == 0, "fixture: findings %s" % (rep and rep["errors"]))
        want_checks = {"schema", "seal.manifest", "seal.submanifests", "digest.capture_content",
                       "records", "panel.aggregate", "panel.binding", "coverage", "head",
                       "determinism", "role"}
        check(rep and want_checks <= set(rep["checks_run"]), "fixture: checks run %s" % (rep and rep["checks_run"]))
        check(rep and rep["conformance_level"] == "manifests", "fixture: level")
        check(rep and rep["subject"] == "dataset:fidelity--qwen3-5.community-root", "fixture: subject")
        # The human form says the same.
        h = subprocess.run([L.CLI, "validate", root, "--manifests-only"], capture_output=True, text=True)
        check(h.returncode == 0 and "0 error(s), 0 warning(s)" in h.stdout, "fixture human output: %s" % h.stdout)
        # The reference --manifest-only stops after the top manifest.
        rc, rep, _ = L.validate(root, "--manifest-only")
        check(rc == 0 and "seal.submanifests" not in rep["checks_run"], "fixture --manifest-only")
        # Without the payload, the full validation reports what is missing (not a crash).
        rc, rep, _ = L.validate(root)
        check(rc == 3 and ("seal_failed", "SEAL-1(b)") in codes(rep) and any(e["code"] == "missing_file" for e in rep["errors"]),
              "fixture without payload: %s" % (rep and codes(rep)))
        # inspect reads it.
        ins = subprocess.run([L.CLI, "inspect", root, "--json"], capture_output=True, text=True)
        s = json.loads(ins.stdout) if ins.returncode == 0 else {}
        check(s.get("records", {}).get("positions") == 252 and s.get("seal", {}).get("manifest_seal") == "recomputes",
              "fixture inspect: %s" % ins.stdout[:500])

        # One edit at a time, each caught by its rule.
        def edited(label, rel, edit, expect):
            d = os.path.join(tmp, label)
            lay_out(d)
            path = os.path.join(d, rel)
            doc = json.load(open(path, encoding="utf-8"))
            edit(doc)
            L.write_pretty(path, doc)
            rc, rep, _ = L.validate(d, "--manifests-only")
            got = codes(rep) if rep else []
            check(rc == 3 and expect in got, "%s: expected %s in %s" % (label, expect, got))

        edited("manifest-value", "fidelity-dataset.json",
               lambda m: m["dataset"].__setitem__("name", "renamed"), ("seal_failed", "SEAL-1(a)"))
        edited("capture-seal", "capture/manifest.json",
               lambda c: c["records"][0].__setitem__("domain", "other"), ("seal_failed", "SEAL-1(g)"))
        edited("capture-digest", "capture/manifest.json",
               lambda c: c["records"][0].__setitem__("domain", "other"), ("digest_mismatch", "SEAL-1"))
        edited("content-digest", "capture/manifest.json",
               lambda c: c["records"][2].__setitem__("tensor_content_sha256", "0" * 64), ("digest_mismatch", "5.2"))
        edited("suite-hash", "panel/panel.json",
               lambda p: p["records"][1].__setitem__("token_ids_json_sha256", "1" * 64), ("panel_digest_mismatch", "BIND-6"))
        edited("panel-receipt", "panel/panel-receipt.json",
               lambda r: r.__setitem__("receipt_sha256", "2" * 64), ("panel_digest_mismatch", "PANEL-RECEIPT"))
        # A raw-UTF-8 seal: re-encoding the manifest with \\u escapes keeps the JSON value and the
        # seal (canonical form is re-derived from values), so it must still pass.
        d = os.path.join(tmp, "ascii-escaped")
        lay_out(d)
        m = json.load(open(os.path.join(d, "fidelity-dataset.json"), encoding="utf-8"))
        with open(os.path.join(d, "fidelity-dataset.json"), "w") as f:
            json.dump(m, f, indent=2, sort_keys=True, ensure_ascii=True)
        rc, rep, _ = L.validate(d, "--manifests-only")
        # the value is the same, so the seal holds; the file digest is not bound by anything here
        check(rc == 0, "ascii-escaped manifest keeps its seal: %s" % (rep and codes(rep)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
