/* compare.c - fdl_compare: the order of the whole command (section 4 step 14 and section 8):
 * nothing is written until every gate and the computation succeeded, and the receipt passes
 * its own checks. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/pool.h"
#include "compare/cmp.h"
#include "compare/hooks.h"
#include "base/utc.h"
#include "base/sys.h"
#include "fidelis/scale.h"
#include "compare/compare_json.h"

void fdl_compare_opts_default(fdl_compare_opts *o) {
  memset(o, 0, sizeof *o);
  o->bootstrap = true;
  o->js = -1;
}

json_t *fdl_compare_receipt_json(const fdl_compare_result *r) {
  return (json_t *)r->receipt;
}

void fdl_compare_result_free(fdl_compare_result *r) {
  if (!r) return;
  fdl_cmp_receipt_free(&r->fields);
  json_decref(fdl_compare_receipt_json(r));
  free(r->receipt_path);
  free(r->tokenwise_path);
  memset(r, 0, sizeof *r);
}

fdl_compare_outcome fdl_compare_outcome_of(const fdl_compare_result *r) {
  if (r->receipt)
    return fdl_cmp_streq(r->fields.comparability_class, "strict") ? FDL_COMPARE_STRICT
                                                                  : FDL_COMPARE_ADVISORY;
  return r->refusal.code == FDL_REF_USAGE ? FDL_COMPARE_BAD_OPTS : FDL_COMPARE_REFUSED;
}

static fdl_status check_opts(const fdl_compare_opts *o, fdl_err *err) {
  if (!o->reference || !o->candidate || !o->out_dir)
    return fdl_fail(err, FDL_INVALID,
                    "a reference, a candidate and an output directory are required");
  if (!*o->reference || !*o->candidate || !*o->out_dir)
    return fdl_fail(err, FDL_INVALID,
                    "empty path for the reference, the candidate or the output directory");
  if (o->seed > (uint64_t)INT64_MAX)
    return fdl_fail(err, FDL_INVALID,
                    "the seed must be at most %lld (it is recorded as a JSON "
                    "integer)",
                    (long long)INT64_MAX);
  if (o->created_utc && !fdl_utc_valid(o->created_utc))
    return fdl_fail(err, FDL_INVALID,
                    "created_utc '%s' is not a real UTC time written YYYY-MM-DDTHH:MM:SSZ",
                    o->created_utc);
  if (o->bootstrap_samples == 1)
    return fdl_fail(err, FDL_INVALID, "the bootstrap needs at least 2 resamples");
  /* A batch above the maximum is a compute refusal (bad_position_block), as in the reference,
   * not a usage error: see fdl_cmp_estimate_run. */
  if (o->threads > FDL_POOL_MAX_THREADS)
    return fdl_fail(err, FDL_INVALID, "the thread count must be at most %d", FDL_POOL_MAX_THREADS);
  return FDL_OK;
}

static fdl_status same_root(const fdl_compare_opts *o, fdl_refusal *r, fdl_err *err) {
  char *ra = realpath(o->reference, NULL), *rb = realpath(o->candidate, NULL);
  bool same = ra && rb && !strcmp(ra, rb);
  free(ra);
  free(rb);
  if (!same) return FDL_OK;
  return fdl_cmp_refuse(
      r, err, FDL_REF_SAME_ROOT, FDL_GATE_CLI,
      "none: even a self-compare needs two separate captures of the same artifact",
      "the reference and the candidate are the same directory (%s)", o->reference);
}

/* --force-compute: the computed array must be all +0.0 bit for bit (compared as 64-bit words)
 * and every top-1 must agree, or the hash proof and the arithmetic disagree. */
static fdl_status force_agrees(const cmp_estimate *e, fdl_refusal *r, fdl_err *err) {
  for (size_t i = 0; i < e->n_rows; i++) {
    uint64_t w;
    memcpy(&w, &e->kl[i], sizeof w);
    if (w)
      return fdl_cmp_refuse(r, err, FDL_REF_SELF_COMPARE_DISAGREEMENT, FDL_GATE_COMPUTE,
                            CMP_REMEDY_BUG,
                            "--force-compute: row %zu of the computed array is %.17g, not +0.0, "
                            "although the capture content digests are equal",
                            i, e->kl[i]);
  }
  if (e->top1_matches != e->n_rows)
    return fdl_cmp_refuse(r, err, FDL_REF_SELF_COMPARE_DISAGREEMENT, FDL_GATE_COMPUTE,
                          CMP_REMEDY_BUG,
                          "--force-compute: top-1 agreement is %llu of %zu rows, not all",
                          (unsigned long long)e->top1_matches, e->n_rows);
  return FDL_OK;
}

typedef struct {
  cmp_side a, b;
  cmp_findings f;
  cmp_heads h;
  cmp_estimate e;
  cmp_stage st;
  json_t *rc;
} run_state;

/* What this rank read as both sides' identity: rank 0 refuses unless every rank saw the same
 * sealed manifests (docs/SCALE.md). */
static fdl_status same_manifests(const fdl_compare_opts *o, const run_state *z, fdl_status s,
                                 fdl_refusal *r, fdl_err *err) {
  char hex[FDL_SHA256_HEX_BUF] = "";
  if (s == FDL_OK) {
    fdl_buf b;
    fdl_buf_init(&b, 0);
    const cmp_side *sd[2] = {&z->a, &z->b};
    for (int i = 0; i < 2; i++)
      fdl_buf_printf(
          &b, "%s|%s|%zu|", sd[i]->m->dataset_sha256 ? sd[i]->m->dataset_sha256 : "",
          sd[i]->m->capture.capture_content_digest ? sd[i]->m->capture.capture_content_digest : "",
          sd[i]->ds.n_records);
    s = fdl_buf_status(&b) != FDL_OK ? fdl_fail(err, FDL_NOMEM, "out of memory")
                                     : fdl_sha256_buf_hex(b.data, b.len, hex, err);
    fdl_buf_free(&b);
  }
  int differs = -1;
  if ((s = fdl_scale_agree(o->scale, s, r, err)) != FDL_OK) return s;
  if ((s = fdl_scale_same(o->scale, hex, &differs, err)) != FDL_OK) return s;
  if (differs < 0) return FDL_OK;
  return fdl_cmp_refuse(r, err, FDL_REF_SEAL_FAILED, FDL_GATE_SEAL,
                        "none: put both datasets on a filesystem every rank reads alike",
                        "rank %d read other sealed manifests than rank 0 (dataset_sha256 and "
                        "capture content digests of both sides differ)",
                        differs);
}

/* The files compute did not read are hashed, shared among the ranks: every rank first learns
 * what all of them read, then hashes the records at positions i with i mod size == rank (rank 0
 * also the heads). */
static fdl_status verify_share(const fdl_compare_opts *o, run_state *z, fdl_refusal *r,
                               fdl_err *err) {
  const cmp_side *sides[2] = {&z->a, &z->b};
  bool *skip[2] = {NULL, NULL};
  fdl_status s = FDL_OK;
  for (int i = 0; s == FDL_OK && i < 2; i++) {
    size_t n = sides[i]->ds.n_records;
    if (!(skip[i] = fdl_calloc(n + 1, sizeof *skip[i])))
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
    else if (z->e.read[i])
      memcpy(skip[i], z->e.read[i], n * sizeof *skip[i]);
  }
  if ((s = fdl_scale_agree(o->scale, s, r, err)) == FDL_OK)
    for (int i = 0; s == FDL_OK && i < 2; i++)
      s = fdl_scale_or(o->scale, skip[i], sides[i]->ds.n_records * sizeof *skip[i], err);
  if (s == FDL_OK) {
    for (int i = 0; i < 2; i++)
      for (size_t at = 0; at < sides[i]->ds.n_records; at++)
        if (!fdl_scale_mine(o->scale, at)) skip[i][at] = true;
    bool lead = fdl_scale_rank(o->scale) == 0;
    const bool heads[2] = {z->h.read[0] || !lead, z->h.read[1] || !lead};
    const bool *const read[2] = {skip[0], skip[1]};
    s = fdl_cmp_verify_rest(sides, read, heads, o->threads, r, err);
  }
  free(skip[0]);
  free(skip[1]);
  return fdl_scale_agree(o->scale, s, r, err);
}

/* Every rank runs the same steps up to the statistics, sharing each step's failure
 * (fdl_scale_agree); rank 0 alone stages, builds and publishes, after a last agreement. */
static fdl_status run(const fdl_compare_opts *o, const fdl_compare_hooks *h, run_state *z,
                      fdl_compare_result *res, fdl_refusal *r, fdl_err *err) {
  const fdl_scale *sc = o->scale;
  bool lead = fdl_scale_rank(sc) == 0;
  fdl_status s = same_root(o, r, err);
  if (s == FDL_OK && lead) s = fdl_cmp_stage_open(o, &z->st, r, err);
  const char *la = o->reference_label ? o->reference_label : "reference";
  const char *lb = o->candidate_label ? o->candidate_label : "candidate";
  if (s == FDL_OK) s = fdl_cmp_side_load(&z->a, o->reference, "reference", la, o, r, err);
  if (s == FDL_OK) s = fdl_cmp_side_load(&z->b, o->candidate, "candidate", lb, o, r, err);
  if (s == FDL_OK) s = fdl_cmp_gates_run(&z->a, &z->b, o, &z->f, r, err);
  if (s == FDL_OK) s = fdl_cmp_classify(&z->a, &z->b, o, &z->f, r, err);
  if (s == FDL_OK) s = fdl_cmp_estimate_layout(&z->a, &z->f, &z->e, err);
  if ((s = same_manifests(o, z, s, r, err)) != FDL_OK) return s;
  bool repro = !strcmp(z->f.kind, "reproduction_confirmation"), agreed = false;
  if (h && h->on_validated) h->on_validated(h->on_validated_arg);
  if (repro && !o->force_compute) {
    s = fdl_cmp_estimate_zero(&z->e, err);
  } else {
    bool js = o->js > 0 || (o->js < 0 && !z->a.hidden && !z->b.hidden);
    s = fdl_cmp_heads_load(&z->a, &z->b, o, &z->f, &z->h, r, err);
    if (s == FDL_OK) s = fdl_cmp_estimate_run(&z->a, &z->b, o, &z->f, &z->h, js, &z->e, r, err);
    fdl_cmp_heads_free(&z->h);
  }
  if ((s = fdl_scale_agree(sc, s, r, err)) != FDL_OK) return s;
  if ((s = fdl_cmp_estimate_finish(sc, &z->f, &z->e, r, err)) != FDL_OK) return s;
  if (lead && repro && z->e.computed) {
    s = force_agrees(&z->e, r, err);
    agreed = s == FDL_OK;
  }
  if ((s = fdl_scale_agree(sc, s, r, err)) != FDL_OK) return s;
  /* Whatever compute did not read (all of it for a hash proof) is hashed now: no listed tensor
   * goes unverified, and nothing is written before this passes. */
  if ((s = verify_share(o, z, r, err)) != FDL_OK) return s;
  cmp_tokenwise_info tw;
  if (lead) {
    if (!(z->rc = json_object())) s = fdl_fail(err, FDL_NOMEM, "out of memory");
    if (s == FDL_OK) s = fdl_cmp_stats_build(&z->a, &z->f, &z->e, o, repro, z->rc, err);
    if (s == FDL_OK) s = fdl_cmp_stage_tokenwise(&z->st, &z->e, &tw, r, err);
    if (s == FDL_OK) s = fdl_cmp_llamacpp_add(&z->e, &tw, z->rc, r, err);
    if (s == FDL_OK)
      s = fdl_cmp_receipt_build(&z->a, &z->b, o, &z->f, &z->e, agreed, &tw, z->rc, r, err);
    fdl_compare_check_code code;
    if (s == FDL_OK && fdl_compare_check_receipt(z->rc, &code, err) != FDL_OK)
      s = fdl_cmp_refuse(r, err, FDL_REF_RECEIPT_INVALID, FDL_GATE_PUBLISH, CMP_REMEDY_BUG,
                         "the built receipt fails its own checks [%s]: %s",
                         fdl_compare_check_code_name(code), fdl_err_msg(err));
    if (s == FDL_OK) s = fdl_cmp_receipt_decode(z->rc, &res->fields, err);
  }
  /* The last agreement: nothing is published unless every rank reached here. */
  if ((s = fdl_scale_agree(sc, s, r, err)) != FDL_OK || !lead) return s;
  s = fdl_cmp_stage_commit(&z->st, z->rc, o->out_dir, &res->receipt_path, &res->tokenwise_path, r,
                           err);
  if (s != FDL_OK) return s;
  res->receipt = (struct fdl_compare_doc *)json_incref(z->rc);
  return FDL_OK;
}

fdl_status fdl_compare(const fdl_compare_opts *o, fdl_compare_result *res, fdl_err *err) {
  return fdl_compare_hooked(o, NULL, res, err);
}

fdl_status fdl_compare_hooked(const fdl_compare_opts *o, const fdl_compare_hooks *h,
                              fdl_compare_result *res, fdl_err *err) {
  memset(res, 0, sizeof *res);
  fdl_status s = check_opts(o, err);
  if (s != FDL_OK) {
    res->refusal.code = FDL_REF_USAGE;
    res->refusal.gate = FDL_GATE_CLI;
    res->refusal.status = s;
    return s;
  }
  run_state z;
  memset(&z, 0, sizeof z);
  fdl_cmp_findings_init(&z.f);
  fdl_refusal r = {FDL_OK, FDL_REF_NONE, FDL_GATE_NONE, ""};
  s = run(o, h, &z, res, &r, err);
  if (s != FDL_OK && s != FDL_REFUSED) {
    /* Every failure is reported with a code, as a refusal: nothing was written. */
    r.code = s == FDL_NOMEM ? FDL_REF_OUT_OF_MEMORY
             : s == FDL_IO  ? FDL_REF_UNREADABLE
                            : FDL_REF_INTERNAL_ERROR;
    r.gate = FDL_GATE_CLI;
    r.status = s;
    snprintf(r.remedy, sizeof r.remedy, "%s",
             s == FDL_NOMEM ? CMP_REMEDY_RESOURCES
             : s == FDL_IO  ? "check that both datasets are readable and the parent of the output "
                              "directory is writable"
                            : CMP_REMEDY_BUG);
    s = FDL_REFUSED;
  }
  if (s == FDL_REFUSED) {
    res->refusal = r;
    fdl_cmp_receipt_free(&res->fields);
  }
  if (s != FDL_OK && !res->refusal.status) res->refusal.status = s;
  fdl_cmp_stage_cleanup(&z.st);
  json_decref(z.rc);
  fdl_cmp_estimate_free(&z.e);
  fdl_cmp_heads_free(&z.h);
  fdl_cmp_findings_free(&z.f);
  fdl_cmp_side_free(&z.b);
  fdl_cmp_side_free(&z.a);
  return s;
}
