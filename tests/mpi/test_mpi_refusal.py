"""test_mpi_refusal.py - a rank that fails stops the job, and nothing is published.

* a corrupt record that only rank 1 reads (R = 2: record 1 is rank 1's): exit 3 [seal_failed]
  as fidelis-serial's refusal of the same pair, the message names rank 1 and the record, no
  --out and no staging directory is left;
* an injected out-of-memory failure in rank 1 only (FDL_MPI_FAULT=oom, once its inputs are
  loaded): the exit code and refusal of the same fault alone (4), naming rank 1; nothing left;
  real allocation failures in rank 1 (alloc:N) refuse naming rank 1, or are absorbed whole;
* rank 1 killed (FDL_MPI_FAULT=kill, SIGKILL at its first agreement): mpirun fails, no --out,
  no rank left running;
* a capture whose rank 2 fails (R = 3): refused with the rank named, nothing published;
* an --out that exists refuses under R = 2 as it does alone (exit 3, left alone)."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_util as M  # noqa: E402

U = M.U
os.environ["SOURCE_DATE_EPOCH"] = "1767225600"


def record_file(ds, index):
    m = U.load_manifest(ds)
    mf = m["capture"]["manifest_file"]
    cap = json.load(open(os.path.join(ds, mf), encoding="utf-8"))
    rec = next(r for r in cap["records"] if r["index"] == index)
    return os.path.join(ds, os.path.dirname(mf), rec["file"])


def nothing_left(tag, parent, before, staging=False):
    new = sorted(set(M.leftovers(parent)) - set(before))
    if staging:
        new = [x for x in new if not x.startswith(".fidelis-staging-")]
    U.check(not new, f"{tag}: nothing published{'' if staging else ' or staged'} ({new})")


def refusal_line(err):
    return next((x for x in err.splitlines() if x.startswith(("REFUSED", "FAILED"))), "")


def main():
    M.need_mpi()
    U.require_shared()
    B = U.Builder(vocab=48, hidden=16, contexts=4, tokens=19, seed=3)
    R, Q = M.hidden_pair(B)
    outs = os.path.join(B.dir, "outs")
    os.makedirs(outs)

    # a corrupt record only rank 1 reads: flip bytes of record 1's tensor in Q
    path = record_file(Q, 1)
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0x55
    open(path, "wb").write(bytes(data))
    p = M.serial(["compare", R, Q, "--out", os.path.join(outs, "serial")])
    U.check(p.returncode == 3 and "seal_failed" in p.stderr,
            f"serial: corrupt record refused ({p.returncode}) {p.stderr[-300:]}")
    before = M.leftovers(outs)
    q = M.mpirun(2, ["compare", R, Q, "--out", os.path.join(outs, "corrupt")])
    U.check(q.returncode == p.returncode, f"R=2 corrupt record: exit {q.returncode}, serial "
            f"{p.returncode}: {q.stderr[-500:]}")
    U.check("rank 1 of 2" in q.stderr and "record 1" in q.stderr and "seal_failed" in q.stderr,
            f"R=2 corrupt record: the message names rank 1 and the record: {q.stderr[-500:]}")
    nothing_left("corrupt record", outs, before)
    data[-3] ^= 0x55
    open(path, "wb").write(bytes(data))

    # an injected out-of-memory failure in rank 1 only, once it has loaded its inputs: the
    # refusal of the same fault in a job of one rank, with the rank named
    q = M.mpirun(2, ["compare", R, Q, "--out", os.path.join(outs, "oom")], fault=(1, "oom"))
    one = M.mpirun(1, ["compare", R, Q, "--out", os.path.join(outs, "oom")], fault=(0, "oom"))
    U.check(q.returncode == one.returncode == 4 and "rank 1 of 2" in q.stderr,
            f"oom in rank 1: exit {q.returncode}, alone {one.returncode} (4), rank named: "
            f"{q.stderr[-500:]}")
    U.check(refusal_line(q.stderr).replace("rank 1 of 2: ", "") == refusal_line(one.stderr),
            f"oom: the refusal of one rank, with the rank named: {refusal_line(q.stderr)}")
    nothing_left("oom", outs, before)
    # real allocation failures in rank 1 (the Nth from its first agreement): a refusal that
    # names rank 1 and leaves nothing, or (a failure the library absorbs) the whole output
    for n in (2, 5, 9):
        out = os.path.join(outs, f"alloc{n}")
        q = M.mpirun(2, ["compare", R, Q, "--out", out], fault=(1, f"alloc:{n}"))
        if q.returncode in (0, 2):
            U.check(os.path.isfile(os.path.join(out, "comparison-receipt.json")),
                    f"alloc:{n}: absorbed, output whole")
            shutil.rmtree(out)
        else:
            U.check(q.returncode in (3, 4) and "rank 1 of 2" in q.stderr,
                    f"alloc:{n} in rank 1: exit {q.returncode}, rank named: {q.stderr[-300:]}")
        nothing_left(f"alloc:{n}", outs, before)

    # rank 1 killed: no output; a staging directory of rank 0 may stay behind when SIGKILL wins
    # the race against its cleanup (the next run in that directory removes it)
    marker = os.path.join(outs, "killed")
    q = M.mpirun(2, ["compare", R, Q, "--out", marker], fault=(1, "kill"), timeout=120)
    U.check(q.returncode != 0, f"rank 1 killed: mpirun fails ({q.returncode})")
    nothing_left("killed rank", outs, before, staging=True)
    U.check(M.none_running(marker), "rank 1 killed: no rank left running")

    # the pair is whole again: the job succeeds
    q = M.mpirun(2, ["compare", R, Q, "--out", os.path.join(outs, "ok")])
    U.check(q.returncode in (0, 2), f"repaired pair: exit {q.returncode} {q.stderr[-300:]}")
    before = M.leftovers(outs)
    q = M.mpirun(2, ["compare", R, Q, "--out", os.path.join(outs, "ok")])
    U.check(q.returncode == 3 and "destination_exists" in q.stderr,
            f"existing --out: exit {q.returncode} {q.stderr[-300:]}")
    nothing_left("existing --out", outs, before)

    # a capture whose rank 2 fails
    model = os.path.join(B.dir, "model")
    U.check(M.serial(["model", "init", "--preset", "tiny-random", "--seed", "1", model])
            .returncode == 0, "model init")
    cap = ["capture", "--model", model, "--panel", os.path.join(model, "panel.jsonl"), "--out",
           os.path.join(outs, "cap")]
    marker = os.path.join(outs, "cap")
    q = M.mpirun(3, cap, fault=(2, "kill"), timeout=120)
    U.check(q.returncode != 0, f"capture, rank 2 killed: fails ({q.returncode})")
    nothing_left("capture killed", outs, before, staging=True)
    U.check(M.none_running(marker), "capture, rank 2 killed: no rank left running")
    before = M.leftovers(outs)
    q = M.mpirun(3, cap, fault=(2, "oom"))
    one = M.mpirun(1, cap, fault=(0, "oom"))
    U.check(q.returncode == one.returncode and q.returncode == 4 and "rank 2 of 3" in q.stderr,
            f"capture, alloc fault in rank 2: exit {q.returncode}, alone {one.returncode}: "
            f"{q.stderr[-500:]}")
    nothing_left("capture alloc fault", outs, before)
    U.finish("test_mpi_refusal")


if __name__ == "__main__":
    main()
