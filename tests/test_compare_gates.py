"""test_compare_gates.py - every gate of the ladder has a refusal or a downgrade case, with the
reference's codes, gate names, override flags, disclosures (code, severity, affects, order),
bias blocks, classes and exit codes (COMPARISON-RECEIPT.md sections 2, 4, 5, 6.4, 12)."""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_util as U  # noqa: E402

B = U.Builder(vocab=40, hidden=16, contexts=3, tokens=20, seed=3)
H0 = B.random_hidden()
H1 = [h + (B.rng.standard_normal(h.shape) * 0.1).astype(np.float32) for h in H0]
W = B.random_head()
W2 = W + (B.rng.standard_normal(W.shape) * 0.05).astype(np.float32)
OUTS = [0]


def out():
    OUTS[0] += 1
    return B.path(f"out-{OUTS[0]}")


def refused(tag, args, code, gate=None, remedy=None):
    o = out()
    rc, so, se = U.compare(*args, "--out", o)
    U.check(rc == 3, f"{tag}: exit {rc}, expected 3 ({se.strip()[:300]})")
    U.check(U.refusal_code(se) == code, f"{tag}: refusal {U.refusal_code(se)}, expected {code}: {se.strip()[:300]}")
    if gate:
        U.check(f": gate {gate}: " in se, f"{tag}: gate {gate} not named: {se.strip()[:300]}")
    if remedy:
        U.check(remedy in se, f"{tag}: remedy lacks '{remedy}': {se.strip()[:400]}")
    U.check(not os.path.exists(o), f"{tag}: a refusal wrote {o}")
    return se


def receipt(tag, args, exit_code=None):
    o = out()
    rc, so, se = U.compare(*args, "--out", o)
    if not U.check(rc in (0, 2), f"{tag}: exit {rc}: {se.strip()[:400]}"):
        return None
    if exit_code is not None:
        U.check(rc == exit_code, f"{tag}: exit {rc}, expected {exit_code}")
    r = U.receipt(o)
    U.check(rc == (0 if r["comparability"]["class"] == "strict" else 2), f"{tag}: exit vs class")
    errs = U.schema_errors(r)
    U.check(errs == [], f"{tag}: schema {errs[:3]}")
    return r


def codes(r):
    return [(d["code"], d["severity"], d["affects_comparability"]) for d in r["disclosures"]]


def main():
    U.require_shared()
    R = B.pack("R", tensors=H0, head=W)
    R2 = B.pack("R2", tensors=H0, head=W)
    Q = B.pack("Q", tensors=H1, head=W, role="quant")

    # ---- clean measurement (HEAD-1a), strict, exit 0 -------------------------------------
    r = receipt("HEAD-1a", [R, Q], exit_code=0)
    if r:
        U.check(r["estimator"]["head_policy"] == "shared_reference_head", "HEAD-1a policy")
        U.check(codes(r) == [("shared_reference_head", "info", False)], f"HEAD-1a codes {codes(r)}")
        U.check(r["comparability"]["usable_as_floor"] is True and r["comparability"]["bias"] is None,
                "HEAD-1a floor/bias")
        U.check(r["comparability"]["key"].startswith("cmp--"), "measurement has a key")
        U.check(all(g["passed"] and g["overridden_by"] is None for g in r["gates"].values()),
                "HEAD-1a: every gate passed without override")
        U.check(sorted(r["gates"]) == sorted(["seal", "form", "panel", "head", "lane", "stack",
                                              "geometry", "coverage", "lossy", "decode"]), "ten gates")

    # ---- cli ----------------------------------------------------------------------------
    refused("same_root", [R, R], "same_root", "cli")
    rc, so, se = U.compare(R, Q)
    U.check(rc == 4, f"missing --out is usage (exit {rc})")
    o = out()
    U.compare(R, Q, "--out", o)
    before = U.receipt(o)
    rc, so, se = U.compare(R, Q, "--out", o)
    U.check(rc == 3 and U.refusal_code(se) == "destination_exists", f"destination_exists: {rc} {se}")
    U.check(U.receipt(o) == before, "an existing receipt is left untouched")
    U.check(sorted(os.listdir(os.path.dirname(o))) == sorted(
        x for x in os.listdir(os.path.dirname(o)) if not x.startswith(".fidelis-staging-")),
        "no staging directory is left behind")

    # ---- seal ---------------------------------------------------------------------------
    bad = B.path("Qbad")
    shutil.copytree(Q, bad)
    t = os.path.join(bad, "capture", "hidden_0001.safetensors")
    with open(t, "r+b") as f:
        f.seek(-3, 2)
        c = f.read(1)
        f.seek(-3, 2)
        f.write(bytes([c[0] ^ 0x40]))
    refused("seal", [R, bad], "seal_failed", "seal")

    # ---- provenance ---------------------------------------------------------------------
    pv = B.path("Qpreview")
    shutil.copytree(Q, pv)
    U.edit_manifest(pv, lambda m: m.update(not_submittable=True, preview={
        "schema": "malaiwah.fidelity-dataset-preview.v1", "superseded_by": None}))
    r = receipt("preview", [R, pv])
    if r:
        U.check(codes(r)[0] == ("preview_capture", "blocking", True), f"preview codes {codes(r)}")
        U.check(r["comparability"]["class"] == "advisory" and not r["comparability"]["usable_as_floor"],
                "preview: advisory, not a floor")
        U.check("provenance" not in r["gates"], "provenance gate is not in the receipt")

    # ---- panel --------------------------------------------------------------------------
    other_tokens = [list(B.rng.integers(0, 40, size=20)) for _ in range(3)]
    QT = B.pack("QT", tensors=H1, head=W, role="quant", tokens=other_tokens)
    refused("panel suite hash", [R, QT], "panel_mismatch", "panel", "deliberately no")
    sw = {"score_from": 0, "windowed": False, "min_left_context_tokens": 1,
          "policy": "a different policy text"}
    QW = B.pack("QW", tensors=H1, head=W, role="quant", meta={"panel": {"scoring_window": sw}})
    refused("panel scoring_window", [R, QW], "panel_mismatch", "panel")
    QK = B.pack("QK", tensors=H1, head=W, role="quant",
                meta={"tokenizer": {"revision": "a" * 40}})
    RK = B.pack("RK", tensors=H0, head=W, meta={"tokenizer": {"revision": "b" * 40}})
    refused("tokenizer revision", [RK, QK], "panel_mismatch", "panel")
    r = receipt("tokenizer revision unknown on one side", [R, QK])
    if r:
        U.check(r["panel"]["tokenizer_identity_equal"] is True, "null revision is unknown, not different")
    QI = B.pack("QI", tensors=H1, head=W, role="quant", meta={"tokenizer": {"id": "other-tok"}})
    refused("tokenizer id", [R, QI], "panel_mismatch", "panel", "recapture")

    # ---- coverage -----------------------------------------------------------------------
    QP = B.pack("QP", tensors=H1, head=W, role="quant", skip={2}, allow_partial=True)
    refused("partial without --allow-partial", [R, QP], "seal_failed", "seal")
    r = receipt("partial", [R, QP, "--allow-partial"])
    if r:
        U.check(r["gates"]["coverage"]["overridden_by"] == "--allow-partial", "coverage override")
        U.check(("subset_of_panel", "caveat", True) in codes(r), f"subset disclosure {codes(r)}")
        U.check(r["measurement_scope"]["covers_full_panel"] is False and
                r["measurement_scope"]["contexts"] == 2, "partial scope")
        U.check(r["measurement_scope"]["subset_detail"] ==
                "compared on the 2-record intersection of the two captures",
                f"the reference's subset_detail: {r['measurement_scope']['subset_detail']!r}")
        U.check(r["comparability"]["class"] == "strict", "subset alone leaves the class strict")
    E1 = B.pack("E1", tensors=H0, head=W, skip={1, 2}, allow_partial=True)
    E2 = B.pack("E2", tensors=H1, head=W, role="quant", skip={0}, allow_partial=True)
    refused("empty intersection", [E1, E2, "--allow-partial"], "empty_intersection", "coverage")

    # ---- head ---------------------------------------------------------------------------
    QH = B.pack("QH", tensors=H1, head=W2, role="quant")
    refused("HEAD-1b", [R, QH], "head_mismatch", "head", "--own-heads")
    r = receipt("HEAD-1b override", [R, QH, "--disclose-head-substitution"], exit_code=2)
    if r:
        U.check(r["gates"]["head"]["overridden_by"] == "--disclose-head-substitution", "1b override")
        U.check(("head_substituted", "blocking", True) in codes(r), f"1b codes {codes(r)}")
        U.check(r["comparability"]["bias"]["kind"] == "other", "1b bias kind other")
        U.check(r["estimator"]["head_policy"] == "shared_reference_head", "1b policy")
        U.check(r["comparator"]["head_applied_tensor_content_sha256"] ==
                U.load_manifest(R)["head"]["tensor_content_sha256"], "1b applies the reference head")
    r = receipt("HEAD-1d", [R, QH, "--own-heads"], exit_code=0)
    if r:
        U.check(codes(r) == [("native_head_replay", "info", False)], f"1d codes {codes(r)}")
        U.check(r["comparator"]["head_applied_tensor_content_sha256"] is None, "1d single head null")
    # Contradicting options are usage errors (exit 4), refused by the CLI before any work.
    o = out()
    rc, so, se = U.compare(R, QH, "--own-heads", "--head", os.path.join(R, "head", "weight.safetensors"),
                           "--out", o)
    U.check(rc == 4 and "--own-heads" in se and "--head" in se and not os.path.exists(o),
            f"--head with --own-heads: exit {rc} ({se.strip()[:200]})")
    QS = B.pack("QS", tensors=H0, head=W2, role="quant")
    r = receipt("HEAD-1c", [R, QS, "--own-heads"])
    if r:
        U.check(r["comparison_kind"] == "measurement", "HEAD-1c is a measurement")
        U.check(codes(r)[-1] == ("head_only_difference", "info", False), f"1c codes {codes(r)}")
    refused("HEAD-1c vacuous", [R, QS, "--disclose-head-substitution"],
            "head_substitution_vacuous", "head")
    # a quant capture that declares its head digest but ships no payload
    digest = U.load_manifest(R)["head"]
    QN = B.pack("QN", tensors=H1, role="quant",
                meta={"head": {"tensor_content_sha256": digest["tensor_content_sha256"],
                               "shape": [40, 16], "dtype": "BF16"}})
    refused("HEAD-1d without payload", [R, QN, "--own-heads"], "head_missing", "head")
    receipt("HEAD-1a borrows the other side's payload", [R, QN])
    # HEAD-3 mixed forms: logits of the same head
    logits0 = [(U.bf16_to_f32(U.bf16_bits(h)).astype(np.float64) @
                U.bf16_to_f32(U.bf16_bits(W)).astype(np.float64).T).astype(np.float32) for h in H0]
    RL = B.pack("RL", tensors=logits0, tensor_dtype="F32", form="logit", head=W)
    r = receipt("HEAD-3", [RL, Q])
    if r:
        U.check(codes(r) == [("no_known_deviations", "info", False)], f"HEAD-3 codes {codes(r)}")
        U.check(r["gates"]["form"]["detail"] == "logit vs hidden", "form detail")
        U.check(r["comparator"]["replay_backend"].endswith(":float32"), "mixed replays")
    refused("HEAD-3 mismatch", [RL, QH], "head_mismatch", "head")
    # HEAD-2: logit pair, candidate head unrecorded
    LB = B.pack("LB", tensors=[x + 0.1 for x in logits0], tensor_dtype="F32", form="logit",
                role="quant", meta={"head": {"shape": [40, 16], "dtype": "BF16"}})
    r = receipt("HEAD-2", [RL, LB], exit_code=2)
    if r:
        U.check(codes(r) == [("estimator_unknown", "caveat", True)], f"HEAD-2 codes {codes(r)}")
        U.check(r["comparator"]["replay_backend"] is None, "logit pair: no replay")
    # HEAD-2 with both heads recorded: no gate discloses anything, so the list holds the
    # reference's filler, word for word.
    LC = B.pack("LC", tensors=[x + 0.1 for x in logits0], tensor_dtype="F32", form="logit",
                role="quant", head=W)
    r = receipt("HEAD-2 recorded", [RL, LC])
    if r:
        U.check(r["disclosures"] == [{"code": "no_known_deviations", "severity": "info",
                                      "affects_comparability": False,
                                      "detail": "every gate passed with no override."}],
                f"filler disclosure {r['disclosures']}")

    # ---- lane, stack --------------------------------------------------------------------
    QL = B.pack("QL", tensors=H1, head=W, role="quant", meta={"lane": "streaming"})
    refused("lane", [R, QL], "lane_mismatch", "lane", "--allow-cross-lane")
    r = receipt("cross-lane", [R, QL, "--allow-cross-lane"], exit_code=2)
    if r:
        U.check(r["gates"]["lane"]["overridden_by"] == "--allow-cross-lane", "lane override")
        U.check(("cross_engine_capture", "caveat", True) in codes(r), f"lane codes {codes(r)}")
        U.check(r["comparability"]["same_lane"] is False and not r["comparability"]["usable_as_floor"],
                "BIAS-006")
    QX = B.pack("QX", tensors=H1, head=W, role="quant",
                meta={"source_files": {"engine.py": U.sha("another engine")}})
    r = receipt("cross-stack", [R, QX], exit_code=2)
    if r:
        U.check(r["estimator"]["stack_relation"] == "cross_stack", "cross_stack relation")
        U.check(r["comparability"]["bias"]["kind"] == "cross_stack_capture_replay", "stack bias")
        U.check(("cross_stack_capture", "caveat", True) in codes(r), f"stack codes {codes(r)}")
        U.check(r["gates"]["stack"]["detail"].endswith("source_files differ or unrecorded -> cross_stack"),
                r["gates"]["stack"]["detail"])

    # ---- geometry -----------------------------------------------------------------------
    Bw = U.Builder(vocab=40, hidden=24, contexts=3, tokens=20, seed=3)
    Bw.tokens = B.tokens
    Bw.dir = B.dir
    QG = Bw.pack("QG", tensors=Bw.random_hidden(), head=Bw.random_head(), role="quant")
    refused("hidden width", [R, QG, "--own-heads"], "geometry_mismatch", "geometry")

    # ---- lossy --------------------------------------------------------------------------
    QF = B.pack("QF", tensors=H1, head=W, role="quant", tensor_dtype="F32")
    r = receipt("dtype_lossless false", [R, QF], exit_code=2)
    if r:
        U.check(("quantized_capture_dtype", "caveat", True) in codes(r), f"lossy codes {codes(r)}")
    QC = B.pack("QC", tensors=H1, head=W, role="quant",
                meta={"lossy_codec": {"kind": "test-codec", "bits": 8, "description": "a test codec"}})
    r = receipt("lossy codec", [R, QC], exit_code=2)
    if r:
        U.check(("lossy_capture_codec", "caveat", True) in codes(r), f"codec codes {codes(r)}")
        U.check(r["gates"]["lossy"]["detail"] == "lossy_codec on candidate", r["gates"]["lossy"]["detail"])

    # ---- decode -------------------------------------------------------------------------
    QD = B.pack("QD", tensors=H1, head=W, role="quant",
                meta={"weights_decode": {"method": "affine-weight-reconstruction",
                                         "output_dtype": "bfloat16"}})
    r = receipt("weights reconstructed", [R, QD], exit_code=2)
    if r:
        U.check(codes(r)[-1] == ("weights_reconstructed", "caveat", True), f"decode codes {codes(r)}")
        U.check(r["gates"]["decode"]["detail"] ==
                "weights_decode reference none; candidate affine-weight-reconstruction", "decode detail")
    QA = B.pack("QA", tensors=H1, head=W, role="quant",
                meta={"weights_decode": {"method": "native-fp8",
                                         "quantization_config": {"activation_scheme": "dynamic"}}})
    r = receipt("activation quantization", [R, QA], exit_code=2)
    if r:
        U.check(codes(r)[-1] == ("activation_quantization_not_captured", "caveat", True),
                f"activation codes {codes(r)}")

    # ---- classification -----------------------------------------------------------------
    refused("not a self-compare", [R, Q, "--self-compare"], "not_a_self_compare", "self-compare")
    rev = "c" * 40
    same_w = {"weights": {"revision": rev, "checkpoint_identity_sha256": U.sha("one checkpoint")}}
    F1 = B.pack("F1", tensors=H0, head=W, meta=same_w)
    F2 = B.pack("F2", tensors=H1, head=W, meta=same_w)
    r = receipt("floor", [F1, F2])
    if r:
        U.check(r["comparison_kind"] == "run_to_run_floor", f"floor kind {r['comparison_kind']}")
        sc = r["self_compare"]
        U.check(sc and sc["capture_content_digest_equal"] is False and sc["weights_identity_equal"] is True,
                f"floor self_compare {sc}")
        U.check(r["comparability"]["key"] is None and r["submission"]["refusal"], "floor: no key")
    r = receipt("reproduction", [R, R2], exit_code=0)
    if r:
        U.check(r["comparison_kind"] == "reproduction_confirmation", "reproduction kind")

    # ---- compute ------------------------------------------------------------------------
    # Batch sizes out of range are usage errors (exit 4), judged by the CLI's one number parser;
    # --vocab-chunk is accepted and unused, but a value that is not a positive number is still
    # a usage error.
    for flag, v in (("--position-block", "0"), ("--chunk-positions", "5000"), ("--vocab-chunk", "0"),
                    ("--vocab-chunk", "-1")):
        o = out()
        rc, so, se = U.compare(R, Q, flag, v, "--out", o)
        U.check(rc == 4 and flag in se and not os.path.exists(o), f"{flag} {v}: exit {rc} ({se.strip()[:200]})")
    refused("--head of another digest", [R, Q, "--head", os.path.join(QH, "head", "weight.safetensors")],
            "head_mismatch", "compute")
    r = receipt("--head of the applied digest", [R, Q, "--head", os.path.join(Q, "head", "weight.safetensors")])
    if r:
        U.check(r["estimator"]["head_policy"] == "shared_reference_head", "--head under HEAD-1a")
    Hbig = [h.copy() for h in H1]
    Hbig[1][7, :] = 1e30
    Wbig = W.copy()
    Wbig[0, :] = 1e30
    QO = B.pack("QO", tensors=Hbig, head=Wbig, role="quant")
    se = refused("non-finite", [R, QO, "--own-heads"], "non_finite", "compute")
    U.check("record 1" in se and "row 7" in se, f"non_finite names record and row: {se.strip()[:300]}")
    U.finish("test_compare_gates")


if __name__ == "__main__":
    main()
