#!/usr/bin/env python3
"""`fidelis check` on Kiln v2 layer-attribution and oracle results (KILN-ATTRIBUTION.md §9,
§13, §14.1, §14.3). The records are built here, independently of the C code, from the retained
v1 vectors reshaped to the v2 schemas (validated with jsonschema when it is installed) and
sealed by §2. Each must pass; a copy with one value changed fails its hash, and a re-sealed copy
that breaks one rule fails it (exit 3, naming the JSON path). The v2 path result is covered by
test_kiln_attribute.py on records `fidelis attribute --format kiln-v2` makes."""
import copy
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import kiln_util as K  # noqa: E402

FAILS = []
LAYER_V1 = "20260719t050322-rocm-strix-halo-hf-layer-attribution-qualified-rmsnorm-repair-v1.json"
ORACLE_V1 = "20260719t003452-rocm-strix-halo-hf-next-token-first-divergence-v1.json"


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def h(ch):
    return "sha256:" + ch * 64


def process():
    return {"elapsed_seconds": 2.5, "schema": "kiln.hf-process-containment.v1",
            "timeout_seconds": 570.0, "worker_exit_code": 0}


def arm():
    return {"host_available_before_gib": 24, "network": "forbidden", "process": process()}


def load(name):
    with open(os.path.join(K.VECTORS, name), encoding="utf-8") as f:
        return json.load(f)


def layer_v2():
    """§13: the retained qualified layer result reshaped to v2 and sealed."""
    v1 = load(LAYER_V1)
    w = {k: v for k, v in v1["worker"].items() if k != "containment"}
    w["schema"] = "kiln.rocm-hf-layer-attribution.v2"
    rec = {"schema": "kiln.rocm-hf-layer-attribution-result.v2",
           "created_at_utc": "2026-12-01T16:00:00Z", "duration_seconds": 61.5,
           "source": {"commit": "a" * 40, "origin_main": "a" * 40, "tree": "b" * 40},
           "binary": {"build_duration_seconds": 3.5,
                      "build_environment_policy": "closed-source-build-v1",
                      "path": "target/release/examples/rocm_hf_path_attribution", "sha256": h("c")},
           "implementation": {"guarded_exec_sha256": h("d"), "hf_worker_sha256": h("e"),
                              "process_runner_sha256": h("f"), "python_sha256": h("1"),
                              "runner_sha256": h("2")},
           "model_identity": v1["model_identity"],
           "model_fingerprint": {"implementation_sha256": h("3"), "python_sha256": h("1"),
                                 "process": process()},
           "request": {"path": "qualification/requests/first-divergence-v1.json",
                       "sha256": v1["request"]["sha256"]},
           "reference": v1["reference"],
           "containment": {"hf": arm(), "kiln": arm()},
           "worker": w}
    return K.reseal(rec)


def oracle_v2():
    """§9: the retained oracle reshaped to v2 and sealed."""
    v1 = load(ORACLE_V1)
    rec = {"schema": "kiln.rocm-hf-next-token-oracle.v2",
           "created_at_utc": "2026-12-01T16:00:00Z", "duration_seconds": 20.25,
           "source": {"commit": "a" * 40, "origin_main": "a" * 40, "tree": "b" * 40},
           "implementation": {"hf_worker_sha256": h("e"), "python_sha256": h("1"),
                              "process_runner_sha256": h("f")},
           "request": v1["request"], "model_identity": v1["model_identity"],
           "model_fingerprint": {"implementation_sha256": h("3"), "python_sha256": h("1"),
                                 "process": process()},
           "containment": {"host_available_before_gib": 24, "network": "forbidden",
                           "service": process()},
           "oracle": v1["oracle"], "reference_artifact": v1["reference_artifact"],
           "verdict": v1["verdict"]}
    return K.reseal(rec)


def validators():
    try:
        import jsonschema
    except ImportError:
        print("note: python3-jsonschema missing, schema validation skipped")
        return None
    schemas = {}
    for n in ("rocm-hf-next-token-oracle-v2", "rocm-hf-layer-attribution-v2"):
        with open(os.path.join(K.SCHEMAS, n + ".schema.json"), encoding="utf-8") as f:
            schemas[n] = json.load(f)
    store = {s["$id"]: s for s in schemas.values()}
    out = {}
    for n, s in schemas.items():
        resolver = jsonschema.RefResolver.from_schema(s, store=store)
        out[n] = jsonschema.Draft202012Validator(s, resolver=resolver)
    return out


def setter(*args):
    keys, value = args[:-1], args[-1]

    def f(doc):
        d = doc
        for k in keys[:-1]:
            d = d[k]
        if value is DELETE:
            del d[keys[-1]]
        else:
            d[keys[-1]] = value
    return f


DELETE = object()


def main():
    if not K.CLI or not os.access(K.CLI, os.X_OK):
        print("skip: FDL_CLI is not an executable")
        return 77
    w = tempfile.mkdtemp(prefix="fdl-kiln-check-v2-")
    try:
        n = [0]

        def write(doc):
            n[0] += 1
            p = os.path.join(w, "r%03d.json" % n[0])
            K.write_json(p, doc)
            return p

        def passes(doc, what):
            p = write(doc)
            rc, out, err = K.run(["check", p])
            check(rc == 0 and out == "OK  %s  %s  %s\n" % (p, doc["schema"], doc["result_sha256"]),
                  "%s passes (exit %d): %s" % (what, rc, (out + err).strip()[:300]))

        def refused(good, mut, needle, what, reseal=True):
            doc = copy.deepcopy(good)
            mut(doc)
            if reseal:
                doc = K.reseal(doc)
            rc, out, err = K.run(["check", write(doc)])
            check(rc == 3 and needle in err and not out,
                  "%s is refused naming %s (exit %d): %s" % (what, needle, rc, err.strip()[:300]))

        vs = validators()
        L, O = layer_v2(), oracle_v2()
        if vs:
            for name, doc in (("rocm-hf-layer-attribution-v2", L), ("rocm-hf-next-token-oracle-v2", O)):
                errs = list(vs[name].iter_errors(doc))
                for e in errs[:3]:
                    print("  schema: %s at %s" % (e.message, list(e.path)))
                check(not errs, "the built %s record validates against Kiln's schema" % name)
        check(K.self_hash(L) == L["result_sha256"] and K.self_hash(O) == O["result_sha256"],
              "both records are sealed by §2")
        passes(L, "layer v2")
        passes(O, "oracle v2")
        rc, out, _ = K.run(["check", write(L), write(O)])
        check(rc == 0 and len(out.splitlines()) == 2, "both at once (exit %d)" % rc)

        # ---- layer v2 ----
        lw = L["worker"]
        g = lw["largest_relative_error_growth"]
        refused(L, setter("worker", "boundaries", 3, "max_abs_error", 99.0), "$.result_sha256",
                "layer: one value changed without resealing", reseal=False)
        refused(L, setter("worker", "largest_relative_error_growth", "index", (g["index"] + 1) % 34),
                "$.worker.largest_relative_error_growth.index", "layer: a resealed wrong growth index")
        refused(L, setter("worker", "largest_relative_error_growth",
                          "relative_root_mean_square_error_delta",
                          g["relative_root_mean_square_error_delta"] * 1.001),
                "$.worker.largest_relative_error_growth.relative_root_mean_square_error_delta",
                "layer: a resealed wrong growth delta")
        b5 = lw["boundaries"][5]
        refused(L, setter("worker", "boundaries", 5, "relative_root_mean_square_error",
                          b5["relative_root_mean_square_error"] * 2),
                "$.worker.boundaries[5]", "layer: rel off rmse/ref_rms")
        refused(L, setter("worker", "boundaries", 4, "name", "layer_03_linear_attention"),
                "$.worker.boundaries[4]", "layer: a boundary misnamed")
        refused(L, lambda d: d["worker"]["boundaries"].pop(), "$.worker.boundaries",
                "layer: 33 boundaries")
        refused(L, setter("worker", "kernel_policy", "fast_path"), "$.worker.kernel_policy",
                "layer: an unknown kernel policy")
        refused(L, setter("worker", "input_token_count", 165), "$.worker.input_token_count",
                "layer: 165 inputs")
        refused(L, setter("worker", "hf_layer_last_rows_sha256", h("9")),
                "$.worker.hf_layer_last_rows_sha256", "layer: rows sha off the evidence")
        refused(L, setter("worker", "containment", {}), "$.worker", "layer: v1's worker containment")
        refused(L, setter("reference", "bytes", L["reference"]["bytes"] + 1), "$.reference.bytes",
                "layer: reference bytes off output_bytes")
        refused(L, setter("reference", "evidence", "memory_oom_events", 1),
                "$.reference.evidence.memory_oom_events", "layer: an OOM event")
        refused(L, setter("reference", "evidence", "boundary_names", 7, "x"),
                "$.reference.evidence.boundary_names[7]", "layer: an evidence boundary name")
        refused(L, setter("reference", "evidence", "top_logit_margin", 0.5),
                "$.reference.evidence.top_logit_margin", "layer: a wrong top margin")
        refused(L, setter("reference", "evidence", "torch_version", "2.12.0"),
                "$.reference.evidence.torch_version", "layer: another torch")
        refused(L, setter("reference", "evidence", "request_sha256", h("8")),
                "$.reference.evidence.request_sha256", "layer: evidence bound to another request")
        refused(L, setter("containment", "kiln", "network", "allowed"),
                "$.containment.kiln.network", "layer: kiln arm with network")
        refused(L, setter("containment", "hf", DELETE), "$.containment", "layer: no hf arm")
        refused(L, setter("model_fingerprint", "python_sha256", h("7")),
                "$.model_fingerprint.python_sha256", "layer: fingerprint python off implementation")
        refused(L, setter("implementation", "supervisor_sha256", h("7")), "$.implementation",
                "layer: v1's supervisor digest")
        refused(L, setter("binary", "rocm_archs", ["gfx1151"]), "$.binary", "layer: v1's rocm_archs")

        # ---- oracle v2 ----
        refused(O, setter("oracle", "top_logit_margin", 0.5), "$.result_sha256",
                "oracle: one value changed without resealing", reseal=False)
        other = "kiln" if O["verdict"]["argmax_candidate"] != "kiln" else "vllm"
        refused(O, setter("verdict", "argmax_candidate", other), "$.verdict.argmax_candidate",
                "oracle: a resealed wrong verdict")
        refused(O, setter("verdict", "candidate_attribution_complete",
                          not O["verdict"]["candidate_attribution_complete"]),
                "$.verdict.candidate_attribution_complete", "oracle: a flipped completeness")
        refused(O, setter("verdict", "argmax_token_id", O["oracle"]["argmax"] + 1),
                "$.verdict.argmax_token_id", "oracle: a wrong verdict argmax")
        refused(O, setter("oracle", "request_id", "other"), "$.oracle.request_id",
                "oracle: evidence of another request")
        refused(O, setter("reference_artifact", "bytes", 1), "$.reference_artifact.bytes",
                "oracle: artifact bytes off output_bytes")
        refused(O, lambda d: d["oracle"]["top_tokens"].reverse(), "$.oracle.top_tokens",
                "oracle: top tokens out of order")
        refused(O, setter("oracle", "candidate_tokens", 0, "engine", "vllm"),
                "$.oracle.candidate_tokens[0]", "oracle: candidates out of order")
        refused(O, setter("containment", "service", "worker_exit_code", 1),
                "$.containment.service.worker_exit_code", "oracle: a failed worker")
        refused(O, setter("request", "source", "source_commit", "xyz"),
                "$.request.source.source_commit", "oracle: a bad source commit")
        refused(O, setter("request", "contract_path", "/abs/req.json"), "$.request.contract_path",
                "oracle: an absolute contract path")
        refused(O, setter("source", "origin_main", "c" * 40), "$.source.origin_main",
                "oracle: commit != origin_main")
        refused(O, setter("oracle", "boundary_count", 34), "$.oracle", "oracle: a layer key")
        refused(O, setter("duration_seconds", 0), "$.duration_seconds", "oracle: zero duration")
    finally:
        shutil.rmtree(w)
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
