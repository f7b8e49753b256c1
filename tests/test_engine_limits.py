#!/usr/bin/env python3
"""Small inputs that once asked for large resources, and config values accepted silently
(issue 20, items 7 and 10). Each is refused by name, before the allocation, with exit 3:
a Qwen3.5 config whose DeltaNet state its projections cannot justify (hidden 1, head dims 4096:
once 2.6 GB of state from a 3 MB config); num_hidden_layers (65,536) beyond the tensors stored; a JSON
document whose values would take far more memory than its size (30 MB of `[{},{},...]`: once
2.3 GB, and reported as malformed); an architecture holding U+0000; torch_dtype "int8",
"float64" or 5; quantization_config.checkpoint_format 5. A model of 8,000 tiny layers loads
and runs (the load was quadratic in the layer count). Valid twins run."""
import json
import os
import resource
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, FAILS, check, finish, need_cli  # noqa: E402,F401
import cli_util  # noqa: E402
import engine_models as em  # noqa: E402
import qwen35_models as qm  # noqa: E402

GIB = 1 << 30


def limit_memory():
    # 1.5 GiB of address space is far more than any case here needs once refused in time.
    resource.setrlimit(resource.RLIMIT_AS, (3 * GIB // 2, 3 * GIB // 2))


# AddressSanitizer reserves terabytes of shadow address space, so the limit only applies to a
# build without it (CI runs this test in both).
SANITIZED = "ASAN_OPTIONS" in os.environ or "asan" in os.path.abspath(CLI)


def run(*args, limited=True):
    rc, out = cli_util.run(*args, preexec_fn=limit_memory if limited and not SANITIZED else None)
    return rc, out.strip()


def edit_config(d, f):
    p = os.path.join(d, "config.json")
    c = json.load(open(p))
    f(c)
    with open(p, "w") as fh:
        json.dump(c, fh)


def main():
    need_cli()
    t = tempfile.mkdtemp(prefix="fdl-limits-")
    try:
        P = lambda *a: os.path.join(t, *a)  # noqa: E731
        c = em.make_config(dtype="BF16")
        em.write_model(P("base"), c, em.make_weights(c, 1))
        rc, msg = run("generate", "--model", P("base"), "--ids", "[1,2]", "--greedy-out", P("g"))
        check(rc == 0, "the valid twin runs (exit %d) %s" % (rc, msg[-200:]))

        def mutated(name, f):
            d = P(name)
            shutil.copytree(P("base"), d)
            edit_config(d, f)
            return d

        cases = [
            ("architecture with U+0000", lambda c: c.update(architectures=["LlamaForCausalLM\u0000x"]),
             "NUL"),
            ("torch_dtype int8", lambda c: c.update(torch_dtype="int8"), "torch_dtype"),
            ("torch_dtype float64", lambda c: c.update(torch_dtype="float64"), "torch_dtype"),
            ("torch_dtype 5", lambda c: c.update(torch_dtype=5), "torch_dtype"),
            ("checkpoint_format 5", lambda c: c.update(quantization_config={
                "quant_method": "gptq", "bits": 4, "group_size": 32, "checkpoint_format": 5}),
             "checkpoint_format"),
            ("65,536 layers on 20 tensors", lambda c: c.update(num_hidden_layers=65536),
             "num_hidden_layers"),
        ]
        for what, f, needle in cases:
            d = mutated(what.replace(" ", "-"), f)
            rc, msg = run("generate", "--model", d, "--ids", "[1,2]", "--greedy-out", P("g2"))
            check(rc == 3 and needle in msg, "%s: refused by name, exit 3 (exit %d) %s" %
                  (what, rc, msg[-300:]))

        # --new past max_position_embeddings (256): refused before any step, nothing written
        rc, msg = run("generate", "--model", P("base"), "--ids", "[1,2]", "--new", "300",
                      "--tokens-out", P("t.json"), "--ids-out", P("i.json"))
        check(rc == 3 and "max_position_embeddings" in msg and not os.path.exists(P("t.json"))
              and not os.path.exists(P("i.json")),
              "--new past max_position_embeddings: refused, nothing written (exit %d) %s" %
              (rc, msg[-300:]))

        # a failed write is the machine's (exit 4): FAILED, never REFUSED
        with open(P("panel.jsonl"), "w") as f:
            f.write('{"index": 0, "tokens": [1, 2, 3], "window_id": "w", "domain": "d"}\n')
        rc, msg = run("capture", "--model", P("base"), "--panel", P("panel.jsonl"), "--out",
                      "/proc/fidelis-cannot-write-here")
        check(rc == 4 and "FAILED" in msg and "REFUSED" not in msg,
              "an unwritable --out: exit 4, FAILED (exit %d) %s" % (rc, msg[-300:]))

        # Qwen3.5: state 4096 x 4096 per head on a hidden size of 1
        qc = qm.make_config(layers=2)
        qm.write_model(P("q35"), qc, qm.make_weights(qc, 3))
        rc, msg = run("generate", "--model", P("q35"), "--ids", "[1,2]", "--greedy-out", P("g3"))
        check(rc == 0, "the valid Qwen3.5 twin runs (exit %d) %s" % (rc, msg[-200:]))

        def huge_state(c):
            tc = c.get("text_config", c)
            tc.update(hidden_size=1, linear_key_head_dim=4096, linear_value_head_dim=4096)
        d = P("q35-state")
        shutil.copytree(P("q35"), d)
        edit_config(d, huge_state)
        rc, msg = run("generate", "--model", d, "--ids", "[1,2]", "--greedy-out", P("g4"))
        check(rc == 3 and "recurrent state" in msg,
              "Qwen3.5 state beyond its projections: refused by name (exit %d) %s" % (rc, msg[-300:]))

        # JSON: 30 MB of empty objects under a 1.5 GiB address-space limit
        with open(P("objects.json"), "w") as f:
            f.write("[" + ",".join(["{}"] * 10_000_000) + "]")
        rc, msg = run("json", "canon", P("objects.json"))
        check(rc == 3 and "TOO_LARGE" in msg and "objects" in msg,
              "30 MB of [{},...]: refused before it is built, exit 3 (exit %d) %s" % (rc, msg[-300:]))
        d = P("objects-config")
        shutil.copytree(P("base"), d)
        shutil.copyfile(P("objects.json"), os.path.join(d, "config.json"))
        rc, msg = run("generate", "--model", d, "--ids", "[1]", "--greedy-out", P("g5"))
        check(rc == 3 and "TOO_LARGE" in msg, "the same as a config.json (exit %d) %s" %
              (rc, msg[-300:]))

        # 8,000 tiny layers load and run
        lc = em.make_config(dtype="BF16", vocab=16, hidden=8, layers=8000, heads=2, kv_heads=2,
                            inter=8)
        em.write_model(P("deep"), lc, em.make_weights(lc, 2))
        rc, msg = run("generate", "--model", P("deep"), "--ids", "[1,2]", "--greedy-out",
                      P("g6"), limited=False)
        check(rc == 0, "8,000 layers load and run (exit %d) %s" % (rc, msg[-200:]))
    finally:
        shutil.rmtree(t, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
