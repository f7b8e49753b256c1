/* quote.c - bounded, escaped quotes of untrusted bytes for messages (base/quote.h).
 *
 * The input is cut into units, each a whole UTF-8 character or one byte that is not part of a
 * valid sequence, and each unit is rendered as itself or as an escape. Truncation only ever
 * drops whole units, which is what keeps the result valid UTF-8 however short the buffer. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/quote.h"

#define ELLIPSIS "\xe2\x80\xa6"

size_t fdl_utf8_decode(const unsigned char *p, size_t left, uint32_t *cp) {
  uint32_t unused;
  if (!cp) cp = &unused;
  if (left == 0) return 0;
  unsigned char c = p[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
    *cp = c & 0x1fu;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    *cp = c & 0x0fu;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    *cp = c & 0x07u;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (left < len) return 0;
  for (size_t i = 1; i < len; i++) {
    unsigned char b = p[i];
    /* Only the second byte has the narrowed range; the rest are plain continuations. */
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf)) return 0;
    *cp = (*cp << 6) | (b & 0x3fu);
  }
  return len;
}

/* Code points that are valid but either act on a terminal (C1) or are invisible and can reorder
 * or hide what is shown (zero-width, bidi controls, the BOM). */
static bool shown_as_escape(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || (cp >= 0x200b && cp <= 0x200f) ||
         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2064) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb);
}

/* Renders the unit at p into u (at most 6 bytes) and returns how many input bytes it took. */
static size_t unit(const unsigned char *p, size_t left, bool quoted, char *u, size_t *ulen) {
  static const char HEX[] = "0123456789abcdef";
  uint32_t cp = 0;
  size_t n = fdl_utf8_decode(p, left, &cp);
  if (n == 0 || cp < 0x20 || cp == 0x7f) {
    unsigned char c = p[0];
    const char *named = c == '\t' ? "\\t" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : NULL;
    if (named) {
      memcpy(u, named, 2);
      *ulen = 2;
    } else {
      u[0] = '\\';
      u[1] = 'x';
      u[2] = HEX[c >> 4];
      u[3] = HEX[c & 15];
      *ulen = 4;
    }
    return 1;
  }
  if (shown_as_escape(cp)) {
    u[0] = '\\';
    u[1] = 'u';
    for (int k = 0; k < 4; k++) u[2 + k] = HEX[(cp >> (12 - 4 * k)) & 15];
    *ulen = 6;
    return n;
  }
  if (quoted && (cp == '\\' || cp == '\'')) {
    u[0] = '\\';
    u[1] = (char)cp;
    *ulen = 2;
    return 1;
  }
  memcpy(u, p, n);
  *ulen = n;
  return n;
}

static const char *render(const char *s, size_t n, char *out, size_t cap, bool quoted) {
  if (cap == 0) return out;
  out[0] = '\0';
  if (!s) {
    if (cap > sizeof "(none)" - 1) memcpy(out, "(none)", sizeof "(none)");
    return out;
  }
  const unsigned char *p = (const unsigned char *)s;
  char u[8];
  size_t ulen, whole = 0;
  for (size_t i = 0; i < n;) {
    i += unit(p + i, n - i, quoted, u, &ulen);
    whole += ulen;
  }
  size_t marks = quoted ? 2 : 0;
  bool cut = marks + whole + 1 > cap;
  char tail[64];
  int tn = cut ? snprintf(tail, sizeof tail, "%s%s (%zu bytes)", ELLIPSIS, quoted ? "'" : "", n)
               : snprintf(tail, sizeof tail, "%s", quoted ? "'" : "");
  if (tn < 0 || (size_t)tn + (quoted ? 1 : 0) + 1 > cap) return out;
  size_t o = 0;
  if (quoted) out[o++] = '\'';
  for (size_t i = 0; i < n;) {
    size_t took = unit(p + i, n - i, quoted, u, &ulen);
    if (o + ulen + (size_t)tn + 1 > cap) break;
    memcpy(out + o, u, ulen);
    o += ulen;
    i += took;
  }
  memcpy(out + o, tail, (size_t)tn + 1);
  return out;
}

const char *fdl_quote(const char *s, size_t n, char *out, size_t cap) {
  return render(s, n, out, cap, true);
}

const char *fdl_quote_str(const char *s, char *out, size_t cap) {
  return render(s, s ? strlen(s) : 0, out, cap, true);
}

const char *fdl_quote_text(const char *s, size_t n, char *out, size_t cap) {
  return render(s, n, out, cap, false);
}

bool fdl_quote_has_control(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    uint32_t cp = 0;
    size_t k = fdl_utf8_decode(p + i, n - i, &cp);
    if (k == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)) return true;
    i += k;
  }
  return false;
}

bool fdl_utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    uint32_t cp = 0;
    size_t k = fdl_utf8_decode(p + i, n - i, &cp);
    if (k == 0) return false;
    i += k;
  }
  return true;
}
