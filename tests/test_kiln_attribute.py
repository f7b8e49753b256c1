#!/usr/bin/env python3
"""`fidelis attribute` (docs/ATTRIBUTION.md; KILN-ATTRIBUTION.md §2, §11, §12): the chain
divergence -> attribute -> check on synthetic logits, small vocabularies and one of 248320,
with 3 and 5 paths. Every comparison block, the reference block and verdict, and the label
(first_divergent_path with its path, by first-match precedence, or
serving_only_or_not_reproduced) equal values computed here independently (numpy float64,
sequential sums by np.cumsum). Records validate against schemas/fidelis.path-attribution.v1;
`fidelis check` refuses (exit 3) a changed value (hash), a re-sealed record whose label,
argmax_equal or final_token_matches_reference contradicts its paths, and counters that break the
graph-replay rules; `attribute` refuses such counters, an existing --out and a candidate outside
the vocabulary (exit 3); usage errors and unopenable inputs are exit 4."""
import copy
import hashlib
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import kiln_util as K  # noqa: E402

FAILS = []
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "schemas", "fidelis.path-attribution.v1.schema.json")
GOOD_COUNTERS = {"enabled": True, "cache_admission_successes": 1, "capture_attempts": 1,
                 "capture_failures": 0, "capture_successes": 1, "fallbacks": 0,
                 "replay_attempts": 7, "replay_failures": 0, "replay_successes": 7}


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def f32_json(np, x):
    """The double Kiln's JSON holds for an f32: shortest f32 digits read as a double (§11)."""
    return float(np.format_float_scientific(np.float32(x), unique=True))


def argmax(np, v):
    return int(np.argmax(v))  # first maximum; the tests hold no -0.0 and no NaN


def compare(np, A, R, cands):
    a = A.astype(np.float64)
    r = R.astype(np.float64)
    e = np.abs(a - r)
    n = a.size
    abs_sum = float(np.cumsum(e)[-1])
    dot = float(np.cumsum(a * r)[-1])
    an = float(np.cumsum(a * a)[-1])
    rn = float(np.cumsum(r * r)[-1])
    top = lambda v: set(np.lexsort((np.arange(v.size), -v.astype(np.float64)))[:10].tolist())  # noqa: E731
    ranks = []
    for c in cands:
        x = A[c]
        rank = 1 + int(np.count_nonzero(A > x)) + int(np.count_nonzero(A[:c] == x))
        ranks.append({"logit": f32_json(np, x), "rank": rank, "token_id": c})
    return {"argmax": argmax(np, A), "argmax_equal": argmax(np, A) == argmax(np, R),
            # docs/ATTRIBUTION.md's cosine rule: equal vectors give exactly 1.0, others clamp
            "cosine_similarity": 1.0 if float(e.max()) == 0.0 else
            min(1.0, max(-1.0, dot / (float(np.sqrt(an)) * float(np.sqrt(rn))))),
            "max_abs_error": max(0.0, float(e.max())), "mean_abs_error": abs_sum / float(n),
            "top10_overlap": len(top(A) & top(R)),
            "logits_sha256": "sha256:" + hashlib.sha256(A.astype("<f4").tobytes()).hexdigest(),
            "candidate_tokens": ranks}


def expected(np, req, R, paths):
    """The whole record but record_sha256, computed here."""
    cands = [c["token_id"] for c in req["candidates"]]
    ram = argmax(np, R)
    rc = compare(np, R, R, cands)["candidate_tokens"]
    lk, lv = rc[0]["logit"], rc[1]["logit"]
    ref = {"vocab_size": int(R.size), "argmax": ram,
           "logits_sha256": "sha256:" + hashlib.sha256(R.astype("<f4").tobytes()).hexdigest(),
           "candidate_tokens": [dict(rc[0], engine="kiln"), dict(rc[1], engine="vllm")],
           "verdict": {"argmax_candidate": "kiln" if cands[0] == ram else
                       "vllm" if cands[1] == ram else "neither",
                       "preferred_candidate": "kiln" if lk > lv else "vllm" if lv > lk else "tie",
                       "margin": abs(lk - lv)}}
    out, first = [], None
    for name, kind, data in paths:
        if kind == "full":
            cmp = compare(np, data[-1], R, cands)
            out.append({"name": name, "kind": "full",
                        "observed_tokens": [argmax(np, row) for row in data],
                        "comparison": cmp, "argmax_equal": cmp["argmax_equal"]})
            div = not cmp["argmax_equal"]
        else:
            m = data[-1] == ram
            out.append({"name": name, "kind": "greedy", "observed_tokens": list(data),
                        "final_token_matches_reference": m})
            div = not m
        if div and first is None:
            first = name
    return {"schema": "fidelis.path-attribution.v1",
            "request": {"id": req["id"], "sha256": K.canonical_sha256(req),
                        "input_token_ids_sha256": req["input_token_ids_sha256"],
                        "candidate_token_ids": cands},
            "reference": ref, "paths": out,
            "attribution": {"label": "first_divergent_path" if first else
                            "serving_only_or_not_reproduced", "path": first}}


KILN_PATHS = (("eager_full", "full", "eager_full_logits"),
              ("graph_full", "full", "hip_graph_full_logits"),
              ("eager_greedy", "greedy", "eager_greedy_selection"),
              ("graph_greedy", "greedy", "hip_graph_greedy_selection"))
CONT = [1206, 5517, 264]


def provenance():
    h = lambda c: "sha256:" + c * 64  # noqa: E731
    proc = {"elapsed_seconds": 1.25, "schema": "kiln.hf-process-containment.v1",
            "timeout_seconds": 900, "worker_exit_code": 0}
    return {"created_at_utc": "2026-12-01T16:00:00Z", "duration_seconds": 12.5,
            "source": {"commit": "a" * 40, "origin_main": "a" * 40, "tree": "b" * 40},
            "binary": {"build_duration_seconds": 3.5,
                       "build_environment_policy": "closed-source-build-v1",
                       "path": "target/release/examples/rocm_hf_path_attribution",
                       "sha256": h("c")},
            "implementation": {"guarded_exec_sha256": h("d"), "process_runner_sha256": h("e"),
                               "runner_sha256": h("f")},
            "request_path": "qualification/requests/synthetic-first-divergence-v1.json",
            "model_fingerprint": {"implementation_sha256": h("1"), "python_sha256": h("2"),
                                  "process": proc},
            "oracle_reference": {"bytes": 993280, "oracle_result_path": "qualification/results/oracle.json",
                                 "oracle_result_sha256": h("3"), "raw_location": "local_ignored",
                                 "raw_sha256": h("4")},
            "containment": {"host_available_before_gib": 24, "network": "forbidden", "process": proc}}


def expected_v2(np, req, R, paths, counters, prov):
    """§12 from first principles: the worker, the attribution by its fixed precedence."""
    fid = expected(np, req, R, paths)
    byname = {p["name"]: p for p in fid["paths"]}
    worker = {"schema": "kiln.rocm-hf-path-attribution.v2", "graph": counters,
              "hf_argmax": fid["reference"]["argmax"],
              "input_token_count": len(req["input_token_ids"]),
              "input_token_ids_sha256": req["input_token_ids_sha256"],
              "kernel_policy": "qualified", "request_id": req["id"]}
    label = "serving_only_or_not_reproduced"
    for name, kind, lbl in KILN_PATHS:
        p = byname[name]
        if kind == "full":
            worker[name] = {"comparison": p["comparison"], "observed_next_tokens": p["observed_tokens"]}
            div = not p["comparison"]["argmax_equal"]
        else:
            worker[name] = {"final_token_matches_reference": p["observed_tokens"][3] == worker["hf_argmax"],
                            "observed_next_tokens": p["observed_tokens"]}
            div = not worker[name]["final_token_matches_reference"]
        if div and label == "serving_only_or_not_reproduced":
            label = lbl
    worker["attribution"] = label
    rec = {"schema": "kiln.rocm-hf-path-attribution-result.v2",
           "created_at_utc": prov["created_at_utc"], "duration_seconds": prov["duration_seconds"],
           "source": prov["source"], "binary": prov["binary"],
           "implementation": prov["implementation"],
           "request": {"path": prov["request_path"], "sha256": K.canonical_sha256(req)},
           "model_identity": req["model_identity"], "model_fingerprint": prov["model_fingerprint"],
           "oracle_reference": prov["oracle_reference"], "containment": prov["containment"],
           "worker": worker}
    rec["result_sha256"] = K.canonical_sha256(rec)
    return rec


def v2_rules(doc):
    """The §12 / §14.2 worker rules a checker applies, restated here."""
    w = doc["worker"]
    ok = len(doc) == 13 and len(w) == 12 and doc["result_sha256"] == K.self_hash(doc)
    for name, kind, _ in KILN_PATHS:
        p = w[name]
        ok = ok and p["observed_next_tokens"][:3] == CONT and len(p["observed_next_tokens"]) == 4
        if kind == "full":
            c = p["comparison"]
            ok = ok and len(c) == 8 and c["argmax_equal"] == (c["argmax"] == w["hf_argmax"])
        else:
            ok = ok and p["final_token_matches_reference"] == (p["observed_next_tokens"][3] == w["hf_argmax"])
    gr = w["graph"]
    ok = ok and gr["enabled"] is True and gr["capture_successes"] >= 1 and \
        gr["cache_admission_successes"] >= 1 and gr["replay_successes"] >= 7 and \
        gr["capture_attempts"] >= gr["capture_successes"] + gr["capture_failures"] and \
        gr["replay_attempts"] == gr["replay_successes"] + gr["replay_failures"] and \
        gr["capture_failures"] == gr["replay_failures"] == gr["fallbacks"] == 0
    lbl = "serving_only_or_not_reproduced"
    for name, kind, l in KILN_PATHS:
        p = w[name]
        if (kind == "full" and not p["comparison"]["argmax_equal"]) or \
           (kind == "greedy" and not p["final_token_matches_reference"]):
            lbl = l
            break
    return ok and w["attribution"] == lbl and w["input_token_count"] == 166


def recompute_refused(np, out, R, paths, save_logits):
    """check --reference/--path with logits that do not match the record: exit 3 naming it."""
    rows = {name: np.stack(data) for name, kind, data in paths if kind == "full"}
    ref_file = save_logits(R)
    bumped = rows["graph_full"].copy()
    bumped[3, 11] = np.nextafter(bumped[3, 11], np.float32(np.inf))
    rc, so, err = K.run(["check", out, "--reference", ref_file, "--path",
                         "graph_full=" + save_logits(bumped)])
    check(rc == 3 and "$.worker.graph_full.comparison." in err and not so,
          "check: one logit one ulp off is refused naming the comparison field (exit %d): %s"
          % (rc, err.strip()))
    R2 = R.copy()
    R2[5] = np.float32(R2[5] + 1.0)
    rc, so, err = K.run(["check", out, "--reference", save_logits(R2), "--path",
                         "eager_full=" + save_logits(rows["eager_full"])])
    check(rc == 3 and "$.worker.eager_full.comparison." in err,
          "check: another reference is refused (exit %d): %s" % (rc, err.strip()))
    rc, so, err = K.run(["check", out, "--reference", ref_file, "--path",
                         "eager_greedy=" + save_logits(rows["eager_full"])])
    check(rc == 3 and "no full path" in err, "check: --path of a greedy path is refused (exit %d): %s"
          % (rc, err.strip()))
    rc, so, err = K.run(["check", out, "--path", "eager_full=" + save_logits(rows["eager_full"])])
    check(rc == 4, "check: --path without --reference is a usage error (exit %d)" % rc)
    rc, so, err = K.run(["check", out, "--reference", ref_file, "--path",
                         "eager_full=" + save_logits(R[:100])])
    check(rc == 3 and "width" in err, "check: a path of another width is refused (exit %d): %s"
          % (rc, err.strip()))
    rc, so, err = K.run(["check", K.REQUEST, "--reference", ref_file])
    check(rc == 3 and "no path comparisons" in err,
          "check: --reference with a request is refused (exit %d): %s" % (rc, err.strip()))
    rc, so, err = K.run(["check", out, "--reference", ref_file + ".missing"])
    check(rc == 4, "check: a missing --reference is exit 4 (%d)" % rc)


def check_v2_tampered(good, fresh):
    """fidelis check on broken copies of a good v2 record: exit 3 naming the field."""
    def refused(mut, needle, what, reseal=True):
        doc = copy.deepcopy(good)
        mut(doc)
        if reseal:
            doc = K.reseal(doc)
        path = fresh("v2bad") + ".json"
        K.write_json(path, doc)
        rc, so, err = K.run(["check", path])
        check(rc == 3 and needle in err and not so,
              "check v2: %s is refused naming %s (exit %d): %s" % (what, needle, rc, err.strip()))

    def setp(*args):
        keys, value = args[:-1], args[-1]

        def f(doc):
            d = doc
            for k in keys[:-1]:
                d = d[k]
            d[keys[-1]] = value
        return f
    w = good["worker"]
    refused(setp("worker", "hf_argmax", w["hf_argmax"] + 1), "$.result_sha256",
            "one value changed without resealing", reseal=False)
    refused(setp("duration_seconds", 13.5), "$.result_sha256", "the duration changed", reseal=False)
    other = "eager_full_logits" if w["attribution"] != "eager_full_logits" else "serving_only_or_not_reproduced"
    refused(setp("worker", "attribution", other), "$.worker.attribution", "a resealed wrong label")
    cmp = w["eager_full"]["comparison"]
    refused(setp("worker", "eager_full", "comparison", "argmax_equal", not cmp["argmax_equal"]),
            "$.worker.eager_full.comparison.argmax_equal", "a flipped argmax_equal")
    fm = w["graph_greedy"]["final_token_matches_reference"]
    refused(setp("worker", "graph_greedy", "final_token_matches_reference", not fm),
            "$.worker.graph_greedy.final_token_matches_reference", "a flipped greedy match")
    refused(setp("worker", "graph", "fallbacks", 1), "$.worker.graph", "a graph fallback")
    refused(setp("worker", "graph", "replay_attempts", w["graph"]["replay_attempts"] + 1),
            "$.worker.graph", "replay attempts off the sum")
    refused(setp("worker", "graph", "enabled", 1), "$.worker.graph.enabled", "enabled as an int")
    refused(setp("worker", "input_token_count", 165), "$.worker.input_token_count", "165 inputs")
    refused(setp("worker", "kernel_policy", "portable_fallback"), "$.worker.kernel_policy",
            "another kernel policy")
    refused(setp("worker", "eager_greedy", "observed_next_tokens", [1, 5517, 264, 9]),
            "$.worker.eager_greedy.observed_next_tokens", "a path off the continuation")
    refused(setp("worker", "extra", 1), "$.worker", "an extra worker key")
    refused(setp("extra", 1), "unexpected key \"extra\"", "an extra top-level key")
    refused(setp("source", "origin_main", "c" * 40), "$.source.origin_main", "commit != origin_main")
    refused(setp("binary", "path", "target/release/x"), "$.binary.path", "another binary path")
    refused(setp("containment", "network", "allowed"), "$.containment.network", "network allowed")
    refused(setp("containment", "host_available_before_gib", 0),
            "$.containment.host_available_before_gib", "0 GiB")
    refused(setp("model_fingerprint", "process", "worker_exit_code", 1),
            "$.model_fingerprint.process.worker_exit_code", "a failed fingerprint worker")
    refused(setp("oracle_reference", "raw_location", "remote"), "$.oracle_reference.raw_location",
            "a remote raw reference")
    refused(setp("request", "path", "../r.json"), "$.request.path", "a request path with ..")
    refused(setp("implementation", "runner_sha256", "sha256:XYZ"), "$.implementation.runner_sha256",
            "a malformed digest")


def kiln_v2(np, jsonschema, rng, P, fresh, fixture, g, save_logits):
    with open(os.path.join(K.SCHEMAS, "rocm-hf-path-attribution-v2.schema.json"), encoding="utf-8") as f:
        pschema = json.load(f)
    with open(os.path.join(K.SCHEMAS, "rocm-hf-next-token-oracle-v2.schema.json"), encoding="utf-8") as f:
        oschema = json.load(f)
    resolver = jsonschema.RefResolver.from_schema(pschema, store={oschema["$id"]: oschema,
                                                                   pschema["$id"]: pschema})
    validator = jsonschema.Draft202012Validator(pschema, resolver=resolver)
    prov = provenance()
    K.write_json(P("prov.json"), prov)
    K.write_json(P("counters-v2.json"), GOOD_COUNTERS)
    V = 8192
    prompt = [int(x) for x in rng.integers(0, V, 163)]  # 163 + 3 = Kiln's 166 input ids
    req_path = P("req-v2.json")
    rc, _, err = K.run(["divergence", "--prompt-text", "synthetic", "--id", "synthetic-v2",
                        "--source-commit", fixture["source"]["source_commit"], "--run-id",
                        g["run_id"], "--phase", g["phase"], "--kiln-receipt", "@" + P("kr.json"),
                        "--vllm-receipt", "@" + P("vr.json"), "--model-identity", "@" + P("mi.json"),
                        "--prompt-ids", json.dumps(prompt), "--reference-ids", json.dumps(CONT + [777]),
                        "--candidate-ids", json.dumps(CONT + [4242]), "--out", req_path])
    check(rc == 0, "v2: divergence writes the 166-id request (exit %d): %s" % (rc, err.strip()))
    with open(req_path, encoding="ascii") as f:
        req = json.load(f)

    def make(divs, order=(0, 1, 2, 3)):
        R = rng.normal(0.0, 2.0, V).astype(np.float32)
        R[777] = np.float32(25.0)
        ram = argmax(np, R)
        paths = []
        for i in order:
            name, kind, _ = KILN_PATHS[i]
            if kind == "full":
                rows = []
                for step in range(4):
                    row = (R + rng.normal(0.0, 0.05, V)).astype(np.float32)
                    if step < 3:
                        row[CONT[step]] = np.float32(50.0)
                    elif divs[i]:
                        row[4242] = np.float32(60.0)
                    rows.append(row)
                paths.append((name, "full", rows))
            else:
                paths.append((name, "greedy", CONT + [4242 if divs[i] else ram]))
        return R, paths

    def run_v2(R, paths, extra=(), counters=P("counters-v2.json"), prov_path=P("prov.json")):
        argv = ["attribute", "--format", "kiln-v2", "--provenance", prov_path, "--request", req_path,
                "--reference", save_logits(R)]
        for name, kind, data in paths:
            if kind == "full":
                argv += ["--path", "%s=full:%s" % (name, save_logits(np.stack(data)))]
            else:
                p = fresh("ids") + ".json"
                K.write_json(p, list(data))
                argv += ["--path", "%s=greedy:%s" % (name, p)]
        if counters:
            argv += ["--counters", counters]
        out = fresh("v2") + ".json"
        rc, so, err = K.run(argv + ["--out", out, *extra])
        return rc, so, err, out

    cases = [((0, 0, 0, 0), (0, 1, 2, 3)), ((1, 0, 0, 0), (0, 1, 2, 3)), ((0, 1, 0, 0), (0, 1, 2, 3)),
             ((0, 0, 1, 0), (0, 1, 2, 3)), ((0, 0, 0, 1), (0, 1, 2, 3)), ((0, 1, 1, 1), (0, 1, 2, 3)),
             ((1, 1, 1, 1), (0, 1, 2, 3)), ((0, 0, 1, 1), (3, 2, 1, 0)), ((0, 1, 1, 0), (2, 3, 0, 1))]
    checked_v2 = []
    for divs, order in cases:
        R, paths = make(divs, order)
        rc, so, err, out = run_v2(R, paths)
        what = "v2 diverging %s, given in order %s" % (divs, order)
        check(rc == 0, "%s: exit %d: %s" % (what, rc, err.strip()))
        if rc:
            continue
        with open(out, encoding="ascii") as f:
            got = json.load(f)
        want = expected_v2(np, req, R, paths, GOOD_COUNTERS, prov)
        check(got == want, "%s: equals the python oracle (%s)" % (what, want["worker"]["attribution"]))
        errs = sorted(validator.iter_errors(got), key=lambda e: list(e.path))
        for e in errs[:3]:
            print("  schema: %s at %s" % (e.message, list(e.path)))
        check(not errs, "%s: validates against Kiln's path-attribution v2 schema" % what)
        neg = copy.deepcopy(got)
        neg["model_fingerprint"]["process"]["worker_exit_code"] = 1
        neg["worker"]["input_token_count"] = 165
        check(len(list(validator.iter_errors(neg))) == 2,
              "%s: the schema (with its oracle-v2 references) does reject a broken copy" % what)
        check(v2_rules(got), "%s: satisfies the §12/§14.2 worker rules restated in python" % what)
        check(("attribution %s\nresult %s\n" % (want["worker"]["attribution"], want["result_sha256"])) == so,
              "%s: prints the label and result_sha256" % what)
        rc, so, err = K.run(["check", out])
        check(rc == 0 and so == "OK  %s  kiln.rocm-hf-path-attribution-result.v2  %s\n" % (out, want["result_sha256"]),
              "%s: fidelis check passes it (exit %d): %s" % (what, rc, (so + err).strip()))
        checked_v2.append(got)
        ref_file = save_logits(R)
        full = {name: save_logits(np.stack(data)) for name, kind, data in paths if kind == "full"}
        rc, so, err = K.run(["check", out, "--reference", ref_file] +
                            sum((["--path", "%s=%s" % kv] for kv in sorted(full.items())), []))
        check(rc == 0 and so.startswith("OK  "),
              "%s: check --reference --path recomputes both comparisons bit for bit (exit %d): %s"
              % (what, rc, err.strip()))
        if len(checked_v2) == 1:
            recompute_refused(np, out, R, paths, save_logits)
    check_v2_tampered(checked_v2[0], fresh)
    R, paths = make((0, 0, 0, 0))
    rc, _, err, _ = run_v2(R, paths, counters=None)
    check(rc == 3 and "--counters" in err, "v2 without counters is refused (exit %d)" % rc)
    rc, _, err, _ = run_v2(R, paths[:3])
    check(rc == 3 and "4 paths" not in err and "paths" in err, "v2 with 3 paths is refused (exit %d): %s" % (rc, err.strip()))
    short = [(n, k, d[1:]) for n, k, d in paths]
    rc, _, err, _ = run_v2(R, short)
    check(rc == 3 and "observed tokens" in err, "v2 with 3 observed tokens is refused (exit %d): %s" % (rc, err.strip()))
    swapped = [("graph_full" if n == "eager_greedy" else "eager_greedy" if n == "graph_full" else n, k, d)
               for n, k, d in paths]
    rc, _, err, _ = run_v2(R, swapped)
    check(rc == 3 and "no full path named graph_full" in err, "v2 with a path of the wrong kind is refused (exit %d): %s" % (rc, err.strip()))
    bad = dict(prov, extra=1)
    K.write_json(P("prov-bad.json"), bad)
    rc, _, err, _ = run_v2(R, paths, prov_path=P("prov-bad.json"))
    check(rc == 3 and "extra" in err, "v2 provenance with an unknown key is refused (exit %d): %s" % (rc, err.strip()))
    bad = dict(prov, duration_seconds=0)
    K.write_json(P("prov-bad2.json"), bad)
    rc, _, err, _ = run_v2(R, paths, prov_path=P("prov-bad2.json"))
    check(rc == 3 and "duration_seconds" in err, "v2 provenance with duration 0 is refused (exit %d)" % rc)
    rc, _, err, _ = run_v2(R, paths, prov_path=P("no-such-prov.json"))
    check(rc == 4, "a missing --provenance file is exit 4 (%d)" % rc)
    rc, _, err = K.run(["attribute", "--provenance", P("prov.json"), "--request", req_path,
                        "--reference", P("x.npy"), "--path", "a=greedy:x", "--out", fresh("o")])
    check(rc == 4, "--provenance without --format kiln-v2 is a usage error (%d)" % rc)


def main():
    if not K.CLI or not os.access(K.CLI, os.X_OK):
        print("skip: FDL_CLI is not an executable")
        return 77
    try:
        import jsonschema
        import numpy as np
    except ImportError:
        print("skip: numpy or python3-jsonschema is not installed")
        return 77
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    with open(K.REQUEST, encoding="utf-8") as f:
        fixture = json.load(f)
    rng = np.random.default_rng(20261201)
    w = tempfile.mkdtemp(prefix="fdl-kiln-attr-")
    try:
        P = lambda n: os.path.join(w, n)  # noqa: E731
        K.write_json(P("kr.json"), fixture["source"]["kiln_receipt"])
        K.write_json(P("vr.json"), fixture["source"]["vllm_receipt"])
        K.write_json(P("mi.json"), fixture["model_identity"])
        g = fixture["prompt"]["generator"]
        seq = [0]

        def fresh(stem):
            seq[0] += 1
            return P("%s-%d" % (stem, seq[0]))

        def divergence(common, ref_next, cand_next):
            out = fresh("req") + ".json"
            rc, _, err = K.run(["divergence", "--prompt-text", "synthetic", "--id", "synthetic-%d" % seq[0],
                                "--source-commit", fixture["source"]["source_commit"], "--run-id",
                                g["run_id"], "--phase", g["phase"], "--kiln-receipt", "@" + P("kr.json"),
                                "--vllm-receipt", "@" + P("vr.json"), "--model-identity",
                                "@" + P("mi.json"), "--prompt-ids", "[1, 2, 3]",
                                "--reference-ids", json.dumps(common + [ref_next]),
                                "--candidate-ids", json.dumps(common + [cand_next]), "--out", out])
            check(rc == 0, "divergence writes the request (exit %d): %s" % (rc, err.strip()))
            with open(out, encoding="ascii") as f:
                return out, json.load(f)

        def save_logits(arr):
            p = fresh("logits") + ".npy"
            np.save(p, arr.astype(np.float32))
            return p

        def attribute(req_path, R, paths, counters=None, extra=()):
            argv = ["attribute", "--request", req_path, "--reference", save_logits(R)]
            for name, kind, data in paths:
                if kind == "full":
                    argv += ["--path", "%s=full:%s" % (name, save_logits(np.stack(data)))]
                else:
                    p = fresh("ids") + ".json"
                    K.write_json(p, list(data))
                    argv += ["--path", "%s=greedy:%s" % (name, p)]
            if counters is not None:
                p = fresh("counters") + ".json"
                K.write_json(p, counters)
                argv += ["--counters", p]
            out = fresh("rec") + ".json"
            rc, so, err = K.run(argv + ["--out", out, *extra])
            return rc, so, err, out

        def formula_above_one(R):
            r = R.astype(np.float64)
            x = float(np.cumsum(r * r)[-1])
            return x / (float(np.sqrt(x)) * float(np.sqrt(x))) > 1.0

        def run_case(what, V, paths_spec, counters=None, exact=False):
            """paths_spec: [(name, kind, diverges)]; builds logits that do or do not diverge.
            exact: every full path's rows equal R, and R is drawn so that the bare cosine formula
            gives 1.0000000000000002 on it (the record must still hold exactly 1.0)."""
            common = [int(x) for x in rng.integers(0, V, 3)]
            cand, refnext = [int(x) for x in rng.choice(V, 2, replace=False)]
            req_path, req = divergence(common, refnext, cand)
            for _ in range(1000):
                R = rng.normal(0.0, 2.0, V).astype(np.float32)
                ram = int(rng.integers(0, V))
                R[ram] = np.float32(30.0)
                if not exact or formula_above_one(R):
                    break
            check(not exact or formula_above_one(R), "%s: found R whose bare cosine is > 1" % what)
            ram = argmax(np, R)
            paths = []
            for name, kind, div in paths_spec:
                other = (ram + 1 + int(rng.integers(0, V - 1))) % V
                if kind == "full":
                    rows = []
                    for _ in range(int(rng.integers(1, 4))):
                        row = (R + rng.normal(0.0, 0.05, V)).astype(np.float32)
                        rows.append(row)
                    if div:
                        rows[-1][other] = np.float32(40.0)
                    if exact:
                        rows = [R.copy()]
                    paths.append((name, "full", rows))
                else:
                    ids = [int(x) for x in rng.integers(0, V, int(rng.integers(0, 4)))]
                    paths.append((name, "greedy", ids + [other if div else ram]))
            rc, so, err, out = attribute(req_path, R, paths, counters)
            check(rc == 0, "%s: attribute exit %d: %s" % (what, rc, err.strip()))
            if rc != 0:
                return None, None
            with open(out, encoding="ascii") as f:
                text = f.read()
            got = json.loads(text)
            want = expected(np, req, R, paths)
            if counters is not None:
                want["counters"] = counters
            body = {k: v for k, v in got.items() if k != "record_sha256"}
            if body != want:
                for k in want:
                    if body.get(k) != want[k]:
                        print("  %s: got %s\n  want %s" % (k, json.dumps(body.get(k))[:600],
                                                         json.dumps(want[k])[:600]))
            check(body == want, "%s: record equals the python oracle (%s %s)" %
                  (what, want["attribution"]["label"], want["attribution"]["path"]))
            check(got.get("record_sha256") == K.canonical_sha256(want),
                  "%s: record_sha256 is the canonical self-hash" % what)
            full = [(n, save_logits(np.stack(d))) for n, k, d in paths if k == "full"]
            rc2, _, err2 = K.run(["check", out, "--reference", save_logits(R)] +
                                sum((["--path", "%s=%s" % nf] for nf in full), []))
            check(rc2 == 0, "%s: check --reference --path recomputes the reference block and %d "
                  "comparisons bit for bit (exit %d): %s" % (what, len(full), rc2, err2.strip()))
            if full:
                R2 = R.copy()
                R2[cand] = np.float32(R2[cand] + 0.5)
                rc2, _, err2 = K.run(["check", out, "--reference", save_logits(R2)])
                check(rc2 == 3 and "$.reference." in err2,
                      "%s: check with a changed candidate logit is refused naming $.reference "
                      "(exit %d): %s" % (what, rc2, err2.strip()[:200]))
            check(text == json.dumps(got, indent=2, sort_keys=True, ensure_ascii=True) + "\n",
                  "%s: written in the result layout" % what)
            try:
                jsonschema.validate(got, schema)
                ok = True
            except jsonschema.ValidationError as e:
                ok = False
                print(e)
            check(ok, "%s: validates against the fidelis.path-attribution.v1 schema" % what)
            lbl = want["attribution"]["label"] + (("  " + want["attribution"]["path"])
                                                  if want["attribution"]["path"] else "")
            check(("attribution %s\n" % lbl) in so and got["record_sha256"] in so,
                  "%s: prints the label, path and identity" % what)
            rc, so, err = K.run(["check", out])
            check(rc == 0 and "fidelis.path-attribution.v1" in so and got["record_sha256"] in so,
                  "%s: passes check (exit %d): %s" % (what, rc, err.strip()))
            return out, got

        # 3 paths, small vocabulary: every label and first-match precedence.
        three = ("full_a", "full"), ("greedy_b", "greedy"), ("full_c", "full")
        for divs in ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, 1), (1, 1, 1), (1, 0, 1)):
            run_case("3 paths V=64 diverging %s" % (divs,), 64,
                     [(n, k, d) for (n, k), d in zip(three, divs)])
        # 5 paths in Kiln's evaluation order and one more, with graph counters.
        five = (("eager_full", "full"), ("graph_full", "full"), ("eager_greedy", "greedy"),
                ("graph_greedy", "greedy"), ("server", "greedy"))
        keep = None
        for i in range(6):
            divs = [0] * 5
            if i < 5:
                divs[i] = 1
                for j in range(i + 1, 5):
                    divs[j] = int(rng.integers(0, 2))  # later divergences never win
            out, got = run_case("5 paths V=1000 first divergence at %s" % (i if i < 5 else "none"),
                                1000, [(n, k, d) for (n, k), d in zip(five, divs)], GOOD_COUNTERS)
            if i == 2:
                keep = (out, got)
        # The full Kiln vocabulary.
        # A path whose logits equal the reference exactly: cosine exactly 1.0 (issue 20, item 5).
        out, got = run_case("3 paths V=64, full paths equal to the reference", 64,
                            [(n, k, 0) for (n, k) in three], exact=True)
        check(got is not None and all(p["comparison"]["cosine_similarity"] == 1.0
                                      for p in got["paths"] if "comparison" in p),
              "equal logits: every full path's cosine is exactly 1.0")
        run_case("3 paths V=248320", 248320, [(n, k, d) for (n, k), d in zip(three, (0, 0, 1))])
        run_case("5 paths V=248320", 248320, [(n, k, d) for (n, k), d in zip(five, (0, 0, 0, 0, 0))])

        # Tampering, on a record whose label is first_divergent_path eager_greedy.
        if keep and keep[0]:
            base_path, base = keep

            def refused(doc, what, needle, reseal=True):
                doc = copy.deepcopy(doc)
                if reseal:
                    doc["record_sha256"] = K.canonical_sha256(
                        {k: v for k, v in doc.items() if k != "record_sha256"})
                p = fresh("tamper") + ".json"
                K.write_json(p, doc)
                rc, _, err = K.run(["check", p])
                check(rc == 3 and needle in err, "check refuses %s (exit %d): %s" %
                      (what, rc, err.strip()))

            d = copy.deepcopy(base)
            d["reference"]["verdict"]["margin"] += 1.0
            refused(d, "a changed value (hash)", "record_sha256", reseal=False)
            d = copy.deepcopy(base)
            d["paths"][0]["comparison"]["cosine_similarity"] = 0.5
            refused(d, "a changed comparison value (hash)", "a value was changed", reseal=False)
            d = copy.deepcopy(base)
            d["attribution"] = {"label": "serving_only_or_not_reproduced", "path": None}
            refused(d, "a re-sealed label that contradicts the paths", "$.attribution.label")
            d = copy.deepcopy(base)
            d["attribution"]["path"] = "graph_greedy"
            refused(d, "a re-sealed later path (first match wins)", "$.attribution.path")
            d = copy.deepcopy(base)
            d["paths"][2]["final_token_matches_reference"] = True
            refused(d, "a re-sealed final_token_matches_reference that contradicts its tokens",
                    "$.paths[2].final_token_matches_reference")
            d = copy.deepcopy(base)
            d["paths"][0]["argmax_equal"] = False
            d["paths"][0]["comparison"]["argmax_equal"] = False
            refused(d, "a re-sealed argmax_equal that contradicts its argmax",
                    "$.paths[0].comparison.argmax_equal")
            d = copy.deepcopy(base)
            d["paths"][1]["argmax_equal"] = not d["paths"][1]["argmax_equal"]
            refused(d, "a re-sealed path argmax_equal unlike its comparison", "$.paths[1].argmax_equal")
            d = copy.deepcopy(base)
            d["reference"]["verdict"]["preferred_candidate"] = (
                "vllm" if d["reference"]["verdict"]["preferred_candidate"] == "kiln" else "kiln")
            refused(d, "a re-sealed verdict that contradicts the logits", "$.reference.verdict")
            d = copy.deepcopy(base)
            d["paths"][3]["name"] = "eager_full"
            refused(d, "re-sealed repeated path names", "unique")
            for key, val, needle in (("replay_failures", 1, "replay_attempts"),
                                     ("fallbacks", 1, "fallbacks"),
                                     ("replay_successes", 6, "replay_successes"),
                                     ("capture_successes", 0, "capture_successes"),
                                     ("enabled", False, "$.counters.enabled"),
                                     ("capture_attempts", True, "$.counters.capture_attempts")):
                d = copy.deepcopy(base)
                d["counters"][key] = val
                refused(d, "re-sealed counters with %s = %s" % (key, json.dumps(val)), needle)
            d = copy.deepcopy(base)
            d["extra"] = 1
            refused(d, "a re-sealed unknown key", "unexpected key")

            # attribute itself refuses counters off the rules, an existing --out, a bad --path.
            req_path = P("req-chain.json")
            common = [5, 6, 7]
            divergence_path, req = divergence(common, 8, 9)
            shutil.copyfile(divergence_path, req_path)
            R = rng.normal(0.0, 1.0, 16).astype(np.float32)
            bad = dict(GOOD_COUNTERS, replay_attempts=8)
            rc, _, err, _ = attribute(req_path, R, [("g", "greedy", [1])], bad)
            check(rc == 3 and "replay_attempts" in err,
                  "attribute refuses counters off the rules (exit %d): %s" % (rc, err.strip()))
            rc, _, err, _ = attribute(req_path, R, [("g", "greedy", [1])], extra=("--out", base_path))
            check(rc == 4, "a second --out is a usage error (exit %d)" % rc)
            rp = save_logits(R)
            g1 = fresh("ids") + ".json"
            K.write_json(g1, [1])
            rc, _, err = K.run(["attribute", "--request", req_path, "--reference", rp, "--path",
                                "g=greedy:" + g1, "--out", base_path])
            check(rc == 3 and "exists" in err, "an existing --out is refused (exit %d)" % rc)
            with open(base_path, encoding="ascii") as f:
                check(json.load(f) == base, "the existing --out is untouched")
            rc, _, err = K.run(["attribute", "--request", req_path, "--reference",
                                save_logits(R[:8]), "--path", "g=greedy:" + g1, "--out",
                                fresh("o")])
            check(rc == 3 and "candidates[" in err,
                  "a candidate outside the reference vocabulary is refused (exit %d): %s" %
                  (rc, err.strip()))
            rc, _, err = K.run(["attribute", "--request", req_path, "--reference", rp, "--path",
                                "g=full:" + save_logits(R[:12]), "--out", fresh("o")])
            check(rc == 3 and "width" in err, "a full path of another width is refused (exit %d)" % rc)
            rc, _, err = K.run(["attribute", "--request", req_path, "--reference", rp, "--path",
                                "g=greedy:" + g1, "--path", "g=greedy:" + g1, "--out", fresh("o")])
            check(rc == 3 and "twice" in err, "a repeated path name is refused (exit %d)" % rc)
            for argv, what in (([], "no --path"), (["--path"], "--path without a value"),
                               (["--path", "g=sampled:" + g1], "an unknown path kind"),
                               (["--path", "=greedy:" + g1], "an empty path name"),
                               (["--path", "g=greedy:"], "an empty path file"),
                               (["--path", "g=greedy:" + P("missing.json")], "a missing path file")):
                rc, _, err = K.run(["attribute", "--request", req_path, "--reference", rp,
                                    "--out", fresh("o"), *argv])
                check(rc == 4, "%s is exit 4 (%d): %s" % (what, rc, err.strip()))
            rc, _, err = K.run(["attribute", "--request", P("bad-req.json"), "--reference", rp,
                                "--path", "g=greedy:" + g1, "--out", fresh("o")])
            check(rc == 4, "a missing --request is exit 4 (%d)" % rc)
            with open(P("notreq.json"), "w") as f:
                f.write('{"schema": "kiln.hf-next-token-request.v1"}\n')
            rc, _, err = K.run(["attribute", "--request", P("notreq.json"), "--reference", rp,
                                "--path", "g=greedy:" + g1, "--out", fresh("o")])
            check(rc == 3, "a malformed request is refused (exit %d): %s" % (rc, err.strip()))

        kiln_v2(np, jsonschema, rng, P, fresh, fixture, g, save_logits)
    finally:
        shutil.rmtree(w, ignore_errors=True)
    print("%d failed" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
