"""`fidelis verify` against every sealed file in ../shared/vectors (SEALS.tsv), against
one-character mutations of each, and against an independent Python recomputation."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

CLI = os.environ.get("FDL_CLI", "fidelis")
VECTORS = os.path.join(os.environ.get("FDL_SHARED", "../shared"), "vectors")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*paths, opts=()):
    p = subprocess.run([CLI, "verify", *opts, *paths], capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout.splitlines(), p.stderr


def python_seal(doc, recipe, field):
    """The seal as the upstream Python tools compute it (shared/spec/README.md)."""
    body = dict(doc)
    if recipe == "fidelity-blank-field":
        body[field] = ""
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    body.pop(field, None)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def load(path, recipe):
    with open(path, encoding="utf-8") as f:
        if recipe == "kiln-remove-field":
            # Kiln's loader reads -0.0 as +0.0 (KILN-ATTRIBUTION.md §4).
            return json.load(f, parse_float=lambda s: float(s) or 0.0)
        return json.load(f)


def leaves(v, path=()):
    """(path, value) of every string and int leaf, in a stable order."""
    if isinstance(v, dict):
        for k in sorted(v):
            yield from leaves(v[k], path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaves(x, path + (i,))
    elif isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
        yield path, v


def set_at(doc, path, value):
    for k in path[:-1]:
        doc = doc[k]
    doc[path[-1]] = value


def flip_char(s):
    """One character changed; hex digits stay hex so digests stay well-formed."""
    i = len(s) // 2
    c = s[i]
    if c in "0123456789abcdef":
        n = "0123456789abcdef"[("0123456789abcdef".index(c) + 1) % 16]
    else:
        n = "y" if c == "x" else "x"
    return s[:i] + n + s[i + 1:]


def flip_digit(n):
    d = abs(n) % 10
    return n - d + (d + 1) % 10 if n >= 0 else n + d - (d + 1) % 10


def mutations(doc, field):
    """Two copies: one string leaf and one int leaf changed by one character each."""
    cands = [(p, v) for p, v in leaves(doc) if p not in ((field,), ("schema",))]
    strs = [(p, v) for p, v in cands if isinstance(v, str) and v]
    ints = [(p, v) for p, v in cands if isinstance(v, int)]
    out = []
    for group, change in ((strs, flip_char), (ints, flip_digit)):
        if not group:
            continue
        p, v = group[len(group) // 2]
        m = json.loads(json.dumps(doc))
        set_at(m, p, change(v))
        out.append((p, m))
    return out


def main():
    if not os.path.isdir(VECTORS):
        print("skipped: ../shared/vectors not present")
        return 77  # a recorded skip (CTest SKIP_RETURN_CODE), never a pass
    with open(os.path.join(VECTORS, "SEALS.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    header, rows = rows[0], rows[1:]
    check(header == ["path", "schema", "seal_field", "recipe", "expected"], "SEALS.tsv header")
    check(len(rows) >= 20, "SEALS.tsv has its rows")
    tmp = tempfile.mkdtemp(prefix="fdl-verify-")
    try:
        return run_all(rows, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_all(rows, tmp):

    all_paths = []
    for rel, schema, field, recipe, expected in rows:
        path = os.path.join(VECTORS, rel)
        all_paths.append(path)
        doc = load(path, recipe)
        check(doc.get("schema") == schema, f"{rel}: schema is {schema}")
        stored = doc[field]
        py = python_seal(doc, recipe, field)
        check(py == stored, f"{rel}: Python recompute equals the stored seal")

        rc, out, err = run(path)
        want = f"OK  {path}  {recipe}  {field}  {stored}"
        check(rc == 0 and out == [want] and expected == "ok",
              f"{rel}: verify says {out!r} rc={rc} stderr={err!r}, expected {want!r}")

        # Redumped unchanged, the seal still holds (so mutations below test values, not layout).
        base = os.path.join(tmp, rel.replace("/", "_"))
        with open(base, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, sort_keys=True, ensure_ascii=False)
        rc, out, _ = run(base)
        check(rc == 0 and len(out) == 1 and out[0].startswith("OK  "), f"{rel}: redump verifies")

        for i, (where, mutated) in enumerate(mutations(doc, field)):
            mpath = f"{base}.mut{i}.json"
            with open(mpath, "w", encoding="utf-8") as f:
                json.dump(mutated, f, indent=2, sort_keys=True, ensure_ascii=False)
            rc, out, err = run(mpath)
            computed = python_seal(mutated, recipe, field)
            check(computed != stored, f"{rel}: mutation at {where} changes the Python seal")
            want = f"MISMATCH  {mpath}  {recipe}  {field}  stored={stored}  computed={computed}"
            check(rc == 3 and out == [want],
                  f"{rel}: mutation at {where}: rc={rc} out={out!r} err={err!r}, want {want!r}")

    rc, out, err = run(*all_paths)
    check(rc == 0 and len(out) == len(rows) and all(l.startswith("OK  ") for l in out),
          f"all vectors at once: rc={rc}, {len(out)} lines, stderr={err!r}")

    # --json: one object per file.
    rc, out, _ = run(*all_paths[:3], opts=("--json",))
    objs = [json.loads(l) for l in out]
    check(rc == 0 and len(objs) == 3 and all(o["status"] == "ok" for o in objs)
          and objs[0]["path"] == all_paths[0], f"--json output {out!r}")

    # The U+FFFD fixture seals only with raw UTF-8: the ASCII-escaped hash differs, so a verifier
    # that escaped would report MISMATCH (this proves the row above has teeth).
    fx = os.path.join(VECTORS, "fidelity/fixture-qwen3-5-tiny-root/dataset.json")
    raw = open(fx, encoding="utf-8").read()
    check("\ufffd" in raw, "fixture contains U+FFFD")
    doc = json.loads(raw)
    body = dict(doc, dataset_sha256="")
    escaped = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"),
                                        ensure_ascii=True).encode()).hexdigest()
    check(escaped != doc["dataset_sha256"], "ASCII-escaped hash of the fixture differs")
    check(python_seal(doc, "fidelity-blank-field", "dataset_sha256") == doc["dataset_sha256"],
          "raw UTF-8 hash of the fixture matches")

    # A stored "" and an absent field are mismatches, not errors.
    for name, content in (("blank.json", dict(doc, dataset_sha256="")),
                          ("absent.json", {k: v for k, v in doc.items() if k != "dataset_sha256"})):
        p = os.path.join(tmp, name)
        with open(p, "w", encoding="utf-8") as f:
            json.dump(content, f, ensure_ascii=False)
        rc, out, _ = run(p)
        check(rc == 3 and len(out) == 1 and out[0].startswith("MISMATCH  "), f"{name}: {out!r}")
        stored = 'stored=""' if name == "blank.json" else "stored=(absent)"
        check(len(out) == 1 and f"  {stored}  " in out[0], f"{name}: shows {stored}")

    # An unknown schema or not-JSON was read and is refused (exit 3); an unreadable file could not
    # be read (exit 4). README.md, "Exit codes".
    unknown = os.path.join(tmp, "unknown.json")
    with open(unknown, "w") as f:
        json.dump({"schema": "acme.unknown-thing.v1", "receipt_sha256": ""}, f)
    rc, out, err = run(unknown)
    check(rc == 3 and len(out) == 1 and out[0].startswith(f"ERROR  {unknown}  (UNSUPPORTED)")
          and "acme.unknown-thing.v1" in out[0], f"unknown schema: rc={rc} {out!r}")
    check("acme.unknown-thing.v1" in err, "unknown schema reported on stderr")
    missing = os.path.join(tmp, "does-not-exist.json")
    rc, out, _ = run(missing)
    check(rc == 4 and len(out) == 1 and out[0].startswith(f"ERROR  {missing}  "),
          f"unreadable: rc={rc} {out!r}")
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"schema": "malaiwah.fidelity-dataset.v1", "a": 1, "a": 2}')
    rc, out, _ = run(bad)
    check(rc == 3 and len(out) == 1 and out[0].startswith("ERROR  "), f"duplicate key: {out!r}")

    # Exit code precedence: OK+MISMATCH -> 3, MISMATCH+ERROR -> 4; every file gets its line.
    mut = os.path.join(tmp, "blank.json")
    rc, out, _ = run(all_paths[0], mut)
    check(rc == 3 and len(out) == 2, f"ok+mismatch: rc={rc}")
    rc, out, _ = run(mut, missing, all_paths[0])
    check(rc == 4 and len(out) == 3, f"mismatch+error: rc={rc}")

    # Usage.
    rc, out, _ = run(opts=("--help",))
    check(rc == 0 and out and out[0].startswith("usage: fidelis verify"), "--help")
    rc, _, _ = run()
    check(rc == 4, "no FILE is a usage error")
    rc, _, _ = run(all_paths[0], opts=("--bogus",))
    check(rc == 4, "unknown option is a usage error")

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print(f"ok: {len(rows)} sealed vectors verified, mutations detected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
