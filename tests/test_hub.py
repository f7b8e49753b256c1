"""test_hub.py - Hugging Face Hub inputs (docs/HUB.md), against a Hub stand-in on 127.0.0.1
(tests/hub_server.py); nothing here reaches another address (proxies are switched off).

* `fidelis fetch` of a model (and of a renamed one, through the endpoint's 307): refs/main holds
  the commit, snapshots/COMMIT/* are relative links into blobs/<etag>, the blobs are the bytes
  served; an LFS download cut mid-file by the server is resumed with an HTTP Range and
  completes, and a partial blob left by an earlier run is resumed from its length; a 429 on
  the revision API is retried; the bar shows bytes, rate and ETA; a second
  fetch downloads nothing;
* a corrupted byte (LFS and git file) is refused by its digest and leaves no blob or link;
* a private repository: 401 without a token (exit 3), 200 with HF_TOKEN and with the token file;
  the token is in no output, no cached file, and reaches the server only in the endpoint's
  requests;
* a redirect to a foreign host (127.0.0.2, evil.example) is refused before any request to it;
* `capture --model hf://ORG/NAME@REV --panel hf://datasets/...` fetches into an empty cache and
  records weights/tokenizer/panel repository and revision; `capture --model SNAPSHOT` reads the
  cache in place; both equal the capture of the plain directory;
* a snapshot whose link escapes blobs/ is refused as an escape; a cached blob whose bytes do not
  match its name is refused; --offline / HF_HUB_OFFLINE refuse a missing revision or file by
  name.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_util as U  # noqa: E402
import gguf_write  # noqa: E402
import hub_server  # noqa: E402

TOKEN = "hf_fidelisTESTtoken0123456789secret"
UTC = "2026-11-01T00:00:00Z"
OUTPUTS = []


def env_for(cache, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and not k.startswith("HF_")}
    env.update({"HF_HUB_CACHE": cache, "HF_HOME": os.path.join(cache, "home"), "no_proxy": "*",
                "NO_PROXY": "*"})
    env.update(extra)
    return env


def run(env, *args):
    p = subprocess.run([U.CLI, *args], capture_output=True, text=True, timeout=300, env=env)
    OUTPUTS.append(p.stdout + p.stderr)
    return p.returncode, p.stdout + p.stderr


def files_of(root):
    out = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def model_files(model):
    return {f: open(os.path.join(model, f), "rb").read() for f in os.listdir(model)
            if f != "panel.jsonl"}


def fetch_and_layout(hub, t, model):
    cache = os.path.join(t, "cache1")
    env = env_for(cache)
    repo = hub.repos[("models", "acme/tiny")]
    shard = repo.files["model.safetensors"]
    digest = hashlib.sha256(shard).hexdigest()
    hub.drop_once.add(digest)
    hub.fail_api_once = 429
    n0 = len(hub.log)
    rc, out = run(env, "fetch", "hf://acme/tiny@main", "--endpoint", hub.url, "--progress")
    U.check(rc == 0, f"fetch: rc {rc}: {out}")
    rdir = os.path.join(cache, "models--acme--tiny")
    U.check(open(os.path.join(rdir, "refs", "main")).read() == repo.commit, "refs/main is the commit")
    snap = os.path.join(rdir, "snapshots", repo.commit)
    for name, data in repo.files.items():
        p = os.path.join(snap, name)
        etag = digest if name == "model.safetensors" else hub_server.git_blob_id(data)
        U.check(os.path.islink(p) and os.readlink(p) == "../../blobs/" + etag,
                f"{name}: a relative link to ../../blobs/{etag} ({os.readlink(p) if os.path.islink(p) else 'none'})")
        U.check(open(p, "rb").read() == data, f"{name}: the bytes served")
    U.check(not [f for f in os.listdir(os.path.join(rdir, "blobs")) if f.endswith(".incomplete")],
            "no .incomplete left")
    cdn = [(m, path, h) for m, path, h in hub.log[n0:] if path.startswith("/cdn/")]
    U.check(any(h.get("Range", "").startswith("bytes=") and h["Range"] != "bytes=0-" for _, _, h in cdn),
            f"the cut download resumed with a Range: {[h.get('Range') for _, _, h in cdn]}")
    U.check("try 2 of" in out, "the retries are told")
    U.check("MB/s" in out and "ETA" in out, f"a download bar with rate and ETA: {out[-300:]!r}")
    rc, out = run(env, "fetch", "hf://acme/tiny@main", "--endpoint", hub.url, "--quiet", "--json")
    res = json.loads(out) if rc == 0 else {}
    U.check(rc == 0 and res.get("fetched") == 0 and res.get("files") == len(repo.files)
            and res.get("commit") == repo.commit, f"a second fetch downloads nothing: {out}")
    rc, out = run(env, "fetch", "hf://acme/tiny@" + repo.commit, "--endpoint", hub.url, "--quiet",
                  "--include", "config.json")
    U.check(rc == 0 and "1 (0 downloaded" in out, f"fetch by commit with --include: {out}")
    # a renamed repository: the endpoint's 307s are followed within its origin
    hub.renamed["acme/old-tiny"] = "acme/tiny"
    rc, out = run(env, "fetch", "hf://acme/old-tiny@main", "--endpoint", hub.url, "--quiet",
                  "--include", "config.json,model.safetensors")
    old = os.path.join(cache, "models--acme--old-tiny", "snapshots", repo.commit)
    U.check(rc == 0 and open(os.path.join(old, "model.safetensors"), "rb").read() == shard,
            f"a renamed repository is followed by its redirects: {rc} {out}")
    return cache, snap


def resume_across_runs(hub, t):
    """A partial blob left by an earlier run (or a Python tool) is resumed from its length."""
    cache = os.path.join(t, "cache-resume")
    shard = hub.repos[("models", "acme/tiny")].files["model.safetensors"]
    digest = hashlib.sha256(shard).hexdigest()
    blobs = os.path.join(cache, "models--acme--tiny", "blobs")
    os.makedirs(blobs)
    with open(os.path.join(blobs, digest + ".incomplete"), "wb") as f:
        f.write(shard[:1000])
    n0 = len(hub.log)
    rc, out = run(env_for(cache), "fetch", "hf://acme/tiny@main", "--endpoint", hub.url,
                  "--include", "model.safetensors")
    ranges = [h.get("Range") for _, p, h in hub.log[n0:] if p.startswith("/cdn/")]
    U.check(rc == 0 and "resuming at byte 1000" in out and ranges == ["bytes=1000-"],
            f"a partial blob resumed with Range bytes=1000-: {rc} {ranges} {out}")
    U.check(open(os.path.join(blobs, digest), "rb").read() == shard, "the resumed blob is whole")


def corrupt(hub, t):
    cache = os.path.join(t, "cache-bad")
    env = env_for(cache)
    for name in ("model.safetensors", "config.json"):
        rc, out = run(env, "fetch", "hf://acme/bad@main", "--endpoint", hub.url, "--quiet",
                      "--include", name)
        U.check(rc == 3 and name in out and ("sha256" in out or "git blob id" in out),
                f"corrupt {name}: refused by its digest: rc {rc}: {out}")
        snap = os.path.join(cache, "models--acme--bad", "snapshots")
        linked = [f for d, _, fs in os.walk(snap) for f in fs]
        U.check(name not in linked, f"corrupt {name}: no snapshot link")
    blobs = os.path.join(cache, "models--acme--bad", "blobs")
    U.check(not os.path.isdir(blobs) or not os.listdir(blobs),
            f"corrupt: no blob, no .incomplete kept: {os.listdir(blobs) if os.path.isdir(blobs) else []}")


def token(hub, t):
    cache = os.path.join(t, "cache-private")
    env = env_for(cache)
    n0 = len(hub.log)
    rc, out = run(env, "fetch", "hf://acme/private@main", "--endpoint", hub.url, "--quiet")
    U.check(rc == 3 and "401" in out and "HF_TOKEN" in out, f"private without a token: 401, exit 3: {rc} {out}")
    U.check(all("Authorization" not in h for _, _, h in hub.log[n0:]), "no Authorization without a token")
    env_t = env_for(cache, HF_TOKEN=TOKEN)
    n0 = len(hub.log)
    rc, out = run(env_t, "fetch", "hf://acme/private@main", "--endpoint", hub.url, "--progress")
    U.check(rc == 0, f"private with HF_TOKEN: {rc} {out}")
    sent = [p for _, p, h in hub.log[n0:] if h.get("Authorization") == "Bearer " + TOKEN]
    U.check(sent and all(not p.startswith("/cdn/") or True for p in sent), "the token reached the endpoint")
    # the token file, in a fresh cache
    cache2 = os.path.join(t, "cache-private2")
    home = os.path.join(t, "hf-home")
    os.makedirs(home)
    with open(os.path.join(home, "token"), "w") as f:
        f.write(TOKEN + "\n")
    env_f = env_for(cache2, HF_HOME=home)
    rc, out = run(env_f, "fetch", "hf://acme/private@main", "--endpoint", hub.url, "--quiet")
    U.check(rc == 0, f"private with the token file: {rc} {out}")
    # a token that is not one is refused without being shown
    bad = TOKEN + " trailing"
    rc, out = run(env_for(cache2, HF_TOKEN=bad), "fetch", "hf://acme/private@main", "--endpoint",
                  hub.url, "--quiet")
    U.check(rc != 0 and "HF_TOKEN" in out and bad not in out, f"a malformed token refused unshown: {out}")
    for root in (cache, cache2):
        leaked = [n for n, b in files_of(root).items() if TOKEN.encode() in b]
        U.check(not leaked, f"the token is in no cached file: {leaked}")


def foreign(hub, t):
    cache = os.path.join(t, "cache-evil")
    for host in ("http://127.0.0.2:%d" % hub.server.server_address[1], "http://evil.example"):
        hub.repos[("models", "acme/evil")].redirect_base = host
        n0 = len(hub.log)
        rc, out = run(env_for(cache), "fetch", "hf://acme/evil@main", "--endpoint", hub.url,
                      "--quiet")
        U.check(rc == 3 and "refused" in out and host.split("//")[1].split(":")[0] in out,
                f"redirect to {host} refused: {rc} {out}")
        U.check(not [p for _, p, _ in hub.log[n0:] if p.startswith("/cdn/")],
                "nothing was fetched from the CDN path")


def capture_end_to_end(hub, t, model, snap):
    cache = os.path.join(t, "cache-capture")
    env = env_for(cache, HF_ENDPOINT=hub.url)
    plain = os.path.join(t, "plain")
    rc, out = run(env, "capture", "--model", model, "--panel", os.path.join(model, "panel.jsonl"),
                  "--out", plain, "--created-utc", UTC, "--quiet", "--json")
    U.check(rc == 0, f"capture of the plain directory: {out}")
    want = json.loads(out)["capture_content_digest"] if rc == 0 else None
    repo = hub.repos[("models", "acme/tiny")]
    prepo = hub.repos[("datasets", "acme/panels")]
    a = os.path.join(t, "from-hub")
    rc, out = run(env, "capture", "--model", "hf://acme/tiny@main", "--panel",
                  "hf://datasets/acme/panels@main/panel.jsonl", "--out", a, "--created-utc", UTC,
                  "--quiet", "--json")
    U.check(rc == 0, f"capture --model hf://acme/tiny@main (implicit fetch): {rc} {out}")
    if rc == 0:
        U.check(json.loads(out)["capture_content_digest"] == want, "hf:// capture = plain capture")
        m = json.load(open(os.path.join(a, "fidelity-dataset.json")))
        w, pan = m["weights"], m["panel"]
        tok = pan["tokenizer"]
        U.check(w["repository"] == "acme/tiny" and w["revision"] == repo.commit,
                f"weights.repository/revision from the resolution: {w['repository']} {w['revision']}")
        U.check(pan.get("repository") == "acme/panels" and pan.get("revision") == prepo.commit,
                f"panel repository/revision: {pan.get('repository')} {pan.get('revision')}")
        U.check(tok.get("repository") == "acme/tiny" and tok.get("revision") == repo.commit,
                f"tokenizer repository/revision: {tok}")
        rc, out = run(env, "validate", a)
        U.check(rc == 0, f"the hf:// capture validates: {out}")
    U.check(os.path.islink(os.path.join(cache, "models--acme--tiny", "snapshots", repo.commit,
                                        "model.safetensors")), "the implicit fetch filled the cache")
    # the cache snapshot of the fetch test, read in place
    b = os.path.join(t, "from-snapshot")
    rc, out = run(env, "capture", "--model", snap, "--panel", os.path.join(model, "panel.jsonl"),
                  "--out", b, "--created-utc", UTC, "--quiet", "--json")
    U.check(rc == 0 and json.loads(out)["capture_content_digest"] == want,
            f"capture of a cache snapshot in place: {rc} {out}")
    if rc == 0:
        w = json.load(open(os.path.join(b, "fidelity-dataset.json")))["weights"]
        U.check(w["repository"] == "acme/tiny" and w["revision"] == repo.commit,
                f"a snapshot path records its repository and commit: {w['repository']} {w['revision']}")
    # panel, tokenize and generate take hf:// too; the panel's header names the tokenizer's
    # repository and commit
    txt = os.path.join(t, "text.txt")
    with open(txt, "w") as f:
        f.write("a short text for one window of eight tokens, and then some more words\n" * 3)
    pout = os.path.join(t, "cut.jsonl")
    rc, out = run(env, "panel", "--tokenizer", "hf://acme/tiny@main", "--text", txt, "--context",
                  "8", "--out", pout)
    U.check(rc == 0, f"panel --tokenizer hf://: {rc} {out}")
    if rc == 0:
        head = json.loads(open(pout).readline())["header"]["tokenizer"]
        U.check(head.get("repository") == "acme/tiny" and head.get("revision") == repo.commit,
                f"the panel header names the tokenizer's repository and commit: {head}")
    rc, out = run(env, "tokenize", "--tokenizer", "hf://acme/tiny@main", "--string", "hello",
                  "--offline")
    U.check(rc == 0 and out.strip(), f"tokenize --tokenizer hf://: {rc} {out}")
    rc, out = run(env, "generate", "--model", "hf://acme/tiny@main", "--ids", "[256, 83]",
                  "--greedy-out", os.path.join(t, "greedy.json"), "--offline")
    U.check(rc == 0, f"generate --model hf://: {rc} {out}")
    # a GGUF file of a repository, fetched alone and read through its snapshot link
    rc, out = run(env, "capture", "--model", "hf://acme/tiny-GGUF@main/tiny-f32.gguf", "--panel",
                  os.path.join(model, "panel.jsonl"), "--out", os.path.join(t, "from-gguf"),
                  "--created-utc", UTC, "--quiet")
    U.check(rc == 0, f"capture --model hf://ORG/NAME@REV/FILE.gguf: {rc} {out}")
    if rc == 0:
        w = json.load(open(os.path.join(t, "from-gguf", "fidelity-dataset.json")))["weights"]
        g = hub.repos[("models", "acme/tiny-GGUF")]
        U.check(w["repository"] == "acme/tiny-GGUF" and w["revision"] == g.commit,
                f"a GGUF's repository and commit: {w['repository']} {w['revision']}")
    # cached and offline: no request at all
    n0 = len(hub.log)
    c = os.path.join(t, "offline-ok")
    rc, out = run(env_for(cache, HF_HUB_OFFLINE="1"), "capture", "--model", "hf://acme/tiny@main",
                  "--panel", os.path.join(model, "panel.jsonl"), "--out", c, "--created-utc", UTC,
                  "--quiet")
    U.check(rc == 0 and len(hub.log) == n0, f"offline from the cache, no request: {rc} {out}")
    return cache


def escapes_and_offline(hub, t, model, cache):
    repo = hub.repos[("models", "acme/tiny")]
    src = os.path.join(cache, "models--acme--tiny")
    # a snapshot whose config.json link leaves blobs/
    esc = os.path.join(cache, "models--acme--escape")
    shutil.copytree(src, esc, symlinks=True)
    outside = os.path.join(t, "outside")
    os.makedirs(outside)
    shutil.copy(os.path.join(model, "config.json"), outside)
    snap = os.path.join(esc, "snapshots", repo.commit)
    os.remove(os.path.join(snap, "config.json"))
    os.symlink(os.path.relpath(os.path.join(outside, "config.json"), snap),
               os.path.join(snap, "config.json"))
    env = env_for(cache)
    for m in (snap, "hf://acme/escape@main"):
        rc, out = run(env, "capture", "--model", m, "--panel", os.path.join(model, "panel.jsonl"),
                      "--out", os.path.join(t, "esc-out"), "--offline", "--quiet")
        U.check(rc == 3 and "config.json" in out and "escape" in out,
                f"{m}: a link out of blobs/ refused as an escape: {rc} {out}")
    # a named file (a panel) in a snapshot linking out of blobs/
    os.symlink(os.path.relpath(os.path.join(model, "panel.jsonl"), snap), os.path.join(snap, "panel.jsonl"))
    rc, out = run(env, "capture", "--model", model, "--panel", os.path.join(snap, "panel.jsonl"),
                  "--out", os.path.join(t, "esc-out"), "--quiet")
    U.check(rc == 4 and "escape" in out, f"a --panel link out of blobs/ refused: {rc} {out}")
    # a blob whose bytes are not its name
    bad = os.path.join(cache, "models--acme--rot")
    shutil.copytree(src, bad, symlinks=True)
    shard = os.path.join(bad, "snapshots", repo.commit, "model.safetensors")
    blob = os.path.realpath(shard)
    data = bytearray(open(blob, "rb").read())
    data[-3] ^= 0x01
    os.chmod(blob, 0o644)
    open(blob, "wb").write(bytes(data))
    rc, out = run(env, "capture", "--model", "hf://acme/rot@main", "--panel",
                  os.path.join(model, "panel.jsonl"), "--out", os.path.join(t, "rot-out"), "--offline",
                  "--quiet")
    U.check(rc == 3 and "sha256" in out and os.path.basename(blob) in out,
            f"a rotten blob refused by its name: {rc} {out}")
    cfg = os.path.join(bad, "snapshots", repo.commit, "config.json")
    cblob = os.path.realpath(cfg)
    text = open(cblob, "rb").read()
    open(cblob, "wb").write(text.replace(b"{", b"{ ", 1))
    rc, out = run(env, "capture", "--model", "hf://acme/rot@main", "--panel",
                  os.path.join(model, "panel.jsonl"), "--out", os.path.join(t, "rot-out"), "--offline",
                  "--quiet")
    U.check(rc == 3 and "git blob id" in out, f"a rotten git blob (config.json) refused: {rc} {out}")
    # offline: a missing revision, a missing file, each by name
    rc, out = run(env, "fetch", "hf://acme/tiny@main", "--offline", "--include", "missing.bin")
    U.check(rc == 4 and "missing.bin" in out and "offline" in out,
            f"--offline with a missing file refused by name: {rc} {out}")
    rc, out = run(env_for(cache, HF_HUB_OFFLINE="1"), "capture", "--model", "hf://acme/absent@main",
                  "--panel", os.path.join(model, "panel.jsonl"), "--out", os.path.join(t, "x"),
                  "--endpoint", hub.url, "--quiet")
    U.check(rc == 4 and "hf://acme/absent@main" in out and "HF_HUB_OFFLINE" in out,
            f"HF_HUB_OFFLINE with a repository not cached: {rc} {out}")
    gone = os.path.join(cache, "models--acme--gone")
    shutil.copytree(src, gone, symlinks=True)
    os.remove(os.path.join(gone, "snapshots", repo.commit, "model.safetensors"))
    rc, out = run(env, "capture", "--model", "hf://acme/gone@main", "--panel",
                  os.path.join(model, "panel.jsonl"), "--out", os.path.join(t, "x"), "--offline",
                  "--quiet")
    U.check(rc == 3 and "model.safetensors" in out, f"--offline, a snapshot without its shard: {rc} {out}")
    rc, out = run(env, "capture", "--model", "hf://acme/tiny@main/model.safetensors", "--panel",
                  os.path.join(model, "panel.jsonl"), "--out", os.path.join(t, "x"), "--offline",
                  "--quiet")
    U.check(rc != 0, "a file where a model is expected is not taken for a directory")


def main():
    U.need_cli()
    t = tempfile.mkdtemp(prefix="fdl-hub-")
    model = os.path.join(t, "model")
    rc, out = run(os.environ.copy(), "model", "init", "--preset", "tiny-random", "--seed", "3", model)
    if not U.check(rc == 0, f"model init: {out}"):
        U.finish()
    files = model_files(model)
    files["README.md"] = b"# tiny\n"
    hub = hub_server.Hub()
    hub.token = TOKEN
    hub.add("models", "acme/tiny", hub_server.Repo(files))
    hub.add("models", "acme/private", hub_server.Repo({"config.json": files["config.json"],
                                                       "model.safetensors": files["model.safetensors"]},
                                                      private=True))
    bad = hub.add("models", "acme/bad", hub_server.Repo({"config.json": files["config.json"] + b" ",
                                                         "model.safetensors": files["model.safetensors"][:-8] + b"\0" * 8}))
    bad.corrupt = {"model.safetensors", "config.json"}
    hub.add("models", "acme/evil", hub_server.Repo({"model.safetensors": files["model.safetensors"] + b"x" * 8}))
    gguf = os.path.join(t, "tiny-f32.gguf")
    gguf_write.hf_to_gguf(model, gguf)
    hub.add("models", "acme/tiny-GGUF", hub_server.Repo({"tiny-f32.gguf": open(gguf, "rb").read(),
                                                         "README.md": b"# gguf\n"}))
    hub.add("datasets", "acme/panels",
            hub_server.Repo({"panel.jsonl": open(os.path.join(model, "panel.jsonl"), "rb").read()}))
    hub.start()
    try:
        cache, snap = fetch_and_layout(hub, t, model)
        resume_across_runs(hub, t)
        corrupt(hub, t)
        token(hub, t)
        foreign(hub, t)
        cache = capture_end_to_end(hub, t, model, snap)
        escapes_and_offline(hub, t, model, cache)
    finally:
        hub.stop()
    U.check(not [o for o in OUTPUTS if TOKEN in o], "the token is in no output")
    U.check(all(TOKEN not in json.dumps([p, {k: v for k, v in h.items() if k != "Authorization"}])
                for _, p, h in hub.log), "the token is only ever in an Authorization header")
    shutil.rmtree(t, ignore_errors=True)
    U.finish()


if __name__ == "__main__":
    main()
