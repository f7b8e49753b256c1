"""test_mpi_capture.py - `mpirun -n R fidelis capture` seals the bytes of one process.

For R = 1, 2, 3 the dataset (every file: manifests, per-record tensors, head, checksums) equals,
byte for byte, the one fidelis-serial (the same program built without MPI) writes, on:
* the dense tiny-random model, hidden form, and logit form with --layers (the layer boundaries
  file equal too);
* the Qwen3.5 tiny-random model (Gated DeltaNet and full attention), hidden form, prefill and
  decode paths."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_util as M  # noqa: E402

U = M.U
UTC = "2026-11-01T00:00:00Z"


def check_capture(t, tag, model, extra, layers=False, ranks=(1, 2, 3)):
    panel = os.path.join(model, "panel.jsonl")
    base = os.path.join(t, f"serial-{tag}")
    args = ["capture", "--model", model, "--panel", panel, "--created-utc", UTC, "--quiet", *extra]
    p = M.serial([*args, "--out", base] + (["--layers", base + ".layers"] if layers else []))
    if not U.check(p.returncode == 0, f"{tag}: serial capture exit {p.returncode} {p.stderr}"):
        return
    for n in ranks:
        out = os.path.join(t, f"mpi{n}-{tag}")
        q = M.mpirun(n, [*args, "--out", out] + (["--layers", out + ".layers"] if layers else []))
        if not U.check(q.returncode == 0, f"{tag} R={n}: exit {q.returncode} {q.stderr[-2000:]}"):
            continue
        same, files = M.same_tree(base, out)
        U.check(same and len(files) > 4, f"{tag} R={n}: {len(files)} files byte-identical to serial")
        if layers:
            U.check(open(base + ".layers", "rb").read() == open(out + ".layers", "rb").read(),
                    f"{tag} R={n}: layer boundaries byte-identical")


def init(t, preset, seed):
    model = os.path.join(t, preset)
    p = M.serial(["model", "init", "--preset", preset, "--seed", str(seed), model])
    if not U.check(p.returncode == 0, f"model init {preset}: {p.returncode} {p.stderr}"):
        U.finish("test_mpi_capture")
    return model


def main():
    M.need_mpi()
    tmp = tempfile.TemporaryDirectory(prefix="fdl-mpicap-")
    t = tmp.name
    dense = init(t, "tiny-random", 1)
    check_capture(t, "dense-hidden", dense, [])
    check_capture(t, "dense-logit", dense, ["--form", "logit"], layers=True, ranks=(2, 3))
    q35 = init(t, "qwen3.5-tiny-random", 0)
    check_capture(t, "qwen35-hidden", q35, [])
    check_capture(t, "qwen35-decode", q35, ["--path", "decode", "--hidden-dtype", "f32"],
                  ranks=(2,))
    U.finish("test_mpi_capture")


if __name__ == "__main__":
    main()
