/* The tables' per-row passes, compiled: the twin of _tables/kernels.py's
 * event_columns, lookup, missing, wakers_at_ends and span_partition (which
 * say what each column is), and of _tables/goroutines.py's _seen: each
 * is one pass in C over a run's EventBatches' columns, a column of
 * ids or a unit's SpanBatches' columns, writing the Arrow buffers (data,
 * and a validity bitmap where a row may be null) into buffers the caller
 * allocated from pyarrow's pool (or kept from unit to unit, for what no
 * table keeps: kernels.Scratch), which pyarrow then wraps as they are.
 * The loops run without the GIL: their inputs and outputs are held
 * buffers. */

#include "tables/columns.h"
#include "common/pyglue.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/containers.h"
#include "common/generated.h"

#define NPICKS 4 /* the arguments picked per code: stack, new stack, two strings */

static inline void set_valid(u8 *bits, size_t i) { bits[i >> 3] |= (u8)(1u << (i & 7)); }

/* Holds the n writable buffers of the tuple outs, each of at least
 * sizes[i] bytes: how many it held (n), or -1 with an exception set and
 * none held. */
static int hold_outputs(PyObject *outs, Py_buffer *bufs, const size_t *sizes, size_t n) {
    if (!PyTuple_Check(outs) || (size_t)PyTuple_GET_SIZE(outs) != n) {
        PyErr_Format(PyExc_ValueError, "%zu output buffers wanted", n);
        return -1;
    }
    size_t held = 0;
    for (; held < n; held++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(outs, held), &bufs[held], PyBUF_WRITABLE) < 0)
            break;
        if ((size_t)bufs[held].len < sizes[held]) {
            PyBuffer_Release(&bufs[held]);
            PyErr_SetString(PyExc_ValueError, "an output buffer is too small");
            break;
        }
    }
    if (held == n)
        return (int)n;
    while (held)
        PyBuffer_Release(&bufs[--held]);
    return -1;
}

static void release_all(Py_buffer *bufs, size_t n) {
    for (size_t i = 0; i < n; i++)
        PyBuffer_Release(&bufs[i]);
}

/* Holds the columns of a sequence of batches' column tuples (ncols
 * buffers each, the first a byte per row, the others widths[c] bytes per
 * row) into in (ncols per batch) and each batch's rows into rows: how many
 * buffers it held (all, nb * ncols), or -1 with an exception set (which
 * names fn) and none held. */
static int hold_batches(PyObject *seq, size_t ncols, const size_t *widths, const char *fn, Py_buffer *in,
                        size_t *rows) {
    size_t nb = (size_t)PySequence_Fast_GET_SIZE(seq), held = 0;
    for (size_t b = 0; b < nb; b++) {
        PyObject *cols = PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)b);
        if (!PyTuple_Check(cols) || (size_t)PyTuple_GET_SIZE(cols) != ncols) {
            PyErr_Format(PyExc_ValueError, "%s: a batch is not a tuple of its columns", fn);
            goto fail;
        }
        for (size_t c = 0; c < ncols; c++, held++) {
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(cols, (Py_ssize_t)c), &in[held], PyBUF_SIMPLE) < 0)
                goto fail;
            if (c == 0)
                rows[b] = (size_t)in[held].len;
            if ((size_t)in[held].len != rows[b] * widths[c]) {
                held++;
                PyErr_Format(PyExc_ValueError, "%s: column lengths do not match", fn);
                goto fail;
            }
        }
    }
    return (int)held;
fail:
    release_all(in, held);
    return -1;
}

static const size_t EVENT_WIDTHS[EVENT_NCOLS] = EVENT_COL_WIDTHS;

/* table_event_columns(batches, kind_of, picks, outs): the events of
 * batches (a sequence of EventBatch column tuples) one after another, per
 * event its kind (kind_of[code], int32), its code (int32), its time,
 * thread, proc and goroutine (int64), each of its NARGS arguments and NEXTRA
 * extras as a column (uint64), and per picker p the argument
 * picks[p * 256 + code] names (-1: none, a null) as values and a validity
 * bitmap; into outs, in that order: the batches' columns are read where
 * they are, never joined first. Gives the pickers' null counts. */
#define NPLAIN (6 + NARGS + NEXTRA)
#define NOUTS (NPLAIN + 2 * NPICKS)
static PyObject *event_columns(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer kind_of, picks, out[NOUTS], *in = NULL;
    PyObject *batches, *outs, *seq = NULL, *result = NULL;
    size_t *rows = NULL;
    int held = -1, have_out = 0;
    if (!PyArg_ParseTuple(args, "Oy*y*O:table_event_columns", &batches, &kind_of, &picks, &outs))
        return NULL;
    if (!(seq = PySequence_Fast(batches, "table_event_columns: batches must be a sequence")))
        goto done;
    size_t nb = (size_t)PySequence_Fast_GET_SIZE(seq), n = 0;
    in = calloc(nb * EVENT_NCOLS + 1, sizeof *in);
    rows = calloc(nb + 1, sizeof *rows);
    if (!in || !rows) {
        PyErr_NoMemory();
        goto done;
    }
    if (kind_of.len != 256 * 4 || picks.len != NPICKS * 256) {
        PyErr_SetString(PyExc_ValueError, "table_event_columns: kind_of or picks is not per code");
        goto done;
    }
    if ((held = hold_batches(seq, EVENT_NCOLS, EVENT_WIDTHS, "table_event_columns", in, rows)) < 0)
        goto done;
    for (size_t b = 0; b < nb; b++)
        n += rows[b];
    size_t nbits = (n + 7) / 8, sizes[NOUTS];
    for (size_t i = 0; i < NOUTS; i++)
        sizes[i] = i < 2 ? n * 4 : i < NPLAIN ? n * 8 : (i - NPLAIN) % 2 ? nbits : n * 8;
    if (hold_outputs(outs, out, sizes, NOUTS) < 0)
        goto done;
    have_out = 1;
    Py_ssize_t nulls[NPICKS] = {0};
    Py_BEGIN_ALLOW_THREADS;
    const signed char *pk = picks.buf;
    int32_t kinds[256];
    memcpy(kinds, kind_of.buf, sizeof kinds);
    u8 *kind = out[0].buf, *code = out[1].buf, *a[NARGS], *x[NEXTRA], *pv[NPICKS], *pb[NPICKS];
    for (int j = 0; j < NARGS; j++)
        a[j] = out[6 + j].buf;
    for (int j = 0; j < NEXTRA; j++)
        x[j] = out[6 + NARGS + j].buf;
    for (int p = 0; p < NPICKS; p++) {
        pv[p] = out[NPLAIN + 2 * p].buf;
        pb[p] = out[NPLAIN + 2 * p + 1].buf;
        memset(pb[p], 0, nbits);
    }
    for (size_t b = 0, i0 = 0; b < nb; i0 += rows[b++]) {
        const Py_buffer *cols = &in[b * EVENT_NCOLS];
        /* The columns of one item per event are copied whole. */
        for (int k = 1; k <= 4; k++)
            memcpy((u8 *)out[1 + k].buf + i0 * 8, cols[k].buf, rows[b] * 8);
        const u8 *c = cols[0].buf, *av = cols[5].buf, *xv = cols[6].buf;
        for (size_t j = 0, i = i0; j < rows[b]; j++, i++) {
            u8 ci = c[j];
            int32_t k = kinds[ci], ce = ci;
            memcpy(kind + i * 4, &k, 4);
            memcpy(code + i * 4, &ce, 4);
            u64 row[NARGS], more[NEXTRA];
            memcpy(row, av + j * sizeof row, sizeof row);
            memcpy(more, xv + j * sizeof more, sizeof more);
            for (int q = 0; q < NARGS; q++)
                memcpy(a[q] + i * 8, &row[q], 8);
            for (int q = 0; q < NEXTRA; q++)
                memcpy(x[q] + i * 8, &more[q], 8);
            for (int p = 0; p < NPICKS; p++) {
                int at = pk[p * 256 + ci];
                u64 v = 0;
                if (at >= 0 && at < NARGS) {
                    v = row[at];
                    set_valid(pb[p], i);
                } else {
                    nulls[p]++;
                }
                memcpy(pv[p] + i * 8, &v, 8);
            }
        }
    }
    Py_END_ALLOW_THREADS;
    result = Py_BuildValue("(nnnn)", nulls[0], nulls[1], nulls[2], nulls[3]);
done:
    if (have_out)
        release_all(out, NOUTS);
    if (held > 0)
        release_all(in, (size_t)held);
    free(in);
    free(rows);
    Py_XDECREF(seq);
    PyBuffer_Release(&kind_of);
    PyBuffer_Release(&picks);
    return result;
}

/* The first position from `from` on whose key (of n, in order) is not
 * below id: every key before `from` is. Steps out by doubling, then halves
 * back: a few steps where the ids ascend as the keys do. Keys and id are
 * compared as unsigned once xored with flip (SIGNED: as signed). */
#define SIGNED ((u64)1 << 63)
static size_t search_from(const u8 *keys, size_t n, size_t from, u64 id, u64 flip) {
    size_t lo = from, hi = from, step = 1;
    id ^= flip;
    while (hi < n && (ld_u64(keys, hi) ^ flip) < id) {
        lo = hi + 1;
        hi += step;
        step *= 2;
    }
    hi = hi < n ? hi : n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((ld_u64(keys, mid) ^ flip) < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The keys of a lookup, indexed: keys that are small ints (a generation's
 * stack and string ids count up from 1) index a table of positions
 * directly; keys in order (a unit's times) are searched, from where the
 * last id's search ended while the ids ascend too: a merge, in memory's
 * order, where a hash map's probes miss the cache; others go through a
 * hash map. */
typedef struct {
    const u8 *keys;
    size_t n, from;
    u64 top, last;
    int ordered;
    u64 *dense;
    Map map;
} KeyIndex;

/* 0, or -1 (out of memory: free it with key_index_free all the same). Without the GIL. */
static int key_index_build(KeyIndex *x, const u8 *keys, size_t nkeys) {
    *x = (KeyIndex){keys, nkeys, 0, 0, 0, 1, NULL, {0}};
    for (size_t j = 0; j < nkeys; j++) {
        u64 k = ld_u64(keys, j);
        x->top = k > x->top ? k : x->top;
        x->ordered = x->ordered && (j == 0 || ld_u64(keys, j - 1) <= k);
    }
    if (nkeys && x->top < 4 * nkeys + 4096) {
        if (!(x->dense = malloc(((size_t)x->top + 1) * sizeof *x->dense)))
            return -1;
        memset(x->dense, 0xff, ((size_t)x->top + 1) * sizeof *x->dense); /* UINT64_MAX: no key */
        for (size_t j = nkeys; j-- > 0;) /* from the last: the first of equal keys stays */
            x->dense[ld_u64(keys, j)] = j;
    } else if (!x->ordered) {
        /* Sized for every key at once: growing by doubling rehashes a unit's
         * keys a score of times. */
        size_t cap = 16;
        while (cap < 2 * nkeys + 2)
            cap *= 2;
        if (map_resize(&x->map, cap) != 0)
            return -1;
        for (size_t j = 0; j < nkeys; j++)
            if (!map_slot(&x->map, ld_u64(keys, j), j)) /* the first of equal keys stays */
                return -1;
    }
    return 0;
}

/* The position of the first key equal to id, or UINT64_MAX. */
static inline u64 key_index_find(KeyIndex *x, u64 id) {
    if (x->dense)
        return id <= x->top ? x->dense[id] : UINT64_MAX;
    if (x->ordered) {
        if (id < x->last)
            x->from = 0;
        x->from = search_from(x->keys, x->n, x->from, id, 0);
        x->last = id;
        return x->from < x->n && ld_u64(x->keys, x->from) == id ? x->from : UINT64_MAX;
    }
    const u64 *at = map_find(&x->map, id);
    return at ? *at : UINT64_MAX;
}

static void key_index_free(KeyIndex *x) {
    free(x->dense);
    map_free(&x->map);
}

/* table_lookup(ids, valid, offset, n, keys, values, width, outs): per row i
 * of the n from offset, the value of the first key equal to ids[i] (values:
 * width 4 or 8 byte ints), null where valid (a bitmap, or None: every row)
 * says null or no key matches; into outs (values, validity bitmap). Gives
 * the null count. */
static PyObject *lookup(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer ids, keys, values, valid = {0}, out[2];
    PyObject *valid_obj, *outs, *result = NULL;
    Py_ssize_t offset, n;
    int width;
    if (!PyArg_ParseTuple(args, "y*Onny*y*iO:table_lookup", &ids, &valid_obj, &offset, &n, &keys, &values, &width,
                          &outs))
        return NULL;
    KeyIndex index = {0};
    size_t nkeys = (size_t)keys.len / 8;
    if (valid_obj != Py_None && PyObject_GetBuffer(valid_obj, &valid, PyBUF_SIMPLE) < 0)
        goto done;
    if (offset < 0 || n < 0 || (width != 4 && width != 8) || (size_t)ids.len < (size_t)(offset + n) * 8 ||
        (valid.obj && (size_t)valid.len * 8 < (size_t)(offset + n)) || (size_t)values.len != nkeys * (size_t)width) {
        PyErr_SetString(PyExc_ValueError, "table_lookup: column lengths do not match");
        goto done;
    }
    size_t sizes[2] = {(size_t)n * (size_t)width, ((size_t)n + 7) / 8};
    if (hold_outputs(outs, out, sizes, 2) < 0)
        goto done;
    int failed = 0;
    Py_ssize_t nulls = 0;
    Py_BEGIN_ALLOW_THREADS;
    failed = key_index_build(&index, keys.buf, nkeys) != 0;
    const u8 *iv = (const u8 *)ids.buf + offset * 8, *vb = valid.obj ? valid.buf : NULL, *vals = values.buf;
    u8 *d = out[0].buf, *b = out[1].buf;
    size_t w = (size_t)width;
    memset(b, 0, sizes[1]);
    for (size_t i = 0; i < (size_t)n && !failed; i++) {
        size_t bit = (size_t)offset + i;
        u64 pos = UINT64_MAX;
        if (!vb || (vb[bit >> 3] >> (bit & 7)) & 1)
            pos = key_index_find(&index, ld_u64(iv, i));
        if (pos != UINT64_MAX) {
            memcpy(d + i * w, vals + pos * w, w);
            set_valid(b, i);
        } else {
            memset(d + i * w, 0, w);
            nulls++;
        }
    }
    Py_END_ALLOW_THREADS;
    release_all(out, 2);
    result = failed ? PyErr_NoMemory() : PyLong_FromSsize_t(nulls);
done:
    key_index_free(&index);
    PyBuffer_Release(&ids);
    if (valid.obj)
        PyBuffer_Release(&valid);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&values);
    return result;
}

/* table_missing(ids, valid, offset, n, keys): the distinct ids of the n
 * rows from offset that are valid, not 0 and no key's, in the order they
 * first appear (bytes of uint64): what a lookup by those keys would leave
 * null that more keys could fill, found without writing its column. */
static PyObject *missing(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer ids, keys, valid = {0};
    PyObject *valid_obj, *result = NULL;
    Py_ssize_t offset, n;
    if (!PyArg_ParseTuple(args, "y*Onny*:table_missing", &ids, &valid_obj, &offset, &n, &keys))
        return NULL;
    KeyIndex index = {0};
    IdSet *seen = NULL; /* a generation's ids count up from 1: bits, where a map hashed every row */
    u64 *found = NULL;
    size_t nfound = 0, cap = 0;
    if (valid_obj != Py_None && PyObject_GetBuffer(valid_obj, &valid, PyBUF_SIMPLE) < 0)
        goto done;
    if (offset < 0 || n < 0 || (size_t)ids.len < (size_t)(offset + n) * 8 ||
        (valid.obj && (size_t)valid.len * 8 < (size_t)(offset + n)) || keys.len % 8) {
        PyErr_SetString(PyExc_ValueError, "table_missing: column lengths do not match");
        goto done;
    }
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS;
    failed = key_index_build(&index, keys.buf, (size_t)keys.len / 8) != 0 || !(seen = calloc(1, sizeof *seen));
    const u8 *iv = (const u8 *)ids.buf + offset * 8, *vb = valid.obj ? valid.buf : NULL;
    u64 last = 0; /* the last id missed: runs of one id ask once */
    for (size_t i = 0; i < (size_t)n && !failed; i++) {
        size_t bit = (size_t)offset + i;
        if (vb && !((vb[bit >> 3] >> (bit & 7)) & 1))
            continue;
        u64 id = ld_u64(iv, i);
        if (!id || id == last || key_index_find(&index, id) != UINT64_MAX)
            continue;
        last = id;
        if (!idset_has(seen, id)) {
            failed = idset_add(seen, id) != 0 || grow((void **)&found, &cap, nfound + 1, sizeof *found) != 0;
            if (!failed)
                found[nfound++] = id;
        }
    }
    Py_END_ALLOW_THREADS;
    result = failed ? PyErr_NoMemory() : PyBytes_FromStringAndSize((const char *)found, (Py_ssize_t)(nfound * 8));
done:
    key_index_free(&index);
    if (seen)
        idset_clear(seen);
    free(seen);
    free(found);
    PyBuffer_Release(&ids);
    if (valid.obj)
        PyBuffer_Release(&valid);
    PyBuffer_Release(&keys);
    return result;
}

/* table_wakers(ends, valid, offset, n, goroutines, g_offset, codes, times,
 * woken, wakers, is_wake, outs): per row i of the n from offset (int64
 * ends, validity a bitmap or None; goroutines from g_offset), the waker of
 * the first wake event (of the events' int32 codes, those is_wake[code]
 * names) whose time (int64, the events') is the row's end, where that
 * wake woke the row's goroutine (woken[at] == goroutines[i], compared as
 * bits; wakers[at] its waker): the filter, lookup, takes and compare of
 * _tables/kernels.py's wakers_at_ends in one pass over the events as they
 * are, into outs (int64 values, validity bitmap). Gives the null count,
 * or None where that answer would not do: the times are not in order, or
 * a row's first wake at its end woke another goroutine (two wakes at one
 * time: the caller joins on both). */
static PyObject *wakers(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer ends, goroutines, codes, times, woken, wakers, is_wake, valid = {0}, out[2];
    PyObject *valid_obj, *outs, *result = NULL;
    Py_ssize_t offset, n, g_offset;
    if (!PyArg_ParseTuple(args, "y*Onny*ny*y*y*y*y*O:table_wakers", &ends, &valid_obj, &offset, &n, &goroutines,
                          &g_offset, &codes, &times, &woken, &wakers, &is_wake, &outs))
        return NULL;
    size_t nev = (size_t)times.len / 8;
    if (valid_obj != Py_None && PyObject_GetBuffer(valid_obj, &valid, PyBUF_SIMPLE) < 0)
        goto done;
    if (offset < 0 || n < 0 || g_offset < 0 || (size_t)ends.len < (size_t)(offset + n) * 8 ||
        (size_t)goroutines.len < (size_t)(g_offset + n) * 8 ||
        (valid.obj && (size_t)valid.len * 8 < (size_t)(offset + n)) || (size_t)times.len != nev * 8 ||
        (size_t)codes.len != nev * 4 || (size_t)woken.len != nev * 8 || (size_t)wakers.len != nev * 8 ||
        is_wake.len != 256) {
        PyErr_SetString(PyExc_ValueError, "table_wakers: column lengths do not match");
        goto done;
    }
    size_t sizes[2] = {(size_t)n * 8, ((size_t)n + 7) / 8};
    if (hold_outputs(outs, out, sizes, 2) < 0)
        goto done;
    int ordered = 1, other = 0;
    Py_ssize_t nulls = 0;
    Py_BEGIN_ALLOW_THREADS;
    const u8 *kb = times.buf, *ev = (const u8 *)ends.buf + offset * 8, *gv = (const u8 *)goroutines.buf + g_offset * 8,
             *wo = woken.buf, *wk = wakers.buf, *vb = valid.obj ? valid.buf : NULL, *wake = is_wake.buf;
    const int32_t *code = codes.buf;
    for (size_t j = 1; j < nev && ordered; j++)
        ordered = (i64)ld_u64(kb, j - 1) <= (i64)ld_u64(kb, j);
    u8 *d = out[0].buf, *b = out[1].buf;
    memset(b, 0, sizes[1]);
    size_t from = 0;
    i64 last = INT64_MIN;
    for (size_t i = 0; i < (size_t)n && ordered && !other; i++) {
        size_t bit = (size_t)offset + i;
        i64 v = 0;
        int has = 0;
        if (!vb || (vb[bit >> 3] >> (bit & 7)) & 1) {
            i64 end = (i64)ld_u64(ev, i);
            /* Ends mostly ascend, as the events' times do: each search goes on from the last. */
            if (end < last)
                from = 0;
            last = end;
            size_t lo = from = search_from(kb, nev, from, (u64)end, SIGNED);
            /* The first wake among the events at that time. */
            for (size_t at = lo; at < nev && (i64)ld_u64(kb, at) == end; at++) {
                if ((u32)code[at] > 255 || !wake[code[at]])
                    continue;
                if (ld_u64(wo, at) == ld_u64(gv, i)) {
                    v = (i64)ld_u64(wk, at);
                    has = 1;
                } else {
                    other = 1;
                }
                break;
            }
        }
        memcpy(d + i * 8, &v, 8);
        if (has)
            set_valid(b, i);
        else
            nulls++;
    }
    Py_END_ALLOW_THREADS;
    release_all(out, 2);
    if (!ordered || other) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        result = PyLong_FromSsize_t(nulls);
    }
done:
    PyBuffer_Release(&ends);
    if (valid.obj)
        PyBuffer_Release(&valid);
    PyBuffer_Release(&goroutines);
    PyBuffer_Release(&codes);
    PyBuffer_Release(&times);
    PyBuffer_Release(&woken);
    PyBuffer_Release(&wakers);
    PyBuffer_Release(&is_wake);
    return result;
}

/* A span's part of a unit's partitioned spans: 0, a goroutine's state
 * (running, runnable, blocked, syscall); 1, a P's; 2, any other. */
static inline int span_part(u8 kind, u8 resource) {
    if (resource == RES_GOROUTINE && kind <= K_SYSCALL)
        return 0;
    return resource == RES_PROC ? 1 : 2;
}

/* table_span_partition(batches, outs): the SpanBatch columns of batches (a
 * sequence of tuples of SPAN_NCOLS buffers, one per batch) as one batch,
 * into outs (SPAN_NCOLS writable buffers), its rows partitioned: every
 * goroutine state first, then the P spans, then the rest, each part in the
 * batches' order. Gives (goroutine states, P spans): the tables that are
 * those parts are then slices of the spans', not copies. */
static PyObject *span_partition(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *batches, *outs, *seq = NULL, *result = NULL;
    if (!PyArg_ParseTuple(args, "OO:table_span_partition", &batches, &outs))
        return NULL;
    if (!(seq = PySequence_Fast(batches, "table_span_partition: batches must be a sequence")))
        return NULL;
    size_t nb = (size_t)PySequence_Fast_GET_SIZE(seq), held = 0, n = 0;
    static const size_t widths[SPAN_NCOLS] = SPAN_COL_WIDTHS;
    Py_buffer *in = calloc(nb * SPAN_NCOLS + 1, sizeof *in), out[SPAN_NCOLS];
    size_t *rows = calloc(nb + 1, sizeof *rows), sizes[SPAN_NCOLS];
    int have_out = 0;
    if (!in || !rows) {
        PyErr_NoMemory();
        goto done;
    }
    int got = hold_batches(seq, SPAN_NCOLS, widths, "table_span_partition", in, rows);
    if (got < 0)
        goto done;
    held = (size_t)got;
    for (size_t b = 0; b < nb; b++)
        n += rows[b];
    for (size_t c = 0; c < SPAN_NCOLS; c++)
        sizes[c] = n * widths[c];
    if (hold_outputs(outs, out, sizes, SPAN_NCOLS) < 0)
        goto done;
    have_out = 1;
    size_t count[3] = {0, 0, 0};
    u8 *part = malloc(n + 1);
    if (!part) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS;
    for (size_t b = 0, i = 0; b < nb; b++) {
        const u8 *k = in[b * SPAN_NCOLS + SPAN_COL_KINDS].buf, *r = in[b * SPAN_NCOLS + SPAN_COL_RESOURCE_KINDS].buf;
        for (size_t j = 0; j < rows[b]; j++, i++)
            count[part[i] = (u8)span_part(k[j], r[j])]++;
    }
    /* Each column a row at a time, each row to its part's next place. */
    for (size_t c = 0; c < SPAN_NCOLS; c++) {
        size_t at[3] = {0, count[0], count[0] + count[1]}, i = 0;
        u8 *o = out[c].buf;
        for (size_t b = 0; b < nb; b++) {
            const u8 *v = in[b * SPAN_NCOLS + c].buf;
            switch (widths[c]) {
            case 1:
                for (size_t j = 0; j < rows[b]; j++, i++)
                    o[at[part[i]]++] = v[j];
                break;
            case 4:
                for (size_t j = 0; j < rows[b]; j++, i++)
                    memcpy(o + 4 * at[part[i]]++, v + 4 * j, 4);
                break;
            default:
                for (size_t j = 0; j < rows[b]; j++, i++)
                    memcpy(o + 8 * at[part[i]]++, v + 8 * j, 8);
            }
        }
    }
    free(part);
    Py_END_ALLOW_THREADS;
    result = Py_BuildValue("(nn)", (Py_ssize_t)count[0], (Py_ssize_t)count[1]);
done:
    if (have_out)
        release_all(out, SPAN_NCOLS);
    if (in)
        release_all(in, held);
    free(in);
    free(rows);
    Py_DECREF(seq);
    return result;
}

/* One goroutine's aggregates in table_goroutine_seen. */
typedef struct {
    i64 goroutine, first_seen, last_seen, last_start, last_end, first_run, forever, own, own_start;
    u8 has_run, has_forever, has_own;
} Seen;

static inline int bit_at(const u8 *bits, size_t i) { return !bits || (bits[i >> 3] >> (i & 7)) & 1; }

static inline int in_sorted(const u8 *keys, size_t n, u64 id) {
    size_t at = search_from(keys, n, 0, id, 0);
    return at < n && ld_u64(keys, at) == id;
}

/* table_goroutine_seen(goroutines, starts, ends, states, reasons, forever,
 * start_stacks, start_valid, end_stacks, end_valid, n, rootless): per
 * goroutine of n goroutine_states rows (int64 columns and int32 state and
 * reason indices, every one from offset 0; a stack column's validity a
 * bitmap or None), in the order first seen, what _tables/goroutines.py's _seen
 * gives: its first and last start, latest end, the end of its
 * latest-starting row (the greatest of those), its first running start,
 * its latest start of a blocked row whose reason's forever[reason] is set,
 * and its earliest own stack (running: the end stack; runnable: none; else
 * the start stack; none whose stable id is in rootless, sorted) with that
 * row's start (of two at that start, the greater id). Gives a tuple of
 * bytes: goroutine, first_seen, last_seen, last_start, last_end, first_run
 * and its validity bitmap, forever and its bitmap, own_stack_id and its
 * bitmap, own_stack_start (valid where own_stack_id is). */
static PyObject *goroutine_seen(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer g, st, en, sk, rs, fv, ss, es, rl, sv = {0}, ev = {0};
    PyObject *sv_obj, *ev_obj, *result = NULL;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*Oy*Ony*:table_goroutine_seen", &g, &st, &en, &sk, &rs, &fv, &ss,
                          &sv_obj, &es, &ev_obj, &n, &rl))
        return NULL;
    Map slot = {0};
    Seen *seen = NULL;
    size_t m = 0, cap = 0;
    if (sv_obj != Py_None && PyObject_GetBuffer(sv_obj, &sv, PyBUF_SIMPLE) < 0)
        goto done;
    if (ev_obj != Py_None && PyObject_GetBuffer(ev_obj, &ev, PyBUF_SIMPLE) < 0)
        goto done;
    size_t rows = (size_t)n, bits = (rows + 7) / 8;
    if (n < 0 || (size_t)g.len < rows * 8 || (size_t)st.len < rows * 8 || (size_t)en.len < rows * 8 ||
        (size_t)sk.len < rows * 4 || (size_t)rs.len < rows * 4 || (size_t)ss.len < rows * 8 ||
        (size_t)es.len < rows * 8 || (sv.obj && (size_t)sv.len < bits) || (ev.obj && (size_t)ev.len < bits) ||
        rl.len % 8) {
        PyErr_SetString(PyExc_ValueError, "table_goroutine_seen: column lengths do not match");
        goto done;
    }
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS;
    const u8 *gb = g.buf, *stb = st.buf, *enb = en.buf, *ssb = ss.buf, *esb = es.buf, *svb = sv.obj ? sv.buf : NULL,
             *evb = ev.obj ? ev.buf : NULL, *fvb = fv.buf, *rlb = rl.buf;
    const int32_t *kinds = sk.buf, *reasons = rs.buf;
    size_t nforever = (size_t)fv.len, nrootless = (size_t)rl.len / 8;
    for (size_t i = 0; i < rows && !failed; i++) {
        i64 gid = (i64)ld_u64(gb, i), start = (i64)ld_u64(stb, i), end = (i64)ld_u64(enb, i);
        u64 *at = map_slot(&slot, (u64)gid, (u64)m);
        if (!at || (*at == m && grow((void **)&seen, &cap, m + 1, sizeof *seen))) {
            failed = 1;
            break;
        }
        Seen *s = &seen[*at];
        if (*at == m) {
            m++;
            *s = (Seen){gid, start, end, start, end, 0, 0, 0, 0, 0, 0, 0};
        } else {
            s->first_seen = start < s->first_seen ? start : s->first_seen;
            s->last_seen = end > s->last_seen ? end : s->last_seen;
            if (start > s->last_start || (start == s->last_start && end > s->last_end)) {
                s->last_start = start;
                s->last_end = end;
            }
        }
        int32_t kind = kinds[i], reason = reasons[i];
        if (kind == K_RUNNING && (!s->has_run || start < s->first_run)) {
            s->first_run = start;
            s->has_run = 1;
        }
        if (kind == K_BLOCKED && reason >= 0 && (size_t)reason < nforever && fvb[reason] &&
            (!s->has_forever || start > s->forever)) {
            s->forever = start;
            s->has_forever = 1;
        }
        /* Its own stack: where it stopped running, where it blocked or
         * entered a system call (a runnable interval begins at its waker's). */
        int has = 0;
        i64 own = 0;
        if (kind == K_RUNNING) {
            has = bit_at(evb, i);
            own = (i64)ld_u64(esb, i);
        } else if (kind != K_RUNNABLE) {
            has = bit_at(svb, i);
            own = (i64)ld_u64(ssb, i);
        }
        if (has && nrootless && in_sorted(rlb, nrootless, (u64)own))
            has = 0;
        if (has && (!s->has_own || start < s->own_start || (start == s->own_start && own > s->own))) {
            s->own = own;
            s->own_start = start;
            s->has_own = 1;
        }
    }
    Py_END_ALLOW_THREADS;
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    /* The columns, then the bitmaps, in the order the docstring gives. */
    PyObject *cols[12] = {NULL};
    size_t mbits = (m + 7) / 8;
    for (int c = 0; c < 12; c++) {
        int bitmap = c == 6 || c == 8 || c == 10;
        if (!(cols[c] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(bitmap ? mbits : m * 8)))) {
            for (int k = 0; k < c; k++)
                Py_DECREF(cols[k]);
            goto done;
        }
        if (bitmap)
            memset(PyBytes_AS_STRING(cols[c]), 0, mbits);
    }
    for (size_t j = 0; j < m; j++) {
        const Seen *s = &seen[j];
        i64 v[9] = {s->goroutine, s->first_seen, s->last_seen, s->last_start, s->last_end,
                    s->has_run ? s->first_run : 0, s->has_forever ? s->forever : 0, s->has_own ? s->own : 0,
                    s->has_own ? s->own_start : 0};
        static const int at[9] = {0, 1, 2, 3, 4, 5, 7, 9, 11};
        for (int k = 0; k < 9; k++)
            memcpy(PyBytes_AS_STRING(cols[at[k]]) + j * 8, &v[k], 8);
        if (s->has_run)
            set_valid((u8 *)PyBytes_AS_STRING(cols[6]), j);
        if (s->has_forever)
            set_valid((u8 *)PyBytes_AS_STRING(cols[8]), j);
        if (s->has_own)
            set_valid((u8 *)PyBytes_AS_STRING(cols[10]), j);
    }
    result = PyTuple_New(12);
    for (int c = 0; c < 12; c++) {
        if (result)
            PyTuple_SET_ITEM(result, c, cols[c]);
        else
            Py_DECREF(cols[c]);
    }
done:
    free(seen);
    map_free(&slot);
    PyBuffer_Release(&g);
    PyBuffer_Release(&st);
    PyBuffer_Release(&en);
    PyBuffer_Release(&sk);
    PyBuffer_Release(&rs);
    PyBuffer_Release(&fv);
    PyBuffer_Release(&ss);
    PyBuffer_Release(&es);
    PyBuffer_Release(&rl);
    if (sv.obj)
        PyBuffer_Release(&sv);
    if (ev.obj)
        PyBuffer_Release(&ev);
    return result;
}

static PyMethodDef methods[] = {
    {"table_event_columns", event_columns, METH_VARARGS,
     "table_event_columns(batches, kind_of, picks, outs, /)\n--\n\n"
     "EventBatches' columns as the events table's (the twin of _tables/kernels.py's event_columns)."},
    {"table_lookup", lookup, METH_VARARGS,
     "table_lookup(ids, valid, offset, n, keys, values, width, outs, /)\n--\n\n"
     "Each id's value by key, null where none (the twin of _tables/kernels.py's lookup)."},
    {"table_missing", missing, METH_VARARGS,
     "table_missing(ids, valid, offset, n, keys, /)\n--\n\n"
     "The distinct ids, not 0, that no key is, in the order they first appear (the twin of _tables/kernels.py's "
     "missing)."},
    {"table_wakers", wakers, METH_VARARGS,
     "table_wakers(ends, valid, offset, n, goroutines, g_offset, codes, times, woken, wakers, is_wake, outs, /)\n--\n\n"
     "Each row's waker: the first wake at its end, where it woke the row's goroutine (the twin of "
     "_tables/kernels.py's wakers_at_ends)."},
    {"table_span_partition", span_partition, METH_VARARGS,
     "table_span_partition(batches, outs, /)\n--\n\n"
     "SpanBatches' columns as one batch's, goroutine states first, then P spans (the twin of _tables/kernels.py's "
     "span_partition)."},
    {"table_goroutine_seen", goroutine_seen, METH_VARARGS,
     "table_goroutine_seen(goroutines, starts, ends, states, reasons, forever, start_stacks, start_valid, "
     "end_stacks, end_valid, n, rootless, /)\n--\n\n"
     "Per goroutine of goroutine_states rows, when first and last seen and its first own stack (the twin of "
     "_tables/goroutines.py's _seen)."},
    {NULL, NULL, 0, NULL},
};

int table_columns_register(PyObject *module) { return PyModule_AddFunctions(module, methods); }
