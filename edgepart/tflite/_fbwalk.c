/* One-pass verifying walk of a whole flatbuffer, collecting requested fields (optional
 * accelerator of edgepart's reader; see walk.py for the Python side and flatbuf.py for the
 * NumPy reader it must agree with).
 *
 * The schema arrives as flat int64 arrays (per table type: slot sizes, kinds and arguments;
 * per union enum: member table types). walk() visits every table reachable from the root in
 * depth-first, slot order, applying flatbuffers' verifier rules: every table, vtable, field,
 * string and vector inside the buffer and aligned, strings NUL-terminated, union members
 * known. For each requested (type, slot) it appends that field of every visited table of the
 * type to the request's output, in visit order. It returns the outputs as NumPy arrays, or None
 * if anything is malformed (the caller then runs the NumPy reader, which raises the precise
 * error). Tables of a deferred type (Q_DEFER) are only located: the reader verifies them later,
 * on first use. Work is bounded: at most one table per 4 bytes of input and one
 * vector element per byte, and a depth limit, so aliasing offsets cannot make it loop or blow
 * up; a table reached twice (writers share only empty Buffer tables) and more operators,
 * tensors and buffers than the file can hold (budget_bytes) are malformed, so memory stays a
 * small multiple of the file (the NumPy reader applies the same rules, see columns.py). Every
 * read is bounds-checked before it happens.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#if NPY_ABI_VERSION < 0x02000000 /* NumPy 1.x headers */
#define PyDataType_ELSIZE(descr) ((descr)->elsize)
#endif

#include "_fbread.h"

enum { K_SCALAR = 0, K_STRING = 1, K_VEC_SCALAR = 2, K_VEC_STRING = 3, K_TABLE = 4,
       K_VEC_TABLE = 5, K_UNION = 6 };
enum { Q_SCALAR = 0, Q_VECTOR = 1, Q_STRING = 2, Q_CHILD = 3, Q_UNION = 4, Q_POS = 5,
       Q_SPAN = 6, Q_SCALAR_SIGNED = 7, Q_DEFER = 8 };
enum { OK = 0, MALFORMED = -1, FAILED = -2 };
#define MAX_DEPTH 64
/* Files whose bitmap of visited tables costs at most this use it from the start (8 MiB files);
 * larger ones keep a set of the tables' positions (see claim). */
#define CLAIM_BITMAP_BYTES (256 << 10)

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Out;

typedef struct {
    const uint8_t *d;
    int64_t n;
    const int64_t *slot_base, *nslots, *slot_size, *slot_kind, *slot_arg;
    int64_t ntypes, nslots_total;
    const int64_t *enum_base, *enum_count, *enum_member;
    int64_t nenums, nmembers;
    const int64_t *req_kind, *req_size, *req_default;
    int64_t *req_of_slot; /* per flat slot: request index or -1 */
    int64_t *req_pos;     /* per type: Q_POS request index or -1 */
    int64_t *defer;       /* per type: 1 if its tables are only located, not visited */
    Out *out;  /* per request: fixed-size records */
    Out *data; /* per request: vector elements (Q_VECTOR) */
    Out *aux;  /* per request: presence byte per row (Q_VECTOR) */
    int64_t *visits;
    int64_t budget_tables, budget_elems;
    const int64_t *counted; /* per type: bytes of budget_bytes each of its tables spends */
    int64_t budget_bytes;
    /* The tables visited, by position: an open-addressing set (-1 empty; a power of two of
     * slots, at most half full), or, for densely packed tables, a bit per 4 bytes of file. */
    int64_t *claimed;
    int64_t nclaimed, claimed_cap;
    int claimed_bits;
    uint8_t *bitmap;
} W;

/* Fibonacci hashing: the top bits of the product, which every bit of pos reaches. */
static inline uint64_t slot_of(int64_t pos, int bits) {
    return ((uint64_t)pos * 0x9E3779B97F4A7C15ull) >> (64 - bits);
}

static inline int bit_claim(uint8_t *bitmap, int64_t pos) {
    const int64_t bit = pos >> 2;
    if (bitmap[bit >> 3] & (1u << (bit & 7))) return MALFORMED;
    bitmap[bit >> 3] |= (uint8_t)(1u << (bit & 7));
    return OK;
}

/* Makes room in the set for one more position: doubles it, or, once the set would outgrow a
 * bit per 4 bytes of the file (tables packed densely), moves to that bitmap. */
static int claim_grow(W *w) {
    const int bits = w->claimed_cap ? w->claimed_bits + 1 : 10;
    const int64_t cap = (int64_t)1 << bits;
    if (cap * (int64_t)sizeof(int64_t) > w->n / 32 + 1) {
        w->bitmap = PyMem_Calloc((size_t)(w->n / 32 + 1), 1);
        if (!w->bitmap) {
            PyErr_NoMemory();
            return FAILED;
        }
        for (int64_t i = 0; i < w->claimed_cap; i++) {
            if (w->claimed[i] >= 0) bit_claim(w->bitmap, w->claimed[i]);
        }
        PyMem_Free(w->claimed);
        w->claimed = NULL;
        w->claimed_cap = 0;
        return OK;
    }
    int64_t *set = PyMem_Malloc((size_t)cap * sizeof(int64_t));
    if (!set) {
        PyErr_NoMemory();
        return FAILED;
    }
    memset(set, 0xff, (size_t)cap * sizeof(int64_t));
    for (int64_t i = 0; i < w->claimed_cap; i++) {
        const int64_t v = w->claimed[i];
        if (v < 0) continue;
        uint64_t h = slot_of(v, bits);
        while (set[h] >= 0) h = (h + 1) & (uint64_t)(cap - 1);
        set[h] = v;
    }
    PyMem_Free(w->claimed);
    w->claimed = set;
    w->claimed_cap = cap;
    w->claimed_bits = bits;
    return OK;
}

/* Records that a table was visited at pos (>= 0, 4-aligned); MALFORMED if one was already.
 * Memory follows the tables visited, not the file: a 2 GB model whose weights sit after its
 * tables costs a few KiB here, where a bit per 4 bytes of file would cost 68 MB (and touch
 * all of it when the allocator hands back used memory). */
static int claim(W *w, int64_t pos) {
    if (!w->bitmap && 2 * (w->nclaimed + 1) > w->claimed_cap && claim_grow(w) < 0) return FAILED;
    if (w->bitmap) return bit_claim(w->bitmap, pos);
    const uint64_t mask = (uint64_t)(w->claimed_cap - 1);
    uint64_t h = slot_of(pos, w->claimed_bits);
    for (; w->claimed[h] >= 0; h = (h + 1) & mask) {
        if (w->claimed[h] == pos) return MALFORMED;
    }
    w->claimed[h] = pos;
    w->nclaimed++;
    return OK;
}

/* Makes room for n more bytes (outputs start at 4 KiB and double). */
static int grow(Out *o, Py_ssize_t n) {
    Py_ssize_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + n) cap *= 2;
    char *p = PyMem_Realloc(o->p, (size_t)cap);
    if (!p) {
        PyErr_NoMemory();
        return FAILED;
    }
    o->p = p;
    o->cap = cap;
    return OK;
}

static inline int put(Out *o, const void *src, Py_ssize_t n) {
    if (o->len + n > o->cap && grow(o, n) < 0) return FAILED;
    memcpy(o->p + o->len, src, (size_t)n);
    o->len += n;
    return OK;
}

static inline int put_i64(Out *o, int64_t v) {
    if (o->len + 8 > o->cap && grow(o, 8) < 0) return FAILED;
    memcpy(o->p + o->len, &v, 8);
    o->len += 8;
    return OK;
}

/* Checks the string or vector header at t; returns its length or -1 if malformed. */
static int64_t vec_len(const W *w, int64_t t, int64_t esize, int is_str) {
    if (t > w->n - 4 || (t & 3)) return -1;
    const int64_t L = (int64_t)rd_u32(w->d, t);
    const int64_t end = t + 4 + L * esize;
    int64_t amask = (esize < 8 ? esize : 8) - 1;
    if (amask < 0) amask = 0;
    if (end + is_str > w->n || ((t + 4) & amask)) return -1;
    if (is_str && w->d[end] != 0) return -1;
    return L;
}

static int visit(W *w, int64_t t, int64_t pos, int depth);

static int visit_child(W *w, int64_t t, int64_t pos, int depth, int64_t *index) {
    if (t < 0 || t >= w->ntypes) return MALFORMED;
    *index = w->visits[t];
    return visit(w, t, pos, depth + 1);
}

static int visit(W *w, int64_t t, int64_t pos, int depth) {
    const uint8_t *d = w->d;
    const int64_t n = w->n;
    if (depth > MAX_DEPTH || --w->budget_tables < 0) return MALFORMED;
    if (pos < 0 || pos > n - 4 || (pos & 3)) return MALFORMED;
    if (w->counted[t] && (w->budget_bytes -= w->counted[t]) < 0) return MALFORMED;
    if (w->defer[t]) { /* Q_DEFER: record where it is; the caller verifies it on first use */
        w->visits[t]++;
        return put_i64(&w->out[w->req_pos[t]], pos);
    }
    /* Writers share empty Buffer tables (deferred above), never others. */
    const int claimed = claim(w, pos);
    if (claimed != OK) return claimed;
    const int64_t vt = pos - (int64_t)rd_i32(d, pos);
    if (vt < 0 || vt > n - 4 || (vt & 1)) return MALFORMED;
    const int64_t vts = rd_u16(d, vt), osz = rd_u16(d, vt + 2);
    if (vts < 4 || (vts & 1) || vt + vts > n || osz < 4 || pos + osz > n) return MALFORMED;
    const int64_t base = w->slot_base[t], ns = w->nslots[t];
    w->visits[t]++;
    const int64_t rp = w->req_pos[t];
    if (rp >= 0 && put_i64(&w->out[rp], pos) < 0) return FAILED;
    for (int64_t c = 0; c < ns; c++) {
        const int64_t size = w->slot_size[base + c], kind = w->slot_kind[base + c];
        const int64_t arg = w->slot_arg[base + c], r = w->req_of_slot[base + c];
        const int64_t e = (4 + 2 * c < vts) ? rd_u16(d, vt + 4 + 2 * c) : 0;
        if (e && (e < 4 || e + size > osz || ((pos + e) & (size - 1)))) return MALFORMED;
        const int64_t a = pos + e;
        int64_t tgt = 0;
        if (e && kind != K_SCALAR) {
            tgt = a + (int64_t)rd_u32(d, a);
            if (tgt > n - 4 || (tgt & 3)) return MALFORMED;
        }
        int rc = OK;
        switch (kind) {
        case K_SCALAR:
            if (r >= 0) { /* widened to int64: every record output is int64 */
                int64_t v = w->req_default[r];
                if (e) {
                    uint64_t u = 0;
                    memcpy(&u, d + a, (size_t)size); /* little-endian host */
                    if (w->req_kind[r] == Q_SCALAR_SIGNED && size < 8) {
                        const uint64_t sign = (uint64_t)1 << (8 * size - 1);
                        u = (u ^ sign) - sign;
                    }
                    v = (int64_t)u;
                }
                rc = put_i64(&w->out[r], v);
            }
            break;
        case K_STRING: {
            int64_t L = -1, s = -1;
            if (e) {
                L = vec_len(w, tgt, 1, 1);
                if (L < 0) return MALFORMED;
                s = tgt + 4;
            }
            if (r >= 0 && (put_i64(&w->out[r], s) < 0 || put_i64(&w->out[r], L) < 0))
                return FAILED;
            break;
        }
        case K_VEC_SCALAR: {
            int64_t L = -1;
            if (e) {
                L = vec_len(w, tgt, arg, 0);
                if (L < 0) return MALFORMED;
            }
            if (r < 0) break;
            if (w->req_kind[r] == Q_SPAN) { /* absent byte vectors read as empty: (0, 0) */
                if (put_i64(&w->out[r], e ? tgt + 4 : 0) < 0 || put_i64(&w->out[r], e ? L : 0) < 0)
                    return FAILED;
                break;
            }
            if (L > 0 && (w->budget_elems -= L) < 0) return MALFORMED;
            if (L > 0 && put(&w->data[r], d + tgt + 4, L * arg) < 0) return FAILED;
            /* record: elements so far (the CSR end of this row; the records start with 0);
             * aux: whether the vector is present, a byte per row */
            const uint8_t present = L >= 0;
            if (put_i64(&w->out[r], w->data[r].len / arg) < 0 || put(&w->aux[r], &present, 1) < 0)
                return FAILED;
            break;
        }
        case K_VEC_STRING: {
            if (!e) break;
            const int64_t L = vec_len(w, tgt, 4, 0);
            if (L < 0 || (w->budget_elems -= L) < 0) return MALFORMED;
            for (int64_t j = 0; j < L; j++) {
                const int64_t p = tgt + 4 + 4 * j;
                if (vec_len(w, p + (int64_t)rd_u32(d, p), 1, 1) < 0) return MALFORMED;
            }
            break;
        }
        case K_TABLE: {
            int64_t index = -1;
            if (e) {
                rc = visit_child(w, arg, tgt, depth, &index);
                if (rc < 0) return rc;
            }
            if (r >= 0) rc = put_i64(&w->out[r], index);
            break;
        }
        case K_VEC_TABLE: {
            int64_t L = -1;
            if (e) {
                L = vec_len(w, tgt, 4, 0);
                if (L < 0 || (w->budget_elems -= L) < 0) return MALFORMED;
                for (int64_t j = 0; j < L; j++) {
                    const int64_t p = tgt + 4 + 4 * j;
                    int64_t index;
                    rc = visit_child(w, arg, p + (int64_t)rd_u32(d, p), depth, &index);
                    if (rc < 0) return rc;
                }
            }
            /* Q_CHILD: the vector's length (-1 if absent); Q_VECTOR: the CSR end of this row
             * over all tables of the element type visited so far (their only parent) */
            if (r >= 0) rc = put_i64(&w->out[r], w->req_kind[r] == Q_VECTOR ? w->visits[arg] : L);
            break;
        }
        case K_UNION: {
            /* the type field is the previous slot (flatc's layout for unions) */
            int64_t code = 0;
            if (c > 0) {
                const int64_t et = (4 + 2 * (c - 1) < vts) ? rd_u16(d, vt + 4 + 2 * (c - 1)) : 0;
                if (et) code = d[pos + et];
            }
            int64_t where = 0;
            if (e && code) {
                if (arg < 0 || arg >= w->nenums || code >= w->enum_count[arg]) return MALFORMED;
                const int64_t member = w->enum_member[w->enum_base[arg] + code];
                if (member < 0) return MALFORMED;
                int64_t index;
                rc = visit_child(w, member, tgt, depth, &index);
                if (rc < 0) return rc;
                where = tgt;
            } else {
                code = 0;
            }
            if (r >= 0 && (put_i64(&w->out[r], code) < 0 || put_i64(&w->out[r], where) < 0))
                return FAILED;
            break;
        }
        default:
            return MALFORMED;
        }
        if (rc < 0) return rc;
    }
    return OK;
}

/* A new NumPy array of `typenum` items holding a copy of output `o` (shape (n, 2) if `pairs`). */
static PyObject *array_of(const Out *o, int typenum, int pairs) {
    PyArray_Descr *descr = PyArray_DescrFromType(typenum);
    if (!descr) return NULL;
    const Py_ssize_t item = PyDataType_ELSIZE(descr);
    Py_DECREF(descr);
    if (item <= 0 || o->len % (item * (pairs ? 2 : 1))) {
        PyErr_SetString(PyExc_ValueError, "walk: output does not match its element type");
        return NULL;
    }
    npy_intp dims[2] = {(npy_intp)(o->len / item), 2};
    if (pairs) dims[0] /= 2;
    PyObject *a = PyArray_SimpleNew(pairs ? 2 : 1, dims, typenum);
    if (a && o->len) memcpy(PyArray_DATA((PyArrayObject *)a), o->p, (size_t)o->len);
    return a;
}

/* Frees an output once it is copied into its array (the copies are the peak otherwise). */
static void release(Out *o) {
    PyMem_Free(o->p);
    o->p = NULL;
    o->len = o->cap = 0;
}

/* Request r's output: an int64 array (pairs as (n, 2)), or for Q_VECTOR a tuple
 * (CSR pointers, elements as `typenum`, presence per row as bool if the request's "default"
 * is 1, else None). */
static PyObject *request_output(const W *w, int64_t r, int typenum) {
    const int64_t kind = w->req_kind[r];
    if (kind != Q_VECTOR) {
        PyObject *a =
            array_of(&w->out[r], NPY_INT64, kind == Q_STRING || kind == Q_SPAN || kind == Q_UNION);
        release(&w->out[r]);
        return a;
    }
    PyObject *ptr = array_of(&w->out[r], NPY_INT64, 0);
    PyObject *values = array_of(&w->data[r], typenum, 0);
    PyObject *present = w->req_default[r] ? array_of(&w->aux[r], NPY_BOOL, 0) : Py_NewRef(Py_None);
    release(&w->data[r]);
    release(&w->aux[r]);
    PyObject *t = (ptr && values && present) ? PyTuple_Pack(3, ptr, values, present) : NULL;
    release(&w->out[r]);
    Py_XDECREF(ptr);
    Py_XDECREF(values);
    Py_XDECREF(present);
    return t;
}


/* walk(data, root_type, root_pos, slot_base, nslots, slot_size, slot_kind, slot_arg,
 *      enum_base, enum_count, enum_member, req_flat_slot, req_kind, req_size_default,
 *      req_typenum, counted, budget_bytes) -> (one output per request) | None
 *   Scalars are widened to int64 (sign-extended for Q_SCALAR_SIGNED); strings, spans and
 *   unions are (n, 2) int64 arrays; a Q_VECTOR request gives (CSR pointers: 0, then the end
 *   of each row; the elements, as NumPy type req_typenum; presence per row, or None unless
 *   its req_size_default is 1).
 * req_flat_slot: flat slot index (slot_base[type] + slot), or -1 - type for Q_POS and
 *   Q_DEFER (Q_DEFER: tables of that type are located, checked for alignment, not visited).
 * req_size_default: per request, the scalar's default value (as int64).
 * counted: per type, the bytes of budget_bytes each of its tables spends (0: none).
 */
static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *data_obj;
    long long root_type, root_pos, budget_bytes;
    PyObject *o[13];
    Py_buffer data, b[13];
    int got = 0, have_data = 0;
    PyObject *result = NULL;
    int64_t nreq = 0;
    W w;
    memset(&w, 0, sizeof(w));
    if (!PyArg_ParseTuple(args, "OLLOOOOOOOOOOOOOL", &data_obj, &root_type, &root_pos, &o[0],
                          &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9],
                          &o[10], &o[11], &o[12], &budget_bytes))
        return NULL;
    if (PyObject_GetBuffer(data_obj, &data, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    have_data = 1;
    for (; got < 13; got++) {
        if (PyObject_GetBuffer(o[got], &b[got], PyBUF_C_CONTIGUOUS) < 0) goto done;
        if (b[got].len % 8) {
            PyErr_SetString(PyExc_ValueError, "walk: int64 arrays expected");
            got++;
            goto done;
        }
    }
    w.d = (const uint8_t *)data.buf;
    w.n = (int64_t)data.len;
    w.slot_base = b[0].buf;
    w.nslots = b[1].buf;
    w.ntypes = b[0].len / 8;
    w.slot_size = b[2].buf;
    w.slot_kind = b[3].buf;
    w.slot_arg = b[4].buf;
    w.nslots_total = b[2].len / 8;
    w.enum_base = b[5].buf;
    w.enum_count = b[6].buf;
    w.nenums = b[5].len / 8;
    w.enum_member = b[7].buf;
    w.nmembers = b[7].len / 8;
    const int64_t *req_slot = b[8].buf;
    w.req_kind = b[9].buf;
    w.req_default = b[10].buf;
    const int64_t *req_typenum = b[11].buf;
    w.counted = b[12].buf;
    w.budget_bytes = budget_bytes;
    nreq = b[8].len / 8;
    if (b[1].len != b[0].len || b[3].len != b[2].len || b[4].len != b[2].len ||
        b[12].len != b[0].len ||
        b[6].len != b[5].len || b[9].len != b[8].len || b[10].len != b[8].len ||
        b[11].len != b[8].len ||
        root_type < 0 || root_type >= w.ntypes) {
        PyErr_SetString(PyExc_ValueError, "walk: inconsistent schema arrays");
        goto done;
    }
    for (int64_t t = 0; t < w.ntypes; t++) {
        if (w.slot_base[t] < 0 || w.nslots[t] < 0 ||
            w.slot_base[t] + w.nslots[t] > w.nslots_total) {
            PyErr_SetString(PyExc_ValueError, "walk: bad slot table");
            goto done;
        }
    }
    for (int64_t e = 0; e < w.nenums; e++) {
        if (w.enum_base[e] < 0 || w.enum_count[e] < 0 ||
            w.enum_base[e] + w.enum_count[e] > w.nmembers) {
            PyErr_SetString(PyExc_ValueError, "walk: bad enum table");
            goto done;
        }
    }
    w.req_of_slot = PyMem_Calloc((size_t)(w.nslots_total + 1), sizeof(int64_t));
    w.req_pos = PyMem_Calloc((size_t)(w.ntypes + 1), sizeof(int64_t));
    w.visits = PyMem_Calloc((size_t)(w.ntypes + 1), sizeof(int64_t));
    w.defer = PyMem_Calloc((size_t)(w.ntypes + 1), sizeof(int64_t));
    w.out = PyMem_Calloc((size_t)(nreq + 1), sizeof(Out));
    w.data = PyMem_Calloc((size_t)(nreq + 1), sizeof(Out));
    w.aux = PyMem_Calloc((size_t)(nreq + 1), sizeof(Out));
    const int small = w.n / 32 + 1 <= CLAIM_BITMAP_BYTES;
    if (small) w.bitmap = PyMem_Calloc((size_t)(w.n / 32 + 1), 1);
    if (!w.req_of_slot || !w.req_pos || !w.visits || !w.defer || !w.out || !w.data || !w.aux ||
        (small && !w.bitmap)) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t i = 0; i < w.nslots_total; i++) w.req_of_slot[i] = -1;
    for (int64_t i = 0; i < w.ntypes; i++) w.req_pos[i] = -1;
    for (int64_t r = 0; r < nreq; r++) {
        const int64_t s = req_slot[r];
        if (s >= 0 && s < w.nslots_total) w.req_of_slot[s] = r;
        else if (s < 0 && -1 - s < w.ntypes) {
            w.req_pos[-1 - s] = r;
            if (w.req_kind[r] == Q_DEFER) w.defer[-1 - s] = 1;
        } else {
            PyErr_SetString(PyExc_ValueError, "walk: bad request");
            goto done;
        }
    }
    for (int64_t r = 0; r < nreq; r++) { /* CSR pointers start at 0 */
        if (w.req_kind[r] == Q_VECTOR && put_i64(&w.out[r], 0) < 0) goto done;
    }
    w.budget_tables = w.n / 4 + 16;
    w.budget_elems = w.n + 4096;
    const int rc = visit(&w, root_type, root_pos, 0);
    if (rc == FAILED) goto done;
    if (rc == MALFORMED) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    /* One NumPy value per request, in request order. */
    PyObject *outs = PyTuple_New((Py_ssize_t)nreq);
    if (!outs) goto done;
    for (int64_t r = 0; r < nreq; r++) {
        PyObject *item = request_output(&w, r, (int)req_typenum[r]);
        if (!item) {
            Py_DECREF(outs);
            goto done;
        }
        PyTuple_SET_ITEM(outs, (Py_ssize_t)r, item);
    }
    result = outs;
done:
    if (w.out) {
        for (int64_t r = 0; r < nreq; r++) PyMem_Free(w.out[r].p);
    }
    if (w.data) {
        for (int64_t r = 0; r < nreq; r++) PyMem_Free(w.data[r].p);
    }
    if (w.aux) {
        for (int64_t r = 0; r < nreq; r++) PyMem_Free(w.aux[r].p);
    }
    PyMem_Free(w.claimed);
    PyMem_Free(w.bitmap);
    PyMem_Free(w.aux);
    PyMem_Free(w.out);
    PyMem_Free(w.data);
    PyMem_Free(w.visits);
    PyMem_Free(w.defer);
    PyMem_Free(w.req_pos);
    PyMem_Free(w.req_of_slot);
    for (int i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    if (have_data) PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Verify a whole flatbuffer and collect requested fields."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fbwalk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fbwalk(void) {
    import_array();
    return PyModule_Create(&module);
}
