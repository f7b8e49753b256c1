/* policy.c - where a request may go, and which requests carry the token.
 *
 * The endpoint (https://huggingface.co, or a mirror given by --endpoint or HF_ENDPOINT) is the
 * one origin that gets the token. A redirect is followed only to the endpoint's own origin or,
 * over https, to the Hub's hosts (huggingface.co, hf.co and their subdomains: the CDNs
 * cdn-lfs.huggingface.co, cdn-lfs-us-1.hf.co, cas-bridge.xethub.hf.co, ...), never from https
 * down to http, and never with the token. Everything else is refused before any connection
 * (docs/HUB.md, "Hosts"). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "hub/hub_internal.h"

fdl_status fdl_hub_origin_of(const char *url, fdl_hub_origin *o, fdl_err *err) {
  memset(o, 0, sizeof *o);
  CURLU *u = curl_url();
  if (!u) return fdl_fail(err, FDL_NOMEM, "out of memory");
  char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL;
  fdl_status s = FDL_OK;
  if (strlen(url) > 8192 || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
    s = fdl_fail(err, FDL_INVALID, "'%.200s': not an absolute http(s) URL", url);
  else if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))
    s = fdl_fail(err, FDL_INVALID, "'%.200s': only http and https are used", url);
  else if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK)
    s = fdl_fail(err, FDL_INVALID, "'%.200s': a URL with a user name is refused", url);
  else if (strlen(host) >= sizeof o->host || !*host)
    s = fdl_fail(err, FDL_INVALID, "'%.200s': the host name is empty or too long", url);
  if (s == FDL_OK) {
    o->https = !strcasecmp(scheme, "https");
    for (size_t i = 0; host[i]; i++)
      o->host[i] = (char)(host[i] >= 'A' && host[i] <= 'Z' ? host[i] - 'A' + 'a' : host[i]);
    o->port = (unsigned)strtoul(port, NULL, 10);
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_free(user);
  curl_url_cleanup(u);
  return s;
}

bool fdl_hub_same_origin(const fdl_hub_origin *a, const fdl_hub_origin *b) {
  return a->https == b->https && a->port == b->port && !strcmp(a->host, b->host);
}

/* host is d or a subdomain of d. */
static bool under(const char *host, const char *d) {
  size_t n = strlen(host), k = strlen(d);
  return !strcmp(host, d) || (n > k + 1 && host[n - k - 1] == '.' && !strcmp(host + n - k, d));
}

bool fdl_hub_host_allowed(const fdl_hub_origin *ep, const fdl_hub_origin *target) {
  if (ep->https && !target->https) return false;
  if (fdl_hub_same_origin(ep, target)) return true;
  return target->https && target->port == 443 &&
         (under(target->host, "huggingface.co") || under(target->host, "hf.co"));
}
