"""test_fsys.py - the file-system rules of docs/DATASET.md, "Files and directories" (issue 9,
items 8, 9, 10, 13 and 16).

* Litter: a staging directory whose process is gone (a simulated kill -9, and a real one of a
  running synth) is removed by the next pack, compare or synth into the same parent, which says
  so on stderr; a staging directory of a live process, and names that are not ours, are kept.
* Whole or not at all: compare's --out holds exactly the receipt and the array, pack's OUT is a
  dataset, and no staging directory is left beside either.
* compare refuses an existing --out (an empty directory, a symlink to one, a dangling symlink)
  and an unwritable destination (a parent that is a file; a read-only parent, as an unprivileged
  user) before any work: with a candidate that does not exist the refusal is still about --out.
* Named links: a Hugging Face cache-like snapshot (files linked into blobs/) works for pack
  --panel/--meta/--head, json canon, verify, tensor ls and compare --head; a link inside a
  dataset stays refused; a named link to a FIFO is refused at once.
* Modes: dataset, receipt and synth outputs follow the umask (dirs 0777, files 0666 less it).
"""
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_util as U  # noqa: E402

PREFIX = ".fidelis-staging-"
SYNTH_SIZES = ["--vocab", "300", "--hidden", "32", "--contexts", "3", "--tokens-per-context", "20"]

B = U.Builder(vocab=40, hidden=16, contexts=3, tokens=20, seed=11)
W = B.random_head()
H0 = B.random_hidden()
H1 = [h + 0.05 * B.rng.standard_normal(h.shape).astype(h.dtype) for h in H0]


def run(args, umask=None, timeout=120, **kw):
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([U.CLI, *args], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=pre, **kw)


def stagings(parent):
    return sorted(x for x in os.listdir(parent) if x.startswith(PREFIX))


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def pack_args(work, out, head=True):
    a = ["pack", "--panel", os.path.join(work, "panel.jsonl"), "--tensors", os.path.join(work, "t"),
         "--meta", os.path.join(work, "meta.json"), "--out", out, "--threads", "2"]
    return a + (["--head", os.path.join(work, "head.safetensors")] if head else [])


# ---- litter ------------------------------------------------------------------------------------

def litter(parent):
    """A dead process's staging directory (complete-looking inside), a live one's, and a
    look-alike that is not ours. Returns (dead name, dead pid, kept names)."""
    os.makedirs(parent, exist_ok=True)
    pid = dead_pid()
    dead = f"{PREFIX}{pid}-0000dead"
    os.makedirs(os.path.join(parent, dead, "capture"))
    with open(os.path.join(parent, dead, "fidelity-dataset.json"), "w") as f:
        f.write("{}\n")
    live = f"{PREFIX}{os.getpid()}-00000001"  # this process is alive: never stale
    os.makedirs(os.path.join(parent, live))
    other = f"{PREFIX}notapid"
    os.makedirs(os.path.join(parent, other))
    return dead, pid, [live, other]


def check_swept(tag, p, parent, dead, pid, kept):
    U.check(not os.path.exists(os.path.join(parent, dead)), f"{tag}: stale {dead} not removed")
    U.check(f"note: removed {parent}/{dead}" in p.stderr and f"process {pid}" in p.stderr,
            f"{tag}: the removal is not reported: {p.stderr!r}")
    U.check(stagings(parent) == sorted(kept), f"{tag}: staging left: {stagings(parent)}")


def test_litter(R, Q, work_r):
    parent = B.path("litter-pack")
    dead, pid, kept = litter(parent)
    p = run(pack_args(work_r, os.path.join(parent, "out")))
    U.check(p.returncode == 0, f"pack with litter: {p.returncode} {p.stderr}")
    check_swept("pack", p, parent, dead, pid, kept)

    parent = B.path("litter-compare")
    dead, pid, kept = litter(parent)
    p = run(["compare", R, Q, "--out", os.path.join(parent, "out"), "--quiet", "--threads", "2"])
    U.check(p.returncode in (0, 2), f"compare with litter: {p.returncode} {p.stderr}")
    check_swept("compare", p, parent, dead, pid, kept)

    parent = B.path("litter-synth")
    dead, pid, kept = litter(parent)
    p = run(["synth", "--out", os.path.join(parent, "pair"), *SYNTH_SIZES])
    U.check(p.returncode == 0, f"synth with litter: {p.returncode} {p.stderr}")
    check_swept("synth", p, parent, dead, pid, kept)


def test_real_kill():
    """kill -9 of a running synth (default sizes: long enough to be caught staging) leaves no
    output and a staging directory, which the next writer removes and reports."""
    parent = B.path("killed")
    os.makedirs(parent)
    out = os.path.join(parent, "pair")
    child = subprocess.Popen([U.CLI, "synth", "--out", out, "--threads", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline and child.poll() is None and not stagings(parent):
        time.sleep(0.002)
    caught = child.poll() is None
    if caught:
        child.send_signal(signal.SIGKILL)
    child.wait()
    if not caught:
        print("test_fsys: synth finished before it could be killed; real kill not exercised")
        return
    U.check(not os.path.exists(out), "killed synth: OUT exists (it must appear whole or not at all)")
    left = stagings(parent)
    U.check(len(left) == 1 and left[0].startswith(f"{PREFIX}{child.pid}-"),
            f"killed synth: staging named by its pid expected, found {left}")
    p = run(["synth", "--out", os.path.join(parent, "again"), *SYNTH_SIZES])
    U.check(p.returncode == 0, f"synth after a kill: {p.returncode} {p.stderr}")
    U.check(f"process {child.pid}, which is gone" in p.stderr, f"kill litter not reported: {p.stderr!r}")
    U.check(stagings(parent) == [], f"kill litter not removed: {stagings(parent)}")


# ---- whole or not at all; compare's --out ------------------------------------------------------

def test_whole(R, Q):
    parent = B.path("whole")
    out = os.path.join(parent, "deep", "cmp")  # the parent is created, as the reference does
    p = run(["compare", R, Q, "--out", out, "--quiet", "--threads", "2"])
    U.check(p.returncode in (0, 2), f"compare: {p.returncode} {p.stderr}")
    U.check(sorted(os.listdir(out)) == ["comparison-receipt.json", "tokenwise-kld.npy",
                                        "tokenwise-logprob-cand.npy", "tokenwise-logprob-ref.npy",
                                        "tokenwise-top1.npy"],
            f"compare OUT holds {os.listdir(out)}")
    U.check(stagings(os.path.dirname(out)) == [], "compare left a staging directory")
    U.check(os.path.isfile(os.path.join(R, "fidelity-dataset.json")), "pack OUT is a dataset")
    U.check(stagings(os.path.dirname(R)) == [], "pack left a staging directory")


def test_out_refused():
    parent = B.path("refuse")
    os.makedirs(os.path.join(parent, "empty"))
    os.symlink("empty", os.path.join(parent, "link"))
    os.symlink("nowhere", os.path.join(parent, "dangling"))
    open(os.path.join(parent, "file"), "w").close()
    # A candidate directory that holds no dataset: were --out checked after loading, this would
    # refuse seal_failed; the --out refusal proves the check comes before any work. (A path that
    # cannot be opened at all is a usage error of the CLI, before the library runs.)
    missing = os.path.join(parent, "not-a-dataset")
    os.makedirs(missing)
    ref = B.path("R")
    cases = [("empty directory", "empty", "destination_exists"),
             ("symlink to a directory", "link", "destination_exists"),
             ("dangling symlink", "dangling", "destination_exists"),
             ("parent is a file", "file/out", "write_failed")]
    for tag, rel, code in cases:
        p = run(["compare", ref, missing, "--out", os.path.join(parent, rel)])
        U.check(p.returncode == 3 and U.refusal_code(p.stderr) == code,
                f"--out {tag}: {p.returncode} {p.stderr!r}")
    U.check(os.listdir(os.path.join(parent, "empty")) == [], "the existing --out is untouched")
    U.check(os.readlink(os.path.join(parent, "dangling")) == "nowhere", "a dangling --out is untouched")
    U.check(stagings(parent) == [], f"refusals left {stagings(parent)}")
    # With real inputs too: the empty directory stays empty.
    p = run(["compare", ref, B.path("Q"), "--out", os.path.join(parent, "empty")])
    U.check(p.returncode == 3 and U.refusal_code(p.stderr) == "destination_exists",
            f"--out empty directory, real pair: {p.returncode} {p.stderr!r}")
    U.check(os.listdir(os.path.join(parent, "empty")) == [], "empty --out still empty")

    # A read-only parent, which root ignores: checked as an unprivileged user when we can be one.
    ro = os.path.join(parent, "ro")
    os.makedirs(ro)
    os.chmod(ro, 0o555)
    pre = None
    if os.geteuid() == 0:
        def pre():
            os.setgid(65534)
            os.setuid(65534)
    cli = U.CLI
    if pre:
        import test_dataset_lib as L
        os.chmod(B.dir, 0o755)  # the unprivileged user must reach the datasets and ro
        cli = L.cli_for_nobody(B.dir)
    try:
        p = subprocess.run([cli, "compare", ref, missing, "--out", os.path.join(ro, "out")],
                           capture_output=True, text=True, timeout=60, preexec_fn=pre)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"test_fsys: read-only parent not checked (cannot drop privileges: {e})")
        return
    U.check(p.returncode == 3 and U.refusal_code(p.stderr) == "write_failed"
            and "before any work" in p.stderr, f"--out in a read-only parent: {p.returncode} {p.stderr!r}")


# ---- named links -------------------------------------------------------------------------------

def hf_snapshot(root, files):
    """A Hugging Face cache-like layout: blobs/<sha256> holds the bytes, snapshots/<rev>/<name>
    is a relative link to the blob. Returns the snapshot directory."""
    blobs = os.path.join(root, "blobs")
    snap = os.path.join(root, "snapshots", "0123456789abcdef")
    os.makedirs(blobs, exist_ok=True)
    os.makedirs(snap, exist_ok=True)
    for name, src in files.items():
        data = open(src, "rb").read()
        h = hashlib.sha256(data).hexdigest()
        with open(os.path.join(blobs, h), "wb") as f:
            f.write(data)
        os.symlink(os.path.join("..", "..", "blobs", h), os.path.join(snap, name))
    return snap


def test_named_links(R, Q, work_r):
    snap = hf_snapshot(B.path("models--test--model"), {
        "panel.jsonl": os.path.join(work_r, "panel.jsonl"),
        "meta.json": os.path.join(work_r, "meta.json"),
        "head.safetensors": os.path.join(work_r, "head.safetensors"),
        "fidelity-dataset.json": os.path.join(R, "fidelity-dataset.json")})
    for n in ("panel.jsonl", "meta.json", "head.safetensors"):
        U.check(os.path.islink(os.path.join(snap, n)), f"{n} is a link in the snapshot")
    out = B.path("from-hf")
    p = run(["pack", "--panel", os.path.join(snap, "panel.jsonl"), "--tensors", os.path.join(work_r, "t"),
             "--meta", os.path.join(snap, "meta.json"), "--head", os.path.join(snap, "head.safetensors"),
             "--out", out, "--threads", "2"])
    U.check(p.returncode == 0, f"pack from a snapshot: {p.returncode} {p.stderr}")
    if p.returncode == 0:
        v = run(["validate", out])
        U.check(v.returncode == 0, f"validate the snapshot's pack: {v.returncode} {v.stdout}")
        U.check(U.load_manifest(out)["head"] == U.load_manifest(R)["head"], "the same head was packed")

    p = run(["json", "canon", os.path.join(snap, "meta.json")])
    q = run(["json", "canon", os.path.join(work_r, "meta.json")])
    U.check(p.returncode == 0 and p.stdout == q.stdout, f"json canon of a link: {p.returncode} {p.stderr}")
    p = run(["verify", os.path.join(snap, "fidelity-dataset.json")])
    U.check(p.returncode == 0, f"verify a link: {p.returncode} {p.stdout} {p.stderr}")
    named = os.path.join(snap, "head.safetensors")
    p = run(["tensor", "ls", named, "--json"])
    U.check(p.returncode == 0 and "lm_head.weight" in p.stdout, f"tensor ls a link: {p.returncode} {p.stderr}")
    if p.returncode == 0:
        U.check(json.loads(p.stdout)["file"] == named, "tensor ls shows the name the user gave")
    c = os.path.join(B.path("hf-compare"), "out")
    p = run(["compare", R, Q, "--head", named, "--out", c, "--quiet", "--threads", "2"])
    U.check(p.returncode in (0, 2), f"compare --head a link: {p.returncode} {p.stderr}")
    if p.returncode in (0, 2):
        U.check(U.receipt(c)["estimator"]["head_policy"] == "shared_reference_head", "--head applied")

    # A named link to a FIFO is refused at once, not waited on.
    fifo = B.path("fifo")
    os.mkfifo(fifo)
    os.symlink(fifo, B.path("fifo-link"))
    for args in (["tensor", "ls", B.path("fifo-link")], ["json", "canon", B.path("fifo-link")]):
        try:
            p = run(args, timeout=10)
            U.check(p.returncode == 4 and "FIFO" in p.stderr, f"{args[:2]} on a link to a FIFO: {p.returncode} {p.stderr}")
        except subprocess.TimeoutExpired:
            U.check(False, f"{args[:2]} on a link to a FIFO hangs")

    # Inside a dataset a link stays refused (PATH-4).
    inside = B.path("R-with-link")
    shutil.copytree(R, inside, symlinks=True)
    tok = os.path.join(inside, "panel", "tokens", "context-0000.json")
    shutil.copy(tok, B.path("outside-token.json"))
    os.remove(tok)
    os.symlink(B.path("outside-token.json"), tok)
    v = run(["validate", inside])
    U.check(v.returncode != 0 and ("PATH-4" in v.stdout + v.stderr or "symbolic" in v.stdout + v.stderr),
            f"a link inside a dataset is refused: {v.returncode} {v.stdout[:500]}")


# ---- modes -------------------------------------------------------------------------------------

def check_modes(tag, root, umask):
    want_d, want_f = 0o777 & ~umask, 0o666 & ~umask
    bad = []
    for d, dirs, files in os.walk(root):
        m = stat.S_IMODE(os.lstat(d).st_mode)
        if m != want_d:
            bad.append(f"{d} {m:o}")
        for f in files:
            m = stat.S_IMODE(os.lstat(os.path.join(d, f)).st_mode)
            if m != want_f:
                bad.append(f"{f} {m:o}")
    U.check(not bad, f"{tag} under umask {umask:03o}: want {want_d:o}/{want_f:o}, got {bad[:4]}")


def test_modes(R, Q, work_r):
    for umask in (0o022, 0o027, 0o077, 0o002):
        out = B.path(f"mode-{umask:03o}")
        p = run(pack_args(work_r, out), umask=umask)
        U.check(p.returncode == 0, f"pack under umask {umask:03o}: {p.stderr}")
        if p.returncode == 0:
            check_modes("pack", out, umask)
    umask = 0o027
    out = B.path("mode-compare")
    p = run(["compare", R, Q, "--out", out, "--quiet", "--threads", "2"], umask=umask)
    U.check(p.returncode in (0, 2), f"compare under umask: {p.stderr}")
    if p.returncode in (0, 2):
        check_modes("compare", out, umask)
    out = B.path("mode-synth")
    p = run(["synth", "--out", out, *SYNTH_SIZES], umask=umask)
    U.check(p.returncode == 0, f"synth under umask: {p.stderr}")
    if p.returncode == 0:
        check_modes("synth", out, umask)


def main():
    os.chmod(B.dir, 0o755)  # the unprivileged user of the read-only case must reach it
    R = B.pack("R", tensors=H0, head=W)
    Q = B.pack("Q", tensors=H1, head=W, role="quant")
    work_r = B.path("in-R")
    test_whole(R, Q)
    test_out_refused()
    test_litter(R, Q, work_r)
    test_named_links(R, Q, work_r)
    test_modes(R, Q, work_r)
    test_real_kill()
    U.finish("test_fsys")


if __name__ == "__main__":
    main()
