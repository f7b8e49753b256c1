/* digest/sha256x2.h - two SHA-256 compressions advanced together, on the SHA extensions.
 *
 * SHA-256 is one sequential chain per message: `sha256rnds2` waits for the previous round's
 * result, and a single stream (libcrypto's too) runs at the instruction's latency. Two
 * independent streams interleaved keep the unit busy, which measured 2.2x the rounds per
 * second of one stream on an AMD Zen 4 (docs/PERFORMANCE.md). fidelis hashes the same bytes twice
 * whenever a file and its tensor are digested in one read (the file digest and the content
 * digest), so the pair is the common case. The output is SHA-256 itself: tested against
 * libcrypto block for block (tests/test_digest.c). */
#ifndef FDL_DIGEST_SHA256X2_H
#define FDL_DIGEST_SHA256X2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether this CPU has the SHA extensions (and SSSE3/SSE4.1, which the kernel also uses). */
bool fdl_sha256x2_available(void);

/* Compresses nblocks 64-byte blocks of pa into the state ha and as many of pb into hb (the eight
 * working words H0..H7 of FIPS 180-4, as libcrypto's SHA256_CTX keeps them). Only when
 * fdl_sha256x2_available(). */
void fdl_sha256x2_blocks(uint32_t ha[8], const uint8_t *pa, uint32_t hb[8], const uint8_t *pb,
                         size_t nblocks);

#endif
