#!/usr/bin/env python3
"""test_generate_cache.py - `fidelis generate --new N` with the KV cache (and Qwen3.5's
recurrent states) carried across steps (fidelis/generate.h).

* The continuation is what re-running the whole sequence gives: for each preset and path, the
  --new tokens equal the argmax rows of one `generate --greedy-out --rows all` over prompt plus
  continuation on the same path (the engine's argmax-only path, the same ties), token for
  token. Dense presets and Qwen3.5's decode path take the same arithmetic either way; Qwen3.5's
  prefill path runs each new position as a one-row chunk from the carried state, which rounds
  differently from a chunked re-run, so there the tokens are compared (and agree on these
  models).
* A shorter --new is a prefix of a longer one; the prefill and decode paths give the same tokens
  on the dense presets.
* Stops: the model's eos_token_id (generation_config.json), --stop IDS, and --stop none; the
  continuation ends right after the first stop id and --tokens-out holds it.
* --stream prints one line per new token, in order.
* Bounds are checked before computing: prompt plus --new past max_position_embeddings is
  refused (exit 3) at once; --stop ids outside the vocabulary are refused.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_util as U  # noqa: E402

PRESETS = ["llama-tiny-random", "mistral-tiny-random", "qwen3-moe-tiny-random",
           "qwen3.5-tiny-random", "qwen3.5-moe-tiny-random"]
PROMPT = [256, 83, 111, 119, 32, 116, 104, 101]
# Untied presets: a tied random model copies its last input token forever, which would make
# every comparison below trivially true.
NEW = 40


def gen(m, out, *extra, ids=PROMPT):
    rc, text = U.run("generate", "--model", m, "--ids", json.dumps(ids), "--tokens-out", out,
                     *extra)
    ok = U.check(rc == 0, "generate %s %s: exit %d %s" % (os.path.basename(m), " ".join(extra),
                                                          rc, text[-300:]))
    return (json.load(open(out)) if ok else None), text


def rerun_argmax(m, ids, path, out):
    rc, text = U.run("generate", "--model", m, "--ids", json.dumps(ids), "--path", path,
                     "--rows", "all", "--greedy-out", out)
    if not U.check(rc == 0, "re-run %s %s: exit %d %s" % (os.path.basename(m), path, rc,
                                                         text[-300:])):
        return None
    return json.load(open(out))


def main():
    U.need_cli()
    with tempfile.TemporaryDirectory(prefix="fdl-gencache-") as w:
        for preset in PRESETS:
            m = os.path.join(w, preset)
            rc, text = U.run("model", "init", "--preset", preset, "--seed", "3", m)
            if not U.check(rc == 0, "model init %s: %s" % (preset, text[-200:])):
                continue
            cont = {}
            for path in ("prefill", "decode"):
                t, _ = gen(m, os.path.join(w, "%s-%s.json" % (preset, path)), "--new", str(NEW),
                           "--stop", "none", "--path", path)
                if t is None:
                    continue
                cont[path] = t
                U.check(len(set(t)) > NEW // 4, "%s %s: a varied continuation (%d distinct ids)"
                        % (preset, path, len(set(t))))
                U.check(len(t) == NEW, "%s %s: %d tokens, expected %d" % (preset, path, len(t),
                                                                         NEW))
                full = rerun_argmax(m, PROMPT + t[:-1], path,
                                    os.path.join(w, "%s-%s-rerun.json" % (preset, path)))
                if full is not None:
                    U.check(full[len(PROMPT) - 1:] == t,
                            "%s %s: the cached continuation differs from re-running the whole "
                            "sequence at step(s) %s" % (preset, path, [
                                k for k, (a, b) in enumerate(zip(full[len(PROMPT) - 1:], t))
                                if a != b][:8]))
                short, _ = gen(m, os.path.join(w, "%s-%s-short.json" % (preset, path)),
                               "--new", "7", "--stop", "none", "--path", path)
                U.check(short == t[:7], "%s %s: --new 7 is not a prefix of --new %d"
                        % (preset, path, NEW))
            if "qwen3.5" not in preset and len(cont) == 2:
                U.check(cont["prefill"] == cont["decode"],
                        "%s: prefill and decode continuations differ" % preset)

        m = os.path.join(w, "llama-tiny-random")
        base = json.load(open(os.path.join(w, "llama-tiny-random-prefill.json")))
        # --stop: the continuation ends right after the first stop id
        sid = base[5]
        t, text = gen(m, os.path.join(w, "stop.json"), "--new", str(NEW), "--stop",
                      "%d,%d" % (99999 % 272, sid))
        first = min(k for k, v in enumerate(base) if v in (sid, 99999 % 272))
        U.check(t == base[:first + 1] and "stopped at id" in text,
                "--stop: got %s, expected %s" % (t, base[:first + 1]))
        # the model's own end-of-sequence id, from generation_config.json
        gc_path = os.path.join(m, "generation_config.json")
        gc = json.load(open(gc_path))
        gc["eos_token_id"] = [base[9], 271]
        json.dump(gc, open(gc_path, "w"))
        t, _ = gen(m, os.path.join(w, "eos.json"), "--new", str(NEW))
        first = min(k for k, v in enumerate(base) if v in (base[9], 271))
        U.check(t == base[:first + 1], "eos_token_id: got %d tokens, expected %d"
                % (len(t or []), first + 1))
        t, _ = gen(m, os.path.join(w, "none.json"), "--new", str(NEW), "--stop", "none")
        U.check(t == base, "--stop none: the full --new continuation")
        # --stream: one line per token, in order
        t, text = gen(m, os.path.join(w, "stream.json"), "--new", "6", "--stop", "none",
                      "--stream")
        lines = [l.split() for l in text.splitlines() if l.startswith("  + ")]
        U.check([int(l[2]) for l in lines] == base[:6] and [int(l[1]) for l in lines]
                == list(range(6)), "--stream: lines %s" % lines)
        # bounds before computing
        rc, text = U.run("generate", "--model", m, "--ids", json.dumps(PROMPT), "--new", "4090",
                         "--tokens-out", os.path.join(w, "long.json"))
        U.check(rc == 3 and "max_position_embeddings" in text
                and not os.path.exists(os.path.join(w, "long.json")),
                "prompt + --new past max_position_embeddings: exit %d %s" % (rc, text[-200:]))
        rc, text = U.run("generate", "--model", m, "--ids", json.dumps(PROMPT), "--new", "4",
                         "--stop", "272", "--tokens-out", os.path.join(w, "bad.json"))
        U.check(rc == 3 and "--stop" in text, "--stop 272: exit %d %s" % (rc, text[-200:]))
        for bad in ("+5", "5,,6", " 5", "5,"):
            rc, text = U.run("generate", "--model", m, "--ids", json.dumps(PROMPT), "--new", "4",
                             "--stop", bad, "--tokens-out", os.path.join(w, "bad2.json"))
            U.check(rc == 3 and "--stop" in text, "--stop %r: exit %d %s" % (bad, rc, text[-200:]))
    U.finish()


if __name__ == "__main__":
    main()
