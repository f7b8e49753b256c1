/* vocab.c - the name lists of fidelis/vocab.h, expanded from its tables. */
#include <string.h>

#include "fidelis/vocab.h"

const char *const fdl_role_names[] = {FDL_ROLES(FDL_VOCAB_NAME_) NULL};
const char *const fdl_form_names[] = {FDL_FORMS(FDL_VOCAB_NAME_) NULL};
const char *const fdl_lane_names[] = {FDL_LANES(FDL_VOCAB_NAME_) NULL};
const char *const fdl_capture_dtype_names[] = {FDL_CAPTURE_DTYPES(FDL_VOCAB_NAME_) NULL};
const char *const fdl_head_dtype_names[] = {FDL_HEAD_DTYPES(FDL_VOCAB_NAME_) NULL};
const char *const fdl_evidence_names[] = {FDL_EVIDENCE(FDL_VOCAB_NAME_) NULL};
const char *const fdl_content_evidence_names[] = {FDL_CONTENT_EVIDENCE(FDL_VOCAB_NAME_) NULL};
const char *const fdl_tensor_class_names[] = {FDL_TENSOR_CLASSES(FDL_VOCAB_NAME_) NULL};

int fdl_vocab_find(const char *const *names, const char *s) {
  for (int i = 0; s && names[i]; i++)
    if (!strcmp(names[i], s)) return i;
  return -1;
}
