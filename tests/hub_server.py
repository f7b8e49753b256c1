"""hub_server.py - a Hugging Face Hub stand-in on 127.0.0.1 for the hub tests (docs/HUB.md).

It serves the Hub's URL layout from memory:
  GET  /api/{models|datasets}/ORG/NAME/revision/REV   {"sha": COMMIT, "siblings": [...]}
  HEAD/GET /[datasets/]ORG/NAME/resolve/REV/PATH       a git file: 200, ETag "<git blob id>";
                                                       an LFS file (*.safetensors, *.gguf): 302 to
                                                       /cdn/<sha256>, X-Linked-Etag, X-Linked-Size
  GET  /cdn/SHA256                                     the bytes, with HTTP Range (206)
with X-Repo-Commit on every resolve answer. Faults on demand: a connection dropped mid-file (once
per blob), one flipped byte, 429 once on the revision API, a redirect to a foreign host, a
private repository that wants "Authorization: Bearer TOKEN". Every request is logged (method,
path, headers) for the test to inspect. It binds 127.0.0.1 only."""
import hashlib
import http.server
import json
import threading


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, files, private=False, lfs_suffixes=(".safetensors", ".gguf"), branch="main"):
        self.files = dict(files)
        self.private = private
        self.lfs = {n for n in self.files if n.endswith(lfs_suffixes)}
        self.commit = hashlib.sha1(
            json.dumps(sorted((k, hashlib.sha256(v).hexdigest()) for k, v in self.files.items()))
            .encode()).hexdigest()
        self.refs = {branch: self.commit}
        self.redirect_base = None  # an LFS redirect elsewhere than this server's /cdn
        self.corrupt = set()       # file names served with one byte flipped

    def at(self, rev):
        return self.commit if rev in (self.commit, *self.refs) else None


class Hub:
    def __init__(self):
        self.repos = {}           # ("models" | "datasets", "ORG/NAME") -> Repo
        self.blobs = {}           # sha256 -> bytes (LFS)
        self.token = None
        self.log = []
        self.drop_once = set()    # sha256 of blobs whose first full GET is cut mid-file
        self.fail_api_once = 0    # an HTTP status for the next revision request, once
        self.renamed = {}         # old "ORG/NAME" -> new: the Hub's 307 for a renamed repository
        self.lock = threading.Lock()
        self.server = None

    def add(self, kind, name, repo):
        self.repos[(kind, name)] = repo
        for f in repo.lfs:
            self.blobs[hashlib.sha256(repo.files[f]).hexdigest()] = repo.files[f]
        return repo

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def start(self):
        hub = self

        class H(Handler):
            pass
        H.hub = hub
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub = None

    def log_message(self, *a):
        pass

    def send(self, code, body=b"", headers=(), length=None):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def authorized(self, repo):
        if not repo.private:
            return True
        return self.headers.get("Authorization") == "Bearer %s" % self.hub.token

    def do_HEAD(self):
        self.route()

    def do_GET(self):
        self.route()

    def route(self):
        hub = self.hub
        with hub.lock:
            hub.log.append((self.command, self.path, dict(self.headers.items())))
        parts = self.path.split("?")[0].split("/")[1:]
        for old, new in self.hub.renamed.items():  # a renamed repository: 307 to its new name
            o, n = old.split("/"), new.split("/")
            for i in range(len(parts) - 1):
                if parts[i:i + 2] == o:
                    loc = "/" + "/".join(parts[:i] + n + parts[i + 2:])
                    return self.send(307, b"", [("Location", loc)])
        if parts[:1] == ["api"] and len(parts) == 6 and parts[4] == "revision":
            return self.revision(parts[1], parts[2] + "/" + parts[3], parts[5])
        if parts[:1] == ["cdn"] and len(parts) == 2:
            return self.cdn(parts[1])
        kind = "models"
        if parts[:1] == ["datasets"]:
            kind, parts = "datasets", parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve(kind, parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]))
        self.send(404, b"not found")

    def revision(self, kind, name, rev):
        hub = self.hub
        with hub.lock:
            fail, hub.fail_api_once = hub.fail_api_once, 0
        if fail:
            return self.send(fail, b"slow down", [("Retry-After", "0")])
        repo = hub.repos.get((kind, name))
        if repo is None or not self.authorized(repo):
            return self.send(401 if repo is not None else 404, b"{}")
        sha = repo.at(rev)
        if sha is None:
            return self.send(404, b"{}")
        body = json.dumps({"id": name, "sha": sha,
                           "siblings": [{"rfilename": f} for f in sorted(repo.files)]}).encode()
        self.send(200, body, [("Content-Type", "application/json")])

    def resolve(self, kind, name, rev, path):
        repo = self.hub.repos.get((kind, name))
        if repo is None or not self.authorized(repo):
            return self.send(401 if repo is not None else 404, b"")
        sha = repo.at(rev)
        if sha is None or path not in repo.files:
            return self.send(404, b"", [("X-Error-Code", "EntryNotFound")])
        data = repo.files[path]
        if path in repo.lfs:
            digest = hashlib.sha256(data).hexdigest()
            base = repo.redirect_base or ""
            loc = "%s/cdn/%s?signature=abc" % (base, digest)
            if path in repo.corrupt:
                loc += "&corrupt=1"
            return self.send(302, b"", [("Location", loc), ("X-Repo-Commit", sha),
                                        ("X-Linked-Etag", '"%s"' % digest),
                                        ("X-Linked-Size", str(len(data))),
                                        ("ETag", '"%s"' % git_blob_id(b"pointer"))])
        if path in repo.corrupt:
            data = bytes([data[0] ^ 1]) + data[1:]
        self.send(200, data, [("X-Repo-Commit", sha), ("ETag", '"%s"' % git_blob_id(repo.files[path]))])

    def cdn(self, digest):
        hub = self.hub
        data = hub.blobs.get(digest)
        if data is None:
            return self.send(404, b"")
        if "corrupt=1" in self.path:
            data = data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0x40]) + data[len(data) // 2 + 1:]
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                return self.send(416, b"", [("Content-Range", "bytes */%d" % len(data))])
        body = data[start:]
        headers = [("ETag", '"%s"' % digest)]
        code = 200
        if rng:
            code = 206
            headers.append(("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data))))
        with hub.lock:
            drop = digest in hub.drop_once and start == 0
            hub.drop_once.discard(digest) if drop else None
        if drop:  # announce the whole body, send a third, hang up
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:len(body) // 3])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.send(code, body, headers)
