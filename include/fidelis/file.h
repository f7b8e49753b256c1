/* fidelis/file.h - the read-only view of a whole file that two public readers hold: fdl_gguf
 * and fdl_kld carry one as their map field.
 *
 * Public by decision (issue 25, two API tiers): those structs are caller-owned, so the type
 * they embed is public; a caller reads data and size and never touches the rest. Making both
 * readers opaque would change two APIs to hand out pointers for no gain. The calls that map,
 * read and write files (fdl_map_file, fdl_out_*, fdl_stage_*, ...) are base utilities of the
 * private tier, src/base/fs.h: a library user opens a file through its reader (fdl_gguf_open,
 * fdl_safetensors_open, ...) and closes it there. */
#ifndef FIDELIS_FILE_H
#define FIDELIS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A read-only view of a whole file. */
typedef struct {
  const uint8_t *data; /* never NULL after a successful map */
  size_t size;
  void *priv_;  /* private: the mapping or the copy, or NULL for an empty file */
  bool copied_; /* private: priv_ is a heap copy, not a mapping */
} fdl_map;

#endif
