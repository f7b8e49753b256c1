"""The one refusal table (issue 25): FDL_REFUSAL_MAP in include/fidelis/refusal.h is every
refusal code fidelis can give, and README.md's "Refusal codes" table is generated from it.
Checks that the README block is exactly the table (run with --write to regenerate it), that
every name is unique and spelt as a code (lowercase, underscores), and that no source file
spells a refusal code as a string where a refusal is made (the codes are an enum since issue
25: a literal would be a code outside the table). The same for validate's finding codes:
FDL_DS_CODES in include/fidelis/dataset.h is every one, docs/DATASET.md's codes table names
exactly those, and no finding is made with a code spelt as a string."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
HEADER = os.path.join(ROOT, "include", "fidelis", "refusal.h")
README = os.path.join(ROOT, "README.md")
DS_HEADER = os.path.join(ROOT, "include", "fidelis", "dataset.h")
DS_DOC = os.path.join(ROOT, "docs", "DATASET.md")
BEGIN, END = "<!-- refusal-codes:begin -->\n", "<!-- refusal-codes:end -->\n"


def entries():
    text = open(HEADER, encoding="utf-8").read()
    m = re.search(r"#define FDL_REFUSAL_MAP\(X\)(.*?)\n\n", text, re.S)
    body = m.group(1).replace("\\\n", " ")
    out = []
    for x in re.finditer(r'X\(\s*([A-Z0-9_]+),\s*"([^"]*)",\s*((?:"[^"]*"\s*)+)\)', body):
        meaning = "".join(re.findall(r'"([^"]*)"', x.group(3)))
        out.append((x.group(1), x.group(2), meaning))
    return out


def block(rows):
    lines = ["| code | meaning |", "|---|---|"]
    lines += ["| `%s` | %s |" % (name, meaning) for _, name, meaning in rows if name]
    return "\n".join(lines) + "\n"


def finding_codes():
    """FDL_DS_CODES against docs/DATASET.md and the finding call sites."""
    text = open(DS_HEADER, encoding="utf-8").read()
    m = re.search(r"#define FDL_DS_CODES\(X\)(.*?)\n\n", text, re.S)
    rows = re.findall(r'X\(([A-Z0-9_]+), "([a-z0-9_]+)"\)', m.group(1) if m else "")
    names = [n for _, n in rows]
    out = []
    if len(rows) < 20:
        out.append("FDL_DS_CODES did not parse (%d entries)" % len(rows))
    if len(set(names)) != len(names):
        out.append("a finding code appears twice in FDL_DS_CODES")
    out += ["finding code %s: name %r is not the lowercase of its id" % (i, n)
            for i, n in rows if n.upper() != i]
    doc = open(DS_DOC, encoding="utf-8").read()
    sec = doc[doc.find("### Codes, rules and where they are tested"):]
    sec = sec[:sec.find("\n#", 1)] if "\n#" in sec[1:] else sec
    documented = set()
    for line in sec.splitlines():
        if line.startswith("| `"):
            documented.update(re.findall(r"`([a-z0-9_]+)`", line.split("|")[1]))
    if documented != set(names):
        out.append("docs/DATASET.md's codes table and FDL_DS_CODES differ: %s" %
                   sorted(documented.symmetric_difference(names)))
    call = re.compile(r"\bfdl_ds_report_(?:error|warn)\)?\(([^;]*?)\);", re.S)
    for d, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            if f.endswith(".c"):
                for c in call.finditer(open(os.path.join(d, f), encoding="utf-8").read()):
                    for lit in re.findall(r'"([a-z_]+)"', c.group(1)):
                        if lit in names:
                            out.append("%s: a finding spells %r as a string" % (f, lit))
    return out


def main():
    rows = entries()
    failures = []
    names = [n for _, n, _ in rows]
    if len(rows) < 30 or rows[0][:2] != ("NONE", ""):
        failures.append("FDL_REFUSAL_MAP did not parse (%d entries)" % len(rows))
    if len(set(names)) != len(names):
        failures.append("a refusal name appears twice")
    for ident, name, _ in rows[1:]:
        if name.upper() != ident or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            failures.append("entry %s: name %r is not the lowercase of its id" % (ident, name))
    readme = open(README, encoding="utf-8").read()
    want = block(rows)
    i, j = readme.find(BEGIN), readme.find(END)
    if "--write" in sys.argv and i >= 0 and j > i:
        readme = readme[:i + len(BEGIN)] + want + readme[j:]
        open(README, "w", encoding="utf-8").write(readme)
    elif i < 0 or j < i:
        failures.append("README.md has no refusal-codes block")
    elif readme[i + len(BEGIN):j] != want:
        failures.append("README.md's refusal-codes block is not the table; run "
                        "tests/test_refusal_table.py --write")
    call = re.compile(r"\b(fdl_cmp_refuse|fdl_pk_refuse|fdl_refuse|fdl_refusev|refuse|refuse_err)"
                      r"\(([^;]*?)\);", re.S)
    for d, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            if not f.endswith(".c"):
                continue
            body = open(os.path.join(d, f), encoding="utf-8").read()
            for m in call.finditer(body):
                for lit in re.findall(r'"([a-z_]+)"', m.group(2)):
                    if lit in names and lit:
                        failures.append("%s: a refusal spells %r as a string" % (f, lit))
            if re.search(r"refusal\.code\s*,\s*sizeof", body):
                failures.append("%s: writes a refusal code as text" % f)
    failures += finding_codes()
    for x in failures:
        print("FAIL:", x)
    if failures:
        return 1
    print("%d refusal codes; README table matches; finding codes match docs/DATASET.md" %
          (len(rows) - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
