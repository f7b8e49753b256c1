/* test_digest.c - SHA-256 known answers, file and range hashing, the §5.1/§5.2 digest examples,
 * checksums.txt parsing and formatting, and both seal recipes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fidelis/fidelis.h"
#include "digest/seal_json.h"
#include "json/json.h"

static void expect_hex(const fdl_sha256 *d, const char *want) {
  char hex[FDL_SHA256_HEX_LEN + 1];
  fdl_sha256_hex(d, hex);
  assert_string_equal(hex, want);
}

static void expect_buf(const char *s, const char *want) {
  fdl_sha256 d;
  assert_int_equal(fdl_sha256_buf(s, strlen(s), &d, NULL), FDL_OK);
  expect_hex(&d, want);
}

static void test_known_answers(void **state) {
  (void)state;
  expect_buf("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  expect_buf("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  fdl_sha256 d;
  assert_int_equal(fdl_sha256_buf(NULL, 0, &d, NULL), FDL_OK);
  expect_hex(&d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* One million 'a' fed in chunk sizes that straddle the 64-byte block boundary. */
static void test_streaming_million_a(void **state) {
  (void)state;
  static const size_t chunks[] = {1, 63, 64, 65, 127, 1000, 4093, 65537};
  char *a = malloc(1000000);
  assert_non_null(a);
  memset(a, 'a', 1000000);
  fdl_sha256_ctx *ctx = NULL;
  fdl_err err;
  assert_int_equal(fdl_sha256_new(&ctx, &err), FDL_OK);
  for (int round = 0; round < 2; round++) { /* the second round proves final() resets */
    size_t done = 0, k = 0;
    while (done < 1000000) {
      size_t n = chunks[k++ % (sizeof chunks / sizeof chunks[0])];
      if (n > 1000000 - done) n = 1000000 - done;
      assert_int_equal(fdl_sha256_update(ctx, a + done, n, &err), FDL_OK);
      done += n;
    }
    fdl_sha256 d;
    assert_int_equal(fdl_sha256_final(ctx, &d, &err), FDL_OK);
    expect_hex(&d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }
  fdl_sha256_free(ctx);
  fdl_sha256_free(NULL);
  free(a);
}

/* fdl_sha256_update2 against libcrypto's one-shot digest of each stream: streams of every
 * alignment (the two start 0-63 bytes into their blocks, as a file digest and a tensor's content
 * digest do), chunk sizes below, at and above a block, streams of different lengths. On a CPU
 * with the SHA extensions this runs the interleaved kernel (digest/sha256x2.c). */
static void test_update2_matches(void **state) {
  (void)state;
  enum { N = 1 << 18 };
  uint8_t *data = malloc(N);
  assert_non_null(data);
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < N; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    data[i] = (uint8_t)x;
  }
  static const size_t chunks[] = {1, 63, 64, 65, 4096, 65536 + 17};
  for (int t = 0; t < 60; t++) {
    size_t oa = (size_t)t % 64, ob = (size_t)(t * 37) % 97, la = N - oa - (size_t)t * 1000,
           lb = N / 2 + (size_t)t * 531, ca = chunks[t % 6], cb = chunks[(t / 6) % 6];
    fdl_sha256_ctx *a = NULL, *b = NULL;
    fdl_err err;
    assert_int_equal(fdl_sha256_new(&a, &err), FDL_OK);
    assert_int_equal(fdl_sha256_new(&b, &err), FDL_OK);
    for (size_t da = 0, db = 0; da < la || db < lb;) {
      size_t na = la - da < ca ? la - da : ca, nb = lb - db < cb ? lb - db : cb;
      assert_int_equal(fdl_sha256_update2(a, data + oa + da, na, b, data + ob + db, nb, &err),
                       FDL_OK);
      da += na, db += nb;
    }
    fdl_sha256 ga, gb, wa, wb;
    assert_int_equal(fdl_sha256_final(a, &ga, &err), FDL_OK);
    assert_int_equal(fdl_sha256_final(b, &gb, &err), FDL_OK);
    assert_int_equal(fdl_sha256_buf(data + oa, la, &wa, &err), FDL_OK);
    assert_int_equal(fdl_sha256_buf(data + ob, lb, &wb, &err), FDL_OK);
    assert_memory_equal(ga.bytes, wa.bytes, sizeof wa.bytes);
    assert_memory_equal(gb.bytes, wb.bytes, sizeof wb.bytes);
    fdl_sha256_free(a);
    fdl_sha256_free(b);
  }
  free(data);
}

static void test_hex_round_trip(void **state) {
  (void)state;
  const char *h = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  fdl_sha256 d;
  assert_true(fdl_sha256_from_hex(h, 64, &d));
  expect_hex(&d, h);
  assert_false(fdl_sha256_from_hex(h, 63, &d));
  assert_false(fdl_sha256_from_hex(
      "BA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", 64, &d));
  assert_false(fdl_sha256_from_hex(
      "g a7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015", 64, &d));
}

/* Examples from FIDELITY-DATASET.md §5.1 and §5.2. */
/* The one hex check every layer uses: lowercase only, exact length for a digest. */
static void test_hex_checks(void **state) {
  (void)state;
  const char *h = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  assert_true(fdl_sha256_hex_ok(h, 64));
  assert_false(fdl_sha256_hex_ok(h, 63));
  assert_false(fdl_sha256_hex_ok(NULL, 64));
  assert_false(
      fdl_sha256_hex_ok("BA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", 64));
  assert_true(fdl_hex_lower("0123456789abcdef", 16));
  assert_true(fdl_hex_lower("", 0));
  assert_false(fdl_hex_lower("0123456789abcdeg", 16));
  assert_false(fdl_hex_lower("A", 1));
  assert_false(fdl_hex_lower("ab\0d", 4));
}

static void test_spec_examples(void **state) {
  (void)state;
  expect_buf("[1,2,3]", "a615eeaee21de5179de080de8c3052c8da901138406ba71c38c032845f7d54f4");
  expect_buf("[1, 2, 3]", "a36b1f2c3f84522dd1005145646617d7054c0851e97c72a039c0bdfac9fa07f3");
  char lines[2 * 67 + 8];
  snprintf(lines, sizeof lines, "0:%.64s\n1:%.64s",
           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
           "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
  expect_buf(lines, "6977533d899405a6aaea44e7cde3c93fd93c29b467d775fef21e15539d34ee4f");
}

static char *temp_file(const void *data, size_t n) {
  const char *dir = getenv("TMPDIR");
  char *path = malloc(4096);
  assert_non_null(path);
  snprintf(path, 4096, "%s/fdl-digest-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, data, n), (ssize_t)n);
  close(fd);
  return path;
}

static void test_file_and_range(void **state) {
  (void)state;
  size_t n = 3 * 1024 * 1024 + 17; /* more than one read chunk, not a multiple of it */
  unsigned char *data = malloc(n);
  assert_non_null(data);
  for (size_t i = 0; i < n; i++) data[i] = (unsigned char)(i * 131 + 7);
  char *path = temp_file(data, n);
  fdl_sha256 want, got;
  uint64_t size = 0;
  fdl_err err;
  assert_int_equal(fdl_sha256_buf(data, n, &want, NULL), FDL_OK);
  assert_int_equal(fdl_sha256_file(path, &got, &size, &err), FDL_OK);
  assert_memory_equal(want.bytes, got.bytes, 32);
  assert_int_equal(size, n);

  uint64_t off = 12345, len = 2 * 1024 * 1024 + 3;
  assert_int_equal(fdl_sha256_buf(data + off, len, &want, NULL), FDL_OK);
  assert_int_equal(fdl_sha256_file_range(path, off, len, &got, &err), FDL_OK);
  assert_memory_equal(want.bytes, got.bytes, 32);
  /* An empty range at EOF is the empty digest. */
  assert_int_equal(fdl_sha256_file_range(path, n, 0, &got, &err), FDL_OK);
  expect_hex(&got, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  /* Short file: one byte too many. */
  assert_int_equal(fdl_sha256_file_range(path, 1, n, &got, &err), FDL_BOUNDS);
  assert_non_null(strstr(err.msg, path));
  assert_int_equal(fdl_sha256_file_range(path, UINT64_MAX, 2, &got, &err), FDL_BOUNDS);

  assert_int_equal(fdl_sha256_file("/nonexistent/fidelis/file", &got, NULL, &err), FDL_IO);
  assert_non_null(strstr(err.msg, "/nonexistent/fidelis/file"));
  assert_int_equal(fdl_sha256_file("/tmp", &got, NULL, &err), FDL_IO);
  /* A FIFO is refused without blocking in open() for a writer (the alarm turns a hang into a
   * failure). */
  char fifo[4200];
  snprintf(fifo, sizeof fifo, "%s.fifo", path);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  alarm(10);
  assert_int_equal(fdl_sha256_file(fifo, &got, NULL, &err), FDL_IO);
  assert_int_equal(fdl_sha256_file_range(fifo, 0, 0, &got, &err), FDL_IO);
  alarm(0);
  unlink(fifo);

  char *empty = temp_file("", 0);
  assert_int_equal(fdl_sha256_file(empty, &got, &size, &err), FDL_OK);
  assert_int_equal(size, 0);
  expect_hex(&got, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  unlink(empty);
  unlink(path);
  free(empty);
  free(path);
  free(data);
}

#define HA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HC "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_checksums_round_trip(void **state) {
  (void)state;
  /* Unsorted, with blank lines and no final LF; "é" sorts after "z" by code point. */
  const char *text = "\n" HA "  z.txt\n\n" HB "  capture/x.safetensors\n" HC "  \xc3\xa9.bin\n"
                     "  \n" HA "  .hidden";
  fdl_checksums c;
  fdl_checksums_init(&c);
  fdl_err err;
  assert_int_equal(fdl_checksums_parse(text, strlen(text), &c, &err), FDL_OK);
  assert_int_equal(c.count, 4);
  assert_string_equal(c.items[0].path, "z.txt");
  const fdl_checksum_entry *e = fdl_checksums_find(&c, "capture/x.safetensors");
  assert_non_null(e);
  assert_string_equal(e->hex, HB);
  assert_null(fdl_checksums_find(&c, "capture"));
  fdl_buf out;
  fdl_buf_init(&out, 0);
  assert_int_equal(fdl_checksums_format(&c, &out, &err), FDL_OK);
  const char *want =
      HA "  .hidden\n" HB "  capture/x.safetensors\n" HA "  z.txt\n" HC "  \xc3\xa9.bin\n";
  assert_string_equal(out.data, want);
  /* Formatting the parse of formatted text is the identity. */
  fdl_checksums again;
  fdl_checksums_init(&again);
  assert_int_equal(fdl_checksums_parse(out.data, out.len, &again, &err), FDL_OK);
  fdl_buf out2;
  fdl_buf_init(&out2, 0);
  assert_int_equal(fdl_checksums_format(&again, &out2, &err), FDL_OK);
  assert_string_equal(out2.data, want);
  fdl_buf_free(&out2);
  fdl_checksums_free(&again);
  fdl_buf_free(&out);
  fdl_checksums_free(&c);

  /* Empty listing: empty text, and empty text parses to nothing. */
  fdl_checksums_init(&c);
  assert_int_equal(fdl_checksums_parse("", 0, &c, &err), FDL_OK);
  assert_int_equal(c.count, 0);
  fdl_buf_init(&out, 0);
  assert_int_equal(fdl_checksums_format(&c, &out, &err), FDL_OK);
  assert_int_equal(out.len, 0);
  fdl_buf_free(&out);

  /* add() validates and format() refuses duplicates. */
  assert_int_equal(fdl_checksums_add(&c, HA, "b", &err), FDL_OK);
  assert_int_equal(fdl_checksums_add(&c, HB, "a/b", &err), FDL_OK);
  assert_int_equal(fdl_checksums_add(&c, "ABC", "c", &err), FDL_INVALID);
  assert_int_equal(fdl_checksums_add(&c, HA, "../c", &err), FDL_PATH);
  assert_int_equal(fdl_checksums_add(&c, HA, "a\nb", &err), FDL_PATH);
  assert_int_equal(c.count, 2);
  assert_int_equal(fdl_checksums_add(&c, HC, "b", &err), FDL_OK);
  fdl_buf_init(&out, 0);
  assert_int_equal(fdl_checksums_format(&c, &out, &err), FDL_INVALID);
  assert_non_null(strstr(err.msg, "'b'"));
  fdl_buf_free(&out);
  fdl_checksums_free(&c);
}

/* Each malformed listing fails with the given status and names line 2. */
static void expect_bad(const char *line2, fdl_status want) {
  char text[512];
  snprintf(text, sizeof text, HA "  ok.txt\n%s\n", line2);
  fdl_checksums c;
  fdl_checksums_init(&c);
  assert_int_equal(fdl_checksums_add(&c, HB, "kept", NULL), FDL_OK);
  fdl_err err;
  fdl_status s = fdl_checksums_parse(text, strlen(text), &c, &err);
  if (s != want) fail_msg("line \"%s\": got %s (%s)", line2, fdl_status_name(s), err.msg);
  assert_non_null(strstr(err.msg, "line 2"));
  /* A failed parse leaves the listing as it was. */
  assert_int_equal(c.count, 1);
  assert_string_equal(c.items[0].path, "kept");
  fdl_checksums_free(&c);
}

static void test_checksums_malformed(void **state) {
  (void)state;
  expect_bad(HA "  ", FDL_PARSE);       /* short: 66 chars */
  expect_bad(HA " x.txt", FDL_PARSE);   /* one space, 66 chars */
  expect_bad(HA " x.txtt", FDL_PARSE);  /* one space, 67 chars */
  expect_bad(HA " *x.txt", FDL_PARSE);  /* sha256sum binary marker */
  expect_bad(HA "\t x.txt", FDL_PARSE); /* tab, not space */
  expect_bad("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA  x",
             FDL_PARSE); /* uppercase hex */
  expect_bad("gaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa  x", FDL_PARSE);
  expect_bad(HB "  ok.txt", FDL_PARSE);     /* duplicate path */
  expect_bad(HA "  /etc/passwd", FDL_PATH); /* absolute */
  expect_bad(HA "  ../x", FDL_PATH);        /* escapes the root */
  expect_bad(HA "  a/../../x", FDL_PATH);
  expect_bad(HA "  a/../b", FDL_PATH); /* any '..' is refused */
  expect_bad(HA "  .", FDL_PATH);      /* normalises to the root */
  expect_bad(HA "  http://x", FDL_PATH);
  expect_bad(HA "  x.txt\r", FDL_PARSE); /* CRLF line endings */
}

static void test_checksums_empty_path(void **state) {
  (void)state;
  /* "<hex>  " with nothing after is 66 chars: short. With a NUL path it is refused as a path. */
  const char text[] = HA "  \0";
  fdl_checksums c;
  fdl_checksums_init(&c);
  fdl_err err;
  assert_int_equal(fdl_checksums_parse(text, sizeof text - 1, &c, &err), FDL_PATH);
  assert_non_null(strstr(err.msg, "line 1"));
  assert_int_equal(fdl_checksums_parse(HA "  ", 66, &c, &err), FDL_PARSE);
  assert_int_equal(fdl_checksums_add(&c, HA, "", &err), FDL_PATH);
  fdl_checksums_free(&c);
}

/* A refused path is quoted from the caller's text without reading past len (found by fuzzing:
 * the text need not be NUL-terminated). */
static void test_checksums_quote_bounded(void **state) {
  (void)state;
  const char text[] = HA "  bad:/x\nSENTINEL-PAST-THE-END";
  size_t len = strlen(HA "  bad:/x");
  fdl_checksums c;
  fdl_checksums_init(&c);
  fdl_err err;
  assert_int_equal(fdl_checksums_parse(text, len, &c, &err), FDL_PATH);
  assert_non_null(strstr(err.msg, "'bad:/x'"));
  assert_null(strstr(err.msg, "SENTINEL"));
  fdl_checksums_free(&c);
}

/* A NUL inside a listed path is shown escaped, with what follows it: cutting the quote at the
 * NUL would hide the part of the path that makes it bad. */
static void test_checksums_quote_nul(void **state) {
  (void)state;
  const char text[] = HA "  dir/a\0b\x1b[2J.txt\n";
  fdl_checksums c;
  fdl_checksums_init(&c);
  fdl_err err;
  assert_int_equal(fdl_checksums_parse(text, sizeof text - 1, &c, &err), FDL_PATH);
  assert_non_null(strstr(err.msg, "'dir/a\\x00b\\x1b[2J.txt'"));
  fdl_checksums_free(&c);
}

/* ---- seals ---- */

static json_t *small_doc(const char *schema) {
  json_t *d = json_object();
  json_object_set_new(d, "schema", json_string(schema));
  json_object_set_new(d, "name", json_string("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"));
  json_object_set_new(d, "n", json_integer(16));
  json_object_set_new(d, "x", json_real(4.0));
  json_t *list = json_array();
  json_array_append_new(list, json_integer(1));
  json_array_append_new(list, json_real(2.5));
  json_array_append_new(list, json_null());
  json_array_append_new(list, json_true());
  json_array_append_new(list, json_false());
  json_object_set_new(d, "list", list);
  json_t *nested = json_object();
  json_object_set_new(nested, "b", json_real(1e-05));
  json_object_set_new(nested, "a", json_string("x"));
  json_object_set_new(d, "nested", nested);
  return d;
}

/* Expected values come from Python: json.dumps(sort_keys, compact, ensure_ascii) + hashlib. */
#define FID_SEAL "ff638214d70677db7a53cdb12b70428da713b317b17a1134883741dcb13d2913"
#define KILN_SEAL "sha256:f292296d01bef01c83f972e6cbee9d845bf97fb875509a5de064c4631d9ea3af"

static void test_seal_fidelity(void **state) {
  (void)state;
  json_t *d = small_doc("malaiwah.fidelity-comparison-receipt.v1");
  fdl_seal_recipe r;
  const char *field;
  fdl_err err;
  assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_OK);
  assert_int_equal(r, FDL_SEAL_FIDELITY_BLANK);
  assert_string_equal(field, "receipt_sha256");
  assert_string_equal(fdl_seal_recipe_name(r), "fidelity-blank-field");
  char out[80];
  /* Absent or "" field: the same preimage, since the field is blanked either way. */
  assert_int_equal(fdl_seal_compute(d, r, field, out, &err), FDL_OK);
  assert_string_equal(out, FID_SEAL);
  fdl_seal_check chk;
  assert_int_equal(fdl_seal_verify(d, &chk, &err), FDL_OK);
  assert_false(chk.ok); /* lacking the field fails */
  assert_string_equal(chk.stored, "");
  assert_int_equal(fdl_seal_apply(d, r, field, &err), FDL_OK);
  assert_string_equal(json_string_value(json_object_get(d, field)), FID_SEAL);
  assert_int_equal(fdl_seal_verify(d, &chk, &err), FDL_OK);
  assert_true(chk.ok);
  assert_string_equal(chk.computed, FID_SEAL);
  assert_string_equal(chk.stored, FID_SEAL);
  /* Stored "" is a mismatch; any change to a sealed value is a mismatch. */
  json_object_set_new(d, field, json_string(""));
  assert_int_equal(fdl_seal_verify(d, &chk, &err), FDL_OK);
  assert_false(chk.ok);
  json_object_set_new(d, field, json_string(FID_SEAL));
  json_object_set_new(d, "n", json_integer(17));
  assert_int_equal(fdl_seal_verify(d, &chk, &err), FDL_OK);
  assert_false(chk.ok);
  /* 16.0 is not 16: the int/float distinction is inside the seal. */
  json_object_set_new(d, "n", json_real(16.0));
  assert_int_equal(fdl_seal_verify(d, &chk, &err), FDL_OK);
  assert_false(chk.ok);
  json_object_set_new(d, "n", json_integer(16));
  assert_int_equal(fdl_seal_verify(d, &chk, &err), FDL_OK);
  assert_true(chk.ok);
  /* The kiln recipe on the same document gives something else. */
  assert_int_equal(fdl_seal_compute(d, FDL_SEAL_KILN_REMOVE, field, out, &err), FDL_OK);
  assert_string_not_equal(out + 7, FID_SEAL);
  json_decref(d);
}

static void test_seal_kiln(void **state) {
  (void)state;
  json_t *d = small_doc("kiln.rocm-hf-next-token-oracle.v2");
  fdl_seal_recipe r;
  const char *field;
  fdl_err err;
  assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_OK);
  assert_int_equal(r, FDL_SEAL_KILN_REMOVE);
  assert_string_equal(field, "result_sha256");
  assert_string_equal(fdl_seal_recipe_name(r), "kiln-remove-field");
  assert_int_equal(fdl_seal_apply(d, r, field, &err), FDL_OK);
  assert_string_equal(json_string_value(json_object_get(d, field)), KILN_SEAL);
  fdl_seal_check chk;
  assert_int_equal(fdl_seal_verify(d, &chk, &err), FDL_OK);
  assert_true(chk.ok);
  assert_string_equal(chk.computed, KILN_SEAL);
  /* Bare hex without the prefix does not verify. */
  json_object_set_new(d, field, json_string(&KILN_SEAL[7]));
  assert_int_equal(fdl_seal_verify(d, &chk, &err), FDL_OK);
  assert_false(chk.ok);
  json_decref(d);
}

static void test_seal_kinds(void **state) {
  (void)state;
  static const struct {
    const char *schema;
    fdl_seal_recipe recipe;
    const char *field;
  } table[] = {
      {"malaiwah.fidelity-dataset.v1", FDL_SEAL_FIDELITY_BLANK, "dataset_sha256"},
      {"malaiwah.fidelity-head-identity.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
      {"malaiwah.fidelity-path-remap.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
      {"malaiwah.token-panel-build-receipt.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
      {"kiln.rocm-hf-layer-attribution-result.v1", FDL_SEAL_KILN_REMOVE, "result_sha256"},
      {"kiln.rocm-hf-path-attribution-result.v2", FDL_SEAL_KILN_REMOVE, "result_sha256"},
      {"kiln.serving-benchmark.v1", FDL_SEAL_KILN_REMOVE, "receipt_sha256"},
  };
  fdl_err err;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    json_t *d = json_pack("{ss}", "schema", table[i].schema);
    fdl_seal_recipe r;
    const char *field;
    assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_OK);
    assert_int_equal(r, table[i].recipe);
    assert_string_equal(field, table[i].field);
    json_decref(d);
  }
  /* Unknown schemas of a known family: the one seal field present decides. */
  json_t *d = json_pack("{ssss}", "schema", "malaiwah.future-thing.v9", "receipt_sha256", "");
  fdl_seal_recipe r;
  const char *field;
  assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_OK);
  assert_int_equal(r, FDL_SEAL_FIDELITY_BLANK);
  assert_string_equal(field, "receipt_sha256");
  json_decref(d);
  d = json_pack("{ssss}", "schema", "kiln.future-result.v3", "result_sha256", "");
  assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_OK);
  assert_int_equal(r, FDL_SEAL_KILN_REMOVE);
  assert_string_equal(field, "result_sha256");
  json_decref(d);
  /* Refusals name the schema. */
  d = json_pack("{ss}", "schema", "kiln.no-seal.v1");
  assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "kiln.no-seal.v1"));
  json_decref(d);
  d = json_pack("{ssssss}", "schema", "malaiwah.both.v1", "receipt_sha256", "", "dataset_sha256",
                "");
  assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_UNSUPPORTED);
  json_decref(d);
  d = json_pack("{ssss}", "schema", "acme.thing.v1", "receipt_sha256", "");
  assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "acme.thing.v1"));
  fdl_seal_check chk;
  assert_int_equal(fdl_seal_verify(d, &chk, &err), FDL_UNSUPPORTED);
  json_decref(d);
  d = json_pack("{si}", "schema", 1);
  assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_UNSUPPORTED);
  json_decref(d);
  d = json_object();
  assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_UNSUPPORTED);
  json_decref(d);
  d = json_array();
  assert_int_equal(fdl_seal_kind(d, &r, &field, &err), FDL_UNSUPPORTED);
  char out[80];
  assert_int_equal(fdl_seal_compute(d, FDL_SEAL_FIDELITY_BLANK, "x", out, &err), FDL_INVALID);
  json_decref(d);
}

/* The reconstructed structural-validation report of FIDELITY-DATASET.md §12.3, via the parser. */
static void test_seal_spec_example(void **state) {
  (void)state;
  const char *text =
      "{\"checks_run\":[\"pre-seal\"],\"error_count\":0,\"errors\":[],\"format_version\":1,"
      "\"receipt_sha256\":\"4032665b576bf9c592c154a433e7896e558a8e47d929400d5464d616573bf276\","
      "\"schema\":\"malaiwah.fidelity-structural-validation.v1\",\"structural_status\":\"sealed\","
      "\"subject\":\"dataset:fidelity--qwen3-5.community-root\",\"warning_count\":0,"
      "\"warnings\":[]}";
  json_t *d = NULL;
  fdl_err err;
  assert_int_equal(fdl_json_parse(text, strlen(text), NULL, &d, &err), FDL_OK);
  fdl_seal_check chk;
  assert_int_equal(fdl_seal_verify(d, &chk, &err), FDL_OK);
  assert_true(chk.ok);
  assert_string_equal(chk.field, "receipt_sha256");
  json_decref(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_answers),
      cmocka_unit_test(test_streaming_million_a),
      cmocka_unit_test(test_update2_matches),
      cmocka_unit_test(test_hex_round_trip),
      cmocka_unit_test(test_hex_checks),
      cmocka_unit_test(test_spec_examples),
      cmocka_unit_test(test_file_and_range),
      cmocka_unit_test(test_checksums_round_trip),
      cmocka_unit_test(test_checksums_malformed),
      cmocka_unit_test(test_checksums_empty_path),
      cmocka_unit_test(test_checksums_quote_bounded),
      cmocka_unit_test(test_checksums_quote_nul),
      cmocka_unit_test(test_seal_fidelity),
      cmocka_unit_test(test_seal_kiln),
      cmocka_unit_test(test_seal_kinds),
      cmocka_unit_test(test_seal_spec_example),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
