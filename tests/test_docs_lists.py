"""The lists the documentation keeps of things in the tree stay whole, so they cannot drift:
every fuzz target (fuzz/fuzz_*.c) has its row in docs/FUZZING.md; every file of src/compare/ has
its row in docs/COMPARE.md's file table; every model preset (src/engine/model_presets.c) is named
in README.md and docs/MODELS.md; and every src/ or tests/ path a document names exists."""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAILS = []


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def main():
    fuzzing = read("docs/FUZZING.md")
    targets = sorted(f[:-2] for f in os.listdir(os.path.join(ROOT, "fuzz"))
                     if f.startswith("fuzz_") and f.endswith(".c"))
    missing = [t for t in targets if not re.search(r"^\| `%s` \|" % re.escape(t), fuzzing, re.M)]
    check(not missing, f"docs/FUZZING.md has a row for each of the {len(targets)} fuzz targets"
          + (f" (missing: {', '.join(missing)})" if missing else ""))

    compare = read("docs/COMPARE.md")
    rows = "\n".join(l for l in compare.splitlines() if l.startswith("| `"))
    files = sorted(f for f in os.listdir(os.path.join(ROOT, "src", "compare"))
                   if f.endswith((".c", ".h")))
    missing = [f for f in files if f"`{f}`" not in rows]
    check(not missing, f"docs/COMPARE.md's file table names each of the {len(files)} files of "
          "src/compare/" + (f" (missing: {', '.join(missing)})" if missing else ""))

    presets = re.findall(r'\{\.name = "([^"]+)"', read("src/engine/model_presets.c"))
    check(len(presets) >= 7, f"{len(presets)} presets found in src/engine/model_presets.c")
    for doc in ("README.md", "docs/MODELS.md"):
        text = read(doc)
        missing = [p for p in presets if f"`{p}`" not in text]
        check(not missing, f"{doc} names each of the {len(presets)} presets"
              + (f" (missing: {', '.join(missing)})" if missing else ""))

    docs = ["README.md"] + sorted(os.path.join("docs", f)
                                  for f in os.listdir(os.path.join(ROOT, "docs"))
                                  if f.endswith(".md"))
    gone = []
    for doc in docs:
        # our own trees only (src/<area>/, include/fidelis/): GGML-QUANTS.md names upstream's
        pattern = r"\b((?:src/[a-z]+/|include/fidelis/|tests/|fuzz/)[\w./-]+\.(?:c|h|py|sh))\b"
        for path in sorted(set(re.findall(pattern, read(doc)))):
            if not os.path.exists(os.path.join(ROOT, path)):
                gone.append(f"{doc}: {path}")
    check(not gone, "every src/, tests/, fuzz/ and include/ file a document names exists"
          + ("".join("\n       " + g for g in gone) if gone else ""))

    print(f"{len(FAILS)} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
