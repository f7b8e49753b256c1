"""The layer rules as a test: docs/layers.tsv (area -> allowed dependencies, may use SIMD, may
call the OS, may parse JSON raw, may end the process, exported private headers, owned public
headers) checked against the sources and the built objects.

1. The table: every src/<area>/ has a row and every row a directory; an area depends only on
   areas above it; every public header has one owner (fidelis/fidelis.h, the umbrella, none).
2. Every `#include "..."` in src/ and include/fidelis/: a header of another area only where the
   table lists that area as a dependency (fidelis/fidelis.h, the umbrella, counts as every area
   it includes); another area's private header only where that area exports it; a public
   header's own includes likewise by its owner's dependencies.
3. Intrinsics (immintrin.h, _mm*_ calls, #pragma GCC target, target attributes,
   __builtin_cpu_supports) only in areas with simd = yes.
4. `nm -u` of every object of the library and the CLI (under $FDL_BUILD): allocation and the
   fallible file-system calls only from areas with os = yes (everyone else: base/sys.h);
   jansson's parser only where json = yes (everyone else: the strict reader); getenv, exit and
   abort only where process allows; the CPU-feature probe only where simd = yes.
5. docs/ARCHITECTURE.md's layer table is the one `--write` renders from docs/layers.tsv.
7. Reading a document by key (jansson's readers, json/get.h's getters) only in the files
   docs/keys.tsv lists, each with its role (json, decoder, validator, encoder; a consumer has
   no role: it reads a decoder's struct); every listed file does read by key, and
   docs/ARCHITECTURE.md's list is the one `--write` renders from docs/keys.tsv.
6. The two API tiers: a public header includes public headers only; fidelis/fidelis.h includes
   every public header and lists each in its top comment; FDL_API appears in no file of src/;
   no public header names jansson or json_t (parsed trees are the private tier: json/json.h).

Run `python3 tests/test_layers.py --write` after editing docs/layers.tsv or docs/keys.tsv to
refresh docs/ARCHITECTURE.md. Each violation is printed as one line: file, what, and the rule."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
PUB = os.path.join(ROOT, "include", "fidelis")
TABLE = os.path.join(ROOT, "docs", "layers.tsv")
KEYS = os.path.join(ROOT, "docs", "keys.tsv")
ARCH = os.path.join(ROOT, "docs", "ARCHITECTURE.md")
BEGIN, END = "<!-- layers.tsv: begin -->", "<!-- layers.tsv: end -->"
KBEGIN, KEND = "<!-- keys.tsv: begin -->", "<!-- keys.tsv: end -->"
ROLES = ("json", "decoder", "validator", "encoder")

# The calls base/sys.h wraps (sys.h's door), and their stdio and 64-bit spellings. free, close,
# munmap and the metadata calls (stat, readdir, realpath) release or look; they are not doors.
DOOR = set(
    "malloc calloc realloc reallocarray aligned_alloc posix_memalign memalign valloc strdup "
    "strndup open open64 openat openat64 creat creat64 read pread pread64 readv write pwrite "
    "pwrite64 writev fsync fdatasync syncfs sync_file_range rename renameat renameat2 mkdir "
    "mkdirat unlink unlinkat rmdir link linkat mmap mmap64 fopen fopen64 fdopen freopen fread "
    "fwrite fgets fputs fprintf fflush tmpfile mkstemp mkdtemp".split())
JSON_PARSE = set("json_loads json_loadb json_loadf json_loadfd json_load_file json_load_callback".split())
PROCESS = set("getenv secure_getenv exit _exit _Exit quick_exit abort __assert_fail".split())
KEY_READ = set(
    "json_object_get json_object_getn json_array_get json_string_value json_string_length "
    "json_integer_value json_real_value json_number_value json_object_iter json_object_iter_at "
    "json_object_iter_key json_object_iter_key_len json_object_iter_value json_object_iter_next "
    "json_object_key_to_iter fdl_json_str fdl_json_obj fdl_json_arr fdl_json_int fdl_json_num "
    "fdl_json_bool fdl_json_path fdl_json_path_str fdl_json_path_int fdl_json_path_num "
    "fdl_json_path_copy".split())
CPU_PROBE = set("__cpu_model __cpu_indicator_init __cpu_features2".split())
SIMD_SRC = re.compile(
    r"#\s*include\s*<(?:imm|x86|[a-z]mm)intrin\.h>|\b_mm(?:256|512)?_\w+\s*\(|"
    r"#\s*pragma\s+GCC\s+target|__attribute__\s*\(\(\s*target\s*\(|__builtin_cpu_supports")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

violations = []


def bad(where, what, rule):
    violations.append(f"{where}: {what} ({rule})")


def rel(path):
    return os.path.relpath(path, ROOT)


def load_table():
    rows = []
    with open(TABLE, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
    head = lines[0].split("\t")
    for n, line in enumerate(lines[1:], 2):
        cells = line.split("\t")
        if len(cells) != len(head):
            sys.exit(f"FAIL: docs/layers.tsv row {n}: {len(cells)} columns, expected {len(head)}")
        row = dict(zip(head, cells))
        for k in ("deps", "exports", "public"):
            row[k] = [] if row[k] == "-" else row[k].split(",")
        rows.append(row)
    return rows


def load_keys():
    keys = {}
    with open(KEYS, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
    for n, line in enumerate(lines[1:], 2):
        cells = line.split("\t")
        if len(cells) != 3 or cells[1] not in ROLES:
            sys.exit(f"FAIL: docs/keys.tsv row {n}: expected file, role ({'/'.join(ROLES)}), what")
        keys[cells[0]] = (cells[1], cells[2])
    return keys


def render_keys(keys):
    """The list docs/ARCHITECTURE.md carries: the files of each role."""
    out = ["| role | files (what they read) |", "|---|---|"]
    for role in ROLES:
        files = sorted(f for f in keys if keys[f][0] == role)
        out.append("| %s (%d) | %s |" % (role, len(files), "; ".join(
            "`%s` (%s)" % (f[len("src/"):], keys[f][1]) for f in files) or "-"))
    return "\n".join(out) + "\n"


def replace_block(text, begin, end, body):
    a, b = text.index(begin) + len(begin), text.index(end)
    return text[:a] + "\n" + body + text[b:]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def render(rows):
    """The Markdown table docs/ARCHITECTURE.md carries, top layer first."""
    yn = lambda v: "yes" if v == "yes" else ("abort (FDL_ASSERT)" if v == "assert" else "-")
    out = ["| area | may include | SIMD | OS calls | raw JSON parse | env / exit | "
           "private headers it exports | public headers | what |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in reversed(rows):
        out.append("| `src/%s/` | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["area"], ", ".join(r["deps"]) or "-", yn(r["simd"]), yn(r["os"]), yn(r["json"]),
            yn(r["process"]), ", ".join(r["exports"]) or "-",
            ", ".join("`fidelis/%s`" % h for h in r["public"]) or "-", r["what"]))
    return "\n".join(out) + "\n"


def main():
    rows = load_table()
    keys = load_keys()
    area = {r["area"]: r for r in rows}
    order = [r["area"] for r in rows]

    if "--write" in sys.argv:
        with open(ARCH, encoding="utf-8") as f:
            text = f.read()
        text = replace_block(text, BEGIN, END, render(rows))
        text = replace_block(text, KBEGIN, KEND, render_keys(keys))
        with open(ARCH, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {rel(ARCH)}")
        return 0

    # 1. the table itself
    dirs = sorted(d for d in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, d)))
    for d in dirs:
        if d not in area:
            bad(f"src/{d}/", "no row", "every area is in docs/layers.tsv")
    for a in order:
        if a not in dirs:
            bad("docs/layers.tsv", f"row {a} has no src/{a}/", "every row is an area")
        for d in area[a]["deps"]:
            if d not in area or order.index(d) >= order.index(a):
                bad("docs/layers.tsv", f"{a} depends on {d}, which is not above it",
                    "a layer uses only layers below it")
        for h in area[a]["exports"]:
            if not os.path.isfile(os.path.join(SRC, a, h)):
                bad("docs/layers.tsv", f"{a} exports {h}, which does not exist", "exports")
    owner = {}
    for r in rows:
        for h in r["public"]:
            if h in owner:
                bad("docs/layers.tsv", f"fidelis/{h} owned by {owner[h]} and {r['area']}", "public")
            owner[h] = r["area"]
    pub_files = sorted(f for f in os.listdir(PUB) if f.endswith(".h"))
    for h in pub_files:
        if h not in owner and h != "fidelis.h":
            bad(f"include/fidelis/{h}", "no owner", "every public header has one area")
    for h in owner:
        if h not in pub_files:
            bad("docs/layers.tsv", f"fidelis/{h} does not exist", "public")

    # the areas a public header brings in: its owner and, transitively, what it includes
    pub_inc = {}
    for h in pub_files:
        with open(os.path.join(PUB, h), encoding="utf-8") as f:
            pub_inc[h] = [os.path.basename(i) for i in INCLUDE.findall(f.read())]

    def pub_areas(h, seen=None):
        seen = set() if seen is None else seen
        if h in seen:
            return set()
        seen.add(h)
        got = {owner[h]} if h in owner else set()
        for i in pub_inc.get(h, []):
            got |= pub_areas(i, seen)
        return got

    # the two tiers: a public header includes public headers only (the installed tree compiles
    # alone), the umbrella includes every public header and lists each at its top, and FDL_API
    # (an exported symbol) is written in public headers only
    for h in pub_files:
        with open(os.path.join(PUB, h), encoding="utf-8") as f:
            text = f.read()
        raw = INCLUDE.findall(strip_comments(text))
        for m in sorted(set(re.findall(r"\bjansson\b|\bjson_t\b", text))):
            bad(f"include/fidelis/{h}", m, "jansson stays out of the installed headers (json/json.h)")
        for i in raw:
            if i not in pub_files:
                bad(f"include/fidelis/{h}", f'#include "{i}"',
                    "a public header includes public headers only (the private tier is src/)")
    with open(os.path.join(PUB, "fidelis.h"), encoding="utf-8") as f:
        umbrella = f.read()
    top = umbrella[:umbrella.index("*/")]
    for h in pub_files:
        if h == "fidelis.h":
            continue
        if h not in pub_inc["fidelis.h"]:
            bad("include/fidelis/fidelis.h", f"does not include {h}", "the umbrella includes every public header")
        if not re.search(r"^ \*\s+%s\s" % re.escape(h), top, re.M):
            bad("include/fidelis/fidelis.h", f"its top comment does not list {h}",
                "the umbrella documents every public header")

    for h in pub_files:
        if h in owner:
            a = owner[h]
            for i in pub_inc[h]:
                if i in owner and owner[i] != a and owner[i] not in area[a]["deps"]:
                    bad(f"include/fidelis/{h}", f'#include "{i}" ({owner[i]})',
                        f"{a} may include {', '.join(area[a]['deps']) or 'nothing'}")

    # 2. and 3. every source file's includes, and its intrinsics
    sources = []
    for a in dirs:
        for f in sorted(os.listdir(os.path.join(SRC, a))):
            if f.endswith((".c", ".h")):
                sources.append((a, os.path.join(SRC, a, f)))
    for a, path in sources:
        if a not in area:
            continue
        r = area[a]
        with open(path, encoding="utf-8") as f:
            text = f.read()
        code = strip_comments(text)
        if re.search(r"\bFDL_API\b", code):
            bad(rel(path), "FDL_API", "the private tier (src/) is not exported; public API lives in "
                "include/fidelis/")
        for inc in INCLUDE.findall(code):
            if inc.startswith("fidelis/"):
                h = inc[len("fidelis/"):]
                if h not in pub_files:
                    bad(rel(path), f'#include "{inc}"', "no such public header")
                    continue
                # the owner must be a dependency; the umbrella brings in every area it includes
                need = pub_areas(h) if h == "fidelis.h" else {owner[h]}
                for b in sorted(need - set(r["deps"]) - {a}):
                    bad(rel(path), f'#include "{inc}" ({b})',
                        f"{a} may include {', '.join(r['deps']) or 'nothing'}")
                continue
            parts = inc.split("/")
            if len(parts) != 2 or not os.path.isfile(os.path.join(SRC, inc)):
                if os.path.isfile(os.path.join(os.path.dirname(path), inc)) or len(parts) == 1:
                    continue  # same directory, or generated in the build (fdl_source_digests.h)
                bad(rel(path), f'#include "{inc}"', "no such header in src/")
                continue
            b, h = parts
            if b == a:
                continue
            if b not in r["deps"]:
                bad(rel(path), f'#include "{inc}"',
                    f"{a} may include {', '.join(r['deps']) or 'nothing'}")
            elif h not in area[b]["exports"]:
                bad(rel(path), f'#include "{inc}"',
                    f"{b}/{h} is private to {b} (it exports {', '.join(area[b]['exports']) or 'nothing'})")
        if r["simd"] != "yes":
            m = SIMD_SRC.search(code)
            if m:
                line = code[:m.start()].count("\n") + 1
                bad(f"{rel(path)}:{line}", m.group(0).strip(),
                    f"intrinsics only where simd = yes ({', '.join(x for x in order if area[x]['simd'] == 'yes')})")

    # 4. undefined symbols of every object the build made from a source that exists
    build = os.environ.get("FDL_BUILD") or os.path.join(ROOT, "build")
    objs = []
    for a, path in sources:
        if not path.endswith(".c"):
            continue
        # the scale seam is built as its own object library, one per implementation; mpi.c only
        # in an MPI build (-DFDL_MPI=ON), where FDL_BUILD may name that build
        name = os.path.basename(path)
        target = ("fidelis.dir" if a == "cli" else
                  f"fidelis_scale_{name[:-2]}.dir" if a == "scale" else "fidelis_obj.dir")
        o = os.path.join(build, "CMakeFiles", target, "src", a, name + ".o")
        if a == "scale" and name == "mpi.c" and not os.path.isfile(o):
            continue
        if not os.path.isfile(o):
            bad(rel(path), f"no object at {o}", "build the library and the CLI first")
            continue
        objs.append((a, path, o))
    read_keys = set()
    for a, path, o in objs:
        r = area.get(a)
        if not r:
            continue
        out = subprocess.run(["nm", "-u", o], capture_output=True, text=True, check=True).stdout
        # _FORTIFY_SOURCE's spellings (__read_chk, __open_2) count as the calls they check
        syms = {re.sub(r"^__(\w+?)(?:_chk|_2)$", r"\1", line.split()[-1].split("@")[0])
                for line in out.splitlines() if line.strip()}
        if r["os"] != "yes":
            for s in sorted(syms & DOOR):
                bad(rel(path), f"calls {s}", "allocation and file-system calls through base/sys.h "
                    "(fdl_malloc, fdl_sys_open, ...), where fault injection reaches them")
        if r["json"] != "yes":
            for s in sorted(syms & JSON_PARSE):
                bad(rel(path), f"calls {s}", "JSON is parsed by the strict reader (fdl_json_parse, "
                    "fdl_json_load_file)")
        allowed = PROCESS if r["process"] == "yes" else {"abort"} if r["process"] == "assert" else set()
        for s in sorted((syms & PROCESS) - allowed):
            bad(rel(path), f"calls {s}", "only the CLI reads the environment or ends the process; "
                "the library's one abort is FDL_ASSERT (base/check.c)")
        if syms & KEY_READ:
            read_keys.add(rel(path))
            if rel(path) not in keys:
                bad(rel(path), "reads a document by key (%s)" % ", ".join(sorted(syms & KEY_READ)[:3]),
                    "every key reader has a row in docs/keys.tsv with its role; a "
                    "consumer reads a decoder's struct")
        if r["simd"] != "yes":
            for s in sorted(syms & CPU_PROBE):
                bad(rel(path), f"probes the CPU ({s})", "instruction-set choice lives where simd = yes")
    if len(objs) < 10:
        bad(build, f"only {len(objs)} objects found", "the object check needs the build")
    built = {rel(p) for _, p, _ in objs}
    for f in sorted(keys):
        if f in built and f not in read_keys:
            bad("docs/keys.tsv", f"{f} does not read by key", "only key readers have a row")
        elif not os.path.isfile(os.path.join(ROOT, f)):
            bad("docs/keys.tsv", f"{f} does not exist", "remove its row")

    # 5. ARCHITECTURE.md's table is the rendering of docs/layers.tsv
    with open(ARCH, encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        bad(rel(ARCH), f"no {BEGIN} ... {END} block", "the layer table is rendered from layers.tsv")
    else:
        got = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip("\n") + "\n"
        if got != render(rows):
            bad(rel(ARCH), "its layer table differs from docs/layers.tsv",
                "run python3 tests/test_layers.py --write")
    if KBEGIN not in text or KEND not in text:
        bad(rel(ARCH), f"no {KBEGIN} ... {KEND} block", "the key readers are rendered from keys.tsv")
    elif text[text.index(KBEGIN) + len(KBEGIN):text.index(KEND)].strip("\n") + "\n" != render_keys(keys):
        bad(rel(ARCH), "its list of key readers differs from docs/keys.tsv",
            "run python3 tests/test_layers.py --write")

    checked = f"{len(rows)} areas, {len(sources)} sources, {len(objs)} objects, {len(keys)} key readers"
    if violations:
        print(f"FAIL: {len(violations)} layer rule violation(s) ({checked}):")
        for v in violations:
            print("  " + v)
        return 1
    print(f"layer rules hold ({checked})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
