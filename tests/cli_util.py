"""What the CLI tests share: the executable under test, a check that records failures, a run
that returns the exit code and the combined output, the skip when there is no CLI, and the
final tally."""
import os
import subprocess
import sys

CLI = os.environ.get("FDL_CLI", "build/fidelis")
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)
    return cond


def run(*args, cwd=None, preexec_fn=None):
    """(exit code, stdout + stderr as text) of `fidelis ARGS`."""
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                       preexec_fn=preexec_fn)
    return p.returncode, p.stdout + p.stderr


def need_cli():
    if not os.access(CLI, os.X_OK):
        print("skip: FDL_CLI is not an executable")
        sys.exit(77)


def finish():
    print("%d failed" % len(FAILS))
    sys.exit(1 if FAILS else 0)
