/* A unit's sched_units, blocked_units, pprof_units and pprof_interval_units
 * rows, compiled: the twin of _tables/sums.py's unit_sums on pyarrow (which,
 * with _tables/profiles.py, say what each row is). One pass over the
 * unit's goroutine_states columns hashes each row into the groups of the
 * tables it counts in, where the twin filters, looks up and groups once per
 * table; then each table's groups are sorted by key and written as Arrow
 * buffers into bytes that pyarrow wraps as they are. The pass, the sorts
 * and the writing run without the GIL: their inputs are held buffers,
 * their outputs bytes no one else sees yet. */

#include "tables/units.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/containers.h"
#include "common/generated.h"

/* A group's key: the table's key columns in the order its rows sort by,
 * a nullable one as its validity (0, a null, sorts first) and then its
 * value (0 where null: SQL's nulls are one group, whatever lies under
 * them). The words a table does not use are 0. */
#define KEYW 5

typedef struct {
    i64 key[KEYW];
    i64 count; /* 0: an empty slot (a group in the table has counted a row) */
    u64 sum;   /* unsigned: it wraps as pyarrow's sum of int64 does, where a signed overflow is undefined */
    i64 lo, hi;
} Group;

/* One table's groups, each in its own slot of an open-addressing table
 * (linear probing): a row's lookup reads one line of memory, not a slot
 * and then its group. Once summed, packed to the front, sorted by key. */
typedef struct {
    Group *g;
    size_t n, nslots;
} Groups;

static inline int bit_at(const u8 *bits, size_t i) { return !bits || (bits[i >> 3] >> (i & 7)) & 1; }

static u64 key_hash(const i64 *key) {
    u64 h = 0;
    for (int w = 0; w < KEYW; w++)
        h = (h ^ (u64)key[w]) * 0x9e3779b97f4a7c15ULL;
    return (u64)hmix(h);
}

static int groups_rehash(Groups *t, size_t nslots) {
    Group *g = calloc(nslots, sizeof *g);
    if (!g)
        return -1;
    for (size_t j = 0; j < t->nslots; j++) {
        if (!t->g[j].count)
            continue;
        size_t i = key_hash(t->g[j].key) & (nslots - 1);
        while (g[i].count)
            i = (i + 1) & (nslots - 1);
        g[i] = t->g[j];
    }
    free(t->g);
    t->g = g;
    t->nslots = nslots;
    return 0;
}

/* The group of key (whose key_hash is h), made empty if new; NULL when out of memory. */
static Group *groups_at(Groups *t, const i64 *key, u64 h) {
    if ((t->n + 1) * 2 > t->nslots && groups_rehash(t, t->nslots ? t->nslots * 2 : 1024))
        return NULL;
    size_t mask = t->nslots - 1, i = h & mask;
    for (; t->g[i].count; i = (i + 1) & mask)
        if (!memcmp(t->g[i].key, key, sizeof t->g[i].key))
            return &t->g[i];
    t->n++;
    Group *g = &t->g[i];
    *g = (Group){.count = 0, .sum = 0, .lo = INT64_MAX, .hi = INT64_MIN};
    memcpy(g->key, key, sizeof g->key);
    return g;
}

/* Readies the lines that groups_at(t, key, h) reads first (a group may straddle two). */
static inline void groups_prefetch(const Groups *t, u64 h) {
    if (t->nslots) {
        const Group *g = &t->g[h & (t->nslots - 1)];
        __builtin_prefetch(g);
        __builtin_prefetch((const char *)(g + 1) - 1);
    }
}

static inline void group_add(Group *g, i64 value, i64 lo, i64 hi) {
    g->count++;
    g->sum += (u64)value;
    g->lo = lo < g->lo ? lo : g->lo;
    g->hi = hi > g->hi ? hi : g->hi;
}

static int key_cmp(const Group *a, const Group *b) {
    for (int w = 0; w < KEYW; w++)
        if (a->key[w] != b->key[w])
            return a->key[w] < b->key[w] ? -1 : 1;
    return 0;
}

/* Sorts the n groups of a by key (keys are distinct), merging through tmp
 * (room for n / 2): the groups themselves move, in memory's order, where
 * sorting their indices read them at random. */
static void sort_by_key(Group *a, Group *tmp, size_t n) {
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            Group x = a[i];
            size_t j = i;
            for (; j && key_cmp(&a[j - 1], &x) > 0; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    size_t h = n / 2;
    sort_by_key(a, tmp, h);
    sort_by_key(a + h, tmp, n - h);
    if (key_cmp(&a[h - 1], &a[h]) < 0)
        return; /* in order already */
    memcpy(tmp, a, h * sizeof *a);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        a[k++] = key_cmp(&a[j], &tmp[i]) < 0 ? a[j++] : tmp[i++];
    while (i < h)
        a[k++] = tmp[i++];
}

/* 0, or -1 when out of memory. The groups are packed to the front first:
 * the table is no longer looked up. */
static int groups_sort(Groups *t) {
    size_t n = 0;
    for (size_t j = 0; j < t->nslots; j++)
        if (t->g[j].count)
            t->g[n++] = t->g[j];
    Group *tmp = malloc((t->n / 2 + 1) * sizeof *tmp);
    if (!tmp)
        return -1;
    sort_by_key(t->g, tmp, t->n);
    free(tmp);
    return 0;
}

static void groups_free(Groups *t) { free(t->g); }

/* The unit's goroutine_states columns (from offset 0; a null bitmap: every
 * row valid), and its goroutine_units' goroutines and first runs. */
typedef struct {
    size_t n, nprofile_of, nreasons, nunits;
    const u8 *goroutine, *start, *end, *duration, *stack, *stack_valid, *clipped;
    const int32_t *state, *reason, *profile_of;
    const u8 *unit_goroutine, *first_run, *first_run_valid;
} Rows;

enum { SCHED, BLOCKED, PPROF, INTERVAL, NTABLES, MAXCOLS = 8 };

typedef struct {
    Groups t[NTABLES];
    size_t *alone, nalone, cap; /* the rows that are a pprof row of their own, in order */
    Map unit;                   /* goroutine -> its goroutine_units row */
} Sums;

/* The profile (an index into PPROF_PROFILES) row i's state and reason count in, or -1. */
static int32_t profile_at(const Rows *r, size_t i) {
    int32_t state = r->state[i], reason = r->reason[i];
    if (state < 0 || reason < 0 || (size_t)reason >= r->nreasons)
        return -1;
    size_t at = (size_t)state * r->nreasons + (size_t)reason;
    return at < r->nprofile_of ? r->profile_of[at] : -1;
}

/* Whether row i began at or after its goroutine's first run in the unit:
 * then it lies in the goroutine's lifetime, and is summed with its like. */
static int inside(const Sums *s, const Rows *r, size_t i) {
    const u64 *at = map_find(&s->unit, ld_u64(r->goroutine, i));
    return at && bit_at(r->first_run_valid, *at) && (i64)ld_u64(r->start, i) >= (i64)ld_u64(r->first_run, *at);
}

/* What row i counts in: per table (a bit of in) its group's key and
 * hash; ALONE, a pprof row of its own. */
#define ALONE (1u << NTABLES)
typedef struct {
    i64 key[NTABLES][KEYW];
    u64 hash[NTABLES];
    unsigned in;
} RowKeys;

static void key_in(RowKeys *k, int table, i64 a, i64 b, i64 c, i64 d, i64 e) {
    i64 *key = k->key[table];
    key[0] = a, key[1] = b, key[2] = c, key[3] = d, key[4] = e;
    k->hash[table] = key_hash(key);
    k->in |= 1u << table;
}

static void row_keys(const Sums *s, const Rows *r, size_t i, RowKeys *k) {
    int clipped = bit_at(r->clipped, i), valid = bit_at(r->stack_valid, i);
    i64 g = (i64)ld_u64(r->goroutine, i), ns = (i64)ld_u64(r->duration, i);
    i64 stack = valid ? (i64)ld_u64(r->stack, i) : 0;
    k->in = 0;
    if (r->state[i] == K_RUNNABLE && !clipped)
        key_in(k, SCHED, g, ns, 0, 0, 0);
    else if (r->state[i] == K_BLOCKED)
        key_in(k, BLOCKED, r->reason[i], valid, stack, clipped, 0);
    int32_t profile = profile_at(r, i);
    if (profile < 0 || clipped || ns <= 0)
        return;
    if (!inside(s, r, i)) {
        k->in |= ALONE;
        return;
    }
    key_in(k, PPROF, g, profile, valid, stack, 0);
    key_in(k, INTERVAL, g, profile, valid, stack, ns);
}

/* Row i into the groups of k: 0, or -1 when out of memory. */
static int sum_row(Sums *s, const Rows *r, size_t i, const RowKeys *k) {
    i64 ns = (i64)ld_u64(r->duration, i), start = (i64)ld_u64(r->start, i), end = (i64)ld_u64(r->end, i);
    for (int t = 0; t < NTABLES; t++) {
        if (!(k->in >> t & 1))
            continue;
        Group *g = groups_at(&s->t[t], k->key[t], k->hash[t]);
        if (!g)
            return -1;
        if (t == BLOCKED)
            group_add(g, ns, ns, ns);
        else
            group_add(g, ns, start, end);
    }
    if (k->in & ALONE) {
        if (grow((void **)&s->alone, &s->cap, s->nalone + 1, sizeof *s->alone))
            return -1;
        s->alone[s->nalone++] = i;
    }
    return 0;
}

/* Every row summed, every table's groups sorted: 0, or -1 when out of
 * memory. Without the GIL. The rows go in blocks whose keys are all
 * hashed, and their groups' lines asked for, before any is summed: a
 * unit's groups outgrow the caches, and a lookup waits on memory where a
 * block's wait at once. */
#define BLOCK 32
static int sum_rows(Sums *s, const Rows *r) {
    for (size_t j = 0; j < r->nunits; j++)
        if (!map_slot(&s->unit, ld_u64(r->unit_goroutine, j), j)) /* the first of a goroutine's rows, as index_in */
            return -1;
    RowKeys keys[BLOCK];
    for (size_t i0 = 0; i0 < r->n; i0 += BLOCK) {
        size_t m = r->n - i0 < BLOCK ? r->n - i0 : BLOCK;
        for (size_t j = 0; j < m; j++) {
            row_keys(s, r, i0 + j, &keys[j]);
            for (int t = 0; t < NTABLES; t++)
                if (keys[j].in >> t & 1)
                    groups_prefetch(&s->t[t], keys[j].hash[t]);
        }
        for (size_t j = 0; j < m; j++)
            if (sum_row(s, r, i0 + j, &keys[j]))
                return -1;
    }
    for (int t = 0; t < NTABLES; t++)
        if (groups_sort(&s->t[t]))
            return -1;
    return 0;
}

/* The four tables' columns, in the order _tables/sums.py's _compiled reads
 * them: per column its width in bytes, 0 for a bitmap. */
static const int NCOLS[NTABLES] = {3, 8, 8, 8};
static const int WIDTHS[NTABLES][MAXCOLS] = {
    {8, 8, 8},                /* goroutine, duration, waits */
    {4, 8, 0, 0, 8, 8, 8, 8}, /* reason, stack_id, its validity, clipped_end, intervals, total_ns, min_ns, max_ns */
    {8, 4, 8, 0, 8, 8, 8, 8}, /* goroutine, profile, stack_id, its validity, intervals, total_ns, first_start, last_end */
    {8, 4, 8, 0, 8, 8, 8, 8}, /* goroutine, profile, stack_id, its validity, ns, intervals, first_start, last_end */
};

typedef struct {
    PyObject *bytes[NTABLES][MAXCOLS];
    u8 *col[NTABLES][MAXCOLS];
    size_t rows[NTABLES];
} Out;

static inline void put64(u8 *col, size_t j, i64 v) { memcpy(col + j * 8, &v, 8); }

static inline void put32(u8 *col, size_t j, i64 v) {
    int32_t x = (int32_t)v;
    memcpy(col + j * 4, &x, 4);
}

static inline void put_bit(u8 *bits, size_t j, i64 on) {
    if (on)
        bits[j >> 3] |= (u8)(1u << (j & 7));
}

/* The columns' bytes, bitmaps zeroed: 0, or -1 with an exception set. With the GIL. */
static int out_alloc(Out *o) {
    for (int t = 0; t < NTABLES; t++)
        for (int c = 0; c < NCOLS[t]; c++) {
            size_t w = (size_t)WIDTHS[t][c], size = w ? o->rows[t] * w : (o->rows[t] + 7) / 8;
            if (!(o->bytes[t][c] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size)))
                return -1;
            o->col[t][c] = (u8 *)PyBytes_AS_STRING(o->bytes[t][c]);
            if (!w)
                memset(o->col[t][c], 0, size);
        }
    return 0;
}

static void write_sched(const Groups *t, u8 **c) {
    for (size_t j = 0; j < t->n; j++) {
        const Group *g = &t->g[j];
        put64(c[0], j, g->key[0]);
        put64(c[1], j, g->key[1]);
        put64(c[2], j, g->count);
    }
}

static void write_blocked(const Groups *t, u8 **c) {
    for (size_t j = 0; j < t->n; j++) {
        const Group *g = &t->g[j];
        put32(c[0], j, g->key[0]);
        put64(c[1], j, g->key[2]);
        put_bit(c[2], j, g->key[1]);
        put_bit(c[3], j, g->key[3]);
        put64(c[4], j, g->count);
        put64(c[5], j, (i64)g->sum);
        put64(c[6], j, g->lo);
        put64(c[7], j, g->hi);
    }
}

/* A pprof_units or pprof_interval_units row: key as a pprof group's. */
static void put_pprof(u8 **c, size_t j, const i64 *key, i64 count, i64 sum, i64 first, i64 last, int per_ns) {
    put64(c[0], j, key[0]);
    put32(c[1], j, key[1]);
    put_bit(c[3], j, key[2]);
    put64(c[2], j, key[3]);
    put64(c[4], j, per_ns ? key[4] : count);
    put64(c[5], j, per_ns ? count : sum);
    put64(c[6], j, first);
    put64(c[7], j, last);
}

/* The groups by key, then each row alone in the states' order. */
static void write_pprof(const Groups *t, const Sums *s, const Rows *r, u8 **c, int per_ns) {
    for (size_t j = 0; j < t->n; j++) {
        const Group *g = &t->g[j];
        put_pprof(c, j, g->key, g->count, (i64)g->sum, g->lo, g->hi, per_ns);
    }
    for (size_t k = 0; k < s->nalone; k++) {
        size_t i = s->alone[k];
        int valid = bit_at(r->stack_valid, i);
        i64 ns = (i64)ld_u64(r->duration, i);
        i64 key[KEYW] = {(i64)ld_u64(r->goroutine, i), profile_at(r, i), valid,
                         valid ? (i64)ld_u64(r->stack, i) : 0, ns};
        put_pprof(c, t->n + k, key, 1, ns, (i64)ld_u64(r->start, i), (i64)ld_u64(r->end, i), per_ns);
    }
}

/* A tuple per table of its columns' bytes (taking o's references), or NULL. */
static PyObject *out_tuple(Out *o) {
    PyObject *result = PyTuple_New(NTABLES);
    for (int t = 0; t < NTABLES; t++) {
        PyObject *cols = result ? PyTuple_New(NCOLS[t]) : NULL;
        for (int c = 0; c < NCOLS[t]; c++) {
            if (cols)
                PyTuple_SET_ITEM(cols, c, o->bytes[t][c]);
            else
                Py_DECREF(o->bytes[t][c]);
            o->bytes[t][c] = NULL;
        }
        if (cols)
            PyTuple_SET_ITEM(result, t, cols);
        else
            Py_CLEAR(result);
    }
    return result;
}

static void out_free(Out *o) {
    for (int t = 0; t < NTABLES; t++)
        for (int c = 0; c < NCOLS[t]; c++)
            Py_XDECREF(o->bytes[t][c]);
}

/* The tables' rows of the summed rows, as out_tuple gives them, or NULL with an exception set. */
static PyObject *sums_tuple(const Sums *s, const Rows *r) {
    Out o = {.rows = {s->t[SCHED].n, s->t[BLOCKED].n, s->t[PPROF].n + s->nalone, s->t[INTERVAL].n + s->nalone}};
    if (out_alloc(&o) < 0) {
        out_free(&o);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS;
    write_sched(&s->t[SCHED], o.col[SCHED]);
    write_blocked(&s->t[BLOCKED], o.col[BLOCKED]);
    write_pprof(&s->t[PPROF], s, r, o.col[PPROF], 0);
    write_pprof(&s->t[INTERVAL], s, r, o.col[INTERVAL], 1);
    Py_END_ALLOW_THREADS;
    return out_tuple(&o);
}

/* Holds obj's buffer into b unless obj is None (then b stays empty): 0, or -1. */
static int hold_optional(PyObject *obj, Py_buffer *b) {
    return obj == Py_None ? 0 : PyObject_GetBuffer(obj, b, PyBUF_SIMPLE);
}

static int lengths_match(const Py_buffer *in, const Py_buffer *stack_valid, const Py_buffer *first_run_valid,
                         Py_ssize_t n, Py_ssize_t nreasons) {
    size_t rows = (size_t)n, bits = (rows + 7) / 8, nunits = (size_t)in[9].len / 8;
    if (n < 0 || rows >= UINT32_MAX || nreasons < 0)
        return 0;
    for (int k = 0; k < 5; k++) /* goroutine, start, end, duration, stack_id */
        if ((size_t)in[k].len < rows * 8)
            return 0;
    return (size_t)in[5].len >= rows * 4 && (size_t)in[6].len >= rows * 4 && (size_t)in[7].len >= bits &&
           in[8].len % 4 == 0 && (size_t)in[9].len == nunits * 8 && (size_t)in[10].len == nunits * 8 &&
           (!stack_valid->obj || (size_t)stack_valid->len >= bits) &&
           (!first_run_valid->obj || (size_t)first_run_valid->len >= (nunits + 7) / 8);
}

/* table_unit_sums(goroutines, starts, ends, durations, stacks, states,
 * reasons, clipped_end, profile_of, unit_goroutines, first_runs,
 * stack_valid, first_run_valid, n, nreasons): of n goroutine_states rows
 * (int64 columns, int32 state and reason indices, clipped_end a bitmap,
 * start_stack_id's validity a bitmap or None; every one from offset 0),
 * with profile_of (int32 per state and reason index, state * nreasons +
 * reason: the profile that counts it, or -1) and the unit's goroutine_units
 * goroutines and first runs (int64; first_run_valid a bitmap or None), the
 * rows of sched_units, blocked_units, pprof_units and pprof_interval_units:
 * a tuple of bytes per table, its groups sorted by key (each key column
 * ascending, a null stack first) and, for the pprof tables, the intervals
 * that are a row of their own after them in the states' order. */
static PyObject *unit_sums(PyObject *self, PyObject *args) {
    (void)self;
    enum { NIN = 11 };
    Py_buffer in[NIN], stack_valid = {0}, first_run_valid = {0};
    PyObject *stack_valid_obj, *first_run_valid_obj, *result = NULL;
    Py_ssize_t n, nreasons;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*OOnn:table_unit_sums", &in[0], &in[1], &in[2], &in[3],
                          &in[4], &in[5], &in[6], &in[7], &in[8], &in[9], &in[10], &stack_valid_obj,
                          &first_run_valid_obj, &n, &nreasons))
        return NULL;
    Sums s = {0};
    if (hold_optional(stack_valid_obj, &stack_valid) < 0 || hold_optional(first_run_valid_obj, &first_run_valid) < 0)
        goto done;
    if (!lengths_match(in, &stack_valid, &first_run_valid, n, nreasons)) {
        PyErr_SetString(PyExc_ValueError, "table_unit_sums: column lengths do not match");
        goto done;
    }
    Rows r = {
        .n = (size_t)n,
        .nprofile_of = (size_t)in[8].len / 4,
        .nreasons = (size_t)nreasons,
        .nunits = (size_t)in[9].len / 8,
        .goroutine = in[0].buf,
        .start = in[1].buf,
        .end = in[2].buf,
        .duration = in[3].buf,
        .stack = in[4].buf,
        .stack_valid = stack_valid.obj ? stack_valid.buf : NULL,
        .clipped = in[7].buf,
        .state = in[5].buf,
        .reason = in[6].buf,
        .profile_of = in[8].buf,
        .unit_goroutine = in[9].buf,
        .first_run = in[10].buf,
        .first_run_valid = first_run_valid.obj ? first_run_valid.buf : NULL,
    };
    int failed;
    Py_BEGIN_ALLOW_THREADS;
    failed = sum_rows(&s, &r);
    Py_END_ALLOW_THREADS;
    result = failed ? PyErr_NoMemory() : sums_tuple(&s, &r);
done:
    for (int t = 0; t < NTABLES; t++)
        groups_free(&s.t[t]);
    free(s.alone);
    map_free(&s.unit);
    for (int k = 0; k < NIN; k++)
        PyBuffer_Release(&in[k]);
    if (stack_valid.obj)
        PyBuffer_Release(&stack_valid);
    if (first_run_valid.obj)
        PyBuffer_Release(&first_run_valid);
    return result;
}

static PyMethodDef methods[] = {
    {"table_unit_sums", unit_sums, METH_VARARGS,
     "table_unit_sums(goroutines, starts, ends, durations, stacks, states, reasons, clipped_end, profile_of, "
     "unit_goroutines, first_runs, stack_valid, first_run_valid, n, nreasons, /)\n--\n\n"
     "A unit's sched_units, blocked_units, pprof_units and pprof_interval_units rows from its goroutine_states (the "
     "twin of _tables/sums.py's unit_sums on pyarrow)."},
    {NULL, NULL, 0, NULL},
};

int table_units_register(PyObject *module) { return PyModule_AddFunctions(module, methods); }
