#!/usr/bin/env python3
"""`fidelis check` recomputes a kiln.rocm-hf-path-attribution-result.v1 verdict as it does v2's
(issue 20, extras): the retained v1 result passes; resealed with worker.attribution
`serving_only_or_not_reproduced` while eager_full's argmax_equal is false, or with another
path's label, it fails naming $.worker.attribution and the label the paths give."""
import copy
import glob
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import kiln_util as K  # noqa: E402

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def main():
    found = sorted(glob.glob(os.path.join(K.VECTORS, "*path-attribution-v1.json")))
    if not found:
        print("skip: no retained v1 path-attribution result under " + K.VECTORS)
        sys.exit(77)
    w = tempfile.mkdtemp(prefix="fdl-kiln-v1-")
    try:
        base = json.load(open(found[0], encoding="utf-8"))
        rc, _, err = K.run(["check", found[0]])
        check(rc == 0, "the retained v1 result passes (exit %d) %s" % (rc, err.strip()[-200:]))
        check(base["worker"]["attribution"] == "eager_full_logits" and
              base["worker"]["eager_full"]["comparison"]["argmax_equal"] is False,
              "the retained verdict is eager_full_logits, from eager_full's argmax")
        for label in ("serving_only_or_not_reproduced", "hip_graph_full_logits"):
            d = copy.deepcopy(base)
            d["worker"]["attribution"] = label
            d = K.reseal(d)
            p = os.path.join(w, label + ".json")
            K.write_json(p, d)
            rc, _, err = K.run(["check", p])
            check(rc == 3 and "$.worker.attribution" in err and "eager_full_logits" in err,
                  "resealed with %s: exit 3 naming the recomputed label (exit %d) %s" %
                  (label, rc, err.strip()[-300:]))
    finally:
        shutil.rmtree(w, ignore_errors=True)
    print("%d failed" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
