"""What the MPI tests share (docs/SCALE.md): `mpirun` with the settings Open MPI needs in a
container and as root, set in this process's children only, never globally; the program built
without MPI beside the MPI one (fidelis-serial), whose bytes every MPI run must equal; and a
fault put into one rank only."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import compare_util as U  # noqa: E402
import numpy as np  # noqa: E402

MPI_CLI = os.environ.get("FDL_CLI", "build-mpi/fidelis")
SERIAL_CLI = os.environ.get("FDL_CLI_SERIAL",
                            os.path.join(os.path.dirname(MPI_CLI), "fidelis-serial"))
MPIRUN = shutil.which("mpirun")


def mpi_env(extra=None):
    e = dict(os.environ)
    # root in CI; a container without ptrace for the single-copy path; more ranks than cores
    e.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
              "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
              "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl": "self,vader",
              "OMPI_MCA_hwloc_base_binding_policy": "none"})
    e.pop("FDL_MPI_FAULT", None)
    if extra:
        e.update(extra)
    return e


def need_mpi():
    for p in (MPI_CLI, SERIAL_CLI):
        if not os.access(p, os.X_OK):
            print(f"skip: {p} is not an executable (configure with -DFDL_MPI=ON)")
            sys.exit(77)
    if not MPIRUN:
        print("skip: no mpirun (apt-get install openmpi-bin libopenmpi-dev)")
        sys.exit(77)


def mpirun(n, args, fault=None, timeout=600):
    """`mpirun -n N fidelis ARGS` as a CompletedProcess. fault: (rank, FDL_MPI_FAULT value), set
    in that rank's environment only."""
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-n", str(n)]
    if fault:
        rank, value = fault
        cmd += ["sh", "-c", 'if [ "$OMPI_COMM_WORLD_RANK" = "%d" ]; then export FDL_MPI_FAULT=%s; '
                'fi; exec "$@"' % (rank, value), "sh"]
    cmd += [MPI_CLI, *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=timeout)


def serial(args, timeout=600):
    return subprocess.run([SERIAL_CLI, *args], capture_output=True, text=True, timeout=timeout)


def same_tree(a, b):
    ta, tb = U.tree(a), U.tree(b)
    return sorted(ta) == sorted(tb) and all(ta[k] == tb[k] for k in ta), sorted(ta)


def hidden_pair(B, noise=0.3):
    """(reference, candidate): B's random hidden states and head, and the candidate's states
    with noise, packed as a root and a quant dataset over one head."""
    H0 = B.random_hidden()
    H1 = [h + (B.rng.standard_normal(h.shape) * noise).astype(np.float32) for h in H0]
    W = B.random_head()
    return B.pack("R", tensors=H0, head=W), B.pack("Q", tensors=H1, head=W, role="quant")


def leftovers(parent):
    """Staging directories or anything else a refused run left in parent."""
    return sorted(os.listdir(parent))


def none_running(marker):
    """No live process whose command line holds marker (a rank that outlived its job)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            return False
    return True
