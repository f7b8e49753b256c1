/* base/quote.h - the one way a message shows bytes that came from a user or a file.
 *
 * Paths, ids, keys, values and tensor names reach messages from untrusted files, and those
 * messages end up on terminals and inside JSON reports. A quote made here is therefore always
 * valid UTF-8, holds no byte a terminal would act on, and is bounded:
 *
 *   'abc'                      the whole value
 *   'ab\x1b[2Jc\\d\'e'         control bytes and invalid UTF-8 as \xNN, backslash and quote doubled
 *   'caf\u0085\ufeff'          C1 controls and invisible/bidi format characters as \uXXXX
 *   'a long pat…' (312 bytes)  cut at a character boundary, with an ellipsis and the full length
 *
 * \t, \n and \r are written as such. Nothing is ever cut inside a UTF-8 sequence or an escape. */
#ifndef FIDELIS_QUOTE_H
#define FIDELIS_QUOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fidelis/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A buffer of this size shows about 190 bytes of plain input: enough to recognise a value
 * without letting one finding fill a screen. */
#define FDL_QUOTE_CAP 256
/* A buffer this size always holds the ellipsis and the length of any input; a smaller one
 * holds what fits, down to "". */
#define FDL_QUOTE_MIN 40

/* Writes the quote of the n bytes at s (NUL bytes included) into out, at most cap bytes with
 * the terminating NUL, and returns out. s == NULL shows as (none). */
const char *fdl_quote(const char *s, size_t n, char *out, size_t cap);
/* fdl_quote of a NUL-terminated string. */
const char *fdl_quote_str(const char *s, char *out, size_t cap);

/* The same escaping without the quote marks, and leaving backslash and ' alone: for whole
 * lines that are already made of quotes (a finding's message, a location) and only need to be
 * made safe for a terminal or a JSON string. Bounded like fdl_quote ("…" + " (N bytes)"). */
const char *fdl_quote_text(const char *s, size_t n, char *out, size_t cap);

/* True when the n bytes at s hold a C0 control (NUL included), DEL, a C1 control or an invalid
 * UTF-8 sequence: what an identifier may never contain. */
bool fdl_quote_has_control(const char *s, size_t n);

/* True when the n bytes at s are valid UTF-8 (no overlongs, surrogates or code points past
 * U+10FFFF): exactly what a JSON string accepts. */
bool fdl_utf8_valid(const char *s, size_t n);

/* Length (1 to 4) of the UTF-8 sequence at p[0..left) and its code point in *cp (cp may be NULL),
 * or 0 when it is not valid UTF-8 (overlong forms, surrogates, code points past U+10FFFF, a cut
 * or empty sequence). The one decoder: quoting, the JSON writer, the validity check, GGUF strings
 * and the tokenizer all read text through it. */
size_t fdl_utf8_decode(const unsigned char *p, size_t left, uint32_t *cp);

#ifdef __cplusplus
}
#endif
#endif
