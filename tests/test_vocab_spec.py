"""The dataset format's enumerations in include/fidelis/vocab.h (issue 25: one vocabulary per
enumeration) against the spec's own words in ../shared/spec/FIDELITY-DATASET.md: the lane
registry (9.1), the evidence kinds (10.2), the roles, and that the content-level kinds are the
first four evidence kinds (DET-D1). The header is the one place each list is written; this test
is what keeps it the spec's. Exits 77 when ../shared is absent (CI fails on that skip)."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(HERE, "..", "include", "fidelis", "vocab.h")
SPEC = os.path.join(HERE, "..", "..", "shared", "spec", "FIDELITY-DATASET.md")


def table(text, name):
    """The names of X-macro list NAME, expanding the lists it includes."""
    m = re.search(r"#define %s\(X\)(.*?)(?=\n#|\n/\*|\Z)" % name, text, re.S)
    if not m:
        raise SystemExit("vocab.h has no list %s" % name)
    body = m.group(1)
    names = []
    for inc in re.findall(r"(FDL_[A-Z_]+)\(X\)", body):
        names += table(text, inc)
    return names + re.findall(r'X\([A-Z0-9_]+, "([^"]+)"\)', body)


def spec_set(spec, key):
    m = re.search(r"`%s ∈ \{([^}]*)\}" % re.escape(key), spec)
    if not m:
        raise SystemExit("spec has no enumeration for %s" % key)
    return [w.strip() for w in m.group(1).replace("\n", " ").split(",")]


def main():
    if not os.path.exists(SPEC):
        print("skipped: %s not found (../shared absent)" % SPEC)
        return 77
    text = open(HEADER, encoding="utf-8").read()
    spec = open(SPEC, encoding="utf-8").read()
    failures = []
    for lst, key in (("FDL_LANES", "lane"), ("FDL_EVIDENCE", "evidence_kind"),
                     ("FDL_ROLES", "dataset.role")):
        got, want = table(text, lst), spec_set(spec, key)
        if got != want:
            failures.append("%s is %s, the spec says %s" % (lst, got, want))
    content = table(text, "FDL_CONTENT_EVIDENCE")
    if content != table(text, "FDL_EVIDENCE")[:4] or len(content) != 4:
        failures.append("FDL_CONTENT_EVIDENCE is not the four content-level kinds: %s" % content)
    # Every list is written once: no other source file spells a lane or a content kind list.
    src = os.path.join(HERE, "..", "src")
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            body = open(os.path.join(root, f), encoding="utf-8").read()
            if '"local-cuda-budget"' in body or re.search(r'"embed_tokens",\s*"attn\.qkv"', body):
                failures.append("%s spells a vocabulary list of vocab.h again" % f)
    for x in failures:
        print("FAIL:", x)
    if failures:
        return 1
    print("vocab.h agrees with the spec (%d lists checked)" % 4)
    return 0


if __name__ == "__main__":
    sys.exit(main())
