/* gates_panel.c - the provenance preview (step 3) and the panel gate (step 4, PANEL-D3):
 * the panel is identity, so nothing here has an override. The empty-intersection check lives
 * inside this gate (as in the reference code) but is reported under `coverage`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/quote.h"
#include "compare/cmp.h"
#include "base/sys.h"

fdl_status fdl_cmp_gate_provenance(const cmp_side *a, const cmp_side *b, cmp_findings *f,
                                   fdl_err *err) {
  const cmp_side *sides[2] = {a, b};
  char names[64] = "";
  for (int i = 0; i < 2; i++) {
    if (!sides[i]->m->not_submittable && !sides[i]->m->preview) continue;
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", *names ? " and " : "",
             sides[i]->who);
  }
  if (!*names) return FDL_OK;
  f->preview = true;
  f->advisory = true;
  f->not_floor = true;
  return fdl_cmp_disclose(
      f, "preview_capture", "blocking", 1, err,
      "the %s dataset%s marked as a preview (not_submittable or a preview "
      "block): a preview capture is superseded by its final dataset and is never "
      "a registry measurement or a floor.",
      names, strchr(names, ' ') ? "s are" : " is");
}

/* PANEL-D6: a tokenizer field differs only when both sides state a non-null value. Returns a
 * bit per differing field of fdl_cmp_tokenizer_fields. */
static unsigned tokenizer_differs(const cmp_side *a, const cmp_side *b) {
  unsigned bits = 0;
  for (size_t i = 0; i < CMP_N_TOKENIZER; i++) {
    const json_t *va = a->tokenizer_field[i], *vb = b->tokenizer_field[i];
    if (va && vb && !fdl_py_equal(va, vb)) bits |= 1u << i;
  }
  return bits;
}

/* The shared index set: both record arrays are sorted by index, so a merge. */
static fdl_status intersect(const cmp_side *a, const cmp_side *b, cmp_findings *f, fdl_err *err) {
  size_t na = a->ds.n_records, nb = b->ds.n_records, cap = na < nb ? na : nb;
  f->shared = fdl_malloc((cap ? cap : 1) * sizeof *f->shared);
  f->ref_at = fdl_malloc((cap ? cap : 1) * sizeof *f->ref_at);
  f->cand_at = fdl_malloc((cap ? cap : 1) * sizeof *f->cand_at);
  if (!f->shared || !f->ref_at || !f->cand_at)
    return fdl_fail(err, FDL_NOMEM, "out of memory for %zu shared records", cap);
  size_t i = 0, j = 0, n = 0;
  while (i < na && j < nb) {
    int64_t x = a->ds.records[i].index, y = b->ds.records[j].index;
    if (x < y) {
      i++;
    } else if (y < x) {
      j++;
    } else {
      f->shared[n] = x;
      f->ref_at[n] = i++;
      f->cand_at[n] = j++;
      n++;
    }
  }
  f->n_shared = n;
  f->sets_differ = n != na || n != nb;
  return FDL_OK;
}

fdl_status fdl_cmp_gate_panel(const cmp_side *a, const cmp_side *b, cmp_findings *f, fdl_refusal *r,
                              fdl_err *err) {
  const char *ha = a->m->panel.suite_token_hash_sha256, *hb = b->m->panel.suite_token_hash_sha256;
  if (fdl_cmp_empty(ha) || !fdl_cmp_streq(ha, hb))
    return fdl_cmp_refuse(r, err, FDL_REF_PANEL_MISMATCH, FDL_GATE_PANEL, CMP_NO_OVERRIDE_PANEL,
                          "panel.suite_token_hash_sha256 differs: reference %s, candidate %s; the "
                          "two captures were not made over the same token panel",
                          fdl_cmp_empty(ha) ? "(absent)" : ha, fdl_cmp_empty(hb) ? "(absent)" : hb);
  if (!a->scoring_window || !b->scoring_window ||
      !fdl_py_equal(a->scoring_window, b->scoring_window))
    return fdl_cmp_refuse(r, err, FDL_REF_PANEL_MISMATCH, FDL_GATE_PANEL, CMP_NO_OVERRIDE_PANEL,
                          "panel.scoring_window differs between the sides (every key is compared, "
                          "including the policy text and dropped_positions_total): a different "
                          "scoring window is a different panel");
  unsigned diff = tokenizer_differs(a, b);
  if (diff) {
    size_t first = 0;
    while (!(diff & (1u << first))) first++;
    const char *field = fdl_cmp_tokenizer_fields[first];
    char va[FDL_QUOTE_CAP], vb[FDL_QUOTE_CAP], id[FDL_QUOTE_CAP], remedy[FDL_REFUSAL_REMEDY_MAX];
    fdl_py_shown(a->tokenizer_field[first], va, sizeof va);
    fdl_py_shown(b->tokenizer_field[first], vb, sizeof vb);
    if ((diff & ~3u) == 0) /* only id and/or repository */
      snprintf(remedy, sizeof remedy,
               "none (no override); if both sides really used the same tokenizer, recapture the "
               "candidate declaring the reference's tokenizer id %s",
               fdl_quote_str(fdl_cmp_str0(a->tokenizer_id), id, sizeof id));
    else
      snprintf(remedy, sizeof remedy, "%s", CMP_NO_OVERRIDE_PANEL);
    return fdl_cmp_refuse(r, err, FDL_REF_PANEL_MISMATCH, FDL_GATE_PANEL, remedy,
                          "panel.tokenizer.%s differs: reference %s, candidate %s (PANEL-D6: "
                          "both sides state it, so the token ids do not mean the same text)",
                          field, va, vb);
  }
  fdl_status s = intersect(a, b, f, err);
  if (s != FDL_OK) return s;
  if (f->n_shared == 0)
    return fdl_cmp_refuse(r, err, FDL_REF_EMPTY_INTERSECTION, FDL_GATE_COVERAGE,
                          "none: not even --allow-partial can compare two captures that share no "
                          "record; capture overlapping records",
                          "the sides share no record index (reference %zu records, candidate %zu)",
                          a->ds.n_records, b->ds.n_records);
  for (size_t k = 0; k < f->n_shared; k++) {
    const fdl_ds_capture_record *ra = &a->ds.records[f->ref_at[k]];
    const fdl_ds_capture_record *rb = &b->ds.records[f->cand_at[k]];
    if (!fdl_cmp_streq(ra->token_ids_json_sha256, rb->token_ids_json_sha256) ||
        fdl_cmp_empty(ra->token_ids_json_sha256))
      return fdl_cmp_refuse(
          r, err, FDL_REF_PANEL_MISMATCH, FDL_GATE_PANEL, CMP_NO_OVERRIDE_PANEL,
          "record %lld: token_ids_json_sha256 differs (reference %s, candidate %s)",
          (long long)f->shared[k],
          fdl_cmp_empty(ra->token_ids_json_sha256) ? "(absent)" : ra->token_ids_json_sha256,
          fdl_cmp_empty(rb->token_ids_json_sha256) ? "(absent)" : rb->token_ids_json_sha256);
    if (!fdl_cmp_empty(ra->attention_mask_sha256) && !fdl_cmp_empty(rb->attention_mask_sha256) &&
        strcmp(ra->attention_mask_sha256, rb->attention_mask_sha256))
      return fdl_cmp_refuse(
          r, err, FDL_REF_PANEL_MISMATCH, FDL_GATE_PANEL, CMP_NO_OVERRIDE_PANEL,
          "record %lld: attention_mask_sha256 differs (reference %s, candidate %s)",
          (long long)f->shared[k], ra->attention_mask_sha256, rb->attention_mask_sha256);
    if (ra->scored_rows != rb->scored_rows || ra->scored_rows < 0)
      return fdl_cmp_refuse(r, err, FDL_REF_PANEL_MISMATCH, FDL_GATE_PANEL, CMP_NO_OVERRIDE_PANEL,
                            "record %lld: scored_rows differs (reference %lld, candidate %lld)",
                            (long long)f->shared[k], (long long)ra->scored_rows,
                            (long long)rb->scored_rows);
  }
  return fdl_cmp_gate(
      f, FDL_GATE_PANEL, true, NULL, err,
      "suite_token_hash_sha256 equal; %zu shared records; per-record token and mask "
      "digests equal; scoring_window equal",
      f->n_shared);
}
