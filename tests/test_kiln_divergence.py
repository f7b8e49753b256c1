#!/usr/bin/env python3
"""`fidelis divergence` (KILN-ATTRIBUTION.md §5, §6): on synthetic streams the first divergence,
the prefix, candidates, input ids and their hash, the prompt hash and the model fingerprint of a
model directory all equal values computed here in Python; the request validates against Kiln's
JSON schema and passes `fidelis check`; the retained fixture is rebuilt exactly; identical
streams, a divergence at step 0, an existing --out and a symlinked shard are refused (exit 3);
usage errors and a missing @FILE are exit 4."""
import copy
import json
import os
import random
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
    if not K.CLI or not os.access(K.CLI, os.X_OK):
        print("skip: FDL_CLI is not an executable")
        return 77
    try:
        import jsonschema
    except ImportError:
        print("skip: python3-jsonschema is not installed")
        return 77
    with open(os.path.join(K.SCHEMAS, "hf-next-token-request-v1.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    with open(K.REQUEST, encoding="utf-8") as f:
        req = json.load(f)
    w = tempfile.mkdtemp(prefix="fdl-kiln-div-")
    try:
        P = lambda n: os.path.join(w, n)  # noqa: E731
        K.write_json(P("kr.json"), req["source"]["kiln_receipt"])
        K.write_json(P("vr.json"), req["source"]["vllm_receipt"])
        K.write_json(P("mi.json"), req["model_identity"])
        K.write_json(P("prompt.json"), req["prompt"]["token_ids"])
        with open(P("prompt.txt"), "w", encoding="utf-8") as f:
            f.write(req["prompt"]["messages"][0]["content"])
        g = req["prompt"]["generator"]
        base = ["divergence", "--prompt-text", "@" + P("prompt.txt"), "--id", req["id"],
                "--source-commit", req["source"]["source_commit"], "--run-id", g["run_id"],
                "--phase", g["phase"], "--kiln-receipt", "@" + P("kr.json"),
                "--vllm-receipt", "@" + P("vr.json")]
        # The retained fixture, rebuilt from its streams and texts.
        pre = req["continuation_prefix"]
        c = req["candidates"]
        ref = [t["token_id"] for t in pre] + [c[1]["token_id"], 42]
        cand = [t["token_id"] for t in pre] + [c[0]["token_id"]]
        rtext = [t["text"] for t in pre] + [c[1]["text"], "x"]
        ctext = [t["text"] for t in pre] + [c[0]["text"]]
        rc, out, err = K.run(base + ["--prompt-ids", "@" + P("prompt.json"), "--model-identity",
                                     "@" + P("mi.json"), "--reference-ids", json.dumps(ref),
                                     "--candidate-ids", json.dumps(cand), "--reference-texts",
                                     json.dumps(rtext), "--candidate-texts", json.dumps(ctext),
                                     "--out", P("fixture.json")])
        check(rc == 0, "fixture rebuilt (exit %d): %s" % (rc, err.strip()))
        with open(P("fixture.json"), encoding="ascii") as f:
            text = f.read()
        got = json.loads(text)
        check(got == req, "rebuilt request equals the retained fixture")
        check(text == json.dumps(got, indent=2, sort_keys=True, ensure_ascii=True) + "\n",
              "written in Kiln's result layout (§3)")
        check(("request %s" % K.canonical_sha256(req)) in out and "step 3" in out, "prints step and identity")
        check(oct(os.stat(P("fixture.json")).st_mode & 0o777) != "", "file published")
        # Never overwrites.
        rc, _, err = K.run(base + ["--prompt-ids", "[1]", "--model-identity", "@" + P("mi.json"),
                                   "--reference-ids", "[1,2]", "--candidate-ids", "[1,3]",
                                   "--out", P("fixture.json")])
        check(rc == 3 and "exists" in err, "existing --out refused (exit %d)" % rc)
        with open(P("fixture.json"), encoding="ascii") as f:
            check(f.read() == text, "existing --out untouched")

        # A model directory, fingerprinted here independently.
        m = P("model")
        os.mkdir(m)
        for name, data in (("config.json", b'{"a": 1}\n'), ("tokenizer.json", b"{}\n"),
                           ("tokenizer_config.json", json.dumps({"chat_template": "{{ x }} \u00e9"}).encode()),
                           ("b.safetensors", b"bb"), ("a.safetensors", b"a"), ("Z.safetensors", b"zzz")):
            with open(os.path.join(m, name), "wb") as f:
                f.write(data)
        want_mi = K.fingerprint(m, "Synthetic-1")
        rng = random.Random(7)
        for trial in range(12):
            n = rng.randint(1, 64)
            common = [rng.randrange(248320) for _ in range(n)]
            a = rng.randrange(248320)
            b = (a + rng.randrange(1, 248320)) % 248320
            ref = common + [a] + [rng.randrange(248320) for _ in range(rng.randint(0, 5))]
            cand = common + [b] + [rng.randrange(248320) for _ in range(rng.randint(0, 5))]
            prompt = [rng.randrange(248320) for _ in range(rng.randint(1, 40))]
            out_path = P("t%d.json" % trial)
            rc, out, err = K.run(base + ["--prompt-ids", json.dumps(prompt), "--model-dir", m,
                                         "--model-id", "Synthetic-1", "--reference-ids", json.dumps(ref),
                                         "--candidate-ids", json.dumps(cand), "--out", out_path])
            if rc != 0:
                check(False, "trial %d exit %d: %s" % (trial, rc, err.strip()))
                continue
            with open(out_path, encoding="ascii") as f:
                r = json.load(f)
            try:
                jsonschema.validate(r, schema)
                ok_schema = True
            except jsonschema.ValidationError as e:
                ok_schema = False
                print(e)
            inp = prompt + common
            check(ok_schema and r["input_token_ids"] == inp and
                  r["input_token_ids_sha256"] == K.canonical_sha256(inp) and
                  [t["token_id"] for t in r["continuation_prefix"]] == common and
                  r["candidates"] == [{"engine": "kiln", "token_id": b, "text": ""},
                                      {"engine": "vllm", "token_id": a, "text": ""}] and
                  r["model_identity"] == want_mi and r["prompt"]["token_count"] == len(prompt) and
                  ("step %d" % n) in out and ("request %s" % K.canonical_sha256(r)) in out,
                  "trial %d: step %d, schema-valid, values equal the python oracle" % (trial, n))
            rc, _, err = K.run(["check", out_path])
            check(rc == 0, "trial %d passes check: %s" % (trial, err.strip()))

        def refuse(ref, cand, needle, what, extra=()):
            rc, _, err = K.run(base + ["--prompt-ids", "[5]", "--model-dir", m, "--model-id", "M",
                                       "--reference-ids", json.dumps(ref), "--candidate-ids",
                                       json.dumps(cand), "--out", P("refused.json"), *extra])
            check(rc == 3 and needle in err and not os.path.exists(P("refused.json")),
                  "%s: exit %d, %s" % (what, rc, err.strip()))
        refuse([1, 2, 3], [1, 2, 3], "nothing diverges", "identical streams")
        # A request `check` would refuse (over its 262144-byte limit) is never written.
        with open(P("long-prompt.txt"), "w", encoding="utf-8") as f:
            f.write("a long prompt " * 20000)
        long_base = list(base)
        long_base[long_base.index("--prompt-text") + 1] = "@" + P("long-prompt.txt")
        rc, _, err = K.run(long_base + ["--prompt-ids", "[5]", "--model-dir", m, "--model-id",
                                        "M", "--reference-ids", "[1, 2]", "--candidate-ids",
                                        "[1, 3]", "--out", P("long.json")])
        check(rc == 3 and "262144-byte limit" in err and not os.path.exists(P("long.json")),
              "a request over check's byte limit is refused, not written: exit %d, %s" %
              (rc, err.strip()))
        refuse([1, 2], [1, 2, 3], "nothing diverges", "one stream a prefix of the other")
        refuse([1, 2], [3, 2], "step 0", "divergence at step 0")
        refuse(list(range(66)), list(range(65)) + [9], "at most 64", "divergence past 64")
        refuse([1, 248320], [1, 2], "reference ids[1]", "token id out of range")
        refuse([1, 2], [1, 3], "candidate texts", "texts of the wrong length", ["--candidate-texts", '["a"]'])
        os.symlink(os.path.join(m, "a.safetensors"), os.path.join(m, "c.safetensors"))
        refuse([1, 2], [1, 3], "symbolic link", "symlinked shard")
        os.unlink(os.path.join(m, "c.safetensors"))

        rc, _, err = K.run(base + ["--prompt-ids", "@" + P("nope.json"), "--model-dir", m, "--model-id",
                                   "M", "--reference-ids", "[1,2]", "--candidate-ids", "[1,3]",
                                   "--out", P("x.json")])
        check(rc == 4, "missing @FILE: exit %d" % rc)
        rc, _, err = K.run(base + ["--prompt-ids", "[1]", "--reference-ids", "[1,2]",
                                   "--candidate-ids", "[1,3]", "--out", P("x.json")])
        check(rc == 4 and "--model-dir" in err, "no model identity: usage (exit %d)" % rc)
        rc, _, err = K.run(base + ["--prompt-ids", "[1]", "--model-dir", m, "--model-identity", "{}",
                                   "--reference-ids", "[1,2]", "--candidate-ids", "[1,3]", "--out", P("x.json")])
        check(rc == 4, "--model-dir with --model-identity: usage (exit %d)" % rc)
        bad = copy.deepcopy(req["source"]["kiln_receipt"])
        bad["path"] = "/abs"
        rc, _, err = K.run(base[:-2] + ["--vllm-receipt", json.dumps(bad), "--prompt-ids", "[1]",
                                        "--model-dir", m, "--model-id", "M", "--reference-ids", "[1,2]",
                                        "--candidate-ids", "[1,3]", "--out", P("x.json")])
        check(rc == 3 and "$.source.vllm_receipt.path" in err, "absolute receipt path refused (exit %d)" % rc)
    finally:
        shutil.rmtree(w)
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
