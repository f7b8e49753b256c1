/* fidelis.h - the public API of libfidelis.
 *
 * fidelis proves, with numbers anyone can re-check, how faithfully an LLM inference stack
 * reproduces a reference. This header pulls in every module:
 *
 *   status.h  one status enum (fdl_status) and the error record (fdl_err)
 *   refusal.h the refusal record (code, gate, remedy, cause) of pack and compare
 *   buf.h     bounded growable byte buffers
 *   file.h    mapped inputs, staged outputs that never overwrite
 *   path.h    the relative-path rules manifests obey
 *   json.h    strict reader, Python-compatible canonical writer
 *   digest.h  SHA-256, seal recipes, checksums.txt
 *   tensor.h  safetensors, .npy, BF16/F16 widening
 *   pool.h    a fixed thread pool for indexed tasks (results land in pre-assigned slots)
 *   num.h     fused float64 KL, head replay, deterministic driver, receipt statistics
 *   dataset.h malaiwah.fidelity-dataset.v1: load, validate, pack, inspect
 *   compare.h gates, classification and sealed comparison receipts
 *
 * A first program:
 *
 *   fdl_err err;
 *   json_t *doc;
 *   if (fdl_json_load_file("receipt.json", NULL, &doc, &err) != FDL_OK) {
 *     fprintf(stderr, "%s\n", err.msg);
 *     return 1;
 *   }
 *   fdl_seal_check chk;
 *   if (fdl_seal_verify(doc, &chk, &err) == FDL_OK)
 *     printf("%s\n", chk.ok ? "OK" : "MISMATCH");
 *   json_decref(doc);
 *
 * Conventions: every public symbol starts with fdl_ / FDL_; callers own the structs they pass;
 * *_free and *_close accept NULL; on error, outputs are left unchanged. */
#ifndef FIDELIS_H
#define FIDELIS_H

#include "status.h"
#include "refusal.h"
#include "buf.h"
#include "file.h"
#include "path.h"
#include "json.h"
#include "digest.h"
#include "tensor.h"
#include "pool.h"
#include "num.h"
#include "dataset.h"
#include "compare.h"

#endif
