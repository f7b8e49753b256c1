/* fidelis.h - the public API of libfidelis.
 *
 * fidelis proves, with numbers anyone can re-check, how faithfully an LLM inference stack
 * reproduces a reference. This header pulls in every module (an include order, not the layers:
 * which module may use which is docs/layers.tsv, shown in docs/ARCHITECTURE.md):
 *
 *   status.h  one status enum (fdl_status) and the error record (fdl_err)
 *   refusal.h the refusal record (code, gate, remedy, cause) of pack and compare
 *   buf.h     bounded growable byte buffers
 *   file.h    mapped inputs, staged outputs that never overwrite
 *   path.h    the relative-path rules manifests obey
 *   quote.h   bounded, escaped quotes of untrusted bytes in messages
 *   json.h    strict reader, Python-compatible canonical writer
 *   digest.h  SHA-256, seal recipes, checksums.txt
 *   tensor.h  safetensors, .npy, BF16/F16 widening
 *   pool.h    a fixed thread pool for indexed tasks (results land in pre-assigned slots)
 *   num.h     fused float64 KL, head replay, deterministic driver, receipt statistics
 *   vocab.h   the dataset format's enumerations (lanes, roles, forms, ...), each written once
 *   dataset.h malaiwah.fidelity-dataset.v1: load, validate, pack, inspect
 *   compare.h gates, classification and sealed comparison receipts
 *   engine.h  the inference engine's building blocks (the int4 quantizer)
 *   synth.h   a synthetic, honest dataset pair to compare
 *
 * A first program:
 *
 *   fdl_err err;
 *   fdl_seal_check chk;
 *   if (fdl_seal_verify_file("receipt.json", &chk, &err) != FDL_OK) {
 *     fprintf(stderr, "%s\n", err.msg);
 *     return 1;
 *   }
 *   printf("%s\n", chk.ok ? "OK" : "MISMATCH");
 *
 * fdl_seal_verify_file reads the file the way its dialect hashes it (a kiln.* record in
 * Kiln-strict mode, where -0.0 is 0.0), which a caller's own load and fdl_seal_verify would not.
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
#include "utc.h"
#include "quote.h"
#include "json.h"
#include "digest.h"
#include "tensor.h"
#include "pool.h"
#include "num.h"
#include "vocab.h"
#include "dataset.h"
#include "compare.h"
#include "scale.h"
#include "engine.h"
#include "model.h"
#include "synth.h"
#include "report.h"
#include "attr.h"
#include "kiln.h"
#include "hub.h"

#endif
