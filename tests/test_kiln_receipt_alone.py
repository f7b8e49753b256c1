#!/usr/bin/env python3
"""`fidelis check` on a Kiln source receipt (kiln.serving-benchmark.v1) given alone (issue 20,
extras): the retained receipts pass; a changed value fails its seal (kiln-remove-field recipe);
a resealed receipt that breaks a rule needing no other file (dirty checkout, two runs,
concurrency 2, content that is not strict base64, reasoning text) fails, naming the field."""
import base64
import copy
import glob
import json
import os
import sys
import tempfile
import shutil

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import kiln_util as K  # noqa: E402

SHARED = os.environ.get("FDL_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def reseal(doc):
    body = {k: v for k, v in doc.items() if k != "receipt_sha256"}
    doc["receipt_sha256"] = K.canonical_sha256(body)
    return doc


def main():
    receipts = sorted(glob.glob(os.path.join(SHARED, "vectors", "kiln", "receipts", "*.json")))
    if not receipts:
        print("skip: no retained Kiln receipts under " + SHARED)
        sys.exit(77)
    w = tempfile.mkdtemp(prefix="fdl-kiln-receipt-")
    try:
        for r in receipts:
            rc, out, err = K.run(["check", r])
            check(rc == 0 and "kiln.serving-benchmark.v1" in out,
                  "%s passes alone (exit %d) %s" % (os.path.basename(r), rc, err.strip()))
        base = json.load(open(receipts[0], encoding="utf-8"))
        check(reseal(copy.deepcopy(base)) == base, "the test's reseal is the receipt's recipe")

        def case(name, edit, needle, seal=True):
            d = copy.deepcopy(base)
            edit(d)
            if seal:
                reseal(d)
            p = os.path.join(w, name + ".json")
            K.write_json(p, d)
            rc, _, err = K.run(["check", p])
            check(rc == 3 and needle in err, "%s: exit 3 naming %s (exit %d) %s" %
                  (name, needle, rc, err.strip()[-300:]))

        run0 = lambda d: d["runs"][0]  # noqa: E731
        ex = lambda d: run0(d)["output_evidence"][0]["exact_output"]  # noqa: E731
        case("changed-unsealed", lambda d: d["workload"].update(run_id="other"),
             "receipt_sha256", seal=False)
        case("dirty", lambda d: d["driver_environment"]["repository"].update(dirty=True),
             "$.driver_environment.repository.dirty")
        case("two-runs", lambda d: d["runs"].append(copy.deepcopy(d["runs"][0])), "$.runs")
        case("concurrency", lambda d: run0(d).update(concurrency=2), "$.runs[0].concurrency")
        case("not-base64", lambda d: ex(d).update(content_base64="***"), "content_base64")
        case("reasoning", lambda d: ex(d).update(
            reasoning_content_base64=base64.b64encode(b"thinking").decode()), "reasoning")
    finally:
        shutil.rmtree(w, ignore_errors=True)
    print("%d failed" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
