/* Score-only placement evaluation for edgepart's solvers (optional accelerator).
 *
 * A line-by-line port of the score path of edgepart/placement/_core.py (`run` with detail off):
 * the same epochs, the same transfer rules and the same floating-point operations in the same
 * order, so both give bit-identical keys (tests compare them on random placements and every
 * model option). The Python module stays the reference and produces every detailed evaluation;
 * solvers call this one for the thousands of scores a search needs. If it fails to build,
 * edgepart uses the Python kernel alone (same results, slower).
 *
 * A graph is copied once into a `Kernel` (a capsule); `score` evaluates one placement and
 * `scan` evaluates a list of moves against a base placement (each move sets some nodes to some
 * units), stopping at the first that improves a given key when asked. Arrays cross the boundary
 * through the buffer protocol, so this file needs only Python.h. Build with floating-point
 * contraction off (setup.py), so a*b+c is never fused and sums match Python's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t n, nu, nd, np, nt, host;
    int32_t n_prod, n_input, n_out, n_groups;
    int limited, any_copy, any_single;
    /* graph */
    int32_t *succ_ptr, *succ_idx, *pred_ptr, *pred_idx, *indeg;
    double *lat; /* n * np */
    int32_t *uproc, *udom;
    double *udisp, *ucap;
    uint8_t *ucopy, *usingle, *uhand, *selfl;
    int64_t *wts, *act;
    int32_t *prod_t, *prod_s, *prod_v, *in_t, *in_v, *tsrc, *out_t;
    double *tcost; /* nt * nd * nd */
    int32_t *grp_ptr, *grp_idx;
    /* scratch */
    int32_t *units, *deg, *part_of, *part_unit, *heap, *hsize, *stack, *ext;
    int32_t *qptr, *qfill, *qt, *qps, *rps, *stamp, *outq;
    double *rdelay, *odelay, *dur, *start, *end, *freet, *load, *link, *lv;
    int64_t *weights, *arena;
    int32_t gen;
    /* trace of a base evaluation, for evaluating moves from the first epoch they can change
     * (allocated on first use; valid while tr_valid) */
    int tr_valid;
    int32_t tr_nq, *tr_ready, *tr_order, *tr_epstart, *tr_part_of, *tr_part_unit, *tr_reg;
    double *tr_free, *tr_load, *tr_link, *tr_maxend, *tr_start, *tr_end;
} Kernel;

static void kernel_free(Kernel *k) {
    if (!k) return;
    void **ptrs[] = {
        (void **)&k->succ_ptr, (void **)&k->succ_idx, (void **)&k->pred_ptr,
        (void **)&k->pred_idx, (void **)&k->indeg, (void **)&k->lat, (void **)&k->uproc,
        (void **)&k->udom, (void **)&k->udisp, (void **)&k->ucap, (void **)&k->ucopy,
        (void **)&k->usingle, (void **)&k->uhand, (void **)&k->selfl, (void **)&k->wts,
        (void **)&k->act, (void **)&k->prod_t, (void **)&k->prod_s, (void **)&k->prod_v,
        (void **)&k->in_t, (void **)&k->in_v, (void **)&k->tsrc, (void **)&k->out_t,
        (void **)&k->tcost, (void **)&k->grp_ptr, (void **)&k->grp_idx, (void **)&k->units,
        (void **)&k->deg, (void **)&k->part_of, (void **)&k->part_unit, (void **)&k->heap,
        (void **)&k->hsize, (void **)&k->stack, (void **)&k->ext, (void **)&k->qptr,
        (void **)&k->qfill, (void **)&k->qt, (void **)&k->qps, (void **)&k->rps,
        (void **)&k->stamp, (void **)&k->outq, (void **)&k->rdelay, (void **)&k->odelay,
        (void **)&k->dur, (void **)&k->start, (void **)&k->end, (void **)&k->freet,
        (void **)&k->load, (void **)&k->link, (void **)&k->lv, (void **)&k->weights,
        (void **)&k->arena, (void **)&k->tr_ready, (void **)&k->tr_order,
        (void **)&k->tr_epstart, (void **)&k->tr_part_of, (void **)&k->tr_part_unit,
        (void **)&k->tr_reg, (void **)&k->tr_free, (void **)&k->tr_load, (void **)&k->tr_link,
        (void **)&k->tr_maxend, (void **)&k->tr_start, (void **)&k->tr_end};
    for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) free(*ptrs[i]);
    free(k);
}

static void capsule_free(PyObject *cap) {
    kernel_free((Kernel *)PyCapsule_GetPointer(cap, "edgepart.evalc.Kernel"));
}

/* Copy a buffer of exactly `count` items of `size` bytes into fresh memory (at least 1 byte). */
static void *copy_buf(PyObject *o, Py_ssize_t count, Py_ssize_t size) {
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (b.len != count * size) {
        PyBuffer_Release(&b);
        PyErr_Format(PyExc_ValueError, "evalc: buffer of %zd bytes, expected %zd", b.len,
                     count * size);
        return NULL;
    }
    void *p = malloc(count * size > 0 ? (size_t)(count * size) : 1);
    if (!p) {
        PyBuffer_Release(&b);
        PyErr_NoMemory();
        return NULL;
    }
    if (count) memcpy(p, b.buf, (size_t)(count * size));
    PyBuffer_Release(&b);
    return p;
}

static void *alloc(Py_ssize_t count, Py_ssize_t size) {
    void *p = calloc(count > 0 ? (size_t)count : 1, (size_t)size);
    if (!p) PyErr_NoMemory();
    return p;
}

/* make(dims: tuple of 13 ints, arrays: tuple of 26 buffers) -> capsule (layout: _fastscore.py) */
static PyObject *make(PyObject *self, PyObject *args) {
    PyObject *dims, *arrs, *a[26];
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &dims, &PyTuple_Type, &arrs)) return NULL;
    if (PyTuple_GET_SIZE(arrs) != 26) {
        PyErr_SetString(PyExc_ValueError, "evalc.make: 26 arrays expected");
        return NULL;
    }
    for (int i = 0; i < 26; i++) a[i] = PyTuple_GET_ITEM(arrs, i);
    if (PyTuple_GET_SIZE(dims) != 13) {
        PyErr_SetString(PyExc_ValueError, "evalc.make: 13 dimensions expected");
        return NULL;
    }
    long d[13];
    for (int i = 0; i < 13; i++) {
        d[i] = PyLong_AsLong(PyTuple_GET_ITEM(dims, i));
        if (d[i] == -1 && PyErr_Occurred()) return NULL;
        if (d[i] < 0 || d[i] > 0x7fffffffL) {
            PyErr_SetString(PyExc_ValueError, "evalc.make: dimension out of range");
            return NULL;
        }
    }
    Kernel *k = (Kernel *)calloc(1, sizeof(Kernel));
    if (!k) return PyErr_NoMemory();
    k->n = (int32_t)d[0];
    k->nu = (int32_t)d[1];
    k->nd = (int32_t)d[2];
    k->np = (int32_t)d[3];
    k->nt = (int32_t)d[4];
    k->host = (int32_t)d[5];
    k->n_prod = (int32_t)d[6];
    k->n_input = (int32_t)d[7];
    k->n_out = (int32_t)d[8];
    k->n_groups = (int32_t)d[9];
    k->limited = (int)d[10];
    k->any_copy = (int)d[11];
    k->any_single = (int)d[12];
    const Py_ssize_t n = k->n, nu = k->nu, nd = k->nd, np = k->np, nt = k->nt;
    const Py_ssize_t I = 4, D = 8, L = 8, B = 1;
#define CP(field, i, cnt, sz)                                  \
    if (!(k->field = copy_buf(a[i], (cnt), (sz)))) goto fail;
    CP(succ_ptr, 0, n + 1, I);
    CP(pred_ptr, 2, n + 1, I);
    CP(succ_idx, 1, k->succ_ptr[n], I);
    CP(pred_idx, 3, k->pred_ptr[n], I);
    CP(indeg, 4, n, I);
    CP(lat, 5, n * np, D);
    CP(uproc, 6, nu, I);
    CP(udom, 7, nu, I);
    CP(udisp, 8, nu, D);
    CP(ucap, 9, nu, D);
    CP(ucopy, 10, nu, B);
    CP(usingle, 11, nu, B);
    CP(uhand, 12, nu, B);
    CP(selfl, 13, nd, B);
    CP(wts, 14, n, L);
    CP(act, 15, n, L);
    CP(prod_t, 16, k->n_prod, I);
    CP(prod_s, 17, k->n_prod, I);
    CP(prod_v, 18, k->n_prod, I);
    CP(in_t, 19, k->n_input, I);
    CP(in_v, 20, k->n_input, I);
    CP(tsrc, 21, nt, I);
    CP(out_t, 22, k->n_out, I);
    CP(tcost, 23, nt * nd * nd, D);
    CP(grp_ptr, 24, k->n_groups + 1, I);
    CP(grp_idx, 25, k->grp_ptr[k->n_groups], I);
#undef CP
    const Py_ssize_t R = k->n_prod + k->n_input;
#define AL(field, cnt, sz) \
    if (!(k->field = alloc((cnt), (sz)))) goto fail;
    AL(units, n, I);
    AL(deg, n, I);
    AL(part_of, n, I);
    AL(part_unit, n, I);
    AL(heap, nu * n, I);
    AL(hsize, nu, I);
    AL(stack, n, I);
    AL(ext, nu, I);
    AL(qptr, n + 2, I);
    AL(qfill, n + 1, I);
    AL(qt, R, I);
    AL(qps, R, I);
    AL(rps, R, I);
    AL(stamp, nt * nd, I);
    AL(outq, k->n_out, I);
    AL(rdelay, R, D);
    AL(odelay, k->n_out, D);
    AL(dur, n, D);
    AL(start, n, D);
    AL(end, n, D);
    AL(freet, nu, D);
    AL(load, nu, D);
    AL(link, nd * nd, D);
    AL(lv, n, D);
    AL(weights, nu, L);
    AL(arena, nu, L);
#undef AL
    for (Py_ssize_t i = 0; i < n; i++) {
        if (k->indeg[i] < 0) goto bad;
        if (k->succ_ptr[i] < 0 || k->succ_ptr[i] > k->succ_ptr[i + 1]) goto bad;
        if (k->pred_ptr[i] < 0 || k->pred_ptr[i] > k->pred_ptr[i + 1]) goto bad;
    }
    if (k->grp_ptr[0] != 0) goto bad;
    for (Py_ssize_t i = 0; i < k->succ_ptr[n]; i++)
        if (k->succ_idx[i] < 0 || k->succ_idx[i] >= n) goto bad;
    for (Py_ssize_t i = 0; i < k->pred_ptr[n]; i++)
        if (k->pred_idx[i] < 0 || k->pred_idx[i] >= n) goto bad;
    for (Py_ssize_t i = 0; i < nu; i++)
        if (k->uproc[i] < 0 || k->uproc[i] >= np || k->udom[i] < 0 || k->udom[i] >= nd) goto bad;
    if (k->host < 0 || k->host >= nd) goto bad;
    for (Py_ssize_t i = 0; i < k->n_prod; i++)
        if (k->prod_t[i] < 0 || k->prod_t[i] >= nt || k->prod_s[i] < 0 || k->prod_s[i] >= n ||
            k->prod_v[i] < 0 || k->prod_v[i] >= n)
            goto bad;
    for (Py_ssize_t i = 0; i < k->n_input; i++)
        if (k->in_t[i] < 0 || k->in_t[i] >= nt || k->in_v[i] < 0 || k->in_v[i] >= n) goto bad;
    for (Py_ssize_t i = 0; i < nt; i++)
        if (k->tsrc[i] < -1 || k->tsrc[i] >= n) goto bad;
    for (Py_ssize_t i = 0; i < k->n_out; i++)
        if (k->out_t[i] < 0 || k->out_t[i] >= nt || k->tsrc[k->out_t[i]] < 0) goto bad;
    for (Py_ssize_t i = 0; i < k->n_groups; i++)
        if (k->grp_ptr[i + 1] <= k->grp_ptr[i]) goto bad;
    for (Py_ssize_t i = 0; i < k->grp_ptr[k->n_groups]; i++)
        if (k->grp_idx[i] < 0 || k->grp_idx[i] >= n) goto bad;
    k->gen = 0;
    return PyCapsule_New(k, "edgepart.evalc.Kernel", capsule_free);
bad:
    PyErr_SetString(PyExc_ValueError, "evalc.make: index out of range");
fail:
    kernel_free(k);
    return NULL;
}

static void heap_push(int32_t *h, int32_t *size, int32_t v) {
    int32_t i = (*size)++;
    while (i > 0) {
        int32_t p = (i - 1) >> 1;
        if (h[p] <= v) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

/* Bumps the stamp generation used to mark moved (tensor, domain) pairs. */
static void next_gen(Kernel *k) {
    if (++k->gen == 0x7fffffff) {
        memset(k->stamp, 0, sizeof(int32_t) * (size_t)k->nt * (size_t)k->nd);
        k->gen = 1;
    }
}

/* Allocate the trace arrays (once). Returns 0 on allocation failure (Python error set). */
static int trace_alloc(Kernel *k) {
    if (k->tr_ready) return 1;
    const Py_ssize_t n = k->n, nu = k->nu, nd = k->nd;
#define AL(field, cnt, sz) \
    if (!(k->field = alloc((cnt), (sz)))) return 0;
    AL(tr_ready, n, 4);
    AL(tr_order, n, 4);
    AL(tr_epstart, n + 1, 4);
    AL(tr_part_of, n, 4);
    AL(tr_part_unit, n, 4);
    AL(tr_reg, (Py_ssize_t)k->nt * nd, 4);
    AL(tr_free, (n + 1) * nu, 8);
    AL(tr_load, (n + 1) * nu, 8);
    AL(tr_link, (n + 1) * nd * nd, 8);
    AL(tr_maxend, n + 1, 8);
    AL(tr_start, n, 8);
    AL(tr_end, n, 8);
#undef AL
    return 1;
}

/* Evaluate k->units. Returns 1 if feasible; fills *lat, *per, *spread (when want_spread).
 *
 * record: also fill the trace (k->tr_*) of this evaluation, as the base of later moves.
 * e0 >= 0: k->units differs from the traced base only in nodes that become ready during epoch
 * e0 or later (in the base run): epochs before e0 are then the base's, and the evaluation
 * resumes there (the epochs' state is rebuilt from the base's placement order, the schedule,
 * unit loads and link loads from the base's snapshots at epoch e0). Only without copying and
 * single-partition processors (the caller checks). Every sum is done in the same order as a
 * full evaluation, so the results are bit-identical. */
static int evaluate_ex(Kernel *k, int want_spread, double *lat_out, double *per_out,
                       double *spread_out, int32_t *nq_out, int record, int32_t e0) {
    const int32_t n = k->n, nu = k->nu, nd = k->nd, np = k->np, host = k->host;
    const int32_t *units = k->units;
    double *lv = k->lv;
    *lat_out = INFINITY;
    *per_out = INFINITY;
    *spread_out = 0.0;
    if (record) k->tr_valid = 0;
    for (int32_t v = 0; v < n; v++) {
        double x = k->lat[(int64_t)v * np + k->uproc[units[v]]];
        if (isinf(x)) return 0;
        lv[v] = x;
    }
    for (int32_t gi = 0; gi < k->n_groups; gi++) {
        int32_t u0 = units[k->grp_idx[k->grp_ptr[gi]]];
        for (int32_t j = k->grp_ptr[gi]; j < k->grp_ptr[gi + 1]; j++)
            if (units[k->grp_idx[j]] != u0) return 0;
    }
    if (k->limited) {
        memset(k->weights, 0, sizeof(int64_t) * nu);
        memset(k->arena, 0, sizeof(int64_t) * nu);
        for (int32_t v = 0; v < n; v++) {
            int32_t u = units[v];
            k->weights[u] += k->wts[v];
            if (k->act[v] > k->arena[u]) k->arena[u] = k->act[v];
        }
        for (int32_t u = 0; u < nu; u++)
            if ((double)(k->weights[u] + k->arena[u]) > k->ucap[u]) return 0;
    }
    /* epochs */
    int32_t *deg = k->deg, *part_of = k->part_of, *part_unit = k->part_unit, *hsize = k->hsize;
    int32_t *stack = k->stack, *ext = k->ext;
    const int resume = e0 > 0;
    int32_t nq = 0, placed = 0, order_n = 0;
    memcpy(deg, k->indeg, sizeof(int32_t) * n);
    memset(hsize, 0, sizeof(int32_t) * nu);
    if (resume) {
        const int32_t upto = k->tr_epstart[e0];
        for (int32_t v = 0; v < n; v++) part_of[v] = -1;
        for (int32_t i = 0; i < upto; i++) {
            int32_t v = k->tr_order[i];
            part_of[v] = k->tr_part_of[v];
            for (int32_t j = k->succ_ptr[v]; j < k->succ_ptr[v + 1]; j++) deg[k->succ_idx[j]]--;
        }
        for (int32_t v = 0; v < n; v++)
            if (part_of[v] < 0 && deg[v] == 0) {
                int32_t u = units[v];
                k->heap[(int64_t)u * n + hsize[u]++] = v; /* ascending: already a heap */
            }
        memcpy(part_unit, k->tr_part_unit, sizeof(int32_t) * e0);
        nq = e0;
        placed = upto;
    } else {
        for (int32_t v = 0; v < n; v++) {
            part_of[v] = -1;
            if (deg[v] == 0) {
                int32_t u = units[v];
                k->heap[(int64_t)u * n + hsize[u]++] = v; /* ascending: already a heap */
                if (record) k->tr_ready[v] = 0;
            }
        }
    }
    const int single = k->any_single;
    if (single) {
        memset(ext, 0, sizeof(int32_t) * nu);
        for (int32_t v = 0; v < n; v++) {
            int32_t tv = units[v];
            if (!k->usingle[tv]) continue;
            for (int32_t j = k->pred_ptr[v]; j < k->pred_ptr[v + 1]; j++)
                if (units[k->pred_idx[j]] != tv) ext[tv]++;
        }
    }
    for (;;) {
        int32_t best = -1, top = n;
        for (int32_t u = 0; u < nu; u++) {
            if (hsize[u] == 0) continue;
            int32_t h0 = k->heap[(int64_t)u * n];
            if (h0 < top && (!single || !k->usingle[u] || ext[u] == 0)) {
                best = u;
                top = h0;
            }
        }
        if (best < 0) break;
        int32_t pid = nq++;
        part_unit[pid] = best;
        if (record) k->tr_epstart[pid] = order_n;
        int32_t sp = hsize[best];
        memcpy(stack, k->heap + (int64_t)best * n, sizeof(int32_t) * sp);
        hsize[best] = 0;
        while (sp > 0) {
            int32_t v = stack[--sp];
            part_of[v] = pid;
            placed++;
            if (record) k->tr_order[order_n++] = v;
            for (int32_t j = k->succ_ptr[v]; j < k->succ_ptr[v + 1]; j++) {
                int32_t w = k->succ_idx[j];
                int32_t dd = --deg[w];
                int32_t tw = units[w];
                if (single && tw != best && k->usingle[tw]) ext[tw]--;
                if (dd == 0) {
                    if (record) k->tr_ready[w] = pid;
                    if (tw == best)
                        stack[sp++] = w;
                    else
                        heap_push(k->heap + (int64_t)tw * n, &hsize[tw], w);
                }
            }
        }
    }
    if (placed < n) return 0; /* a single-partition unit could not open */
    *nq_out = nq;
    const int32_t q0 = resume ? e0 : 0; /* first partition recomputed */
    double *dur = k->dur;
    memset(dur + q0, 0, sizeof(double) * (nq - q0));
    for (int32_t v = 0; v < n; v++)
        if (part_of[v] >= q0) dur[part_of[v]] += lv[v];
    for (int32_t q = q0; q < nq; q++) dur[q] += k->udisp[part_unit[q]];

    /* cross-partition reads grouped by reading partition, in the Python kernel's order */
    int32_t *qptr = k->qptr, *qfill = k->qfill;
    memset(qptr, 0, sizeof(int32_t) * (nq + 2));
    for (int32_t i = 0; i < k->n_prod; i++) {
        int32_t pc = part_of[k->prod_v[i]], ps = part_of[k->prod_s[i]];
        if (ps != pc && pc >= q0) qptr[pc + 1]++;
    }
    for (int32_t i = 0; i < k->n_input; i++) {
        int32_t pc = part_of[k->in_v[i]];
        if (pc >= q0) qptr[pc + 1]++;
    }
    for (int32_t q = 0; q < nq; q++) qptr[q + 1] += qptr[q];
    memcpy(qfill, qptr, sizeof(int32_t) * (nq + 1));
    for (int32_t i = 0; i < k->n_prod; i++) {
        int32_t pc = part_of[k->prod_v[i]], ps = part_of[k->prod_s[i]];
        if (ps != pc && pc >= q0) {
            int32_t j = qfill[pc]++;
            k->qt[j] = k->prod_t[i];
            k->qps[j] = ps;
        }
    }
    for (int32_t i = 0; i < k->n_input; i++) {
        int32_t pc = part_of[k->in_v[i]];
        if (pc < q0) continue;
        int32_t j = qfill[pc]++;
        k->qt[j] = k->in_t[i];
        k->qps[j] = -1;
    }
    /* transfers: which reads pay, which pairs move once, the delay each read sees */
    next_gen(k);
    const int32_t gen = k->gen;
    int32_t *stamp = k->stamp;
    double *link = k->link;
    if (record)
        for (int64_t i = 0; i < (int64_t)k->nt * nd; i++) k->tr_reg[i] = 0x7fffffff;
    if (resume)
        memcpy(link, k->tr_link + (int64_t)e0 * nd * nd, sizeof(double) * nd * nd);
    else
        memset(link, 0, sizeof(double) * nd * nd);
    for (int32_t q = q0; q < nq; q++) {
        int32_t u = part_unit[q];
        int32_t dq = k->udom[u];
        if (record) memcpy(k->tr_link + (int64_t)q * nd * nd, link, sizeof(double) * nd * nd);
        for (int32_t j = qptr[q]; j < qptr[q + 1]; j++) {
            int32_t t = k->qt[j], ps = k->qps[j], ds;
            double cst;
            int sender;
            k->rps[j] = ps;
            if (ps >= 0) {
                int32_t us = part_unit[ps];
                ds = k->udom[us];
                if (ds == dq && (!k->selfl[ds] || (us == u && !k->uhand[u]))) {
                    k->rdelay[j] = 0.0;
                    continue;
                }
                cst = k->tcost[((int64_t)t * nd + ds) * nd + dq];
                sender = k->ucopy[us];
            } else {
                if (dq == host) {
                    k->rdelay[j] = 0.0;
                    continue;
                }
                ds = host;
                cst = k->tcost[((int64_t)t * nd + host) * nd + dq];
                sender = 0;
            }
            int64_t key = (int64_t)t * nd + dq;
            if (stamp[key] != gen && !(resume && k->tr_reg[key] < e0)) {
                stamp[key] = gen;
                if (record) k->tr_reg[key] = q;
                link[ds * nd + dq] += cst;
                if (sender) dur[ps] += cst;
                if (k->ucopy[u]) {
                    dur[q] += cst;
                    k->rdelay[j] = 0.0;
                    continue;
                }
            }
            k->rdelay[j] = sender ? 0.0 : cst;
        }
    }
    if (record) memcpy(k->tr_link + (int64_t)nq * nd * nd, link, sizeof(double) * nd * nd);
    for (int32_t i = 0; i < k->n_out; i++) {
        int32_t t = k->out_t[i];
        int32_t q = part_of[k->tsrc[t]];
        int32_t us = part_unit[q];
        int32_t ds = k->udom[us];
        k->outq[i] = q;
        if (ds == host) {
            k->odelay[i] = 0.0;
            continue;
        }
        double cst = k->tcost[((int64_t)t * nd + ds) * nd + host];
        int64_t key = (int64_t)t * nd + host;
        if (stamp[key] != gen && !(resume && k->tr_reg[key] < e0)) {
            stamp[key] = gen;
            link[ds * nd + host] += cst;
            if (k->ucopy[us]) dur[q] += cst;
        }
        k->odelay[i] = k->ucopy[us] ? 0.0 : cst;
    }
    /* schedule */
    double *freet = k->freet, *start = k->start, *end = k->end;
    double latency = 0.0;
    if (resume) {
        memcpy(freet, k->tr_free + (int64_t)e0 * nu, sizeof(double) * nu);
        memcpy(start, k->tr_start, sizeof(double) * e0);
        memcpy(end, k->tr_end, sizeof(double) * e0);
        latency = k->tr_maxend[e0];
    } else {
        memset(freet, 0, sizeof(double) * nu);
    }
    for (int32_t q = q0; q < nq; q++) {
        int32_t u = part_unit[q];
        if (record) {
            memcpy(k->tr_free + (int64_t)q * nu, freet, sizeof(double) * nu);
            k->tr_maxend[q] = latency;
        }
        double r = 0.0;
        for (int32_t j = qptr[q]; j < qptr[q + 1]; j++) {
            int32_t ps = k->rps[j];
            double a = ps >= 0 ? end[ps] + k->rdelay[j] : k->rdelay[j];
            if (a > r) r = a;
        }
        double st = r > freet[u] ? r : freet[u];
        start[q] = st;
        end[q] = freet[u] = st + dur[q];
        if (q == 0 || end[q] > latency) latency = end[q];
    }
    if (record) k->tr_maxend[nq] = latency;
    for (int32_t i = 0; i < k->n_out; i++) {
        double a = end[k->outq[i]] + k->odelay[i];
        if (a > latency) latency = a;
    }
    double *load = k->load;
    if (resume)
        memcpy(load, k->tr_load + (int64_t)e0 * nu, sizeof(double) * nu);
    else
        memset(load, 0, sizeof(double) * nu);
    for (int32_t q = q0; q < nq; q++) {
        if (record) memcpy(k->tr_load + (int64_t)q * nu, load, sizeof(double) * nu);
        load[part_unit[q]] += dur[q];
    }
    double ml = load[0], mk = link[0];
    for (int32_t u = 1; u < nu; u++)
        if (load[u] > ml) ml = load[u];
    for (int32_t i = 1; i < nd * nd; i++)
        if (link[i] > mk) mk = link[i];
    *lat_out = latency;
    *per_out = mk > ml ? mk : ml;
    if (want_spread == 1) { /* how early results are available: sum of partition ends */
        double s = 0.0;
        for (int32_t v = 0; v < n; v++) s += end[part_of[v]];
        *spread_out = s;
    } else if (want_spread == 2) { /* balance: sum of squared unit and link loads */
        double s = 0.0;
        for (int32_t u = 0; u < nu; u++) s += load[u] * load[u];
        for (int32_t i = 0; i < nd * nd; i++) s += link[i] * link[i];
        *spread_out = s;
    }
    if (record) {
        memcpy(k->tr_part_of, part_of, sizeof(int32_t) * n);
        memcpy(k->tr_part_unit, part_unit, sizeof(int32_t) * nq);
        memcpy(k->tr_start, start, sizeof(double) * nq);
        memcpy(k->tr_end, end, sizeof(double) * nq);
        k->tr_epstart[nq] = order_n;
        k->tr_nq = nq;
        k->tr_valid = 1;
    }
    return 1;
}

static int evaluate(Kernel *k, int want_spread, double *lat_out, double *per_out,
                    double *spread_out, int32_t *nq_out) {
    return evaluate_ex(k, want_spread, lat_out, per_out, spread_out, nq_out, 0, -1);
}

static Kernel *get_kernel(PyObject *cap) {
    return (Kernel *)PyCapsule_GetPointer(cap, "edgepart.evalc.Kernel");
}

static int load_units(Kernel *k, PyObject *o) {
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (b.len != (Py_ssize_t)k->n * 4) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "evalc: units must be int32[n]");
        return -1;
    }
    const int32_t *u = (const int32_t *)b.buf;
    for (int32_t v = 0; v < k->n; v++) {
        if (u[v] < 0 || u[v] >= k->nu) {
            PyBuffer_Release(&b);
            PyErr_SetString(PyExc_ValueError, "evalc: unit index out of range");
            return -1;
        }
    }
    memcpy(k->units, u, (size_t)k->n * 4);
    PyBuffer_Release(&b);
    return 0;
}

/* score(kernel, units int32[n], spread 0/1/2) -> (feasible, latency, period, spread) */
static PyObject *score(PyObject *self, PyObject *args) {
    PyObject *cap, *uo;
    int want_spread;
    if (!PyArg_ParseTuple(args, "OOi", &cap, &uo, &want_spread)) return NULL;
    Kernel *k = get_kernel(cap);
    if (!k || load_units(k, uo) < 0) return NULL;
    double l, p, s;
    int32_t nq = 0;
    int ok = evaluate(k, want_spread, &l, &p, &s, &nq);
    return Py_BuildValue("Oddd", ok ? Py_True : Py_False, l, p, s);
}

/* detail(kernel, units, part_of out int32[n], part_unit out int32[n], start out double[n],
 *        end out double[n]) -> number of partitions (0 if infeasible) */
static PyObject *detail(PyObject *self, PyObject *args) {
    PyObject *cap, *uo, *o[4];
    if (!PyArg_ParseTuple(args, "OOOOOO", &cap, &uo, &o[0], &o[1], &o[2], &o[3])) return NULL;
    Kernel *k = get_kernel(cap);
    if (!k || load_units(k, uo) < 0) return NULL;
    double l, p, s;
    int32_t nq = 0;
    if (!evaluate(k, 0, &l, &p, &s, &nq)) return PyLong_FromLong(0);
    Py_buffer b[4];
    int got = 0;
    PyObject *res = NULL;
    Py_ssize_t sizes[4] = {4, 4, 8, 8};
    for (; got < 4; got++) {
        if (PyObject_GetBuffer(o[got], &b[got], PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
            goto done;
        if (b[got].len != (Py_ssize_t)k->n * sizes[got]) {
            PyErr_SetString(PyExc_ValueError, "evalc.detail: output size");
            got++;
            goto done;
        }
    }
    memcpy(b[0].buf, k->part_of, (size_t)k->n * 4);
    memcpy(b[1].buf, k->part_unit, (size_t)nq * 4);
    memcpy(b[2].buf, k->start, (size_t)nq * 8);
    memcpy(b[3].buf, k->end, (size_t)nq * 8);
    res = PyLong_FromLong(nq);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    return res;
}

/* Lexicographically strictly better, ignoring float noise below one part in 10^12. */
static int better(const double *a, const double *b) {
    for (int i = 0; i < 3; i++) {
        if (a[i] < b[i] * (1 - 1e-12)) return 1;
        if (a[i] > b[i] * (1 + 1e-12)) return 0;
    }
    return 0;
}

/* scan(kernel, base units int32[n], move_ptr int32[m+1], move_node int32[], move_unit int32[],
 *      objective (0 latency, 1 throughput), cur key (3 floats), spread kind, first, keys out
 *      double[3m]) -> (index of the first (first=1) or best improving move or -1, evaluated)
 *
 * Move i sets node move_node[j] to unit move_unit[j] for j in move_ptr[i]..move_ptr[i+1]-1.
 * Keys are (latency, period, spread) or (period, spread, latency); infeasible moves get inf
 * keys.
 */
static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *cap, *uo, *po, *no, *mo, *ko;
    int objective, want_spread, first;
    double cur[3];
    if (!PyArg_ParseTuple(args, "OOOOOi(ddd)ipO", &cap, &uo, &po, &no, &mo, &objective, &cur[0],
                          &cur[1], &cur[2], &want_spread, &first, &ko))
        return NULL;
    Kernel *k = get_kernel(cap);
    if (!k || load_units(k, uo) < 0) return NULL;
    Py_buffer bp, bn, bm, bk;
    int got = 0;
    PyObject *res = NULL;
    if (PyObject_GetBuffer(po, &bp, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    got = 1;
    if (PyObject_GetBuffer(no, &bn, PyBUF_C_CONTIGUOUS) < 0) goto done;
    got = 2;
    if (PyObject_GetBuffer(mo, &bm, PyBUF_C_CONTIGUOUS) < 0) goto done;
    got = 3;
    if (PyObject_GetBuffer(ko, &bk, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) goto done;
    got = 4;
    {
        const int32_t *mp = (const int32_t *)bp.buf, *mn = (const int32_t *)bn.buf,
                      *mu = (const int32_t *)bm.buf;
        Py_ssize_t m = bp.len / 4 - 1;
        double *keys = (double *)bk.buf;
        if (m < 0 || bk.len < m * 24 || bn.len != bm.len || mp[m] > bn.len / 4 || mp[0] < 0) {
            PyErr_SetString(PyExc_ValueError, "evalc.scan: move arrays disagree");
            goto done;
        }
        for (Py_ssize_t i = 0; i < m; i++)
            if (mp[i + 1] < mp[i]) {
                PyErr_SetString(PyExc_ValueError, "evalc.scan: move_ptr not ascending");
                goto done;
            }
        for (Py_ssize_t j = mp[0]; j < mp[m]; j++)
            if (mn[j] < 0 || mn[j] >= k->n || mu[j] < 0 || mu[j] >= k->nu) {
                PyErr_SetString(PyExc_ValueError, "evalc.scan: move index out of range");
                goto done;
            }
        Py_ssize_t longest = 1; /* a move may name a node twice (colocation closures) */
        for (Py_ssize_t i = 0; i < m; i++)
            if (mp[i + 1] - mp[i] > longest) longest = mp[i + 1] - mp[i];
        int32_t *saved = (int32_t *)malloc(sizeof(int32_t) * (size_t)longest);
        if (!saved) {
            PyErr_NoMemory();
            goto done;
        }
        Py_ssize_t best = -1, done_count = 0;
        double bestk[3] = {cur[0], cur[1], cur[2]};
        /* incremental evaluation: trace the base placement once, then evaluate each move from
         * the first epoch it can change (not with copying or single-partition units, whose
         * effects reach back to earlier partitions) */
        int incremental = !k->any_copy && !k->any_single && m > 1 && trace_alloc(k);
        if (!incremental && PyErr_Occurred()) {
            free(saved);
            goto done;
        }
        if (incremental) {
            double l0, p0, s0;
            int32_t nq0 = 0;
            incremental = evaluate_ex(k, want_spread, &l0, &p0, &s0, &nq0, 1, -1);
        }
        for (Py_ssize_t i = 0; i < m; i++) {
            int32_t a = mp[i], b = mp[i + 1];
            int32_t e0 = 0x7fffffff;
            for (int32_t j = a; j < b; j++) {
                saved[j - a] = k->units[mn[j]];
                k->units[mn[j]] = mu[j];
                if (incremental && k->tr_ready[mn[j]] < e0) e0 = k->tr_ready[mn[j]];
            }
            double l, p, s, key[3];
            int32_t nq = 0;
            if (!incremental || e0 == 0x7fffffff) e0 = -1;
            int ok = evaluate_ex(k, want_spread, &l, &p, &s, &nq, 0, e0);
            for (int32_t j = b - 1; j >= a; j--) k->units[mn[j]] = saved[j - a];
            done_count++;
            if (!ok) {
                key[0] = key[1] = INFINITY;
                key[2] = 0.0;
            } else if (objective == 1) { /* throughput: period, balance, latency */
                key[0] = p;
                key[1] = s;
                key[2] = l;
            } else {
                key[0] = l;
                key[1] = p;
                key[2] = s;
            }
            keys[3 * i] = key[0];
            keys[3 * i + 1] = key[1];
            keys[3 * i + 2] = key[2];
            if (ok && better(key, bestk)) {
                best = i;
                memcpy(bestk, key, sizeof(bestk));
                if (first) break;
            }
        }
        free(saved);
        res = Py_BuildValue("nn", best, done_count);
    }
done:
    if (got > 0) PyBuffer_Release(&bp);
    if (got > 1) PyBuffer_Release(&bn);
    if (got > 2) PyBuffer_Release(&bm);
    if (got > 3) PyBuffer_Release(&bk);
    return res;
}

static PyMethodDef methods[] = {
    {"make", make, METH_VARARGS, "Copy a compiled cost graph into a kernel capsule."},
    {"score", score, METH_VARARGS, "Score one placement."},
    {"detail", detail, METH_VARARGS, "Partitions and schedule of one placement."},
    {"scan", scan, METH_VARARGS, "Score moves against a base placement."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_evalc", NULL, -1, methods};

PyMODINIT_FUNC PyInit__evalc(void) { return PyModule_Create(&module); }
