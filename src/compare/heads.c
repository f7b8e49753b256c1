/* heads.c - head resolution at compute time (section 5.4, last part): find the payload the
 * head gate chose and copy it, as stored (BF16, F16 or F32), into the [vocab x hidden] matrix
 * the replay's GEMM reads, proving in the same read (vread.c) that its content digest is the
 * one the gate resolved and, for a dataset's own payload, that its file digest is the
 * manifest's. Identical digests share one copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num/gemm_run.h"
#include "fidelis/pool.h"
#include "base/quote.h"
#include "compare/cmp.h"
#include "base/sys.h"

/* Keys tried in order: the side's declared tensor_key, then the two conventional names. */
static const fdl_tensor *find_key(const fdl_safetensors *st, const char *declared) {
  const char *keys[3] = {declared, "lm_head.weight", "weight"};
  for (int i = 0; i < 3; i++) {
    if (fdl_cmp_empty(keys[i])) continue;
    const fdl_tensor *t = fdl_safetensors_find(st, keys[i]);
    if (t) return t;
  }
  return NULL;
}

/* owner: the side whose dataset ships the payload (its file digest is checked too), or NULL for
 * a payload named with --head. */
static fdl_status load_one(const char *path, const cmp_side *owner, const char *key,
                           const char *want_digest, size_t vocab, size_t hidden, void **out,
                           fdl_gemm_type *type, fdl_refusal *r, fdl_err *err) {
  fdl_safetensors *st = NULL;
  if (fdl_safetensors_open(path, &st, err) != FDL_OK)
    return fdl_cmp_refuse(r, err, FDL_REF_BAD_TENSOR_FILE, FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_DATA,
                          "head payload %s: %s", path, fdl_err_msg(err));
  fdl_status s = FDL_OK;
  char q[FDL_QUOTE_CAP];
  const fdl_tensor *t = find_key(st, key);
  if (!t) {
    s = fdl_cmp_refuse(r, err, FDL_REF_HEAD_MISSING, FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_DATA,
                       "head payload %s has none of the keys %s%slm_head.weight, weight", path,
                       fdl_cmp_empty(key) ? "" : key, fdl_cmp_empty(key) ? "" : ", ");
    goto done;
  }
  if (!fdl_tensor_widenable(t->dtype)) {
    s = fdl_cmp_refuse(r, err, FDL_REF_BAD_TENSOR_FILE, FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_DATA,
                       "head payload %s tensor %s has dtype %s; BF16, F16 or F32 expected", path,
                       fdl_quote_str(t->name, q, sizeof q), fdl_dtype_name(t->dtype));
    goto done;
  }
  if (t->ndim != 2 || (uint64_t)t->shape[0] != vocab || (uint64_t)t->shape[1] != hidden) {
    s = fdl_cmp_refuse(r, err, FDL_REF_GEOMETRY_MISMATCH, FDL_GATE_COMPUTE,
                       "none: the head must be [vocab_size, hidden_width] of the capture",
                       "head payload %s tensor %s has shape [%lld, %lld], expected [%zu, %zu]",
                       path, fdl_quote_str(t->name, q, sizeof q),
                       t->ndim > 0 ? (long long)t->shape[0] : -1LL,
                       t->ndim > 1 ? (long long)t->shape[1] : -1LL, vocab, hidden);
    goto done;
  }
  size_t es = fdl_dtype_size(t->dtype);
  void *w = fdl_huge_alloc(vocab * hidden * es);
  if (!w) {
    s = fdl_fail(err, FDL_NOMEM, "out of memory for a %zu x %zu head", vocab, hidden);
    goto done;
  }
  cmp_vread v;
  cmp_vread_digests d;
  if ((s = fdl_cmp_vread_begin(&v, st, t, err)) == FDL_OK) {
    s = fdl_cmp_vread_raw(&v, 0, vocab * hidden, w, err);
    if (s == FDL_OK) s = fdl_cmp_vread_end(&v, &d, err);
    fdl_cmp_vread_free(&v);
  }
  /* A dataset's own payload that differs from its manifest is damage (seal_failed); a payload
   * that is intact but not the head the gate chose is a head mismatch. */
  if (s == FDL_OK && owner) s = fdl_cmp_check_head(owner, &d, r, err);
  if (s == FDL_OK && strcmp(d.content, want_digest))
    s = fdl_cmp_refuse(r, err, FDL_REF_HEAD_MISMATCH, FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_DATA,
                       "head payload %s tensor %s has content digest %s, but the head gate "
                       "resolved %s",
                       path, fdl_quote_str(t->name, q, sizeof q), d.content, want_digest);
  if (s != FDL_OK) {
    free(w);
    goto done;
  }
  *out = w;
  *type = fdl_gemm_type_of(t->dtype);
done:
  fdl_safetensors_close(st);
  return s;
}

static fdl_status own_payload(const cmp_side *s, size_t vocab, void **out, fdl_gemm_type *type,
                              fdl_refusal *r, fdl_err *err) {
  char *path = fdl_cmp_path_join(s->root, s->m->head.file ? s->m->head.file : "", NULL);
  if (!path) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_status st =
      load_one(path, s, s->m->head.tensor_key, fdl_cmp_str0(s->m->head.tensor_content_sha256),
               vocab, (size_t)s->m->capture.hidden_width, out, type, r, err);
  free(path);
  return st;
}

/* Both sides' own payloads, read (and hashed, and copied) on two threads: the heads are the
 * bulk of a hidden pair's input, and one thread reading both left the other core idle for most
 * of a compare (issue 24). Each task keeps its own refusal; the reference's wins, as a serial
 * read would have reported it first. */
typedef struct {
  const cmp_side *side[2];
  size_t vocab;
  void *w[2];
  fdl_gemm_type type[2];
  fdl_refusal r[2];
  fdl_err e[2];
  fdl_status s[2];
} own_job;

static fdl_status own_task(void *arg, size_t i, unsigned worker, fdl_err *err) {
  (void)worker, (void)err;
  own_job *j = arg;
  j->s[i] = own_payload(j->side[i], j->vocab, &j->w[i], &j->type[i], &j->r[i], &j->e[i]);
  return FDL_OK;
}

static fdl_status own_pair(const cmp_side *a, const cmp_side *b, unsigned threads, cmp_heads *h,
                           fdl_refusal *r, fdl_err *err) {
  own_job j = {{a, b},   h->vocab,     {NULL, NULL},    {FDL_GEMM_F32, FDL_GEMM_F32},
               {*r, *r}, {*err, *err}, {FDL_OK, FDL_OK}};
  fdl_pool pool;
  fdl_status s = fdl_pool_init(&pool, threads == 1 ? 1 : 2, err);
  if (s == FDL_OK) s = fdl_pool_run(&pool, 2, own_task, &j, err);
  fdl_pool_free(&pool);
  for (int i = 0; s == FDL_OK && i < 2; i++)
    if (j.s[i] != FDL_OK) {
      *r = j.r[i];
      *err = j.e[i];
      s = j.s[i];
    }
  if (s != FDL_OK) {
    free(j.w[0]);
    free(j.w[1]);
    return s;
  }
  h->ref = j.w[0], h->ref_type = j.type[0];
  h->cand = j.w[1], h->cand_type = j.type[1];
  h->read[0] = h->read[1] = true;
  return FDL_OK;
}

fdl_status fdl_cmp_heads_load(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                              cmp_findings *f, cmp_heads *h, fdl_refusal *r, fdl_err *err) {
  memset(h, 0, sizeof *h);
  if (!a->hidden && !b->hidden) return FDL_OK;
  if (o->head_path && o->own_heads)
    return fdl_cmp_refuse(r, err, FDL_REF_HEAD_MISMATCH, FDL_GATE_COMPUTE,
                          "use either --head or --own-heads",
                          "--head replaces the head of both sides, --own-heads keeps each side's "
                          "own; they cannot be combined");
  size_t vocab = (size_t)a->m->capture.vocab_size;
  h->vocab = vocab;
  h->hidden_ref = a->hidden ? (size_t)a->m->capture.hidden_width : 0;
  h->hidden_cand = b->hidden ? (size_t)b->m->capture.hidden_width : 0;
  fdl_status s;
  if (f->own_heads) {
    if (a->hidden && b->hidden &&
        !fdl_cmp_streq(a->m->head.tensor_content_sha256, b->m->head.tensor_content_sha256))
      return own_pair(a, b, o->threads, h, r, err);
    if (a->hidden && (s = own_payload(a, vocab, &h->ref, &h->ref_type, r, err)) != FDL_OK) return s;
    h->read[0] = a->hidden;
    if (b->hidden) {
      if (a->hidden &&
          fdl_cmp_streq(a->m->head.tensor_content_sha256, b->m->head.tensor_content_sha256)) {
        h->cand = h->ref; /* the candidate's own file is still verified, with the unread ones */
        h->cand_type = h->ref_type;
      } else if ((s = own_payload(b, vocab, &h->cand, &h->cand_type, r, err)) != FDL_OK)
        return s;
      else
        h->read[1] = true;
    }
    return FDL_OK;
  }
  const char *applied = f->applied_head;
  char *path = NULL;
  const cmp_side *owner = NULL;
  if (o->head_path) {
    /* --head is a file the user named: it may be a link (a Hugging Face cache snapshot),
     * resolved once; the target is opened without following further. */
    if ((s = fdl_resolve_named(o->head_path, &path, err)) != FDL_OK)
      return s == FDL_NOMEM ? s
                            : fdl_cmp_refuse(r, err, FDL_REF_BAD_TENSOR_FILE, FDL_GATE_COMPUTE,
                                             CMP_NO_OVERRIDE_DATA, "--head %s", fdl_err_msg(err));
  } else {
    const cmp_side *sides[2] = {a, b};
    for (int i = 0; i < 2 && !path; i++)
      if (sides[i]->head_payload &&
          fdl_cmp_streq(sides[i]->m->head.tensor_content_sha256, applied)) {
        path = fdl_cmp_path_join(sides[i]->root, sides[i]->m->head.file, NULL);
        owner = sides[i];
        h->read[i] = true;
      }
    if (!path)
      return fdl_cmp_refuse(r, err, FDL_REF_HEAD_MISSING, FDL_GATE_COMPUTE,
                            "--head PATH naming a payload whose content digest is the applied head",
                            "no head payload with content digest %s is available: neither dataset "
                            "ships it",
                            applied);
  }
  if (!path) return fdl_fail(err, FDL_NOMEM, "out of memory");
  size_t hidden =
      a->hidden ? (size_t)a->m->capture.hidden_width : (size_t)b->m->capture.hidden_width;
  void *w = NULL;
  fdl_gemm_type type = FDL_GEMM_F32;
  s = load_one(path, owner, owner ? owner->m->head.tensor_key : a->m->head.tensor_key, applied,
               vocab, hidden, &w, &type, r, err);
  free(path);
  if (s != FDL_OK) return s;
  h->ref_type = h->cand_type = type;
  if (a->hidden) h->ref = w;
  if (b->hidden) h->cand = w;
  return FDL_OK;
}

/* Releases the matrices; the read flags stay for the verification of the unread files. */
void fdl_cmp_heads_free(cmp_heads *h) {
  if (!h) return;
  if (h->cand != h->ref) free(h->cand);
  free(h->ref);
  h->ref = h->cand = NULL;
}
