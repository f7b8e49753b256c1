#!/usr/bin/env python3
"""The README's first session (the sh block after "A first session") runs as written, from text
to a verified receipt, in a scratch directory with build/fidelis meaning $FDL_CLI and docs/
meaning the repository's docs."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__))))
from cli_util import CLI, check, finish, need_cli  # noqa: E402

need_cli()
tests = os.environ.get("FDL_TESTS", os.path.dirname(os.path.abspath(__file__)))
readme = open(os.path.join(tests, "..", "README.md")).read()
m = re.search(r"A first session[^\n]*\n\n```sh\n(.*?)```", readme, re.S)
check(m is not None, "README has the first-session block")
if m:
    w = tempfile.mkdtemp(prefix="fdl-readme-session-")
    try:
        os.symlink(os.path.abspath(os.path.join(tests, "..", "docs")), os.path.join(w, "docs"))
        os.mkdir(os.path.join(w, "build"))
        os.symlink(os.path.abspath(CLI), os.path.join(w, "build", "fidelis"))
        out = ""
        for line in m.group(1).strip().splitlines():
            p = subprocess.run(["bash", "-c", line], cwd=w, capture_output=True, text=True,
                               timeout=600)
            out += p.stdout + p.stderr
            # compare's 2 is an advisory result (the README says so beside the command)
            ok = p.returncode == 0 or (" compare " in line and p.returncode == 2)
            check(ok, "runs (exit %d): %s%s" % (p.returncode, line.split("#")[0].strip(),
                                                "" if ok else "\n" + out[-800:]))
        check(out.rstrip().endswith("OK") or "OK" in out.splitlines()[-1],
              "the receipt verifies")
        check(os.path.exists(os.path.join(w, "cmp", "comparison-receipt.json")),
              "a comparison receipt was written")
        ds = open(os.path.join(w, "ref", "fidelity-dataset.json")).read() \
            if os.path.exists(os.path.join(w, "ref", "fidelity-dataset.json")) else ""
        check("tokenizer.json-sha256-" in ds, "the reference dataset names the tokenizer by its "
              "file's digest, carried from the panel")
    finally:
        shutil.rmtree(w)
finish()
