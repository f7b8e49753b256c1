/* estimate.c - the full computation (section 6.2): records in ascending shared index are cut
 * into blocks of FDL_NUM_TILE_ROWS rows anchored at the record's first row (a block never spans
 * two records and starts at a multiple of the tile, so a row's numbers depend on neither its
 * neighbours nor the batch size), gathered into a bounded window, widened to float32 and handed
 * to fdl_num_run. Memory is the window (at most FDL_COMPARE_WINDOW_BYTES of input rows), the
 * num core's per-thread tiles and the heads; only the per-row KL (and JS) of the whole panel is
 * kept, because it is the output.
 *
 * Divisions: layout and the hash proof; opening records; the window; the run. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/check.h"
#include "base/quote.h"
#include "fidelis/pool.h"
#include "compare/cmp.h"
#include "base/sys.h"
#include "fidelis/scale.h"

/* ---- layout and the hash proof ---------------------------------------------------------- */

fdl_status fdl_cmp_estimate_layout(const cmp_side *a, const cmp_findings *f, cmp_estimate *e,
                                   fdl_err *err) {
  memset(e, 0, sizeof *e);
  e->ctx_off = fdl_malloc((f->n_shared + 1) * sizeof *e->ctx_off);
  if (!e->ctx_off) return fdl_fail(err, FDL_NOMEM, "out of memory");
  size_t n = 0;
  for (size_t c = 0; c < f->n_shared; c++) {
    e->ctx_off[c] = n;
    int64_t rows = a->ds.records[f->ref_at[c]].scored_rows;
    size_t t;
    if (rows < 0 || !fdl_size_add(n, (size_t)rows, &t) || !fdl_size_mul(t, 16, &t))
      return fdl_fail(err, FDL_INVALID, "record %lld: scored_rows %lld is out of range",
                      (long long)f->shared[c], (long long)rows);
    n += (size_t)rows;
  }
  e->ctx_off[f->n_shared] = n;
  e->n_rows = n;
  return FDL_OK;
}

fdl_status fdl_cmp_estimate_zero(cmp_estimate *e, fdl_err *err) {
  /* calloc gives all-zero bytes: +0.0, never -0.0. */
  e->kl = fdl_calloc(e->n_rows ? e->n_rows : 1, sizeof *e->kl);
  if (!e->kl) return fdl_fail(err, FDL_NOMEM, "out of memory for %zu KL values", e->n_rows);
  e->top1_matches = e->n_rows;
  e->computed = false;
  return FDL_OK;
}

void fdl_cmp_estimate_free(cmp_estimate *e) {
  if (!e) return;
  free(e->read[0]);
  free(e->read[1]);
  free(e->ctx_off);
  free(e->kl);
  free(e->js);
  free(e->target);
  free(e->lp_ref);
  free(e->lp_cand);
  free(e->top1);
  free(e->abs_row_sum);
  free(e->abs_row_max);
  memset(e, 0, sizeof *e);
}

/* ---- opening records -------------------------------------------------------------------- */

typedef struct {
  size_t ctx;
  fdl_safetensors *st[2];
  const fdl_tensor *t[2];
  cmp_vread vr[2];         /* the one read of each side's file: digests and rows */
  bool reading[2];         /* vr[i] holds digest state to free */
  cmp_vread_digests dg[2]; /* set once the side's file has been read to the end */
  bool ended[2];
} rec_open;

typedef struct {
  const cmp_side *side[2];
  const cmp_findings *f;
  size_t width[2]; /* floats per row of each side */
  bool hidden[2];
} plan;

/* Position of context c's record in side i's records. */
static size_t record_at(const plan *p, int i, size_t c) {
  return i == 0 ? p->f->ref_at[c] : p->f->cand_at[c];
}

static fdl_status open_side(const plan *p, int i, size_t ctx, rec_open *ro, fdl_refusal *r,
                            fdl_err *err) {
  const cmp_side *s = p->side[i];
  const fdl_ds_capture_record *rec = &s->ds.records[record_at(p, i, ctx)];
  long long idx = (long long)rec->index;
  char *path = fdl_cmp_path_join(s->root, s->capture_dir, rec->file ? rec->file : "");
  if (!path) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_status st = fdl_safetensors_open(path, &ro->st[i], err);
  if (st != FDL_OK) {
    fdl_cmp_refuse(r, err, FDL_REF_BAD_TENSOR_FILE, FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_DATA,
                   "%s record %lld (%s): %s", s->who, idx, path, fdl_err_msg(err));
    free(path);
    return FDL_REFUSED;
  }
  const fdl_tensor *t = fdl_safetensors_find(ro->st[i], rec->key ? rec->key : "");
  char q[FDL_QUOTE_CAP];
  if (!t)
    st = fdl_cmp_refuse(r, err, FDL_REF_BAD_TENSOR_FILE, FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_DATA,
                        "%s record %lld (%s): tensor key %s is absent", s->who, idx, path,
                        fdl_quote_str(rec->key ? rec->key : "", q, sizeof q));
  else if (!fdl_tensor_widenable(t->dtype))
    st = fdl_cmp_refuse(r, err, FDL_REF_BAD_TENSOR_FILE, FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_DATA,
                        "%s record %lld (%s): dtype %s is not read by the float32 estimator "
                        "(BF16, F16 or F32 expected)",
                        s->who, idx, path, fdl_dtype_name(t->dtype));
  else if (t->ndim != 2 || t->shape[0] != rec->scored_rows || (uint64_t)t->shape[1] != p->width[i])
    st = fdl_cmp_refuse(r, err, FDL_REF_GEOMETRY_MISMATCH, FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_DATA,
                        "%s record %lld (%s): tensor shape [%lld, %lld], expected [%lld, %zu] "
                        "(scored_rows, %s)",
                        s->who, idx, path, t->ndim > 0 ? (long long)t->shape[0] : -1LL,
                        t->ndim > 1 ? (long long)t->shape[1] : -1LL, (long long)rec->scored_rows,
                        p->width[i], p->hidden[i] ? "hidden_width" : "vocab_size");
  free(path);
  ro->t[i] = t;
  if (st == FDL_OK && (st = fdl_cmp_vread_begin(&ro->vr[i], ro->st[i], t, err)) == FDL_OK)
    ro->reading[i] = true;
  return st;
}

static void close_open(rec_open *ro) {
  for (int i = 0; i < 2; i++) {
    if (ro->reading[i]) fdl_cmp_vread_free(&ro->vr[i]);
    fdl_safetensors_close(ro->st[i]);
  }
  memset(ro, 0, sizeof *ro);
}

/* Checks the digests of every side whose file has been read to the end (main thread). */
static fdl_status check_ended(const plan *p, rec_open *ro, bool *const read[2], fdl_refusal *r,
                              fdl_err *err) {
  for (int i = 0; i < 2; i++) {
    if (!ro->ended[i]) continue;
    size_t at = record_at(p, i, ro->ctx);
    fdl_status s = fdl_cmp_check_record(p->side[i], at, &ro->dg[i], r, err);
    if (s != FDL_OK) return s;
    read[i][at] = true;
    ro->ended[i] = false;
  }
  return FDL_OK;
}

/* ---- the window ------------------------------------------------------------------------- */

typedef struct {
  size_t open; /* index into the window's opens */
  size_t row0; /* first row inside its record */
  size_t rows;
  size_t buf_row; /* first row inside the window buffers */
  bool last;      /* the record's last block: its files are read to the end after it */
} blk;

typedef struct {
  plan p;
  size_t cap_rows, cap_blocks;
  float *buf[2];
  blk *blocks;
  fdl_num_block *nblk;
  size_t nblocks, rows_used;
  rec_open *opens;
  size_t nopens;
  size_t first_slot; /* slot of the window's first row (in the rank's rows, see n_local) */
} window;

/* Task s reads side s: every block of the window in order, each file's bytes copied once and
 * fed to its digests and to the widening (vread.c). A side is one task because a file's
 * digests are sequential; the two sides read in parallel. */
static fdl_status read_task(void *arg, size_t s, unsigned worker, fdl_err *err) {
  (void)worker;
  window *w = arg;
  fdl_status st = FDL_OK;
  for (size_t bi = 0; st == FDL_OK && bi < w->nblocks; bi++) {
    const blk *b = &w->blocks[bi];
    rec_open *ro = &w->opens[b->open];
    st = fdl_cmp_vread_rows(&ro->vr[s], b->row0 * w->p.width[s], b->rows * w->p.width[s],
                            w->buf[s] + b->buf_row * w->p.width[s], err);
    if (st == FDL_OK && b->last && (st = fdl_cmp_vread_end(&ro->vr[s], &ro->dg[s], err)) == FDL_OK)
      ro->ended[s] = true;
  }
  return st;
}

static void window_free(window *w) {
  for (size_t i = 0; i < w->nopens; i++) close_open(&w->opens[i]);
  free(w->buf[0]);
  free(w->buf[1]);
  free(w->blocks);
  free(w->nblk);
  free(w->opens);
}

/* The window holds two batches per thread, in whole tiles, within FDL_COMPARE_WINDOW_BYTES. */
static fdl_status window_init(window *w, const plan *p, size_t batch, unsigned threads,
                              fdl_err *err) {
  memset(w, 0, sizeof *w);
  w->p = *p;
  const size_t pb = FDL_NUM_TILE_ROWS;
  size_t row_bytes = (p->width[0] + p->width[1]) * sizeof(float);
  size_t by_threads = (size_t)threads * ((batch + pb - 1) / pb * pb) * 2;
  size_t by_memory = FDL_COMPARE_WINDOW_BYTES / row_bytes / pb * pb;
  size_t cap = by_threads < by_memory ? by_threads : by_memory;
  if (cap < pb) cap = pb;
  w->cap_rows = cap;
  w->cap_blocks = cap; /* every block has at least one row */
  for (int s = 0; s < 2; s++) w->buf[s] = fdl_huge_alloc(cap * p->width[s] * sizeof(float));
  w->blocks = fdl_malloc(w->cap_blocks * sizeof *w->blocks);
  w->nblk = fdl_malloc(w->cap_blocks * sizeof *w->nblk);
  w->opens = fdl_calloc(w->cap_blocks + 1, sizeof *w->opens);
  if (!w->buf[0] || !w->buf[1] || !w->blocks || !w->nblk || !w->opens) {
    window_free(w);
    return fdl_fail(err, FDL_NOMEM, "out of memory for an estimator window of %zu rows", cap);
  }
  return FDL_OK;
}

/* ---- the run ---------------------------------------------------------------------------- */

typedef struct {
  const fdl_compare_opts *o;
  const cmp_heads *h;
  fdl_num_ctx *ctx;
  fdl_pool pool;
  cmp_estimate *e;
  uint64_t done;
} runner;

static void describe_block(const window *w, size_t bi, fdl_num_block *nb) {
  const blk *b = &w->blocks[bi];
  nb->rows = b->rows;
  fdl_num_side *sd[2] = {&nb->ref, &nb->cand};
  for (int s = 0; s < 2; s++) {
    sd[s]->data = w->buf[s] + b->buf_row * w->p.width[s];
    sd[s]->ld = w->p.width[s];
    sd[s]->form = w->p.hidden[s] ? FDL_NUM_HIDDEN : FDL_NUM_LOGITS;
    sd[s]->hidden = w->p.hidden[s] ? w->p.width[s] : 0;
    sd[s]->head = NULL;
  }
}

/* Re-runs the failing window one block, then one row, at a time to name the exact record and
 * row (only on the failure path). */
static fdl_status locate_nonfinite(runner *rn, window *w, fdl_refusal *r, fdl_err *err) {
  double kl, js;
  fdl_num_out out = {.kl = &kl, .js = fdl_num_ctx_opts(rn->ctx)->js ? &js : NULL};
  for (size_t bi = 0; bi < w->nblocks; bi++) {
    const blk *b = &w->blocks[bi];
    for (size_t row = 0; row < b->rows; row++) {
      fdl_num_block one = w->nblk[bi];
      one.rows = 1;
      one.ref.data += row * one.ref.ld;
      one.cand.data += row * one.cand.ld;
      one.target = NULL;
      fdl_err e = {FDL_OK, ""};
      if (fdl_num_run(rn->ctx, &one, 1, &out, &e) != FDL_NONFINITE) continue;
      size_t ctx = w->opens[b->open].ctx;
      const cmp_side *s = w->p.side[0];
      const fdl_ds_capture_record *rec = &s->ds.records[w->p.f->ref_at[ctx]];
      return fdl_cmp_refuse(r, err, FDL_REF_NON_FINITE, FDL_GATE_COMPUTE,
                            "none: a non-finite value is never clamped or skipped; fix the capture",
                            "record %lld (window_id %s), row %zu of %lld: %s",
                            (long long)rec->index, rec->window_id ? rec->window_id : "None",
                            b->row0 + row, (long long)rec->scored_rows, e.msg);
    }
  }
  return fdl_cmp_refuse(r, err, FDL_REF_NON_FINITE, FDL_GATE_COMPUTE,
                        "none: a non-finite value is never clamped or skipped; fix the capture",
                        "rows %zu..%zu: %s", w->first_slot, w->first_slot + w->rows_used - 1,
                        fdl_err_msg(err));
}

static fdl_status flush(runner *rn, window *w, fdl_refusal *r, fdl_err *err) {
  if (!w->nblocks) return FDL_OK;
  fdl_status s = fdl_pool_run(&rn->pool, 2, read_task, w, err);
  if (s != FDL_OK) return s;
  /* A file read to the end is checked before any number computed from it is kept. */
  for (size_t i = 0; i < w->nopens; i++)
    if ((s = check_ended(&w->p, &w->opens[i], rn->e->read, r, err)) != FDL_OK) return s;
  for (size_t bi = 0; bi < w->nblocks; bi++) {
    describe_block(w, bi, &w->nblk[bi]);
    w->nblk[bi].ref.head = w->p.hidden[0] ? rn->h->ref : NULL;
    w->nblk[bi].cand.head = w->p.hidden[1] ? rn->h->cand : NULL;
    w->nblk[bi].ref.head_type = rn->h->ref_type;
    w->nblk[bi].cand.head_type = rn->h->cand_type;
    w->nblk[bi].target = rn->e->target + w->first_slot + w->blocks[bi].buf_row;
  }
  cmp_estimate *e = rn->e;
  fdl_num_out out = {.kl = e->kl + w->first_slot,
                     .top1 = e->top1 + w->first_slot,
                     .ref_logprob = e->lp_ref + w->first_slot,
                     .cand_logprob = e->lp_cand + w->first_slot,
                     .abs_err_sum = e->abs_row_sum + w->first_slot,
                     .abs_err_max = e->abs_row_max + w->first_slot,
                     .js = e->js ? e->js + w->first_slot : NULL};
  s = fdl_num_run(rn->ctx, w->nblk, w->nblocks, &out, err);
  if (s == FDL_NONFINITE) return locate_nonfinite(rn, w, r, err);
  if (s != FDL_OK)
    return fdl_cmp_refuse(r, err, s == FDL_NOMEM ? FDL_REF_OUT_OF_MEMORY : FDL_REF_ESTIMATOR_FAILED,
                          FDL_GATE_COMPUTE, CMP_REMEDY_RESOURCES, "estimator: %s",
                          fdl_err_msg(err));
  rn->done += w->rows_used;
  w->first_slot += w->rows_used;
  w->nblocks = 0;
  w->rows_used = 0;
  /* With several ranks, rank 0 tells its own share scaled to the whole panel: the ranks' shares
   * are alike (whole records dealt in turn), so the estimate and its ETA hold. */
  if (rn->o->progress && e->n_local)
    rn->o->progress(rn->o->progress_arg,
                    e->n_local == e->n_rows
                        ? rn->done
                        : (uint64_t)((double)rn->done / (double)e->n_local * (double)e->n_rows),
                    e->n_rows);
  return FDL_OK;
}

/* Closes every open record but the one at index keep (moved to slot 0), or all when keep is
 * SIZE_MAX. */
static void recycle_opens(window *w, size_t keep) {
  for (size_t i = 0; i < w->nopens; i++)
    if (i != keep) close_open(&w->opens[i]);
  if (keep != SIZE_MAX && keep < w->nopens) {
    if (keep) {
      w->opens[0] = w->opens[keep];
      memset(&w->opens[keep], 0, sizeof w->opens[keep]);
    }
    w->nopens = 1;
  } else {
    w->nopens = 0;
  }
}

static fdl_status run_all(runner *rn, window *w, const plan *p, fdl_refusal *r, fdl_err *err) {
  const size_t pb = FDL_NUM_TILE_ROWS;
  fdl_status s;
  for (size_t c = 0; c < p->f->n_shared; c++) {
    size_t rows = rn->e->ctx_off[c + 1] - rn->e->ctx_off[c];
    if (!rows) continue; /* no row to compute: verified with the unread files */
    if (!fdl_scale_mine(rn->o->scale, c)) continue; /* another rank's */
    rec_open *ro = &w->opens[w->nopens];
    ro->ctx = c;
    w->nopens++;
    for (int i = 0; i < 2; i++)
      if ((s = open_side(p, i, c, ro, r, err)) != FDL_OK) return s;
    for (size_t row0 = 0; row0 < rows; row0 += pb) {
      size_t n = rows - row0 < pb ? rows - row0 : pb;
      if (w->rows_used + n > w->cap_rows || w->nblocks == w->cap_blocks) {
        if ((s = flush(rn, w, r, err)) != FDL_OK) return s;
        recycle_opens(w, w->nopens - 1);
      }
      blk *b = &w->blocks[w->nblocks++];
      b->open = w->nopens - 1;
      b->row0 = row0;
      b->rows = n;
      b->buf_row = w->rows_used;
      b->last = row0 + n == rows;
      w->rows_used += n;
    }
  }
  if ((s = flush(rn, w, r, err)) != FDL_OK) return s;
  recycle_opens(w, SIZE_MAX);
  return FDL_OK;
}

/* ---- targets ---------------------------------------------------------------------------- */

/* The token every row predicts, from the reference's panel (the panel gate proved both sides'
 * tokens equal), laid out like kl. */
static fdl_status load_targets(const cmp_side *a, const cmp_findings *f, const fdl_scale *sc,
                               const size_t *loc_off, cmp_estimate *e, fdl_refusal *r,
                               fdl_err *err) {
  e->target = fdl_malloc((e->n_local ? e->n_local : 1) * sizeof *e->target);
  if (!e->target) return fdl_fail(err, FDL_NOMEM, "out of memory for %zu targets", e->n_local);
  int64_t vocab = a->m->capture.vocab_size;
  for (size_t c = 0; c < f->n_shared; c++) {
    size_t rows = e->ctx_off[c + 1] - e->ctx_off[c], n = 0;
    if (!rows || !fdl_scale_mine(sc, c)) continue;
    const fdl_ds_panel_record *pr = a->recs[f->ref_at[c]].panel;
    if (!pr)
      return fdl_cmp_refuse(r, err, FDL_REF_PANEL_MISMATCH, FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_PANEL,
                            "reference record %lld has no panel record", (long long)f->shared[c]);
    int64_t *t = NULL;
    fdl_status s =
        fdl_ds_panel_targets(a->root, &a->ds, (size_t)(pr - a->ds.panel_records), &t, &n, err);
    if (s == FDL_NOMEM) return s;
    if (s != FDL_OK)
      return fdl_cmp_refuse(r, err, s == FDL_MISMATCH ? FDL_REF_SEAL_FAILED : FDL_REF_UNREADABLE,
                            FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_DATA,
                            "reference panel record %lld (%s): %s", (long long)f->shared[c],
                            a->root, fdl_err_msg(err));
    for (size_t j = 0; s == FDL_OK && j < n && j < rows; j++)
      if (t[j] < 0 || t[j] >= vocab)
        s = fdl_cmp_refuse(r, err, FDL_REF_GEOMETRY_MISMATCH, FDL_GATE_COMPUTE,
                           CMP_NO_OVERRIDE_DATA,
                           "reference panel record %lld: row %zu predicts token %lld, outside the "
                           "logits' vocabulary 0..%lld (capture.vocab_size)",
                           (long long)f->shared[c], j, (long long)t[j], (long long)vocab - 1);
    if (s == FDL_OK && n != rows)
      s = fdl_cmp_refuse(r, err, FDL_REF_PANEL_MISMATCH, FDL_GATE_COMPUTE, CMP_NO_OVERRIDE_PANEL,
                         "reference panel record %lld scores %zu positions, its capture %zu rows",
                         (long long)f->shared[c], n, rows);
    if (s == FDL_OK) memcpy(e->target + loc_off[c], t, rows * sizeof *t);
    free(t);
    if (s != FDL_OK) return s;
  }
  return FDL_OK;
}

fdl_status fdl_cmp_estimate_run(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                                cmp_findings *f, const cmp_heads *h, bool want_js, cmp_estimate *e,
                                fdl_refusal *r, fdl_err *err) {
  size_t batch = o->position_block ? o->position_block : FDL_COMPARE_POSITION_BLOCK_DEFAULT;
  /* The remedy states the limit from its constant, so text and check cannot drift apart. */
  char remedy[FDL_REFUSAL_REMEDY_MAX];
  if (batch > FDL_COMPARE_POSITION_BLOCK_MAX) {
    snprintf(remedy, sizeof remedy, "a batch of 1 to %d positions (it never changes a number)",
             FDL_COMPARE_POSITION_BLOCK_MAX);
    return fdl_cmp_refuse(r, err, FDL_REF_BAD_POSITION_BLOCK, FDL_GATE_COMPUTE, remedy,
                          "a batch of %zu positions is above %d", batch,
                          FDL_COMPARE_POSITION_BLOCK_MAX);
  }
  /* This rank's contexts, and where their rows start among its own rows. */
  size_t *loc_off = fdl_malloc((f->n_shared + 1) * sizeof *loc_off);
  if (!loc_off) return fdl_fail(err, FDL_NOMEM, "out of memory");
  e->n_local = 0;
  for (size_t c = 0; c < f->n_shared; c++) {
    loc_off[c] = e->n_local;
    if (fdl_scale_mine(o->scale, c)) e->n_local += e->ctx_off[c + 1] - e->ctx_off[c];
  }
  size_t nr = e->n_local ? e->n_local : 1;
  e->kl = fdl_calloc(nr, sizeof *e->kl);
  if (want_js) e->js = fdl_calloc(nr, sizeof *e->js);
  e->read[0] = fdl_calloc(a->ds.n_records + 1, sizeof *e->read[0]);
  e->read[1] = fdl_calloc(b->ds.n_records + 1, sizeof *e->read[1]);
  e->lp_ref = fdl_calloc(nr, sizeof *e->lp_ref);
  e->lp_cand = fdl_calloc(nr, sizeof *e->lp_cand);
  e->top1 = fdl_calloc(nr, sizeof *e->top1);
  e->abs_row_sum = fdl_calloc(nr, sizeof *e->abs_row_sum);
  e->abs_row_max = fdl_calloc(nr, sizeof *e->abs_row_max);
  if (!e->kl || (want_js && !e->js) || !e->read[0] || !e->read[1] || !e->lp_ref || !e->lp_cand ||
      !e->top1 || !e->abs_row_sum || !e->abs_row_max) {
    free(loc_off);
    return fdl_fail(err, FDL_NOMEM, "out of memory for %zu per-row values", e->n_local);
  }
  fdl_status ts = load_targets(a, f, o->scale, loc_off, e, r, err);
  if (ts != FDL_OK) {
    free(loc_off);
    return ts;
  }
  e->computed = true;
  e->top1_matches = 0;
  e->abs_err_sum = 0.0;
  e->abs_err_max = 0.0;

  fdl_num_opts no;
  fdl_num_opts_default(&no);
  no.vocab = (size_t)a->m->capture.vocab_size;
  no.threads = o->threads;
  no.js = want_js;
  no.isa = o->isa;
  runner rn = {.o = o, .h = h, .e = e};
  fdl_status s = fdl_num_ctx_new(&no, &rn.ctx, err);
  if (s != FDL_OK) {
    free(loc_off);
    return fdl_cmp_refuse(r, err, s == FDL_NOMEM ? FDL_REF_OUT_OF_MEMORY : FDL_REF_ESTIMATOR_FAILED,
                          FDL_GATE_COMPUTE, CMP_REMEDY_RESOURCES, "estimator: %s",
                          fdl_err_msg(err));
  }
  e->isa = fdl_num_isa_name(fdl_num_ctx_opts(rn.ctx)->isa);
  unsigned threads = fdl_num_ctx_opts(rn.ctx)->threads;
  s = fdl_pool_init(&rn.pool, threads, err);
  if (s != FDL_OK) {
    fdl_num_ctx_free(rn.ctx);
    free(loc_off);
    return s;
  }
  plan p = {.side = {a, b}, .f = f, .hidden = {a->hidden, b->hidden}};
  p.width[0] = a->hidden ? (size_t)a->m->capture.hidden_width : (size_t)a->m->capture.vocab_size;
  p.width[1] = b->hidden ? (size_t)b->m->capture.hidden_width : (size_t)b->m->capture.vocab_size;
  window w;
  if ((s = window_init(&w, &p, batch, threads, err)) == FDL_OK) {
    s = run_all(&rn, &w, &p, r, err);
    window_free(&w);
  }
  free(loc_off);
  free(e->target); /* only the run needs it */
  e->target = NULL;
  fdl_pool_free(&rn.pool);
  fdl_num_ctx_free(rn.ctx);
  return s;
}

/* ---- gathering the ranks' rows ---------------------------------------------------------- */

/* The per-row arrays of one estimate, as a list the gather walks. */
enum { ROW_ARRAYS = 7 };

static void row_arrays(cmp_estimate *e, void **p[ROW_ARRAYS], size_t width[ROW_ARRAYS]) {
  void **a[ROW_ARRAYS] = {(void **)&e->kl,         (void **)&e->js,   (void **)&e->lp_ref,
                          (void **)&e->lp_cand,    (void **)&e->top1, (void **)&e->abs_row_sum,
                          (void **)&e->abs_row_max};
  const size_t w[ROW_ARRAYS] = {sizeof *e->kl,         sizeof *e->js,   sizeof *e->lp_ref,
                                sizeof *e->lp_cand,    sizeof *e->top1, sizeof *e->abs_row_sum,
                                sizeof *e->abs_row_max};
  for (int i = 0; i < ROW_ARRAYS; i++) p[i] = a[i], width[i] = w[i];
}

/* Rows rank k owns, in its own order. */
static size_t rank_rows(const cmp_findings *f, const cmp_estimate *e, size_t k, size_t size) {
  size_t n = 0;
  for (size_t c = k; c < f->n_shared; c += size) n += e->ctx_off[c + 1] - e->ctx_off[c];
  return n;
}

/* Rank 0: moves rank k's rows (src, in k's order) into their slots of dst. */
static void place(const cmp_findings *f, const cmp_estimate *e, size_t k, size_t size,
                  const uint8_t *src, uint8_t *dst, size_t width) {
  size_t at = 0;
  for (size_t c = k; c < f->n_shared; c += size) {
    size_t rows = e->ctx_off[c + 1] - e->ctx_off[c];
    memcpy(dst + e->ctx_off[c] * width, src + at * width, rows * width);
    at += rows;
  }
}

static fdl_status gather(const fdl_scale *sc, const cmp_findings *f, cmp_estimate *e,
                         fdl_refusal *r, fdl_err *err) {
  size_t size = (size_t)fdl_scale_size(sc), most = 0;
  void **arr[ROW_ARRAYS];
  size_t width[ROW_ARRAYS];
  row_arrays(e, arr, width);
  bool lead = fdl_scale_rank(sc) == 0;
  void *whole[ROW_ARRAYS] = {NULL};
  uint8_t *in = NULL;
  fdl_status s = FDL_OK;
  if (lead) { /* the whole arrays, and room for the largest share */
    for (size_t k = 1; k < size; k++) {
      size_t n = rank_rows(f, e, k, size);
      most = n > most ? n : most;
    }
    in = fdl_malloc((most ? most : 1) * sizeof(double));
    bool ok = in != NULL;
    for (int i = 0; i < ROW_ARRAYS; i++)
      if (*arr[i] && !(whole[i] = fdl_calloc(e->n_rows ? e->n_rows : 1, width[i]))) ok = false;
    if (!ok) s = fdl_fail(err, FDL_NOMEM, "out of memory for %zu per-row values", e->n_rows);
  }
  /* No rank sends before rank 0 can take every share. */
  if ((s = fdl_scale_agree(sc, s, r, err)) == FDL_OK) {
    for (int i = 0; s == FDL_OK && i < ROW_ARRAYS; i++) {
      if (!*arr[i]) continue;
      if (!lead) {
        s = fdl_scale_send(sc, 0, *arr[i], e->n_local * width[i], err);
        continue;
      }
      place(f, e, 0, size, *arr[i], whole[i], width[i]);
      for (size_t k = 1; s == FDL_OK && k < size; k++) {
        s = fdl_scale_recv(sc, (int)k, in, rank_rows(f, e, k, size) * width[i], err);
        if (s == FDL_OK) place(f, e, k, size, in, whole[i], width[i]);
      }
    }
  }
  for (int i = 0; i < ROW_ARRAYS; i++) {
    if (s == FDL_OK && lead) {
      free(*arr[i]);
      *arr[i] = whole[i];
    } else {
      free(whole[i]);
    }
  }
  free(in);
  if (s == FDL_OK && lead) e->n_local = e->n_rows;
  return s;
}

fdl_status fdl_cmp_estimate_finish(const fdl_scale *sc, const cmp_findings *f, cmp_estimate *e,
                                   fdl_refusal *r, fdl_err *err) {
  if (!e->computed) return FDL_OK;
  if (fdl_scale_size(sc) > 1) {
    fdl_status s = gather(sc, f, e, r, err);
    if ((s = fdl_scale_agree(sc, s, r, err)) != FDL_OK) return s;
    if (fdl_scale_rank(sc) != 0) return FDL_OK;
  }
  /* Reductions in row order, so they depend on neither the window nor the ranks. */
  fdl_num_neumaier abs_err;
  memset(&abs_err, 0, sizeof abs_err);
  e->top1_matches = 0;
  e->abs_err_max = 0.0;
  for (size_t i = 0; i < e->n_rows; i++) {
    e->top1_matches += e->top1[i];
    fdl_num_neumaier_add(&abs_err, e->abs_row_sum[i]);
    if (e->abs_row_max[i] > e->abs_err_max) e->abs_err_max = e->abs_row_max[i];
  }
  e->abs_err_sum = fdl_num_neumaier_value(&abs_err);
  return FDL_OK;
}
