#!/usr/bin/env python3
"""Stopping signals leave nothing behind (issue 20, item 8). SIGINT, SIGTERM, SIGHUP and SIGQUIT
sent to `capture`, `model init`, `quantize` and `generate` while their output is staged end the
process by that signal (as the shell expects) after the staging directory or temporary file is
removed. A process killed with SIGKILL cannot clean up: the next run that stages beside the same
output removes that dead process's staging directory and says so on stderr."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, FAILS, check, finish, need_cli  # noqa: E402,F401

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def litter(d):
    return [n for n in os.listdir(d) if n.startswith(".fidelis-staging-") or ".tmp-" in n]


def interrupt(argv, where, sig, tries=10, pause=0.05):
    """Starts argv, waits until staging appears in where, sends sig. Returns (returncode, left)
    or None when the command finished every time before staging was seen."""
    for _ in range(tries):
        p = subprocess.Popen([CLI, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 30
        seen = False
        while time.time() < deadline and p.poll() is None:
            if litter(where):
                seen = True
                break
            time.sleep(0.002)
        if seen:
            time.sleep(pause)
            p.send_signal(sig)
        p.wait(timeout=60)
        p.stderr.close()
        if seen and p.returncode != 0:
            return p.returncode, litter(where)
        # it finished before the signal landed (a file output is staged only while written)
        for n in os.listdir(where):
            q = os.path.join(where, n)
            shutil.rmtree(q) if os.path.isdir(q) else os.remove(q)
    return None


def main():
    need_cli()
    t = tempfile.mkdtemp(prefix="fdl-signals-")
    try:
        P = lambda *a: os.path.join(t, *a)  # noqa: E731
        rc = subprocess.run([CLI, "model", "init", "--preset", "llama-100m", P("big")],
                            capture_output=True).returncode
        assert rc == 0
        os.mkdir(P("out"))
        # generate's output is staged only while written: a cheap forward with a wide head
        # gives a large file (64 rows x 200,000 floats), so the write takes long enough to hit.
        import engine_models as em
        wc = em.make_config(dtype="BF16", vocab=200000, hidden=8, layers=1, heads=2, kv_heads=2,
                            inter=8)
        em.write_model(P("wide"), wc, em.make_weights(wc, 1))
        ids = "[" + ",".join(str(i + 1) for i in range(64)) + "]"
        commands = {
            "capture": lambda o: ["capture", "--model", P("big"), "--panel",
                                  P("big", "panel.jsonl"), "--out", o],
            "quantize": lambda o: ["quantize", P("big"), o],
            "model init": lambda o: ["model", "init", "--preset", "llama-100m", o],
            "generate": lambda o: ["generate", "--model", P("wide"), "--ids", ids, "--rows", "all",
                                   "--logits-out", o + ".npy"],
        }
        for name, argv in commands.items():
            for sig in SIGNALS:
                out = P("out", "%s-%s" % (name.replace(" ", "-"), sig.name))
                r = interrupt(argv(out), P("out"), sig, pause=0 if name == "generate" else 0.05)
                if r is None:
                    check(False, "%s %s: staging was never seen before the command ended" %
                          (name, sig.name))
                    continue
                rc, left = r
                check(rc == -sig, "%s %s: ended by the signal (returncode %d)" %
                      (name, sig.name, rc))
                check(not left, "%s %s: nothing left beside the output, found %s" %
                      (name, sig.name, left))
                check(not os.path.exists(out) and not os.path.exists(out + ".npy"),
                      "%s %s: no output published" % (name, sig.name))

        # SIGKILL: the next run beside it removes the dead process's staging, with a notice.
        r = interrupt(commands["quantize"](P("out", "killed")), P("out"), signal.SIGKILL)
        check(r is not None and r[0] == -signal.SIGKILL and r[1],
              "SIGKILL leaves the staging directory (nothing can run): %s" % (r,))
        p = subprocess.run([CLI, "model", "init", "--preset", "tiny-random", P("out", "next")],
                           capture_output=True, text=True)
        check(p.returncode == 0 and "staging directory left by process" in p.stderr and
              not litter(P("out")),
              "the next run removes it and says so (exit %d) %s" % (p.returncode, p.stderr.strip()))
    finally:
        shutil.rmtree(t, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
