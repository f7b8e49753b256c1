/* bytes.c - GPT-2's byte-level alphabet and the UTF-8 rules the tokenizer applies.
 *
 * Byte-level BPE gives every byte a printable stand-in code point: the bytes '!'..'~',
 * 0xA1..0xAC and 0xAE..0xFF stand for themselves; every other byte b, in increasing order, for
 * 256, 257, ... (so 0x20, the space, is U+0120 'Ġ'). Vocabulary files write tokens in that
 * alphabet; fidelis decodes them to raw bytes once, at load, and works on bytes. */
#include <string.h>

#include "tokenizer/internal.h"

static bool printable(unsigned b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

int fdl_tk_cp_byte(uint32_t cp) {
  if (cp < 256) return printable(cp) ? (int)cp : -1;
  if (cp >= 256 + 68) return -1; /* 68 bytes are not printable */
  unsigned rank = cp - 256;
  for (unsigned c = 0; c < 256; c++)
    if (!printable(c) && rank-- == 0) return (int)c;
  return -1;
}

size_t fdl_tk_utf8_put(uint32_t cp, char *o) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | cp >> 6);
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | cp >> 12);
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | cp >> 18);
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

size_t fdl_utf8_invalid_at(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    if (u[i] < 0x80) {
      i++;
      continue;
    }
    size_t k = fdl_utf8_decode(u + i, n - i, NULL);
    if (!k) return i;
    i += k;
  }
  return n;
}

bool fdl_tk_unbyte(const char *p, size_t len, char *out, size_t *out_len) {
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t k = fdl_utf8_decode((const unsigned char *)p + i, len - i, &cp);
    int b = k ? fdl_tk_cp_byte(cp) : -1;
    if (b < 0) return false;
    out[o++] = (char)b;
    i += k;
  }
  *out_len = o;
  return true;
}
