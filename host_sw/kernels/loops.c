/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The compiled loops of capture analysis, in C: the loops numpy cannot run without a
 * pass per byte, table, partition or probe (host_sw/kernels/__init__.py says which Python
 * loop each one is, and the Python loops are their reference: the same bits).
 *
 * Plain C with no Python API: built by setuptools at install (an optional extension) and
 * called through ctypes, which releases the GIL for the call. Arrays come as pointers to
 * their first element; strides, where a caller passes views, in elements.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bumped with every change of a signature or of what a loop computes: the Python side
 * refuses a library built from another version (a stale build of an editable install). */
int64_t lda_kernels_version(void) { return 2; }

static inline int64_t word32(const uint8_t *p, int le)
{
    if (le)
        return (int64_t)p[0] | ((int64_t)p[1] << 8) | ((int64_t)p[2] << 16)
            | ((int64_t)p[3] << 24);
    return ((int64_t)p[0] << 24) | ((int64_t)p[1] << 16) | ((int64_t)p[2] << 8)
        | (int64_t)p[3];
}

/* pcap_stream._walk_loop: the classic pcap record starts of buf[0:end]; returns the
 * records found, the offset where the rest starts in *rest. */
int64_t lda_walk(const uint8_t *buf, int64_t end, int le, int64_t *out, int64_t *rest)
{
    int64_t off = 0, n = 0;
    while (off + 16 <= end) {
        int64_t nxt = off + 16 + word32(buf + off + 8, le);
        if (nxt > end)
            break;
        out[n++] = off;
        off = nxt;
    }
    *rest = off;
    return n;
}

static inline void header_fields(const uint8_t *rec, int le, int64_t *fields)
{
    for (int f = 0; f < 4; f++)
        fields[f] = word32(rec + 4 * f, le);
}

/* pcap_stream._extract_loop: each record's four header fields and its window (zero
 * past its captured end). fields (n, 4), windows (n, width), both contiguous. */
void lda_extract(const uint8_t *buf, const int64_t *starts, int64_t n, int le,
                 int64_t *fields, uint8_t *windows, int64_t width)
{
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *rec = buf + (uint64_t)starts[i];
        int64_t *fl = fields + 4 * i;
        header_fields(rec, le, fl);
        int64_t m = fl[2] < width ? fl[2] : width;
        if (m < 0)
            m = 0;
        uint8_t *row = windows + i * width;
        memcpy(row, rec + 16, (size_t)m);
        memset(row + m, 0, (size_t)(width - m));
    }
}

/* pcap_stream._extract_hash_loop: _extract_loop (windows only when keep), the frame
 * class, and H3 hashes of each IPv4/IPv6 frame's window from the block's bytes.
 * which (2, H, L) int64, each output's count (2, H) of bytes ascending, tables
 * (2, H, L, 256) uint64, hashes (H, n). */
void lda_extract_hash(const uint8_t *buf, const int64_t *starts, int64_t n, int le,
                      int64_t *fields, int64_t *classes, uint8_t *windows, int64_t width,
                      int keep, const int64_t *which, const int64_t *count,
                      const uint64_t *tables, int64_t outputs, int64_t longest,
                      uint64_t *hashes)
{
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *rec = buf + (uint64_t)starts[i];
        const uint8_t *src = rec + 16;
        int64_t *fl = fields + 4 * i;
        header_fields(rec, le, fl);
        int64_t cap = fl[2];
        int64_t m = cap < width ? cap : width;
        if (keep) {
            int64_t k = m < 0 ? 0 : m;
            uint8_t *row = windows + i * width;
            memcpy(row, src, (size_t)k);
            memset(row + k, 0, (size_t)(width - k));
        }
        int64_t ethertype = m > 13 ? ((int64_t)src[12] << 8) | src[13] : 0;
        int64_t version = m > 14 ? src[14] >> 4 : 0;
        int64_t cls = 2;                                    /* FrameClass.NON_IP */
        if (ethertype == 0x86DD && version == 6)
            cls = 1;                                        /* IPV6 */
        else if (ethertype == 0x0800 && version == 4)
            cls = 0;                                        /* IPV4 */
        else if (ethertype == 0x88B5)
            cls = 5;                                        /* CONTROL */
        if (cap < 60)
            cls = 3;                                        /* RUNT (MIN_FRAME_BYTES) */
        classes[i] = cls;
        for (int64_t h = 0; h < outputs; h++) {
            uint64_t acc = 0;
            if (cls <= 1) {
                const int64_t *w = which + (cls * outputs + h) * longest;
                const uint64_t *t = tables + (cls * outputs + h) * longest * 256;
                int64_t c = count[cls * outputs + h];
                if (c && w[c - 1] < m)          /* every live byte captured */
                    for (int64_t k = 0; k < c; k++, t += 256)
                        acc ^= t[src[w[k]]];
                else                            /* w ascending: up to the captured end */
                    for (int64_t k = 0; k < c && w[k] < m; k++, t += 256)
                        acc ^= t[src[w[k]]];
            }
            hashes[h * n + i] = acc;
        }
    }
}

/* hashing._table_xor_loop for byte (u8) and byte-pair (u16) columns: out[i] = XOR over
 * t of tables[t, columns[i, which[t]]]; columns with row and column strides (elements),
 * tables (T, size). */
#define TABLE_XOR(NAME, TYPE)                                                           \
void NAME(const TYPE *columns, int64_t n, int64_t row_stride, int64_t col_stride,      \
          const int64_t *which, int64_t t_count, const uint64_t *tables, int64_t size,  \
          uint64_t *out)                                                                \
{                                                                                       \
    for (int64_t i = 0; i < n; i++) {                                                   \
        const TYPE *row = columns + i * row_stride;                                     \
        uint64_t acc = 0;                                                               \
        for (int64_t t = 0; t < t_count; t++)                                           \
            acc ^= tables[t * size + row[which[t] * col_stride]];                       \
        out[i] = acc;                                                                   \
    }                                                                                   \
}
TABLE_XOR(lda_table_xor_u8, uint8_t)
TABLE_XOR(lda_table_xor_u16, uint16_t)

/* hashing._sbox_xor_loop: per ID its eight S-box-substituted bytes, then each output's
 * eight lookups. tables (H, 8, 256), out (H, n). */
void lda_sbox_xor(const uint64_t *ids, int64_t n, const uint8_t *sbox,
                  const uint64_t *tables, int64_t outputs, uint64_t *out)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = ids[i];
        int sb[8];
        for (int k = 0; k < 8; k++)
            sb[k] = sbox[(v >> (8 * k)) & 255];
        for (int64_t h = 0; h < outputs; h++) {
            const uint64_t *t = tables + h * 8 * 256;
            uint64_t acc = 0;
            for (int k = 0; k < 8; k++)
                acc ^= t[k * 256 + sb[k]];
            out[h * n + i] = acc;
        }
    }
}

/* golden_lda_rda_lds._add_at_loop and _xor_at_loop: np.add.at (uint64, wrapping) and
 * np.bitwise_xor.at of 64-bit words. */
void lda_add_at(uint64_t *target, const int64_t *flat, const uint64_t *values, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        target[flat[i]] += values[i];
}

void lda_xor_at(uint64_t *target, const int64_t *flat, const uint64_t *values, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        target[flat[i]] ^= values[i];
}

/* offline_stream._positions_loop: each record's row in partition order (a counting
 * sort), the partitions' bounds (parts + 1, zero on entry). Returns -1 when out of
 * memory, else 0. */
#define POSITIONS(NAME, TYPE)                                                           \
int NAME(const TYPE *part, int64_t n, int64_t parts, int64_t *pos, int64_t *bounds)    \
{                                                                                       \
    for (int64_t i = 0; i < n; i++)                                                     \
        bounds[(int64_t)part[i] + 1]++;                                                 \
    for (int64_t p = 0; p < parts; p++)                                                 \
        bounds[p + 1] += bounds[p];                                                     \
    int64_t *at = malloc((size_t)(parts > 0 ? parts : 1) * sizeof *at);                 \
    if (!at)                                                                            \
        return -1;                                                                      \
    memcpy(at, bounds, (size_t)parts * sizeof *at);                                     \
    for (int64_t i = 0; i < n; i++)                                                     \
        pos[i] = at[(int64_t)part[i]]++;                                                \
    free(at);                                                                           \
    return 0;                                                                           \
}
POSITIONS(lda_positions_u16, uint16_t)
POSITIONS(lda_positions_i64, int64_t)

/* offline_stream._put_loop: dst[pos[i], col] = src[i] (dst (rows, width) words, src
 * with a stride). */
void lda_put(uint64_t *dst, int64_t width, int64_t col, const uint64_t *src,
             int64_t src_stride, const int64_t *pos, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[pos[i] * width + col] = src[i * src_stride];
}

/* offline_stream._insert_loop and _probe_loop: an open-addressing table of 64-bit flow
 * folds (size a power of two; ids -1 where a slot is empty). */
void lda_insert(const uint64_t *folds, int64_t n, uint64_t *keys, int64_t *ids,
                int64_t size)
{
    uint64_t mask = (uint64_t)size - 1;
    for (int64_t i = 0; i < n; i++) {
        uint64_t j = folds[i] & mask;
        while (ids[j] >= 0 && keys[j] != folds[i])
            j = (j + 1) & mask;
        if (ids[j] < 0) {
            keys[j] = folds[i];
            ids[j] = i;
        }
    }
}

void lda_probe(const uint64_t *folds, int64_t n, const uint64_t *keys, const int64_t *ids,
               int64_t size, int64_t *out)
{
    uint64_t mask = (uint64_t)size - 1;
    for (int64_t i = 0; i < n; i++) {
        uint64_t j = folds[i] & mask;
        while (ids[j] >= 0 && keys[j] != folds[i])
            j = (j + 1) & mask;
        out[i] = ids[j];
    }
}

/* offline_stream._fold_probe_loop: per counted packet sel[k], the fold of its rows' low
 * 32 bits (flow (R, N) with strides), its probe and the exact check against known_rows
 * (F, R) uint32. */
void lda_fold_probe(const uint64_t *flow, int64_t rows, int64_t row_stride,
                    int64_t col_stride, const int64_t *sel, int64_t n,
                    const uint64_t *keys, const int64_t *ids, int64_t size,
                    const uint32_t *known_rows, uint64_t *fold, int64_t *out)
{
    uint64_t mask = (uint64_t)size - 1;
    for (int64_t k = 0; k < n; k++) {
        const uint64_t *col = flow + sel[k] * col_stride;
        uint64_t z = col[0] & 0xFFFFFFFFu;
        for (int64_t r = 1; r < rows; r++) {
            z ^= z >> 30;
            z *= 0xBF58476D1CE4E5B9ull;
            z ^= z >> 27;
            z *= 0x94D049BB133111EBull;
            z ^= z >> 31;
            z ^= col[r * row_stride] & 0xFFFFFFFFu;
        }
        fold[k] = z;
        uint64_t j = z & mask;
        while (ids[j] >= 0 && keys[j] != z)
            j = (j + 1) & mask;
        int64_t got = ids[j];
        if (got >= 0)
            for (int64_t r = 0; r < rows; r++)
                if ((uint64_t)known_rows[got * rows + r] != (col[r * row_stride] & 0xFFFFFFFFu)) {
                    got = -1;
                    break;
                }
        out[k] = got;
    }
}

/* offline_stream._group_loop: packets grouped by equal rows (n, r) uint32, found by
 * their folds in an open-addressing table (size a power of two; slot_group -1 where
 * empty): first[g] is group g's first packet, group[i] packet i's group, groups
 * numbered in order of first occurrence. Returns the groups; -1 when two packets of one
 * fold have different rows (the caller's exact path then), -2 when the groups fill half
 * the table (the caller's next try a larger one). */
int64_t lda_group(const uint64_t *fold, const uint32_t *rows, int64_t n, int64_t r,
                  uint64_t *keys, int64_t *slot_group, int64_t size, int64_t *first,
                  int64_t *group)
{
    uint64_t mask = (uint64_t)size - 1;
    int64_t groups = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t j = fold[i] & mask;
        while (slot_group[j] >= 0 && keys[j] != fold[i])
            j = (j + 1) & mask;
        int64_t g = slot_group[j];
        if (g < 0) {
            if (2 * (groups + 1) > size)
                return -2;
            keys[j] = fold[i];
            slot_group[j] = g = groups++;
            first[g] = i;
        } else if (memcmp(rows + first[g] * r, rows + i * r, (size_t)r * sizeof *rows))
            return -1;
        group[i] = g;
    }
    return groups;
}
