#!/usr/bin/env python3
"""Manifests written by `fidelis pack` validate against the upstream JSON Schema
(shared/vectors/schemas/fidelity/fidelity-dataset.schema.json, checked with python3-jsonschema),
and fidelis' own schema layer agrees with python3-jsonschema on a few hundred mutated manifests
(a differential test: the C rules are written out from the schema, so they must not drift)."""

import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import jsonschema

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import test_dataset_lib as L  # noqa: E402

SCHEMA = os.path.join(L.SHARED, "vectors", "schemas", "fidelity", "fidelity-dataset.schema.json")
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def schema_errors(validator, doc):
    return [e.message for e in validator.iter_errors(doc)]


def leaves(obj, path=()):
    """Every (path, value) in obj, containers included."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from leaves(v, path + (i,))


def mutate(doc, rng):
    m = copy.deepcopy(doc)
    paths = [p for p, _ in leaves(m) if p]
    path = rng.choice(paths)
    parent = m
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    choice = rng.random()
    if choice < 0.25 and isinstance(parent, dict):
        del parent[key]
        return m, "del %s" % (path,)
    value = rng.choice([None, 0, -1, 7, "", "x", "/abs/path", "a://b", "0" * 64, "ABC" * 21 + "D",
                        [], {}, True, False, 1.5, [1, 2], {"k": 1}, "panel--x", "D-x", "native"])
    parent[key] = value
    return m, "set %s = %r" % (path, value)


def c_rejects(tmp, doc, i):
    d = os.path.join(tmp, "mut%d" % i)
    os.makedirs(d)
    with open(os.path.join(d, "fidelity-dataset.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
    rc, rep, p = L.validate(d, "--manifest-only")
    shutil.rmtree(d)
    if rep is None:
        return None, p.stdout + p.stderr
    bad = [e for e in rep["errors"] if e["rule"] == "SCHEMA"]
    return bool(bad), bad


def main():
    if not os.path.isfile(SCHEMA):
        print("skipped: ../shared/vectors not present")
        return 77  # a recorded skip (CTest SKIP_RETURN_CODE), never a pass
    schema = json.load(open(SCHEMA))
    validator = jsonschema.Draft202012Validator(schema)
    tmp = tempfile.mkdtemp(prefix="fdl-ds-schema-")
    try:
        packed = []
        for label, kw in [("root-hidden", dict(form="hidden")),
                          ("quant-hidden", dict(form="hidden", role="quant")),
                          ("root-logit", dict(form="logit", in_dtype="F32")),
                          ("quant-logit-nohead", dict(form="logit", in_dtype="F32", role="quant", with_head=False)),
                          ("padded", dict(form="hidden", padded=True))]:
            inp = L.make_inputs(os.path.join(tmp, label, "in"), n=3, **kw)
            out = os.path.join(tmp, label, "out")
            p = L.pack(inp, out)
            check(p.returncode == 0, "%s: pack: %s" % (label, p.stderr))
            if p.returncode:
                continue
            m = json.load(open(os.path.join(out, "fidelity-dataset.json"), encoding="utf-8"))
            errs = schema_errors(validator, m)
            check(not errs, "%s: pack's manifest fails the upstream schema: %s" % (label, errs[:5]))
            packed.append(m)

        # Controls: the upstream example manifests are schema-valid too.
        for rel in ("fixture-qwen3-5-tiny-root/dataset.json", "fidelity-dataset.root-glm53-bf16.json"):
            doc = json.load(open(os.path.join(L.SHARED, "vectors", "fidelity", rel), encoding="utf-8"))
            check(not schema_errors(validator, doc), "%s is schema-valid" % rel)
            rejects, why = c_rejects(tmp, doc, 10**6)
            check(rejects is False, "fidelis accepts %s: %s" % (rel, why))
            packed.append(doc)

        # Differential: fidelis and python3-jsonschema agree on every mutant.
        rng = random.Random(20260102)
        disagreements = n_rej = n_acc = 0
        for i in range(int(os.environ.get("FDL_MUTANTS", "150"))):
            base = packed[i % len(packed)]
            mutant, how = mutate(base, rng)
            if mutant.get("schema") != "malaiwah.fidelity-dataset.v1" or mutant.get("format_version") != 1 \
                    or isinstance(mutant.get("format_version"), bool):
                continue  # bad_schema stops before the schema layer, by design
            py = bool(schema_errors(validator, mutant))
            n_rej += py
            n_acc += not py
            c, why = c_rejects(tmp, mutant, i)
            if c is None or c != py:
                disagreements += 1
                check(False, "mutant %d (%s): jsonschema %s, fidelis %s %s"
                      % (i, how, "rejects" if py else "accepts", "rejects" if c else "accepts", why))
        print("differential: %d disagreement(s), %d rejected, %d accepted" % (disagreements, n_rej, n_acc))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
