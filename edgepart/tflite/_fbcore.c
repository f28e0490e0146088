/* Flatbuffer column primitives for edgepart's reader (optional accelerator).
 *
 * Each function does, for a whole column of tables at once, exactly what the NumPy code in
 * flatbuf.py does: the same bounds, alignment and terminator checks, the same outputs. It
 * never raises on malformed input: it returns None, and the caller re-runs the NumPy path,
 * which raises the precise ModelFormatError. Every read is checked against the buffer length
 * before it happens, so no input can make this code read outside the buffer.
 *
 * Arrays cross the boundary through the buffer protocol (int64 arrays, uint8 output buffers),
 * so this file needs only Python.h. If it fails to build, edgepart uses the NumPy path alone.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_fbread.h"

/* Acquire a contiguous buffer of at least min_len items of item_size bytes. */
static int get(PyObject *o, Py_buffer *b, int writable, Py_ssize_t item_size) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (item_size > 1 && b->len % item_size != 0) {
        PyBuffer_Release(b);
        PyErr_SetString(PyExc_ValueError, "buffer length is not a multiple of the item size");
        return -1;
    }
    return 0;
}

/* table_column(data, pos, slot_sizes, off_slots, esize, sized, is_str, ent, tgt, len) -> bool|None
 *
 * pos: int64[k]; slot_sizes: int64[nslots]; off_slots, esize, sized, is_str: int64[m];
 * ent: int64[k*nslots] out; tgt, len: int64[k*m] out.
 */
static PyObject *table_column(PyObject *self, PyObject *args) {
    PyObject *o[10];
    Py_buffer b[10];
    int got = 0;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9]))
        return NULL;
    for (; got < 10; got++) {
        if (get(o[got], &b[got], got >= 7, got == 0 ? 1 : 8) < 0)
            goto done;
    }
    const uint8_t *d = (const uint8_t *)b[0].buf;
    const int64_t n = (int64_t)b[0].len;
    const int64_t *pos = (const int64_t *)b[1].buf;
    const int64_t k = (int64_t)(b[1].len / 8);
    const int64_t *sizes = (const int64_t *)b[2].buf;
    const int64_t nslots = (int64_t)(b[2].len / 8);
    const int64_t *off_slots = (const int64_t *)b[3].buf;
    const int64_t m = (int64_t)(b[3].len / 8);
    const int64_t *esize = (const int64_t *)b[4].buf;
    const int64_t *sized = (const int64_t *)b[5].buf;
    const int64_t *is_str = (const int64_t *)b[6].buf;
    int64_t *ent = (int64_t *)b[7].buf;
    int64_t *tgt = (int64_t *)b[8].buf;
    int64_t *len = (int64_t *)b[9].buf;
    if (b[4].len / 8 != m || b[5].len / 8 != m || b[6].len / 8 != m ||
        b[7].len / 8 != k * nslots || b[8].len / 8 != k * m || b[9].len / 8 != k * m) {
        PyErr_SetString(PyExc_ValueError, "table_column: array sizes disagree");
        goto done;
    }
    for (int64_t j = 0; j < m; j++) {
        if (off_slots[j] < 0 || off_slots[j] >= nslots) {
            PyErr_SetString(PyExc_ValueError, "table_column: bad offset slot");
            goto done;
        }
    }
    for (int64_t r = 0; r < k; r++) {
        const int64_t p = pos[r];
        if (p < 0 || p > n - 4 || (p & 3)) goto malformed;
        const int64_t vt = p - (int64_t)rd_i32(d, p);
        if (vt < 0 || vt > n - 4 || (vt & 1)) goto malformed;
        const int64_t vts = rd_u16(d, vt), osz = rd_u16(d, vt + 2);
        if (vts < 4 || (vts & 1) || vt + vts > n || osz < 4 || p + osz > n) goto malformed;
        int64_t *row = ent + r * nslots;
        for (int64_t c = 0; c < nslots; c++) {
            int64_t e = (4 + 2 * c < vts) ? rd_u16(d, vt + 4 + 2 * c) : 0;
            if (e && (e < 4 || e + sizes[c] > osz || ((p + e) & (sizes[c] - 1)))) goto malformed;
            row[c] = e;
        }
        for (int64_t j = 0; j < m; j++) {
            const int64_t e = row[off_slots[j]];
            if (!e) {
                tgt[r * m + j] = 0;
                len[r * m + j] = -1;
                continue;
            }
            const int64_t a = p + e; /* a + 4 <= p + osz <= n: checked above */
            const int64_t t = a + (int64_t)rd_u32(d, a);
            if (t > n - 4 || (t & 3)) goto malformed;
            int64_t L = 0;
            if (sized[j]) {
                L = (int64_t)rd_u32(d, t);
                const int64_t es = esize[j];
                const int64_t end = t + 4 + L * es;
                int64_t amask = (es < 8 ? es : 8) - 1;
                if (amask < 0) amask = 0;
                if (end + is_str[j] > n || ((t + 4) & amask)) goto malformed;
                if (is_str[j] && d[end] != 0) goto malformed;
            }
            tgt[r * m + j] = t;
            len[r * m + j] = L;
        }
    }
    result = Py_True;
    Py_INCREF(result);
    goto done;
malformed:
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    return result;
}

/* gather(data, start, length, elem_size, out) -> bool|None: concatenate k byte ranges. */
static PyObject *gather(PyObject *self, PyObject *args) {
    PyObject *o[4];
    Py_ssize_t es;
    Py_buffer b[4];
    int got = 0;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOnO", &o[0], &o[1], &o[2], &es, &o[3])) return NULL;
    for (; got < 4; got++) {
        if (get(o[got], &b[got], got == 3, (got == 1 || got == 2) ? 8 : 1) < 0) goto done;
    }
    const uint8_t *d = (const uint8_t *)b[0].buf;
    const int64_t n = (int64_t)b[0].len;
    const int64_t *start = (const int64_t *)b[1].buf;
    const int64_t *length = (const int64_t *)b[2].buf;
    const int64_t k = (int64_t)(b[1].len / 8);
    uint8_t *out = (uint8_t *)b[3].buf;
    const int64_t cap = (int64_t)b[3].len;
    if (b[2].len != b[1].len || es <= 0) {
        PyErr_SetString(PyExc_ValueError, "gather: bad arguments");
        goto done;
    }
    int64_t w = 0;
    for (int64_t r = 0; r < k; r++) {
        const int64_t L = length[r];
        if (L <= 0) continue;
        const int64_t bytes = L * es;
        if (start[r] < 0 || start[r] + bytes > n || w + bytes > cap) goto malformed;
        memcpy(out + w, d + start[r], (size_t)bytes);
        w += bytes;
    }
    result = Py_True;
    Py_INCREF(result);
    goto done;
malformed:
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    return result;
}

/* element_positions(data, start, length, out) -> bool|None
 * For vectors of uoffsets: out[w] = p + u32(p) for every element position p, in order. */
static PyObject *element_positions(PyObject *self, PyObject *args) {
    PyObject *o[4];
    Py_buffer b[4];
    int got = 0;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOO", &o[0], &o[1], &o[2], &o[3])) return NULL;
    for (; got < 4; got++) {
        if (get(o[got], &b[got], got == 3, got == 0 ? 1 : 8) < 0) goto done;
    }
    const uint8_t *d = (const uint8_t *)b[0].buf;
    const int64_t n = (int64_t)b[0].len;
    const int64_t *start = (const int64_t *)b[1].buf;
    const int64_t *length = (const int64_t *)b[2].buf;
    const int64_t k = (int64_t)(b[1].len / 8);
    int64_t *out = (int64_t *)b[3].buf;
    const int64_t cap = (int64_t)(b[3].len / 8);
    if (b[2].len != b[1].len) {
        PyErr_SetString(PyExc_ValueError, "element_positions: bad arguments");
        goto done;
    }
    int64_t w = 0;
    for (int64_t r = 0; r < k; r++) {
        const int64_t L = length[r];
        if (L <= 0) continue;
        if (start[r] < 0 || start[r] + 4 * L > n || w + L > cap) goto malformed;
        for (int64_t j = 0; j < L; j++) {
            const int64_t p = start[r] + 4 * j;
            out[w++] = p + (int64_t)rd_u32(d, p);
        }
    }
    result = Py_True;
    Py_INCREF(result);
    goto done;
malformed:
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    return result;
}

/* scalar(data, pos, ent, size, out) -> bool|None: out[r] = data[pos[r]+ent[r]] where ent != 0. */
static PyObject *scalar(PyObject *self, PyObject *args) {
    PyObject *o[4];
    Py_ssize_t size;
    Py_buffer b[4];
    int got = 0;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOnO", &o[0], &o[1], &o[2], &size, &o[3])) return NULL;
    for (; got < 4; got++) {
        if (get(o[got], &b[got], got == 3, (got == 1 || got == 2) ? 8 : 1) < 0) goto done;
    }
    const uint8_t *d = (const uint8_t *)b[0].buf;
    const int64_t n = (int64_t)b[0].len;
    const int64_t *pos = (const int64_t *)b[1].buf;
    const int64_t *ent = (const int64_t *)b[2].buf;
    const int64_t k = (int64_t)(b[1].len / 8);
    uint8_t *out = (uint8_t *)b[3].buf;
    if (b[2].len != b[1].len || size <= 0 || b[3].len != k * size) {
        PyErr_SetString(PyExc_ValueError, "scalar: bad arguments");
        goto done;
    }
    for (int64_t r = 0; r < k; r++) {
        if (!ent[r]) continue;
        const int64_t a = pos[r] + ent[r];
        if (pos[r] < 0 || a < 0 || a + size > n) goto malformed;
        memcpy(out + r * size, d + a, (size_t)size);
    }
    result = Py_True;
    Py_INCREF(result);
    goto done;
malformed:
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    return result;
}

/* union_column(data, pos, codes, sizes2d, kinds2d, esize2d) -> bool|None
 *
 * Verifies union values of mixed member types: row r is a table of member codes[r], whose slot
 * sizes, kinds (0 scalar, 1 scalar vector, 2 string, 3 nested: left to the caller) and element
 * sizes are row codes[r] of the 2-D tables (width w). Same checks as table_column.
 */
static PyObject *union_column(PyObject *self, PyObject *args) {
    PyObject *o[6];
    Py_ssize_t w;
    Py_buffer b[6];
    int got = 0;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOn", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &w))
        return NULL;
    for (; got < 6; got++) {
        if (get(o[got], &b[got], 0, got == 0 ? 1 : 8) < 0) goto done;
    }
    const uint8_t *d = (const uint8_t *)b[0].buf;
    const int64_t n = (int64_t)b[0].len;
    const int64_t *pos = (const int64_t *)b[1].buf;
    const int64_t *codes = (const int64_t *)b[2].buf;
    const int64_t k = (int64_t)(b[1].len / 8);
    const int64_t *sizes = (const int64_t *)b[3].buf;
    const int64_t *kinds = (const int64_t *)b[4].buf;
    const int64_t *esize = (const int64_t *)b[5].buf;
    const int64_t ncodes = w > 0 ? (int64_t)(b[3].len / 8) / w : 0;
    if (w <= 0 || b[2].len != b[1].len || b[4].len != b[3].len || b[5].len != b[3].len) {
        PyErr_SetString(PyExc_ValueError, "union_column: bad arguments");
        goto done;
    }
    for (int64_t r = 0; r < k; r++) {
        const int64_t p = pos[r], code = codes[r];
        if (code < 0 || code >= ncodes || sizes[code * w] <= 0) goto malformed; /* unknown member */
        const int64_t *sz = sizes + code * w, *kd = kinds + code * w, *es = esize + code * w;
        if (p < 0 || p > n - 4 || (p & 3)) goto malformed;
        const int64_t vt = p - (int64_t)rd_i32(d, p);
        if (vt < 0 || vt > n - 4 || (vt & 1)) goto malformed;
        const int64_t vts = rd_u16(d, vt), osz = rd_u16(d, vt + 2);
        if (vts < 4 || (vts & 1) || vt + vts > n || osz < 4 || p + osz > n) goto malformed;
        for (int64_t c = 0; c < w && 4 + 2 * c < vts; c++) {
            const int64_t e = rd_u16(d, vt + 4 + 2 * c);
            if (!e) continue;
            if (e < 4 || e + sz[c] > osz || ((p + e) & (sz[c] - 1))) goto malformed;
            if (kd[c] != 1 && kd[c] != 2) continue;
            const int64_t a = p + e;
            const int64_t t = a + (int64_t)rd_u32(d, a);
            if (t > n - 4 || (t & 3)) goto malformed;
            const int64_t L = (int64_t)rd_u32(d, t);
            const int64_t ez = kd[c] == 2 ? 1 : es[c];
            const int64_t end = t + 4 + L * ez;
            const int64_t amask = (ez < 8 ? ez : 8) - 1;
            if (end + (kd[c] == 2) > n || ((t + 4) & amask)) goto malformed;
            if (kd[c] == 2 && d[end] != 0) goto malformed;
        }
    }
    result = Py_True;
    Py_INCREF(result);
    goto done;
malformed:
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    return result;
}

/* first_outside(values, lo, hi) -> int: the index of the first value outside [lo, hi), or -1.
 * values: any contiguous 1-D integer buffer (formats b B h H i I l L q Q). */
static PyObject *first_outside(PyObject *self, PyObject *args) {
    PyObject *o;
    long long lo, hi;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "OLL", &o, &lo, &hi)) return NULL;
    if (PyObject_GetBuffer(o, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    const char *f = b.format ? b.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    const Py_ssize_t k = b.itemsize ? b.len / b.itemsize : 0;
    Py_ssize_t bad = -1;
#define SCAN(T)                                                                               \
    do {                                                                                      \
        const T *v = (const T *)b.buf;                                                        \
        for (Py_ssize_t i = 0; i < k; i++) {                                                  \
            if ((long long)v[i] < lo || (long long)v[i] >= hi) {                              \
                bad = i;                                                                      \
                break;                                                                        \
            }                                                                                 \
        }                                                                                     \
    } while (0)
    switch (f[1] ? 0 : f[0]) {
    case 'b': SCAN(int8_t); break;
    case 'B': SCAN(uint8_t); break;
    case 'h': SCAN(int16_t); break;
    case 'H': SCAN(uint16_t); break;
    case 'i': SCAN(int32_t); break;
    case 'I': SCAN(uint32_t); break;
    case 'l':
    case 'q': if (b.itemsize == 8) { SCAN(int64_t); break; } /* fall through */
    default:
        PyBuffer_Release(&b);
        PyErr_Format(PyExc_TypeError, "first_outside: unsupported format %s", b.format);
        return NULL;
    }
#undef SCAN
    PyBuffer_Release(&b);
    return PyLong_FromSsize_t(bad);
}

static PyMethodDef methods[] = {
    {"first_outside", first_outside, METH_VARARGS, "First value outside [lo, hi), or -1."},
    {"union_column", union_column, METH_VARARGS, "Verify union values of mixed member types."},
    {"table_column", table_column, METH_VARARGS, "Verify a column of tables; fill entries."},
    {"gather", gather, METH_VARARGS, "Concatenate byte ranges into an output buffer."},
    {"element_positions", element_positions, METH_VARARGS, "Follow a vector of offsets."},
    {"scalar", scalar, METH_VARARGS, "Read one scalar field of every table."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fbcore", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fbcore(void) { return PyModule_Create(&module); }
