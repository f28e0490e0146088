/* Unaligned little-endian reads shared by the reader's C accelerators (_fbcore.c, _fbwalk.c).
 * Callers check bounds before every read; memcpy keeps unaligned access defined. */
#ifndef EDGEPART_FBREAD_H
#define EDGEPART_FBREAD_H

#include <stdint.h>
#include <string.h>

static inline uint16_t rd_u16(const uint8_t *d, int64_t p) {
    uint16_t v;
    memcpy(&v, d + p, 2);
    return v;
}

static inline uint32_t rd_u32(const uint8_t *d, int64_t p) {
    uint32_t v;
    memcpy(&v, d + p, 4);
    return v;
}

static inline int32_t rd_i32(const uint8_t *d, int64_t p) {
    int32_t v;
    memcpy(&v, d + p, 4);
    return v;
}

#endif
