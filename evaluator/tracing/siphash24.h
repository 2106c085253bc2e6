/* SipHash-2-4 (Aumasson and Bernstein, 2012), written from the paper's specification: a 64-bit MAC keyed by
 * 16 bytes, short and fast enough to authenticate every trace frame. Kept in its own header so that a test can
 * check it against the reference vectors without CUPTI. Little-endian byte order throughout, as specified. */
#ifndef KERNELEVO_SIPHASH24_H
#define KERNELEVO_SIPHASH24_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t ke_load_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

#define KE_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define KE_SIPROUND(v0, v1, v2, v3)                                   \
    do {                                                              \
        v0 += v1; v1 = KE_ROTL(v1, 13); v1 ^= v0; v0 = KE_ROTL(v0, 32); \
        v2 += v3; v3 = KE_ROTL(v3, 16); v3 ^= v2;                     \
        v0 += v3; v3 = KE_ROTL(v3, 21); v3 ^= v0;                     \
        v2 += v1; v1 = KE_ROTL(v1, 17); v1 ^= v2; v2 = KE_ROTL(v2, 32); \
    } while (0)

static inline uint64_t ke_siphash24(const uint8_t key[16], const uint8_t *msg, size_t len) {
    const uint64_t k0 = ke_load_le64(key), k1 = ke_load_le64(key + 8);
    uint64_t v0 = UINT64_C(0x736f6d6570736575) ^ k0;
    uint64_t v1 = UINT64_C(0x646f72616e646f6d) ^ k1;
    uint64_t v2 = UINT64_C(0x6c7967656e657261) ^ k0;
    uint64_t v3 = UINT64_C(0x7465646279746573) ^ k1;
    const size_t whole = len - (len % 8);
    for (size_t i = 0; i < whole; i += 8) {
        const uint64_t m = ke_load_le64(msg + i);
        v3 ^= m;
        KE_SIPROUND(v0, v1, v2, v3);
        KE_SIPROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    uint64_t last = ((uint64_t)len) << 56;
    for (size_t j = 0; j < len % 8; j++) last |= ((uint64_t)msg[whole + j]) << (8 * j);
    v3 ^= last;
    KE_SIPROUND(v0, v1, v2, v3);
    KE_SIPROUND(v0, v1, v2, v3);
    v0 ^= last;
    v2 ^= 0xff;
    for (int r = 0; r < 4; r++) KE_SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

#endif
