/* http.c - one Hub request through libcurl, redirects judged hop by hop.
 *
 * libcurl never follows a redirect here: each Location is resolved against the URL that gave
 * it and checked by the host policy (policy.c) before the next connection, so a redirect to a
 * host the Hub does not use is refused without contacting it, and the token header is set
 * anew for each hop, only towards the endpoint's origin. Only http and https are spoken, and no
 * content encoding is asked for, so the bytes received are the bytes hashed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "base/sys.h"
#include "fidelis/status.h"
#include "base/quote.h"
#include "hub/hub_internal.h"

#define HTTP_MAX_HOPS 8
/* The most bytes of an error page read (and dropped) before the transfer stops. */
#define HTTP_DROP_MAX ((uint64_t)1 << 20)
#define HTTP_URL_MAX 8192

struct fdl_hub_http {
  CURL *c;
  fdl_hub_origin ep;
  char *auth; /* "Authorization: Bearer ..." or NULL; a credential (fdl_hub_token_free) */
  char errbuf[CURL_ERROR_SIZE];
};

typedef struct {
  fdl_hub_reply *rep;
  int hop;
  long status; /* of the answer being read */
  char location[HTTP_URL_MAX];
  fdl_hub_sink sink;
  void *arg;
  uint64_t dropped;
  bool sink_stopped;
  bool linked; /* X-Linked-Size seen: it, not Content-Length, is the file's size */
} req;

fdl_status fdl_hub_http_open(const char *endpoint, const char *token, fdl_hub_http **out,
                             fdl_err *err) {
  *out = NULL;
  fdl_hub_http *h = fdl_calloc(1, sizeof *h);
  if (!h) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_status s = fdl_hub_origin_of(endpoint, &h->ep, err);
  if (s != FDL_OK) {
    free(h);
    return fdl_err_prefix(err, "the Hub endpoint");
  }
  if (token) {
    size_t n = strlen(token) + sizeof "Authorization: Bearer ";
    if (!(h->auth = fdl_malloc(n))) {
      free(h);
      return fdl_fail(err, FDL_NOMEM, "out of memory");
    }
    snprintf(h->auth, n, "Authorization: Bearer %s", token);
  }
  if (!(h->c = curl_easy_init())) {
    fdl_hub_token_free(h->auth);
    free(h);
    return fdl_fail(err, FDL_NOMEM, "cannot start libcurl");
  }
  *out = h;
  return FDL_OK;
}

void fdl_hub_http_close(fdl_hub_http *h) {
  if (!h) return;
  curl_easy_cleanup(h->c);
  fdl_hub_token_free(h->auth);
  free(h);
}

bool fdl_hub_http_at_endpoint(const fdl_hub_http *h, const char *url) {
  fdl_hub_origin o;
  return fdl_hub_origin_of(url, &o, NULL) == FDL_OK && fdl_hub_same_origin(&o, &h->ep);
}

char *fdl_hub_http_escape(fdl_hub_http *h, const char *s) {
  char *e = curl_easy_escape(h->c, s, 0);
  char *r = e ? fdl_strdup(e) : NULL;
  curl_free(e);
  return r;
}

/* ---- answers ------------------------------------------------------------------------------ */

static bool parse_u64(const char *s, size_t n, uint64_t *v) {
  uint64_t x = 0;
  if (n == 0 || n > 19) return false;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    x = x * 10 + (uint64_t)(s[i] - '0');
  }
  *v = x;
  return true;
}

/* An ETag's value without quotes or the weak marker, when it fits. */
static void take_etag(char *dst, size_t cap, const char *v, size_t n) {
  if (n >= 2 && v[0] == 'W' && v[1] == '/') v += 2, n -= 2;
  if (n >= 2 && v[0] == '"' && v[n - 1] == '"') v++, n -= 2;
  if (n < cap) {
    memcpy(dst, v, n);
    dst[n] = '\0';
  }
}

static size_t on_header(char *line, size_t size, size_t nitems, void *arg) {
  req *r = arg;
  size_t n = size * nitems, len = n;
  while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
  if (len >= 5 && !strncmp(line, "HTTP/", 5)) { /* a new answer */
    const char *sp = memchr(line, ' ', len);
    uint64_t code = 0;
    r->status =
        sp && (size_t)(line + len - sp) >= 4 && parse_u64(sp + 1, 3, &code) ? (long)code : 0;
    r->location[0] = '\0';
    r->rep->has_range = false;
    return n;
  }
  const char *colon = memchr(line, ':', len);
  if (!colon) return n;
  size_t kn = (size_t)(colon - line);
  const char *v = colon + 1;
  size_t vn = len - kn - 1;
  while (vn && (*v == ' ' || *v == '\t')) v++, vn--;
  while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t')) vn--;
#define IS(name) (kn == sizeof(name) - 1 && !strncasecmp(line, name, kn))
  fdl_hub_reply *rep = r->rep;
  bool first = r->hop == 0;
  if (IS("Location")) {
    if (vn < sizeof r->location) {
      memcpy(r->location, v, vn);
      r->location[vn] = '\0';
    }
  } else if (IS("Retry-After")) {
    uint64_t s = 0;
    if (parse_u64(v, vn, &s)) rep->retry_after = s > 60 ? 60 : (unsigned)s;
  } else if (IS("Content-Range")) { /* "bytes START-END/TOTAL" */
    uint64_t start = 0;
    size_t dn = vn > 6 ? strcspn(v + 6, "-") : 0;
    if (vn > 6 && !strncasecmp(v, "bytes ", 6) && parse_u64(v + 6, dn, &start)) {
      rep->range_start = start;
      rep->has_range = true;
    }
  } else if (first && IS("X-Repo-Commit")) {
    if (vn == FDL_HUB_COMMIT_LEN) {
      memcpy(rep->repo_commit, v, vn);
      rep->repo_commit[vn] = '\0';
    }
  } else if (first && IS("X-Linked-Etag")) {
    take_etag(rep->etag, sizeof rep->etag, v, vn);
  } else if (first && IS("ETag")) {
    if (!rep->etag[0]) take_etag(rep->etag, sizeof rep->etag, v, vn);
  } else if (first && IS("X-Linked-Size")) {
    r->linked = rep->has_size = parse_u64(v, vn, &rep->size);
  } else if (first && IS("Content-Length") && !r->linked && r->status / 100 == 2) {
    /* X-Linked-Size, when it comes (LFS), names the file; Content-Length only its own answer */
    rep->has_size = parse_u64(v, vn, &rep->size);
  }
#undef IS
  return n;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg) {
  req *r = arg;
  size_t n = size * nmemb;
  if (r->status >= 200 && r->status < 300) {
    r->rep->status = r->status;
    if (r->sink && !r->sink(r->arg, r->rep, p, n)) {
      r->sink_stopped = true;
      return 0;
    }
    return n;
  }
  r->dropped += n;
  return r->dropped > HTTP_DROP_MAX ? 0 : n;
}

/* ---- one request -------------------------------------------------------------------------- */

static bool transport_retryable(CURLcode cc) {
  switch (cc) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_PARTIAL_FILE:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
  case CURLE_SSL_CONNECT_ERROR:
    return true;
  default:
    return false;
  }
}

/* url resolved against base (a Location may be relative) into out. */
static fdl_status resolve_location(const char *base, const char *loc, char *out, size_t cap,
                                   fdl_err *err) {
  CURLU *u = curl_url();
  char *full = NULL;
  fdl_status s = FDL_OK;
  if (!u) return fdl_fail(err, FDL_NOMEM, "out of memory");
  if (curl_url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK ||
      curl_url_set(u, CURLUPART_URL, loc, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK || strlen(full) >= cap)
    s = fdl_fail(err, FDL_PARSE, "a redirect to '%.200s' that is not a usable URL", loc);
  else
    memcpy(out, full, strlen(full) + 1);
  curl_free(full);
  curl_url_cleanup(u);
  return s;
}

static fdl_status set_options(fdl_hub_http *h, const char *url, bool head, uint64_t from, req *r,
                              struct curl_slist **hdrs, fdl_err *err) {
  CURL *c = h->c;
  char range[48];
  fdl_hub_origin o;
  fdl_status s = fdl_hub_origin_of(url, &o, err);
  if (s != FDL_OK) return s;
  curl_easy_reset(c);
  *hdrs = NULL;
  /* the token only towards the endpoint's own origin */
  if (h->auth && fdl_hub_same_origin(&o, &h->ep) && !(*hdrs = curl_slist_append(NULL, h->auth)))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  snprintf(range, sizeof range, "%llu-", (unsigned long long)from);
  char ua[64];
  snprintf(ua, sizeof ua, "fidelis/%s", fdl_version());
  CURLcode cc = CURLE_OK;
#define SET(opt, v)                                                                                \
  if (cc == CURLE_OK) cc = curl_easy_setopt(c, opt, v)
  SET(CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
  SET(CURLOPT_PROTOCOLS_STR, "http,https");
#else
  SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  SET(CURLOPT_FOLLOWLOCATION, 0L);
  SET(CURLOPT_NOSIGNAL, 1L);
  SET(CURLOPT_CONNECTTIMEOUT, 30L);
  SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
  SET(CURLOPT_LOW_SPEED_TIME, 60L);
  SET(CURLOPT_USERAGENT, ua);
  SET(CURLOPT_ERRORBUFFER, h->errbuf);
  SET(CURLOPT_HEADERFUNCTION, on_header);
  SET(CURLOPT_HEADERDATA, r);
  SET(CURLOPT_WRITEFUNCTION, on_body);
  SET(CURLOPT_WRITEDATA, r);
  if (*hdrs) SET(CURLOPT_HTTPHEADER, *hdrs);
  if (head) SET(CURLOPT_NOBODY, 1L);
  if (from) SET(CURLOPT_RANGE, range);
#undef SET
  if (cc != CURLE_OK)
    return fdl_fail(err, FDL_UNSUPPORTED, "libcurl refused an option: %s", curl_easy_strerror(cc));
  return FDL_OK;
}

fdl_status fdl_hub_http_get(fdl_hub_http *h, const char *url, bool head, bool follow, uint64_t from,
                            fdl_hub_sink sink, void *arg, fdl_hub_reply *rep, fdl_err *err) {
  memset(rep, 0, sizeof *rep);
  req r = {.rep = rep, .sink = sink, .arg = arg};
  char cur[HTTP_URL_MAX], next[HTTP_URL_MAX], q[FDL_QUOTE_CAP];
  if (strlen(url) >= sizeof cur) return fdl_fail(err, FDL_BOUNDS, "URL too long");
  memcpy(cur, url, strlen(url) + 1);
  for (r.hop = 0;; r.hop++) {
    struct curl_slist *hdrs = NULL;
    r.status = 0;
    r.dropped = 0;
    h->errbuf[0] = '\0';
    fdl_status s = set_options(h, cur, head, from, &r, &hdrs, err);
    CURLcode cc = s == FDL_OK ? curl_easy_perform(h->c) : CURLE_OK;
    curl_slist_free_all(hdrs);
    if (s != FDL_OK) return s;
    rep->status = r.status;
    if (r.sink_stopped)
      return fdl_fail(err, FDL_IO, "%s: the transfer was stopped", fdl_quote_str(cur, q, sizeof q));
    if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && r.dropped > HTTP_DROP_MAX)) {
      rep->retryable = transport_retryable(cc);
      return fdl_fail(err, FDL_IO, "%s: %s", fdl_quote_str(cur, q, sizeof q),
                      h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc));
    }
    bool redirect =
        r.status == 301 || r.status == 302 || r.status == 303 || r.status == 307 || r.status == 308;
    if (!redirect || !follow) {
      rep->retryable = r.status == 429 || (r.status >= 500 && r.status <= 599);
      if (redirect && r.location[0] &&
          resolve_location(cur, r.location, next, sizeof next, NULL) == FDL_OK &&
          strlen(next) < sizeof rep->location)
        memcpy(rep->location, next, strlen(next) + 1);
      return FDL_OK;
    }
    if (!r.location[0])
      return fdl_fail(err, FDL_PARSE, "%s: a redirect (%ld) without a Location",
                      fdl_quote_str(cur, q, sizeof q), r.status);
    if (r.hop + 1 >= HTTP_MAX_HOPS)
      return fdl_fail(err, FDL_IO, "%s: more than %d redirects", url, HTTP_MAX_HOPS);
    if ((s = resolve_location(cur, r.location, next, sizeof next, err)) != FDL_OK) return s;
    fdl_hub_origin to;
    if ((s = fdl_hub_origin_of(next, &to, err)) != FDL_OK) return s;
    if (!fdl_hub_host_allowed(&h->ep, &to))
      return fdl_fail(err, FDL_PATH,
                      "%s redirects to %s (host %s), which is neither the endpoint's origin nor "
                      "a Hub host over https: refused, nothing was sent there (docs/HUB.md, "
                      "\"Hosts\")",
                      fdl_quote_str(cur, q, sizeof q), next, to.host);
    memcpy(cur, next, strlen(next) + 1);
  }
}
