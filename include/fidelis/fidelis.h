/* fidelis.h - the public API of libfidelis.
 *
 * fidelis proves, with numbers anyone can re-check, how faithfully an LLM inference stack
 * reproduces a reference. This header is the public tier, whole: it includes every installed
 * header (an include order, not the layers: which module may use which is docs/layers.tsv,
 * shown in docs/ARCHITECTURE.md):
 *
 *   status.h       one status enum (fdl_status), the error record (fdl_err), the notice callback,
 *                  fdl_version
 *   refusal.h      the refusal record (code, gate, remedy, cause) of pack and compare
 *   buf.h          the byte buffer some calls write their text into (init, free, take)
 *   pool.h         a fixed thread pool for indexed tasks (results land in pre-assigned slots)
 *   file.h         the read-only file view an open GGUF or .kld file holds (fdl_map)
 *   float_repr.h   Python's repr() of a double, the form of every JSON float
 *   digest.h       SHA-256, seal recipes, checksums.txt
 *   tensor.h       safetensors, .npy, BF16/F16 widening
 *   num.h          fused float64 KL, head replay, deterministic driver, receipt statistics
 *   scale.h        the seam to a distributed run (one process, or the MPI build's ranks)
 *   hub.h          hf:// references, the Hugging Face cache read in place, fetching into it
 *   ggml_quant.h   ggml's tensor types and their exact float32 dequantization
 *   gguf.h         llama.cpp's GGUF files: header, metadata, tensors
 *   tokenizer.h    text to token ids and back, as the model's own tokenizer does
 *   vocab.h        the dataset format's enumerations (lanes, roles, forms, ...), each written once
 *   dataset.h      malaiwah.fidelity-dataset.v1: load, validate, pack, inspect
 *   llamacpp_kld.h llama-perplexity --kl-divergence-base files, read and imported as a dataset
 *   panel.h        a pack panel cut from text with the model's tokenizer
 *   model.h        deterministic random models in Hugging Face layout, int4 GPTQ quantization
 *   engine.h       the inference engine: load a model, run the forward pass
 *   generate.h     greedy generation and per-position logits over the engine
 *   capture.h      the engine over a panel, sealed as a fidelity dataset
 *   compare.h      gates, classification and sealed comparison receipts
 *   report.h       the HTML page and Markdown of a comparison receipt
 *   synth.h        a synthetic, honest dataset pair to compare
 *   attr.h         Kiln's attribution diffs (logits, layer boundaries)
 *   kiln.h         Kiln requests and records: identities, checks, first divergence
 *
 * Everything else (parsed JSON trees and the calls on them, appending to a buffer, mapping,
 * reading and staging files, path rules, quoting, UTC stamps, the GEMM, kernels, test hooks) is
 * the private tier: headers under src/, not installed, not exported by libfidelis.so (only
 * libfidelis.a has them, for the fidelis program and the tests).
 * tests/exported_symbols.txt is the exported list; every name in it is declared FDL_API in one of
 * the headers above.
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
#include "pool.h"
#include "file.h"
#include "float_repr.h"
#include "digest.h"
#include "tensor.h"
#include "num.h"
#include "scale.h"
#include "hub.h"
#include "ggml_quant.h"
#include "gguf.h"
#include "tokenizer.h"
#include "vocab.h"
#include "dataset.h"
#include "llamacpp_kld.h"
#include "panel.h"
#include "model.h"
#include "engine.h"
#include "generate.h"
#include "capture.h"
#include "compare.h"
#include "report.h"
#include "synth.h"
#include "attr.h"
#include "kiln.h"

#endif
