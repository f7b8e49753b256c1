/* model_tokenizer.c - the byte-level tokenizer and chat template of the tiny presets.
 *
 * The tiny models' token ids are bytes (0..255) plus sixteen special tokens (256..271), the
 * panel's convention. Writing that down as a Hugging Face tokenizer makes the directory a
 * complete model: `tokenizers` can encode and decode with it, and Kiln's model fingerprint
 * (which hashes tokenizer.json and the chat template, `fidelis divergence --model-dir`) has
 * what it needs. The byte alphabet is GPT-2's ByteLevel mapping: printable Latin-1 bytes stand
 * for themselves, every other byte b for the code point 256 + (its rank among them), so that no
 * vocabulary entry is a control character or a space. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/model_internal.h"
#include "json/json.h"
#include "base/path.h"

#define BYTES 256
#define SPECIALS 16

static bool printable(unsigned b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* The UTF-8 text of byte b's stand-in code point (< 0x200, so at most 2 bytes). */
static void byte_char(unsigned b, unsigned rank, char out[3]) {
  unsigned cp = printable(b) ? b : 256 + rank;
  if (cp < 0x80) {
    out[0] = (char)cp;
    out[1] = '\0';
  } else {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    out[2] = '\0';
  }
}

static void special_name(unsigned i, char *out, size_t cap) {
  static const char *const named[] = {"<|bos|>", "<|eos|>", "<|im_start|>", "<|im_end|>"};
  if (i < 4)
    snprintf(out, cap, "%s", named[i]);
  else
    snprintf(out, cap, "<|reserved_%u|>", i - 4);
}

static json_t *tokenizer_json(void) {
  json_t *vocab = json_object(), *added = json_array();
  unsigned rank = 0;
  int bad = 0;
  for (unsigned b = 0; b < BYTES; b++) {
    char c[3];
    byte_char(b, rank, c);
    if (!printable(b)) rank++;
    bad |= json_object_set_new(vocab, c, json_integer(b));
  }
  for (unsigned i = 0; i < SPECIALS; i++) {
    char name[32];
    special_name(i, name, sizeof name);
    bad |= json_object_set_new(vocab, name, json_integer(BYTES + i));
    bad |= json_array_append_new(added, json_pack("{s:I, s:s, s:b, s:b, s:b, s:b, s:b}", "id",
                                                  (json_int_t)(BYTES + i), "content", name,
                                                  "single_word", 0, "lstrip", 0, "rstrip", 0,
                                                  "normalized", 0, "special", 1));
  }
  if (bad) { /* memory ran out: a vocabulary or a list of specials cut short is never written */
    json_decref(vocab);
    json_decref(added);
    return NULL;
  }
  json_t *level = json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0,
                            "trim_offsets", 1, "use_regex", 1);
  return json_pack("{s:s, s:n, s:n, s:o, s:n, s:O, s:n, s:o, s:{s:s, s:n, s:n, s:n, s:n, s:b, "
                   "s:b, s:b, s:o, s:[]}}",
                   "version", "1.0", "truncation", "padding", "added_tokens", added, "normalizer",
                   "pre_tokenizer", level, "post_processor", "decoder", level, "model", "type",
                   "BPE", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
                   "fuse_unk", 0, "byte_fallback", 0, "ignore_merges", 0, "vocab", vocab, "merges");
}

/* ChatML over the special tokens 258/259. */
static const char CHAT_TEMPLATE[] =
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

fdl_status fdl_model_write_tokenizer(const char *dir, fdl_err *err) {
  fdl_status s = fdl_model_write_json(dir, "tokenizer.json", tokenizer_json(), err);
  if (s == FDL_OK)
    s = fdl_model_write_json(dir, "tokenizer_config.json",
                             json_pack("{s:s, s:s, s:s, s:I, s:b}", "tokenizer_class",
                                       "PreTrainedTokenizerFast", "bos_token", "<|bos|>",
                                       "eos_token", "<|eos|>", "model_max_length", (json_int_t)4096,
                                       "clean_up_tokenization_spaces", 0),
                             err);
  char *jp = s == FDL_OK ? fdl_path_join(dir, "chat_template.jinja") : NULL;
  if (s == FDL_OK)
    s = jp ? fdl_write_file(jp, CHAT_TEMPLATE, sizeof CHAT_TEMPLATE - 1, err)
           : fdl_fail(err, FDL_NOMEM, "out of memory");
  free(jp);
  return s;
}
