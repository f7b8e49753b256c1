"""Independent Python renditions of Kiln's identities (KILN-ATTRIBUTION.md §2, §6) for the
kiln tests: json and hashlib only, nothing shared with the C code."""
import hashlib
import json
import os
import subprocess

CLI = os.environ.get("FDL_CLI", "")
SHARED = os.environ.get("FDL_SHARED", "")
VECTORS = os.path.join(SHARED, "vectors", "kiln")
SCHEMAS = os.path.join(SHARED, "vectors", "schemas", "kiln")
REQUEST = os.path.join(VECTORS, "rocm-strix-halo-greedy-c1-first-divergence-v1.json")


def canonical_bytes(v):
    return json.dumps(v, allow_nan=False, ensure_ascii=True, separators=(",", ":"),
                      sort_keys=True).encode("ascii")


def canonical_sha256(v):
    return "sha256:" + hashlib.sha256(canonical_bytes(v)).hexdigest()


def self_hash(doc):
    return canonical_sha256({k: v for k, v in doc.items() if k != "result_sha256"})


def reseal(doc):
    doc = dict(doc)
    doc["result_sha256"] = self_hash(doc)
    return doc


def file_sha256(path):
    with open(path, "rb") as f:
        return "sha256:" + hashlib.sha256(f.read()).hexdigest()


def fingerprint(root, model_id):
    """§6 for a flat directory without an index: *.safetensors sorted, template file first."""
    names = sorted(n for n in os.listdir(root) if n.endswith(".safetensors"))
    if "model.safetensors" in names:
        names = ["model.safetensors"]
    tmpl = os.path.join(root, "chat_template.jinja")
    if os.path.exists(tmpl):
        ct = file_sha256(tmpl)
    else:
        with open(os.path.join(root, "tokenizer_config.json"), encoding="utf-8") as f:
            t = json.load(f)["chat_template"]
        ct = "sha256:" + hashlib.sha256(t.encode("utf-8")).hexdigest()
    wf = sorted(({"path": n, "sha256": file_sha256(os.path.join(root, n)),
                  "bytes": os.path.getsize(os.path.join(root, n))} for n in names),
                key=lambda w: w["path"].encode("utf-8"))
    ident = {"id": model_id, "config_hash": file_sha256(os.path.join(root, "config.json")),
             "tokenizer_hash": file_sha256(os.path.join(root, "tokenizer.json")),
             "chat_template_hash": ct, "weight_files": wf}
    ident["content_sha256"] = canonical_sha256(ident)
    return ident


def run(argv):
    p = subprocess.run([CLI] + argv, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def write_json(path, v, indent=2):
    with open(path, "w", encoding="ascii") as f:
        json.dump(v, f, indent=indent, sort_keys=True, ensure_ascii=True)
        f.write("\n")
