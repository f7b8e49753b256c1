#!/usr/bin/env python3
"""`fidelis check --root DIR`: the rules that need another file (KILN-ATTRIBUTION.md §5's source
receipts, §14.1-§14.3's request bindings, §14.2 step 6's oracle result). Kiln-shaped trees are
built here, independently of the C code:

* the retained files at the paths the records name: the vllm receipt is not among the vectors,
  so every record fails on exactly that receipt (and so the kiln receipt's rules pass);
* a synthetic tree: a request with two fabricated receipts that satisfy every §5 rule, and v1
  and v2 oracle, path and layer results re-sealed to bind it, which all pass; then one broken
  copy per rule, each failing with its own message (exit 3), and the usage errors (exit 4)."""
import base64
import copy
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import kiln_util as K  # noqa: E402
import test_kiln_check_v2 as V2  # noqa: E402

FAILS = []
REQ_REL = "qualification/oracles/rocm-strix-halo-greedy-c1-first-divergence-v1.json"
ORACLE_V1 = "20260719t003452-rocm-strix-halo-hf-next-token-first-divergence-v1.json"
ORACLE_REL = "qualification/oracle-results/rocm/strix-halo/" + ORACLE_V1
PATH_V1 = "20260719t014807-rocm-strix-halo-hf-path-attribution-v1.json"
LAYER_V1 = "20260719t022838-rocm-strix-halo-hf-layer-attribution-v1.json"
RECEIPT = "20260718t232632-rocm-strix-halo-greedy-c1-divergence-v1.kiln.json"
RECEIPT_DIR = "benchmarks/receipts/rocm/strix-halo/"
VLLM_REL = RECEIPT_DIR + "20260718t232632-rocm-strix-halo-greedy-c1-divergence-v1.vllm.json"


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def put(root, rel, doc):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    K.write_json(p, doc)
    return p


def b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def seal_receipt(rc):
    rc = {k: v for k, v in rc.items() if k != "receipt_sha256"}
    rc["receipt_sha256"] = K.canonical_sha256(rc)
    return rc


# ---- the retained tree --------------------------------------------------------------------

def retained(w):
    root = os.path.join(w, "retained")
    shutil.copytree(K.VECTORS, os.path.join(root, "v"))
    os.makedirs(os.path.join(root, os.path.dirname(REQ_REL)))
    shutil.copy(K.REQUEST, os.path.join(root, REQ_REL))
    os.makedirs(os.path.join(root, os.path.dirname(ORACLE_REL)))
    shutil.copy(os.path.join(K.VECTORS, ORACLE_V1), os.path.join(root, ORACLE_REL))
    os.makedirs(os.path.join(root, RECEIPT_DIR))
    shutil.copy(os.path.join(K.VECTORS, "receipts", RECEIPT), os.path.join(root, RECEIPT_DIR))
    for f in (REQ_REL, ORACLE_REL, "v/" + PATH_V1, "v/" + LAYER_V1):
        rc, out, err = K.run(["check", "--root", root, os.path.join(root, f)])
        want = "$.source.vllm_receipt.path: receipt missing: %s (no such file under the root" % VLLM_REL
        check(rc == 3 and want in err and "kiln_receipt" not in err and not out,
              "retained %s: exit %d, fails on the missing vllm receipt only: %s"
              % (os.path.basename(f), rc, err.strip()))
    # Without --root the same files pass, with a note that the references were not followed.
    rc, out, err = K.run(["check", os.path.join(root, REQ_REL), os.path.join(root, "v", PATH_V1)])
    check(rc == 0 and out.count("OK  ") == 2 and "not checked: no --root" in err,
          "retained, no --root: exit %d, OK twice and the note: %s" % (rc, err.strip()))


# ---- the synthetic tree -------------------------------------------------------------------

SYN_REQ = "qualification/oracles/synthetic-first-divergence-v1.json"
SYN_RECEIPT = "benchmarks/receipts/synthetic/20261201t000000-synthetic.%s.json"
SYN = {"oracle2": "qualification/oracle-results/synthetic/oracle-v2.json",
       "path2": "qualification/path-results/synthetic/path-v2.json",
       "layer2": "qualification/layer-results/synthetic/layer-v2.json",
       "oracle1": "qualification/oracle-results/synthetic/oracle-v1.json",
       "path1": "qualification/path-results/synthetic/path-v1.json",
       "layer1": "qualification/layer-results/synthetic/layer-v1.json"}


def receipt_for(req, engine, idx):
    with open(os.path.join(K.VECTORS, "receipts", RECEIPT), encoding="utf-8") as f:
        rc = json.load(f)
    rc["engine"]["name"] = engine
    text = "".join(p["text"] for p in req["continuation_prefix"]) + \
        req["candidates"][idx]["text"] + " for the synthetic tree \u00e9."
    rc["runs"][0]["output_evidence"][0]["exact_output"] = {
        "content_base64": b64(text), "reasoning_content_base64": ""}
    return rc


def path_v2(req_sha, oracle):
    v1 = V2.load(PATH_V1)
    w = {k: v for k, v in v1["worker"].items() if k != "containment"}
    w["schema"] = "kiln.rocm-hf-path-attribution.v2"
    rec = {"schema": "kiln.rocm-hf-path-attribution-result.v2",
           "created_at_utc": "2026-12-01T16:00:00Z", "duration_seconds": 90.5,
           "source": {"commit": "a" * 40, "origin_main": "a" * 40, "tree": "b" * 40},
           "binary": {"build_duration_seconds": 3.5,
                      "build_environment_policy": "closed-source-build-v1",
                      "path": "target/release/examples/rocm_hf_path_attribution",
                      "sha256": V2.h("c")},
           "implementation": {"guarded_exec_sha256": V2.h("d"),
                              "process_runner_sha256": V2.h("f"), "runner_sha256": V2.h("2")},
           "request": {"path": SYN_REQ, "sha256": req_sha},
           "model_identity": v1["model_identity"],
           "model_fingerprint": {"implementation_sha256": V2.h("3"), "python_sha256": V2.h("1"),
                                 "process": V2.process()},
           "oracle_reference": {"bytes": oracle["reference_artifact"]["bytes"],
                                "oracle_result_path": SYN["oracle2"],
                                "oracle_result_sha256": oracle["result_sha256"],
                                "raw_location": "local_ignored",
                                "raw_sha256": oracle["reference_artifact"]["sha256"]},
           "containment": V2.arm(), "worker": w}
    return rec


def synthetic(root, receipt_mut=None, req_mut=None, mut=None):
    """Writes the synthetic tree under root. receipt_mut(engine, receipt) may change a receipt
    before it is sealed; req_mut(request) the request before its identity is taken; mut(name,
    record) a record before it is sealed."""
    with open(K.REQUEST, encoding="utf-8") as f:
        req = json.load(f)
    if req_mut:
        req_mut(req)
    for idx, engine in enumerate(("kiln", "vllm")):
        rc = receipt_for(req, engine, idx)
        if receipt_mut:
            rc = receipt_mut(engine, rc) or rc
        if "receipt_sha256" not in rc or rc.pop("_keep_hash", False) is False:
            rc = seal_receipt(rc)
        rel = SYN_RECEIPT % engine
        p = put(root, rel, rc)
        req["source"][engine + "_receipt"] = {
            "path": rel, "file_sha256": K.file_sha256(p), "content_sha256": rc["receipt_sha256"]}
    put(root, SYN_REQ, req)
    ident = K.canonical_sha256(req)
    ish = req["input_token_ids_sha256"]

    def seal(name, rec):
        if mut:
            mut(name, rec)
        rec = K.reseal(rec)
        put(root, SYN[name], rec)
        return rec

    o2 = V2.oracle_v2()
    o1 = V2.load(ORACLE_V1)
    for o in (o1, o2):
        o["request"] = {"contract_path": SYN_REQ, "id": req["id"], "sha256": ident,
                        "source": copy.deepcopy(req["source"])}
        o["oracle"]["request_sha256"] = ident
        o["oracle"]["input_token_ids_sha256"] = ish
    o2 = seal("oracle2", o2)
    o1 = seal("oracle1", o1)
    p2 = path_v2(ident, o2)
    p1 = V2.load(PATH_V1)
    p1["request"] = {"path": SYN_REQ, "sha256": ident}
    p1["oracle_reference"]["oracle_result_path"] = SYN["oracle1"]
    p1["oracle_reference"]["oracle_result_sha256"] = o1["result_sha256"]
    for p in (p1, p2):
        p["worker"]["input_token_ids_sha256"] = ish
    seal("path2", p2)
    seal("path1", p1)
    l2 = V2.layer_v2()
    l1 = V2.load(LAYER_V1)
    for lr in (l1, l2):
        lr["request"] = {"path": SYN_REQ, "sha256": ident}
        lr["reference"]["evidence"]["request_sha256"] = ident
        lr["reference"]["evidence"]["input_token_ids_sha256"] = ish
        lr["worker"]["input_token_ids_sha256"] = ish
    seal("layer2", l2)
    seal("layer1", l1)
    return req


def schema_valid(root):
    """The synthetic records and request are Kiln-shaped: each validates against Kiln's schema."""
    try:
        import jsonschema
    except ImportError:
        print("note: python3-jsonschema missing, schema validation skipped")
        return
    schemas = {}
    for n in os.listdir(K.SCHEMAS):
        if n.endswith(".schema.json"):
            with open(os.path.join(K.SCHEMAS, n), encoding="utf-8") as f:
                schemas[n[:-len(".schema.json")]] = json.load(f)
    store = {s["$id"]: s for s in schemas.values() if "$id" in s}
    for name, rel in [("rocm-hf-path-attribution-v2", SYN["path2"]),
                      ("rocm-hf-next-token-oracle-v2", SYN["oracle2"]),
                      ("rocm-hf-layer-attribution-v2", SYN["layer2"]),
                      ("hf-next-token-request-v1", SYN_REQ)]:
        s = schemas[name]
        v = jsonschema.Draft202012Validator(
            s, resolver=jsonschema.RefResolver.from_schema(s, store=store))
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            errs = [e.message[:120] for e in v.iter_errors(json.load(f))]
        check(not errs, "synthetic %s validates against %s: %s" % (rel, name, errs[:2]))


def run_check(root, rel, extra=()):
    return K.run(["check", "--root", root] + list(extra) + [os.path.join(root, rel)])


def fresh(w, tag):
    root = os.path.join(w, tag)
    os.makedirs(root)
    return root


def fails(w, tag, rel, needle, rc_want=3, **build):
    root = fresh(w, tag)
    setup = build.pop("setup", None)
    synthetic(root, **build)
    if setup:
        setup(root)
    rc, out, err = run_check(root, rel)
    check(rc == rc_want and needle in err and "OK" not in out,
          "%s: exit %d (want %d), stderr has %r: %s" % (tag, rc, rc_want, needle, err.strip()))


def receipt_change(engine, fn):
    def f(e, rc):
        if e == engine:
            return fn(rc)
    return f


def main():
    if not K.CLI or not os.access(K.CLI, os.X_OK):
        print("skip: FDL_CLI is not an executable")
        return 77
    if not os.path.isdir(K.VECTORS):
        print("skip: no vectors under FDL_SHARED")
        return 77
    w = tempfile.mkdtemp(prefix="fdl-kiln-refs-")
    try:
        retained(w)

        # Everything binds: each record passes with the references followed, and no note.
        root = fresh(w, "good")
        synthetic(root)
        schema_valid(root)
        for rel in [SYN_REQ] + list(SYN.values()):
            rc, out, err = run_check(root, rel)
            check(rc == 0 and out.startswith("OK  ") and not err,
                  "synthetic %s passes: exit %d %s" % (rel, rc, err.strip()))

        P2, L2, O2 = SYN["path2"], SYN["layer2"], SYN["oracle2"]
        # §5: the receipts, each through the whole chain path -> request -> receipt.
        fails(w, "receipt-missing", P2, "$.source.vllm_receipt.path: receipt missing: " +
              SYN_RECEIPT % "vllm", setup=lambda r: os.remove(os.path.join(r, SYN_RECEIPT % "vllm")))

        root = fresh(w, "file-sha")
        req = synthetic(root)
        req["source"]["kiln_receipt"]["file_sha256"] = V2.h("0")
        put(root, "alt/request.json", req)
        rc, out, err = run_check(root, "alt/request.json")
        check(rc == 3 and "$.source.kiln_receipt.file_sha256: stored sha256:000" in err and
              "hashes to sha256:" in err, "file-sha: exit %d: %s" % (rc, err.strip()))
        req["source"]["kiln_receipt"]["file_sha256"] = K.file_sha256(
            os.path.join(root, SYN_RECEIPT % "kiln"))
        req["source"]["vllm_receipt"]["content_sha256"] = V2.h("0")
        put(root, "alt/request.json", req)
        rc, out, err = run_check(root, "alt/request.json")
        check(rc == 3 and "$.source.vllm_receipt: %s: $.receipt_sha256:"
              % (SYN_RECEIPT % "vllm") in err and
              "the request's content_sha256" in err, "content-sha: exit %d: %s" % (rc, err.strip()))

        def tampered(rc):
            rc = seal_receipt(rc)
            rc["driver_version"] = "7 "
            rc["_keep_hash"] = True
            return rc
        fails(w, "receipt-self-hash", P2, "$.receipt_sha256: stored sha256:",
              receipt_mut=receipt_change("kiln", tampered))

        def exact(content, reasoning=""):
            def f(rc):
                rc["runs"][0]["output_evidence"][0]["exact_output"] = {
                    "content_base64": content, "reasoning_content_base64": reasoning}
            return f
        fails(w, "bad-base64", P2, "content_base64: expected strict base64",
              receipt_mut=receipt_change("vllm", exact("VG8gZXN0YWJsaXNoIGE*")))
        fails(w, "bad-base64-padding", P2, "content_base64: expected strict base64",
              receipt_mut=receipt_change("vllm", exact("VG8gZXN0YWJsaXNoIGE")))
        fails(w, "not-utf8", P2, "content_base64: decodes to bytes that are not valid UTF-8",
              receipt_mut=receipt_change("vllm", exact(base64.b64encode(b"To\xff").decode())))
        fails(w, "wrong-prefix", P2, "does not start with the request's continuation_prefix",
              receipt_mut=receipt_change("kiln", exact(b64("To establish a foundation"))))
        fails(w, "other-candidate", P2, "$.source.vllm_receipt: %s: $.runs[0]" % (SYN_RECEIPT % "vllm"),
              receipt_mut=receipt_change("vllm", exact(b64("To establish a baseline"))))
        fails(w, "reasoning", P2, "expected \"\"",
              receipt_mut=receipt_change("kiln", exact(b64("To establish a baseline"), b64("hm"))))

        def setter(*keys_value):
            keys, value = keys_value[:-1], keys_value[-1]

            def f(rc):
                d = rc
                for k in keys[:-1]:
                    d = d[k]
                d[keys[-1]] = value
            return f
        for tag, fn, needle in [
                ("driver", setter("driver_version", 7), "$.driver_version: expected \"7\""),
                ("commit", setter("driver_environment", "repository", "commit", "f" * 40),
                 "$.driver_environment.repository.commit"),
                ("dirty", setter("driver_environment", "repository", "dirty", True),
                 "$.driver_environment.repository.dirty: expected false"),
                ("run-id", setter("workload", "run_id", "another-run"), "$.workload.run_id"),
                ("model", setter("engine", "model_identity", "id", "Qwen3.5-9B"),
                 "$.engine.model_identity (without path)"),
                ("concurrency", lambda rc: rc["runs"][0].update(concurrency=2),
                 "$.runs[0].concurrency: expected 1"),
                ("repeat", lambda rc: rc["runs"][0].update(repeat=1), "$.runs[0].repeat"),
                ("prompt-count", lambda rc: rc["runs"][0].update(prompt_token_counts=[160]),
                 "$.runs[0].prompt_token_counts: expected [163]"),
                ("two-runs", lambda rc: rc.update(runs=rc["runs"] * 2),
                 "$.runs: expected exactly one run, found 2"),
                ("two-rows", lambda rc: rc["runs"][0].update(
                    output_evidence=rc["runs"][0]["output_evidence"] * 2),
                 "$.runs[0].output_evidence: expected exactly one row")]:
            fails(w, "receipt-" + tag, P2, needle, receipt_mut=receipt_change("vllm", fn))
        fails(w, "receipt-symlink", SYN_REQ, "receipt %s is a symbolic link" % (SYN_RECEIPT % "kiln"),
              setup=lambda r: relink(r, SYN_RECEIPT % "kiln"))

        # The request file a record names (§5's loader, §14's _path_from_repository).
        fails(w, "request-symlink", L2, "$.request.path: request %s is a symbolic link" % SYN_REQ,
              setup=lambda r: relink(r, SYN_REQ))
        fails(w, "request-dotdot", O2, "$.request.contract_path: expected a nonempty repo-relative",
              mut=lambda n, d: d["request"].update(contract_path="../" + SYN_REQ) if n == "oracle2"
              else None)

        def outside(r):
            d = os.path.join(r, "qualification", "oracles")
            shutil.move(d, os.path.join(w, "outside-oracles"))
            os.symlink(os.path.join(w, "outside-oracles"), d)
        fails(w, "request-outside", L2, "outside the root", setup=outside)

        def big(r):
            with open(os.path.join(r, SYN_REQ), "a", encoding="ascii") as f:
                f.write(" " * 262144)
        def link_loop(r):
            d = os.path.join(r, "qualification", "oracles")
            shutil.rmtree(d)
            os.symlink("oracles", d)
        fails(w, "request-link-loop", L2, "$.request.path: request %s cannot be resolved" % SYN_REQ,
              setup=link_loop)
        fails(w, "request-big", P2, "$.request.path: request %s is " % SYN_REQ, setup=big)
        fails(w, "request-missing", L2, "$.request.path: request missing: " + SYN_REQ,
              setup=lambda r: os.remove(os.path.join(r, SYN_REQ)))
        fails(w, "request-not-request", L2, "$.request.path: %s is not a kiln.hf-next-token-"
              "request.v1" % SYN["oracle2"],
              mut=lambda n, d: d["request"].update(path=SYN["oracle2"]) if n == "layer2" else None)
        fails(w, "request-broken", O2, "$.request.contract_path: %s: $.prompt.utf8_sha256" % SYN_REQ,
              req_mut=lambda q: q["prompt"].update(utf8_sha256=V2.h("0")))

        # §14.1-§14.3 bindings.
        fails(w, "request-sha", P2, "$.request.sha256: \"sha256:000",
              mut=lambda n, d: d["request"].update(sha256=V2.h("0")) if n == "path2" else None)

        def other_id(n, d):
            if n == "oracle2":
                d["request"]["id"] = "another-request-id"
                d["oracle"]["request_id"] = "another-request-id"
        fails(w, "oracle-id", O2, "$.request.id: \"another-request-id\", expected", mut=other_id)

        def other_model(n, d):
            if n == "layer2":
                m = d["model_identity"]
                m["id"] = "Qwen3.5-9B"
                m["content_sha256"] = K.canonical_sha256(
                    {k: v for k, v in m.items() if k != "content_sha256"})
        fails(w, "model-identity", L2, "$.model_identity: ", mut=other_model)
        fails(w, "worker-request-id", L2, "$.worker.request_id",
              mut=lambda n, d: d["worker"].update(request_id="another-request-id")
              if n == "layer2" else None)
        fails(w, "input-sha", L2, "$.worker.input_token_ids_sha256: \"sha256:000",
              mut=lambda n, d: (d["reference"]["evidence"].update(input_token_ids_sha256=V2.h("0")),
                                d["worker"].update(input_token_ids_sha256=V2.h("0")))
              if n == "layer2" else None)
        fails(w, "candidate-text", O2, "$.oracle.candidate_tokens[0].text",
              req_mut=lambda q: q["candidates"][0].update(text=" base"))

        def other_prefix(q):
            q["continuation_prefix"][2]["token_id"] = 13
            q["input_token_ids"][-1] = 13
            q["input_token_ids_sha256"] = K.canonical_sha256(q["input_token_ids"])

        fails(w, "observed-continuation", P2, "$.worker.eager_full.observed_next_tokens: "
              "[1206,5517,264], expected [1206,5517,13]", req_mut=other_prefix)
        fails(w, "oracle-sha", P2, "$.oracle_reference.oracle_result_sha256",
              mut=lambda n, d: d["oracle_reference"].update(oracle_result_sha256=V2.h("0"))
              if n == "path2" else None)
        fails(w, "oracle-raw-sha", P2, "$.oracle_reference.raw_sha256",
              mut=lambda n, d: d["oracle_reference"].update(raw_sha256=V2.h("0"))
              if n == "path2" else None)
        fails(w, "oracle-bytes", P2, "$.oracle_reference.bytes: 7, expected",
              mut=lambda n, d: d["oracle_reference"].update(bytes=7) if n == "path2" else None)
        fails(w, "oracle-broken", P2, "$.oracle_reference.oracle_result_path: %s: "
              "$.oracle.input_token_ids_sha256" % O2,
              mut=lambda n, d: d["oracle"].update(input_token_ids_sha256=V2.h("0"))
              if n == "oracle2" else None)
        fails(w, "oracle-v1-for-v2", P2, "is not a kiln.rocm-hf-next-token-oracle.v2",
              mut=lambda n, d: d["oracle_reference"].update(oracle_result_path=SYN["oracle1"])
              if n == "path2" else None)
        fails(w, "reference-loop", P2, "$.oracle_reference.oracle_result_path: reference loop: "
              + P2, mut=lambda n, d: d["oracle_reference"].update(oracle_result_path=P2)
              if n == "path2" else None)
        fails(w, "oracle-missing", SYN["path1"], "oracle result missing: " + SYN["oracle1"],
              setup=lambda r: os.remove(os.path.join(r, SYN["oracle1"])))

        # Usage: --require-current-source is refused, a --root that is no directory is exit 4.
        root = os.path.join(w, "good")
        rc, out, err = K.run(["check", "--require-current-source", os.path.join(root, P2)])
        check(rc == 4 and "--require-current-source" in err and "live git" in err,
              "--require-current-source refused: exit %d: %s" % (rc, err.strip()))
        rc, out, err = K.run(["check", "--root", os.path.join(w, "nowhere"),
                              os.path.join(root, P2)])
        check(rc == 4 and "nowhere" in err, "--root missing: exit %d: %s" % (rc, err.strip()))
        rc, out, err = K.run(["check", os.path.join(root, P2)])
        check(rc == 0 and "not checked: no --root" in err,
              "no --root: exit %d with the note: %s" % (rc, err.strip()))
    finally:
        shutil.rmtree(w, ignore_errors=True)
    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    return 0


def relink(root, rel):
    """Moves rel to rel.real and leaves a symbolic link in its place (inside the root)."""
    p = os.path.join(root, rel)
    os.rename(p, p + ".real")
    os.symlink(os.path.basename(p) + ".real", p)


if __name__ == "__main__":
    sys.exit(main())
