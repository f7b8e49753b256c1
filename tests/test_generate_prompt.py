"""`fidelis generate --prompt`: text in, encoded by the model's own tokenizer exactly as
`fidelis tokenize` encodes it by default; the prompt and continuation shown as text when the
model has a tokenizer; and the refusals: --prompt beside another input, a model without a
tokenizer, text that is not UTF-8 (the byte offset named), a broken tokenizer (only a note when
no text is needed)."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.environ.get("FDL_TESTS", os.path.dirname(__file__)))
from cli_util import check, finish, need_cli, run  # noqa: E402

need_cli()
tmp = tempfile.mkdtemp(prefix="fdl-genprompt-")
try:
    m = os.path.join(tmp, "m")
    rc, out = run("model", "init", "--preset", "qwen3.5-tiny-random", "--seed", "0", m)
    check(rc == 0, "model init (%d): %s" % (rc, out[-300:]))
    text = "Once upon a time, <|endoftext|> a fox."

    rc, out = run("tokenize", "--tokenizer", m, "--string", text, "--json")
    want = json.loads(out)["ids"] if rc == 0 else None
    check(rc == 0 and want, "tokenize gives the ids to expect")

    ids_out, toks_out = os.path.join(tmp, "ids.json"), os.path.join(tmp, "t.json")
    rc, out = run("generate", "--model", m, "--prompt", text, "--new", "4", "--tokens-out",
                  toks_out, "--ids-out", ids_out)
    check(rc == 0, "generate --prompt TEXT exits 0 (%d): %s" % (rc, out[-300:]))
    got = json.load(open(ids_out)) if os.path.exists(ids_out) else None
    check(got == want, "--prompt's ids are tokenize's ids (BOS/EOS and special tokens as "
          "tokenize's default): %s vs %s" % (got, want))
    check("\n  prompt       Once upon a time, <|endoftext|> a fox.\n" in out, "the prompt is shown as text")
    cont = json.load(open(toks_out)) if os.path.exists(toks_out) else []
    shown = [ln for ln in out.splitlines() if ln.strip().startswith("continuation")]
    check(len(cont) == 4 and len(shown) == 1, "the continuation is shown on one line")

    # @FILE: the file's bytes as is, the same ids as the same text given inline.
    f = os.path.join(tmp, "prompt.txt")
    with open(f, "wb") as fh:
        fh.write(text.encode())
    ids2 = os.path.join(tmp, "ids2.json")
    rc, out = run("generate", "--model", m, "--prompt", "@" + f, "--ids-out", ids2)
    check(rc == 0 and json.load(open(ids2)) == want, "--prompt @FILE reads the file's bytes")

    # Refusals, before any output.
    for other in (["--ids", "[1]"], ["--request", f], ["--panel", f]):
        rc, out = run("generate", "--model", m, "--prompt", "x", *other, "--ids-out",
                      os.path.join(tmp, "never.json"))
        check(rc == 4 and "cannot be used together" in out,
              "--prompt with %s is bad usage (%d)" % (other[0], rc))
    bad = os.path.join(tmp, "bad.txt")
    with open(bad, "wb") as fh:
        fh.write(b"abc\xff def")
    rc, out = run("generate", "--model", m, "--prompt", "@" + bad, "--ids-out",
                  os.path.join(tmp, "never.json"))
    check(rc == 3 and "byte offset 3" in out, "text that is not UTF-8 is refused at byte 3 "
          "(%d): %s" % (rc, out.strip()[-200:]))
    nt = os.path.join(tmp, "notok")
    shutil.copytree(m, nt)
    os.remove(os.path.join(nt, "tokenizer.json"))
    rc, out = run("generate", "--model", nt, "--prompt", "hi", "--ids-out",
                  os.path.join(tmp, "never.json"))
    check(rc == 3 and "no tokenizer.json" in out, "--prompt without a tokenizer is refused")
    rc, out = run("generate", "--model", nt, "--ids", "[1, 2]", "--ids-out",
                  os.path.join(tmp, "plain.json"))
    check(rc == 0 and "\n  prompt " not in out, "--ids on a model without a tokenizer shows no text")
    with open(os.path.join(nt, "tokenizer.json"), "w") as fh:
        fh.write("{")
    rc, out = run("generate", "--model", nt, "--ids", "[1, 2]", "--ids-out",
                  os.path.join(tmp, "plain2.json"))
    check(rc == 0 and "note: no text is shown" in out,
          "a broken tokenizer only costs the text when --ids is given (%d)" % rc)
    rc, out = run("generate", "--model", nt, "--prompt", "hi", "--ids-out",
                  os.path.join(tmp, "never.json"))
    check(rc == 3, "a broken tokenizer refuses --prompt (%d)" % rc)
    check(not os.path.exists(os.path.join(tmp, "never.json")), "no refusal wrote an output")
finally:
    shutil.rmtree(tmp)
finish()
