/* ggml_types.c - the table of ggml tensor types (fidelis/ggml_quant.h): id, name and block
 * geometry of every `enum ggml_type` value ggml defines, and the stored size of a row.
 *
 * A GGUF tensor-info entry names its type by this id, and its byte size follows from the
 * block geometry alone, so the table lists every type, dequantized or not: a reader can size,
 * skip and name any tensor, and refuse the ones fidelis cannot decode by their ggml name. The
 * ids, names (ggml_type_name) and sizes are ggml's (ggml.h, ggml.c type_traits, the block
 * structs of ggml-common.h); ids ggml has retired (4, 5, 31-33, 36-38) are absent. */
#include <inttypes.h>

#include "fidelis/ggml_quant.h"

#define T(id_, name_, elems_, bytes_, dq_) [id_] = {id_, name_, elems_, bytes_, dq_}

static const fdl_ggml_type_info TYPES[] = {
    T(0, "f32", 1, 4, true),          T(1, "f16", 1, 2, true),
    T(2, "q4_0", 32, 18, true),       T(3, "q4_1", 32, 20, true),
    T(6, "q5_0", 32, 22, true),       T(7, "q5_1", 32, 24, true),
    T(8, "q8_0", 32, 34, true),       T(9, "q8_1", 32, 36, false),
    T(10, "q2_K", 256, 84, true),     T(11, "q3_K", 256, 110, true),
    T(12, "q4_K", 256, 144, true),    T(13, "q5_K", 256, 176, true),
    T(14, "q6_K", 256, 210, true),    T(15, "q8_K", 256, 292, false),
    T(16, "iq2_xxs", 256, 66, false), T(17, "iq2_xs", 256, 74, false),
    T(18, "iq3_xxs", 256, 98, false), T(19, "iq1_s", 256, 50, false),
    T(20, "iq4_nl", 32, 18, true),    T(21, "iq3_s", 256, 110, true),
    T(22, "iq2_s", 256, 82, false),   T(23, "iq4_xs", 256, 136, true),
    T(24, "i8", 1, 1, false),         T(25, "i16", 1, 2, false),
    T(26, "i32", 1, 4, false),        T(27, "i64", 1, 8, false),
    T(28, "f64", 1, 8, false),        T(29, "iq1_m", 256, 56, false),
    T(30, "bf16", 1, 2, true),        T(34, "tq1_0", 256, 54, true),
    T(35, "tq2_0", 256, 66, true),    T(39, "mxfp4", 32, 17, false),
    T(40, "nvfp4", 64, 36, false),    T(41, "q1_0", 128, 18, false),
    T(42, "q2_0", 64, 18, false),
};

#undef T

const fdl_ggml_type_info *fdl_ggml_type(uint32_t id) {
  if (id >= sizeof TYPES / sizeof TYPES[0] || !TYPES[id].name) return NULL;
  return &TYPES[id];
}

fdl_status fdl_ggml_row_bytes(uint32_t id, uint64_t n, uint64_t *bytes, fdl_err *err) {
  const fdl_ggml_type_info *t = fdl_ggml_type(id);
  if (!t) return fdl_fail(err, FDL_UNSUPPORTED, "ggml type id %" PRIu32 " is not a ggml type", id);
  if (n % t->block_elems != 0)
    return fdl_fail(err, FDL_BOUNDS,
                    "ggml type %s (%" PRIu32 "): %" PRIu64
                    " values are not a whole number of %" PRIu32 "-value blocks",
                    t->name, id, n, t->block_elems);
  uint64_t blocks = n / t->block_elems;
  if (blocks > UINT64_MAX / t->block_bytes)
    return fdl_fail(err, FDL_BOUNDS,
                    "ggml type %s (%" PRIu32 "): %" PRIu64
                    " values take more than 2^64 bytes (%" PRIu32 " bytes a block)",
                    t->name, id, n, t->block_bytes);
  *bytes = blocks * t->block_bytes;
  return FDL_OK;
}

bool fdl_ggml_is_float(uint32_t id) {
  return id == 0 || id == 1 || id == 30; /* GGML_TYPE_F32, F16, BF16 */
}
