#!/usr/bin/env python3
"""`fidelis layers diff --format kiln-v2` and `--check` (docs/ATTRIBUTION.md; KILN-ATTRIBUTION.md
§8, §11, §13, §14.3). Random [34, 2560] HF and Kiln rows, Kiln final logits and the retained
first-divergence request go through the writer; the record must equal one built here from first
principles (numpy float64, sequential sums by np.cumsum, Kiln's formulas), byte for byte in its
file form, validate against Kiln's layer v2 schema, pass `fidelis check` and pass `--check`.
`--check` refuses (exit 3, naming the field) a record with one value altered and resealed, and
rows that are not the record's; it also recomputes a v1-shaped record of small rows. The writer
refuses (exit 3, nothing written) 33 rows, an unknown kernel policy, evidence of other rows or
another width, a NaN, observed ids that are not the continuation and the argmax, wrong names and
an existing --out; usage errors are exit 4."""
import copy
import hashlib
import json
import math
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
import kiln_util as K  # noqa: E402

FAILS = []
LAYER_V1 = "20260719t050322-rocm-strix-halo-hf-layer-attribution-qualified-rmsnorm-repair-v1.json"
V = 248320
H = 2560
CONT = [1206, 5517, 264]


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def names():
    out = ["embedding"]
    for i in range(32):
        out.append("layer_%02d_%s" % (i, "full_attention" if (i + 1) % 4 == 0 else "linear_attention"))
    return out + ["final_norm"]


def f32_sha(np, a):
    return "sha256:" + hashlib.sha256(np.ascontiguousarray(a, dtype="<f4").tobytes()).hexdigest()


def boundary(np, i, name, Krow, Hrow):
    """§11 compare_boundary, restated."""
    k = Krow.astype(np.float64)
    h = Hrow.astype(np.float64)
    d = k - h
    n = float(k.size)
    last = lambda v: float(np.cumsum(v)[-1])  # noqa: E731 (sequential, one accumulator)
    sq, hh, kk = last(d * d), last(h * h), last(k * k)
    rmse, rms = math.sqrt(sq / n), math.sqrt(hh / n)
    # docs/ATTRIBUTION.md's cosine rule: equal rows give exactly 1.0, others clamp to [-1, 1]
    same = float(np.abs(d).max()) == 0.0
    cos = 1.0 if same else min(1.0, max(-1.0, last(k * h) / (math.sqrt(kk) * math.sqrt(hh))))
    return {"cosine_similarity": cos,
            "hf_sha256": f32_sha(np, Hrow), "index": i, "kiln_sha256": f32_sha(np, Krow),
            "max_abs_error": max(0.0, float(np.abs(d).max())), "mean_abs_error": last(np.abs(d)) / n,
            "name": name, "reference_root_mean_square": rms,
            "relative_root_mean_square_error": rmse / rms, "root_mean_square_error": rmse}


def growth(bs):
    prev, best, idx = 0.0, -math.inf, 0
    for i, b in enumerate(bs):
        d = b["relative_root_mean_square_error"] - prev
        if d > best:
            best, idx = d, i
        prev = b["relative_root_mean_square_error"]
    return {"index": idx, "name": bs[idx]["name"], "relative_root_mean_square_error_delta": best}


def h(ch):
    return "sha256:" + ch * 64


def process():
    return {"elapsed_seconds": 2.5, "schema": "kiln.hf-process-containment.v1",
            "timeout_seconds": 570.0, "worker_exit_code": 0}


def provenance(v1, rows_sha, hidden=H):
    ev = copy.deepcopy(v1["reference"]["evidence"])
    ev["layer_last_rows_sha256"] = rows_sha
    ev["hidden_size"] = hidden
    return {"created_at_utc": "2026-12-01T17:00:00.25Z", "duration_seconds": 61.5,
            "source": {"commit": "a" * 40, "origin_main": "a" * 40, "tree": "b" * 40},
            "binary": {"build_duration_seconds": 3.5,
                       "build_environment_policy": "closed-source-build-v1",
                       "path": "target/release/examples/rocm_hf_path_attribution", "sha256": h("c")},
            "implementation": {"guarded_exec_sha256": h("d"), "hf_worker_sha256": h("e"),
                               "process_runner_sha256": h("f"), "python_sha256": h("1"),
                               "runner_sha256": h("2")},
            "model_fingerprint": {"implementation_sha256": h("3"), "python_sha256": h("1"),
                                  "process": process()},
            "request_path": "qualification/oracles/rocm-strix-halo-greedy-c1-first-divergence-v1.json",
            "reference": {"bytes": ev["output_bytes"], "evidence": ev, "location": "local_ignored",
                          "sha256": h("4")},
            "containment": {"hf": {"host_available_before_gib": 24, "network": "forbidden",
                                   "process": process()},
                            "kiln": {"host_available_before_gib": 23, "network": "forbidden",
                                     "process": process()}}}


def expected(np, req, prov, R, C, logits, observed, policy):
    bs = [boundary(np, i, n, C[i], R[i]) for i, n in enumerate(names())]
    worker = {"schema": "kiln.rocm-hf-layer-attribution.v2", "boundaries": bs,
              "final_logits_sha256": f32_sha(np, logits),
              "hf_layer_last_rows_sha256": f32_sha(np, R),
              "input_token_count": len(req["input_token_ids"]),
              "input_token_ids_sha256": K.canonical_sha256(req["input_token_ids"]),
              "kernel_policy": policy, "largest_relative_error_growth": growth(bs),
              "observed_next_tokens": observed, "request_id": req["id"]}
    rec = {"schema": "kiln.rocm-hf-layer-attribution-result.v2",
           "created_at_utc": prov["created_at_utc"], "duration_seconds": prov["duration_seconds"],
           "source": prov["source"], "binary": prov["binary"], "implementation": prov["implementation"],
           "request": {"path": prov["request_path"], "sha256": K.canonical_sha256(req)},
           "model_identity": req["model_identity"], "model_fingerprint": prov["model_fingerprint"],
           "reference": prov["reference"], "containment": prov["containment"], "worker": worker}
    return K.reseal(rec)


def validator():
    import jsonschema
    schemas = {}
    for n in ("rocm-hf-next-token-oracle-v2", "rocm-hf-layer-attribution-v2"):
        with open(os.path.join(K.SCHEMAS, n + ".schema.json"), encoding="utf-8") as f:
            schemas[n] = json.load(f)
    store = {s["$id"]: s for s in schemas.values()}
    s = schemas["rocm-hf-layer-attribution-v2"]
    return jsonschema.Draft202012Validator(s, resolver=jsonschema.RefResolver.from_schema(s, store=store))


def safetensors(path, tensors, meta):
    """A plain safetensors file: u64 header length, JSON header, data."""
    header, blobs, off = {"__metadata__": meta}, [], 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hb = json.dumps(header, separators=(",", ":")).encode("ascii")
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))


def main():
    if not K.CLI or not os.access(K.CLI, os.X_OK) or not K.SHARED:
        print("skip: FDL_CLI or FDL_SHARED is not set")
        return 77
    try:
        import jsonschema  # noqa: F401
        import numpy as np
    except ImportError:
        print("skip: numpy or python3-jsonschema is not installed")
        return 77
    with open(K.REQUEST, encoding="utf-8") as f:
        req = json.load(f)
    with open(os.path.join(K.VECTORS, LAYER_V1), encoding="utf-8") as f:
        v1 = json.load(f)
    val = validator()
    rng = np.random.default_rng(20261201)
    w = tempfile.mkdtemp(prefix="fdl-layers-kiln-v2-")
    try:
        seq = [0]

        def fresh(stem, ext):
            seq[0] += 1
            return os.path.join(w, "%s-%d%s" % (stem, seq[0], ext))

        def save(arr):
            p = fresh("a", ".npy")
            np.save(p, np.asarray(arr, dtype=np.float32))
            return p

        def jfile(v):
            p = fresh("j", ".json")
            K.write_json(p, v)
            return p

        def rows(n=34, hidden=H, spike=None):
            R = rng.normal(0.0, 1.0, (n, hidden)).astype(np.float32)
            R *= np.linspace(0.01, 3.0, n, dtype=np.float32)[:, None]  # widening rows, as a model's
            noise = rng.normal(0.0, 1.0, (n, hidden)) * np.geomspace(1e-4, 5e-2, n)[:, None]
            if spike is not None:  # one boundary whose error jumps, as the retained layer_02 runs
                noise[spike] *= 200.0
            C = (R + noise * np.abs(R)).astype(np.float32)
            C[0] = R[0]  # the embedding agrees bit for bit, as in every retained run
            return R, C

        def logits():
            L = rng.normal(0.0, 2.0, V).astype(np.float32)
            L[25045] = np.float32(19.5)
            return L

        req_path = jfile(req)

        def emit(R, C, L, prov, observed=None, policy="qualified", extra=(), ref=None, out=None,
                 request=None):
            observed = observed if observed is not None else CONT + [int(np.argmax(L))]
            out = out or fresh("rec", ".json")
            argv = ["layers", "diff", ref or save(R), save(C), "--format", "kiln-v2", "--request",
                    request or req_path, "--provenance", jfile(prov), "--observed", json.dumps(observed),
                    "--kernel-policy", policy, "--final-logits", save(L), "--out", out, *extra]
            rc, so, err = K.run(argv)
            return rc, so, err, out, observed

        # ---- the writer, against the python oracle ----
        good = None
        for policy, use_st, spike in (("qualified", False, None), ("split_q_gate_only", True, 3)):
            R, C = rows(spike=spike)
            L = logits()
            prov = provenance(v1, f32_sha(np, R))
            ref = None
            extra = ()
            if use_st:
                ref = fresh("hf", ".safetensors")
                ids = np.asarray(req["input_token_ids"], dtype="<i8").tobytes()
                safetensors(ref, [("input_ids", "I64", [1, len(req["input_token_ids"])], ids),
                                  ("layer_last_rows", "F32", [34, H], R.astype("<f4").tobytes())],
                            {"schema": "kiln.qwen35-hf-layer-last-rows.v1",
                             "boundary_names": json.dumps(names(), separators=(",", ":"))})
                extra = ("--ref-tensor", "layer_last_rows")
            rc, so, err, out, observed = emit(R, C, L, prov, policy=policy, ref=ref, extra=extra)
            what = "kiln-v2 (%s%s)" % (policy, ", safetensors REF with boundary_names" if use_st else "")
            check(rc == 0, "%s: exit %d: %s" % (what, rc, err.strip()))
            if rc:
                continue
            want = expected(np, req, prov, R, C, L, observed, policy)
            with open(out, encoding="ascii") as f:
                text = f.read()
            got = json.loads(text)
            if got != want:
                for k in want:
                    if got.get(k) != want[k]:
                        print("  differs at %s" % k)
            check(got == want, "%s: equals the record built in numpy" % what)
            g = want["worker"]["largest_relative_error_growth"]
            check(spike is None or (g["index"], g["name"]) == (3, "layer_02_linear_attention"),
                  "%s: the growth lands where the error jumps: %s" % (what, g))
            jrc, jo, _ = K.run(["layers", "diff", save(R), save(C), "--json", "--names", ",".join(names())])
            plain = json.loads(jo) if jrc == 0 else {}
            check(plain == {"boundaries": want["worker"]["boundaries"],
                            "largest_relative_error_growth": g},
                  "%s: layers diff --json with the same names gives the worker's boundaries and growth" % what)
            check(text == json.dumps(want, indent=2, sort_keys=True, ensure_ascii=True) + "\n",
                  "%s: the file is Kiln's form byte for byte (indent 2, sorted, repr floats)" % what)
            check(os.stat(out).st_mode & 0o777 != 0 and not os.path.exists(out + ".tmp"),
                  "%s: no staging file left" % what)
            errs = list(val.iter_errors(got))
            for e in errs[:3]:
                print("  schema: %s at %s" % (e.message, list(e.path)))
            check(not errs, "%s: validates against Kiln's layer-attribution v2 schema" % what)
            g = want["worker"]["largest_relative_error_growth"]
            check(so == "largest_relative_error_growth %d %s %r\nresult %s\n"
                  % (g["index"], g["name"], g["relative_root_mean_square_error_delta"], want["result_sha256"]),
                  "%s: prints the growth and result_sha256: %r" % (what, so))
            rc, so, err = K.run(["check", out])
            check(rc == 0 and so == "OK  %s  kiln.rocm-hf-layer-attribution-result.v2  %s\n"
                  % (out, want["result_sha256"]), "%s: fidelis check passes it (exit %d): %s"
                  % (what, rc, (so + err).strip()))
            rc, so, err = K.run(["layers", "diff", save(R), save(C), "--check", out])
            check(rc == 0 and so.startswith("OK  %s  " % out),
                  "%s: --check recomputes it bit for bit (exit %d): %s" % (what, rc, (so + err).strip()))
            rc, so, err = K.run(["layers", "diff", save(R), save(C), "--check", out,
                                 "--final-logits", save(L)])
            check(rc == 0, "%s: --check with --final-logits (exit %d): %s" % (what, rc, err.strip()))
            good = (R, C, L, prov, out, want) if good is None else good

        if good is None:
            return 1
        R, C, L, prov, out, want = good

        # ---- --check refuses what the rows do not give ----
        def tampered(mut, needle, what, checker_passes=True):
            doc = copy.deepcopy(want)
            mut(doc)
            doc = K.reseal(doc)
            p = jfile(doc)
            if checker_passes:
                rc, _, err = K.run(["check", p])
                check(rc == 0, "%s: the resealed record still passes fidelis check (exit %d): %s"
                      % (what, rc, err.strip()))
            rc, so, err = K.run(["layers", "diff", save(R), save(C), "--check", p])
            check(rc == 3 and needle in err and not so,
                  "%s: --check exit 3 naming %s (exit %d): %s" % (what, needle, rc, err.strip()))

        def bump(*keys):
            def f(doc):
                d = doc
                for k in keys[:-1]:
                    d = d[k]
                d[keys[-1]] = float(np.nextafter(d[keys[-1]], math.inf))
            return f

        tampered(bump("worker", "boundaries", 7, "max_abs_error"),
                 "$.worker.boundaries[7].max_abs_error (layer_06_linear_attention): recorded",
                 "max_abs_error one ulp up")
        tampered(bump("worker", "boundaries", 12, "cosine_similarity"),
                 "$.worker.boundaries[12].cosine_similarity", "a cosine one ulp up")
        tampered(bump("worker", "boundaries", 20, "mean_abs_error"),
                 "$.worker.boundaries[20].mean_abs_error", "a mean one ulp up")
        tampered(bump("worker", "boundaries", 33, "root_mean_square_error"),
                 "$.worker.boundaries[33].root_mean_square_error (final_norm)", "final_norm's rmse one ulp up")
        tampered(bump("worker", "largest_relative_error_growth", "relative_root_mean_square_error_delta"),
                 "$.worker.largest_relative_error_growth.relative_root_mean_square_error_delta",
                 "the growth delta one ulp up")

        def swap_sha(doc):
            b = doc["worker"]["boundaries"][3]
            b["kiln_sha256"] = b["hf_sha256"]
        tampered(swap_sha, "$.worker.boundaries[3].kiln_sha256", "a row digest")

        def as_int(doc):
            doc["worker"]["boundaries"][0]["max_abs_error"] = 0
        tampered(as_int, "$.worker.boundaries[0].max_abs_error (embedding): recorded 0, recomputed from the rows 0.0",
                 "an integer 0 where Kiln prints 0.0")
        C2 = C.copy()
        C2[5, 100] = np.nextafter(C2[5, 100], np.float32(np.inf))
        rc, so, err = K.run(["layers", "diff", save(R), save(C2), "--check", out])
        check(rc == 3 and "$.worker.boundaries[5].kiln_sha256" in err,
              "--check with one Kiln value one ulp off: exit 3 naming boundary 5 (exit %d): %s" % (rc, err.strip()))
        R2 = R.copy()
        R2[9, 0] = -R2[9, 0]
        rc, so, err = K.run(["layers", "diff", save(R2), save(C), "--check", out])
        check(rc == 3 and "hf_layer_last_rows_sha256" in err,
              "--check with other HF rows: exit 3 naming hf_layer_last_rows_sha256 (exit %d): %s" % (rc, err.strip()))
        L2 = L.copy()
        L2[7] += np.float32(1.0)
        rc, so, err = K.run(["layers", "diff", save(R), save(C), "--check", out, "--final-logits", save(L2)])
        check(rc == 3 and "final_logits_sha256" in err,
              "--check with other final logits: exit 3 naming final_logits_sha256 (exit %d): %s" % (rc, err.strip()))
        rc, so, err = K.run(["layers", "diff", save(R[:33]), save(C[:33]), "--check", out])
        check(rc == 3 and "34 boundaries" in err, "--check with 33 rows: exit 3 (exit %d): %s" % (rc, err.strip()))
        broken = copy.deepcopy(want)
        broken["worker"]["boundaries"][2]["max_abs_error"] = 1.0
        rc, so, err = K.run(["layers", "diff", save(R), save(C), "--check", jfile(broken)])
        check(rc == 3 and "$.result_sha256" in err,
              "--check on a record whose seal is broken: exit 3 from the checker (exit %d): %s" % (rc, err.strip()))

        # ---- a v1-shaped record of small rows: the recomputation does not need 34 x 2560 ----
        n1, h1 = 6, 16
        Rs, Cs = rows(n1, h1)
        nm = ["b%d" % i for i in range(n1)]
        bs = [boundary(np, i, nm[i], Cs[i], Rs[i]) for i in range(n1)]
        old = copy.deepcopy(v1)
        old["worker"]["boundaries"] = bs
        old["worker"]["largest_relative_error_growth"] = growth(bs)
        old["worker"]["hf_layer_last_rows_sha256"] = f32_sha(np, Rs)
        old["reference"]["evidence"]["layer_last_rows_sha256"] = f32_sha(np, Rs)
        old["reference"]["evidence"]["hidden_size"] = h1
        old = K.reseal(old)
        p1 = jfile(old)
        rc, so, err = K.run(["layers", "diff", save(Rs), save(Cs), "--check", p1])
        check(rc == 0 and "kiln.rocm-hf-layer-attribution-result.v1" in so,
              "--check on a v1 record of %d x %d rows (exit %d): %s" % (n1, h1, rc, (so + err).strip()))
        bad1 = copy.deepcopy(old)
        bad1["worker"]["boundaries"][4]["reference_root_mean_square"] = float(
            np.nextafter(bs[4]["reference_root_mean_square"], 0.0))
        rc, so, err = K.run(["layers", "diff", save(Rs), save(Cs), "--check", jfile(K.reseal(bad1))])
        check(rc == 3 and "$.worker.boundaries[4].reference_root_mean_square (b4)" in err,
              "--check on a v1 record with one ref RMS off: exit 3 naming it (exit %d): %s" % (rc, err.strip()))
        rc, so, err = K.run(["layers", "diff", save(Rs), save(Cs), "--check", K.REQUEST])
        check(rc == 3 and "no boundaries" in err, "--check on a request: exit 3 (exit %d): %s" % (rc, err.strip()))

        # ---- writer refusals: exit 3 and nothing written ----
        def refused(what, needle, R_=None, C_=None, L_=None, prov_=None, **kw):
            o = fresh("never", ".json")
            rc, so, err, _, _ = emit(R if R_ is None else R_, C if C_ is None else C_,
                                     L if L_ is None else L_, prov if prov_ is None else prov_,
                                     out=o, **kw)
            check(rc == 3 and needle in err and not os.path.exists(o) and not so,
                  "%s: exit 3 naming %s, nothing written (exit %d): %s" % (what, needle, rc, err.strip()))

        am = int(np.argmax(L))
        refused("33 boundaries", "33 boundaries, expected the 34", R_=R[:33], C_=C[:33],
                prov_=provenance(v1, f32_sha(np, R[:33])))
        refused("35 boundaries", "35 boundaries", R_=np.vstack([R, R[:1]]), C_=np.vstack([C, C[:1]]),
                prov_=provenance(v1, f32_sha(np, np.vstack([R, R[:1]]))))
        refused("an unknown kernel policy", "kernel_policy \"fast_path\"", policy="fast_path")
        refused("evidence of other rows", "layer_last_rows_sha256", prov_=provenance(v1, h("9")))
        Rn = R[:, :H - 1].copy()
        refused("rows narrower than the evidence's hidden_size", "hidden_size", R_=Rn, C_=C[:, :H - 1].copy(),
                prov_=provenance(v1, f32_sha(np, Rn)))
        Cn = C.copy()
        Cn[17, 3] = np.nan
        refused("a NaN in the Kiln rows", "NaN", C_=Cn)
        Ln = L.copy()
        Ln[11] = np.inf
        refused("an infinite final logit", "infinite", L_=Ln)
        refused("observed ids not ending in the argmax", "argmax", observed=CONT + [(am + 1) % V])
        refused("observed ids not starting with the continuation", "observed[1]",
                observed=[1206, 5518, 264, am])
        refused("3 observed ids", "4 token ids", observed=CONT)
        refused("final logits of another vocabulary", "248320", L_=L[:1000])
        pe = copy.deepcopy(prov)
        pe["reference"]["evidence"]["request_id"] = "another-request"
        refused("evidence of another request", "request_id", prov_=pe)
        pe = copy.deepcopy(prov)
        pe["reference"]["bytes"] += 1
        refused("reference bytes off the evidence", "output_bytes", prov_=pe)
        pe = copy.deepcopy(prov)
        pe["containment"]["kiln"]["network"] = "allowed"
        refused("a kiln arm with network (the checker's rule)", "$.containment.kiln.network", prov_=pe)
        pe = dict(prov, extra=1)
        refused("provenance with an unknown key", "\"extra\"", prov_=pe)
        pe = copy.deepcopy(prov)
        pe["model_identity"] = dict(req["model_identity"], id="another")
        refused("provenance model_identity off the request's", "model_identity", prov_=pe)
        refused("a layer record given as --request", "request", request=os.path.join(K.VECTORS, LAYER_V1))
        rq = copy.deepcopy(req)
        rq["prompt"]["token_count"] += 1
        refused("a request that breaks its own rules", "$.prompt.token_count", request=jfile(rq))
        bad_names = names()
        bad_names[4] = "layer_03_linear_attention"
        refused("--names off §13", "boundary name 4", extra=("--names", ",".join(bad_names)))
        exists = fresh("exists", ".json")
        with open(exists, "w") as f:
            f.write("keep\n")
        rc, so, err, _, _ = emit(R, C, L, prov, out=exists)
        with open(exists) as f:
            kept = f.read()
        check(rc == 3 and "exists" in err and kept == "keep\n",
              "an existing --out: exit 3, left as it was (exit %d): %s" % (rc, err.strip()))
        pe = copy.deepcopy(prov)
        pe["model_identity"] = req["model_identity"]
        rc, _, err, o, _ = emit(R, C, L, pe)
        check(rc == 0, "provenance model_identity equal to the request's is accepted (exit %d): %s" % (rc, err.strip()))

        # ---- usage ----
        Rp, Cp = save(R), save(C)
        for argv, what in ((["--out", fresh("u", ".json")], "--out without kiln-v2"),
                           (["--format", "kiln-v2", "--request", req_path], "kiln-v2 without the rest"),
                           (["--check", out, "--json"], "--check with --json"),
                           (["--check", out, "--format", "kiln-v2"], "--check with --format"),
                           (["--final-logits", save(L)], "--final-logits alone"),
                           (["--format", "kiln-v3"], "an unknown format")):
            rc, _, err = K.run(["layers", "diff", Rp, Cp] + argv)
            check(rc == 4, "usage: %s is exit 4 (%d): %s" % (what, rc, err.strip()[:200]))
        rc, _, err = K.run(["layers", "diff", Rp, Cp, "--check", fresh("missing", ".json")])
        check(rc == 4, "--check of a missing record is exit 4 (%d)" % rc)
    finally:
        shutil.rmtree(w)
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
