/* TopSums: the per-span sums of `livetrace top`, the twin of
 * _views/top_sums.py's TopSums (which says what is kept, and in what
 * order). It reads a SpanBatch's columns batch at a time: durations per
 * span kind and per region and task name id, each goroutine's time per
 * state since a point and blocked per reason id, and each goroutine's name
 * id, asking Python (root_of) for the name of a stack it has not met; take
 * hands the goroutines' sums over added up by name id (a snapshot's groups:
 * tens, where the goroutines are tens of thousands). Sums are kept in 128
 * bits and handed over as Python ints, exact as the twin's. */

#include "views/top.h"
#include "common/pyglue.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/containers.h"
#include "common/generated.h"

typedef __int128 i128;

#define KEEP_NAMES 1024
#define KEEP_ROOTS 65536

typedef struct {
    i64 *v;
    size_t n, cap;
} Vec;

typedef struct {
    i64 g;
    u64 name, last;
    /* acc: the position of this goroutine's sums if epoch is TopSums.epoch + 1 (0: never counted), which
     * saves a lookup of the goroutine a span */
    u64 epoch;
    size_t acc;
} Name;

/* A goroutine counted since the last take. */
typedef struct {
    i64 g;
    i128 sum[3]; /* running, runnable, syscall */
    i64 first, last_reason; /* its blocked reasons: a list through Reason.next, -1 none */
} Acc;

typedef struct {
    u64 reason;
    i128 ns;
    i64 next;
} Reason;

/* Durations by a key (a kind, a name id), keys in the order first met. */
typedef struct {
    Map index; /* key -> position in vecs */
    Vec *vecs;
    u64 *keys;
    size_t n, cap, capk;
} Groups;

typedef struct {
    PyObject_HEAD int busy;
    Name *names;
    size_t nnames, capnames;
    Map name_index; /* goroutine -> position in names */
    Map roots;      /* tables << 32 | stack -> name id */
    Acc *acc;
    size_t nacc, capacc;
    u64 epoch;    /* the interval's number (take starts a new one) */
    Map orphans;  /* goroutine -> position in acc, of the counted goroutines whose names forget dropped */
    Reason *reasons;
    size_t nreasons, capreasons;
    Groups kinds, regions, tasks;
} TopSumsObject;

static void groups_free(Groups *g) {
    for (size_t i = 0; i < g->n; i++)
        free(g->vecs[i].v);
    free(g->vecs), free(g->keys);
    map_free(&g->index);
    memset(g, 0, sizeof *g);
}

static int groups_add(Groups *g, u64 key, i64 d) {
    u64 *slot = map_slot(&g->index, key, (u64)g->n);
    if (!slot)
        return -1;
    if (*slot == g->n) { /* new */
        if (grow((void **)&g->vecs, &g->cap, g->n + 1, sizeof(Vec)) ||
            grow((void **)&g->keys, &g->capk, g->n + 1, sizeof(u64)))
            return -1;
        g->vecs[g->n] = (Vec){0};
        g->keys[g->n] = key;
        g->n++;
    }
    Vec *v = &g->vecs[*slot];
    if (grow((void **)&v->v, &v->cap, v->n + 1, sizeof(i64)))
        return -1;
    v->v[v->n++] = d;
    return 0;
}

static void reset_interval(TopSumsObject *s) {
    s->nacc = s->nreasons = 0;
    s->epoch++;
    map_free(&s->orphans);
    memset(&s->orphans, 0, sizeof s->orphans);
    groups_free(&s->kinds), groups_free(&s->regions), groups_free(&s->tasks);
}

static int TopSums_init(TopSumsObject *self, PyObject *args, PyObject *kw) {
    if (!PyArg_ParseTuple(args, ":TopSums"))
        return -1;
    return 0;
}

static void TopSums_dealloc(TopSumsObject *self) {
    reset_interval(self);
    free(self->names), free(self->acc), free(self->reasons);
    map_free(&self->name_index), map_free(&self->roots); /* (reset_interval freed the orphans) */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The name record of g, made (name 0) if new: NULL when out of memory. */
static Name *name_of(TopSumsObject *s, i64 g, int *made) {
    u64 *slot = map_slot(&s->name_index, (u64)g, (u64)s->nnames);
    if (!slot)
        return NULL;
    *made = *slot == s->nnames;
    if (*made) {
        if (grow((void **)&s->names, &s->capnames, s->nnames + 1, sizeof(Name)))
            return NULL;
        s->names[s->nnames++] = (Name){g, 0, 0, 0, 0};
    }
    return &s->names[*slot];
}

/* A method called while feed or take runs (from root_of, or from another
 * thread while they have given up the GIL): refused. */
static int in_use(TopSumsObject *s) {
    if (s->busy)
        PyErr_SetString(PyExc_RuntimeError, "TopSums is in use: its feed or take is running");
    return s->busy;
}

static PyObject *TopSums_name(TopSumsObject *self, PyObject *args) {
    long long g;
    unsigned long long name, index;
    if (!PyArg_ParseTuple(args, "LKK", &g, &name, &index) || in_use(self))
        return NULL;
    int made;
    Name *n = name_of(self, (i64)g, &made);
    if (!n)
        return PyErr_NoMemory();
    n->name = name, n->last = index;
    Py_RETURN_NONE;
}

/* name_all(created, names, index): names[i] (u64; 0: none) names goroutine created[i] (u64 ids, as the
 * creations' arguments hold them), as name() each, in a batch's order: a busy service creates some
 * thousands of goroutines a second, and a call each was most of top's work on its creations. */
static PyObject *TopSums_name_all(TopSumsObject *self, PyObject *args) {
    Py_buffer cb, nb;
    unsigned long long index;
    if (!PyArg_ParseTuple(args, "y*y*K", &cb, &nb, &index))
        return NULL;
    PyObject *result = NULL;
    if (in_use(self))
        goto done;
    if (cb.len % 8 || cb.len != nb.len) {
        PyErr_SetString(PyExc_ValueError, "name_all takes as many 8-byte names as 8-byte goroutine ids");
        goto done;
    }
    size_t n = (size_t)cb.len / 8;
    for (size_t i = 0; i < n; i++) {
        u64 name = ld_u64(nb.buf, i);
        if (!name)
            continue;
        int made;
        Name *rec = name_of(self, (i64)ld_u64(cb.buf, i), &made);
        if (!rec) {
            PyErr_NoMemory();
            goto done;
        }
        rec->name = name, rec->last = index;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&cb);
    PyBuffer_Release(&nb);
    return result;
}

/* The running sums of the goroutine whose name record is n, made if new: NULL when out of memory. */
static Acc *acc_of(TopSumsObject *s, Name *n) {
    if (n->epoch != s->epoch + 1) {
        u64 at;
        if ((s->orphans.len || s->orphans.has_zero) && map_del(&s->orphans, (u64)n->g, &at)) {
            n->acc = (size_t)at; /* counted before forget dropped its name */
        } else {
            if (grow((void **)&s->acc, &s->capacc, s->nacc + 1, sizeof(Acc)))
                return NULL;
            s->acc[s->nacc] = (Acc){.g = n->g, .first = -1, .last_reason = -1};
            n->acc = s->nacc++;
        }
        n->epoch = s->epoch + 1;
    }
    return &s->acc[n->acc];
}

static int add_blocked(TopSumsObject *s, Acc *a, u64 reason, i128 part) {
    for (i64 i = a->first; i >= 0; i = s->reasons[i].next)
        if (s->reasons[i].reason == reason) {
            s->reasons[i].ns += part;
            return 0;
        }
    if (grow((void **)&s->reasons, &s->capreasons, s->nreasons + 1, sizeof(Reason)))
        return -1;
    i64 at = (i64)s->nreasons++;
    s->reasons[at] = (Reason){reason, part, -1};
    if (a->last_reason >= 0)
        s->reasons[a->last_reason].next = at;
    else
        a->first = at;
    a->last_reason = at;
    return 0;
}

/* root_of(tables, stack) through the cache: 0, or -1 with an exception.
 * feed runs without the GIL (*ts: its saved state): a stack not met yet
 * takes the GIL for the call, and gives it up again; on an error the GIL
 * is kept (*ts NULL). */
static int root(TopSumsObject *s, PyObject *root_of, u32 tok, u64 stack, u64 *name, PyThreadState **ts) {
    u64 key = (u64)tok << 32 | stack;
    int cached = !(stack >> 32);
    if (cached) {
        u64 *v = map_find(&s->roots, key);
        if (v) {
            *name = *v;
            return 0;
        }
    }
    PyEval_RestoreThread(*ts);
    *ts = NULL;
    PyObject *r = PyObject_CallFunction(root_of, "IK", tok, (unsigned long long)stack);
    if (!r)
        return -1;
    unsigned long long id = PyLong_AsUnsignedLongLong(r);
    Py_DECREF(r);
    if (id == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *name = id;
    if (cached) {
        if (s->roots.len >= KEEP_ROOTS) {
            map_free(&s->roots);
            memset(&s->roots, 0, sizeof s->roots);
        }
        if (map_put(&s->roots, key, id)) {
            PyErr_NoMemory();
            return -1;
        }
    }
    *ts = PyEval_SaveThread();
    return 0;
}

enum { NCOLS = 11 };
static const int WIDTH[NCOLS] = {1, 1, 8, 8, 8, 4, 4, 8, 8, 4, 4};

/* The name id ids maps a batch's name id v to (ids: u32 each, nids of them); -1 past them. */
static inline i64 name_id(const u8 *ids, size_t nids, u32 v) {
    return v < nids ? (i64)ld_u32(ids, v) : -1;
}

static PyObject *TopSums_feed(TopSumsObject *self, PyObject *args) {
    Py_buffer b[NCOLS], idb;
    PyObject *since_obj, *root_of;
    unsigned long long index;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*y*OKO", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7],
                          &b[8], &b[9], &b[10], &idb, &since_obj, &index, &root_of))
        return NULL;
    PyObject *result = NULL;
    size_t n = (size_t)b[0].len, nids = (size_t)idb.len / 4;
    const u8 *ids = idb.buf;
    int has_since = since_obj != Py_None;
    long long since = 0;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "TopSums.feed called while its feed runs");
        goto done;
    }
    if (idb.len % 4) {
        PyErr_SetString(PyExc_ValueError, "name ids are 4 bytes each");
        goto done;
    }
    for (int k = 0; k < NCOLS; k++)
        if ((size_t)b[k].len != n * (size_t)WIDTH[k]) {
            PyErr_SetString(PyExc_ValueError, "columns of different lengths");
            goto done;
        }
    if (has_since && (since = PyLong_AsLongLong(since_obj)) == -1 && PyErr_Occurred())
        goto done;
    const u8 *kind = b[0].buf, *rk = b[1].buf, *rid = b[2].buf, *st = b[3].buf, *en = b[4].buf, *rs = b[5].buf;
    const u8 *nm = b[6].buf, *ss = b[7].buf, *es = b[8].buf, *stok = b[9].buf, *etok = b[10].buf;
    self->busy = 1;
    /* The sums are plain C: the pool's threads run meanwhile (each batch's spans pass here, on trio's thread). */
    PyThreadState *ts = PyEval_SaveThread();
    long long bad_start = 0, bad_end = 0;
    for (size_t i = 0; i < n; i++) {
        int k = kind[i];
        i64 s = ld_i64(st, i), e = ld_i64(en, i), d;
        if (__builtin_sub_overflow(e, s, &d)) {
            bad_start = s, bad_end = e;
            goto overflow;
        }
        if (k > K_SYSCALL) {
            Groups *grp = k == K_TASK ? &self->tasks : k == K_REGION ? &self->regions : &self->kinds;
            i64 key = k == K_TASK || k == K_REGION ? name_id(ids, nids, ld_u32(nm, i)) : (i64)k;
            if (key < 0)
                goto badname;
            if (groups_add(grp, (u64)key, d))
                goto nomem;
            continue;
        }
        if (rk[i] != RES_GOROUTINE)
            continue;
        if (k == K_RUNNABLE && groups_add(&self->kinds, K_RUNNABLE, d))
            goto nomem;
        u64 own = k == K_RUNNING ? ld_u64(es, i) : k != K_RUNNABLE ? ld_u64(ss, i) : 0;
        i64 g = ld_i64(rid, i);
        int made;
        Name *name = name_of(self, g, &made);
        if (!name)
            goto nomem;
        if (made || (own && !name->name)) {
            u64 id = 0;
            /* (root_of cannot add names meanwhile: the sums refuse every call while a feed runs) */
            if (own && root(self, root_of, k == K_RUNNING ? ld_u32(etok, i) : ld_u32(stok, i), own, &id, &ts))
                goto fail; /* the GIL held, the exception set */
            name->name = id;
        }
        name->last = index;
        i128 part = (i128)e - (!has_since || s >= since ? (i128)s : (i128)since);
        if (part <= 0)
            continue;
        Acc *a = acc_of(self, name);
        if (!a)
            goto nomem;
        if (k == K_BLOCKED) {
            i64 reason = name_id(ids, nids, ld_u32(rs, i));
            if (reason < 0)
                goto badname;
            if (add_blocked(self, a, (u64)reason, part))
                goto nomem;
        } else {
            a->sum[k == K_RUNNING ? 0 : k == K_RUNNABLE ? 1 : 2] += part;
        }
    }
    PyEval_RestoreThread(ts);
    self->busy = 0;
    result = Py_NewRef(Py_None);
    goto done;
overflow:
    PyEval_RestoreThread(ts);
    PyErr_Format(PyExc_ValueError, "a span from %lld to %lld lasts longer than int64 nanoseconds", bad_start, bad_end);
    goto fail;
badname:
    PyEval_RestoreThread(ts);
    PyErr_SetString(PyExc_ValueError, "a span's name id is past the name ids given");
    goto fail;
nomem:
    PyEval_RestoreThread(ts);
    PyErr_NoMemory();
fail:
    self->busy = 0;
done:
    for (int k = 0; k < NCOLS; k++)
        PyBuffer_Release(&b[k]);
    PyBuffer_Release(&idb);
    return result;
}

/* An exact Python int of a 128-bit sum. */
static PyObject *py_i128(i128 v) {
    if (v >= INT64_MIN && v <= INT64_MAX)
        return PyLong_FromLongLong((long long)v);
    unsigned __int128 a = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
    PyObject *hi = PyLong_FromUnsignedLongLong((u64)(a >> 64)), *lo = PyLong_FromUnsignedLongLong((u64)a);
    PyObject *sh = PyLong_FromLong(64), *t = NULL, *r = NULL;
    if (hi && lo && sh && (t = PyNumber_Lshift(hi, sh)))
        r = PyNumber_Add(t, lo);
    Py_XDECREF(hi), Py_XDECREF(lo), Py_XDECREF(sh), Py_XDECREF(t);
    if (r && v < 0) {
        PyObject *neg = PyNumber_Negative(r);
        Py_DECREF(r);
        r = neg;
    }
    return r;
}

/* v[0..n) in ascending order: an LSD radix sort, a byte a pass, on the
 * values with their sign bit flipped (so that unsigned order is signed
 * order), skipping the bytes every value shares (a duration's high bytes
 * are mostly 0: three or four passes, not eight). qsort with a comparison
 * callback was a tenth of top's CPU on a busy service. -1 if out of memory. */
static int sort_i64(i64 *v, size_t n) {
    if (n < 64) {
        for (size_t i = 1; i < n; i++) {
            i64 x = v[i];
            size_t j = i;
            for (; j > 0 && v[j - 1] > x; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return 0;
    }
    u64 *a = (u64 *)v, *tmp = malloc(n * sizeof(u64));
    size_t(*count)[256] = calloc(8, sizeof *count);
    if (!tmp || !count) {
        free(tmp), free(count);
        return -1;
    }
    const u64 flip = (u64)1 << 63;
    for (size_t i = 0; i < n; i++) {
        u64 x = a[i] ^ flip;
        for (int d = 0; d < 8; d++)
            count[d][(x >> (8 * d)) & 0xff]++;
    }
    u64 *src = a, *dst = tmp;
    for (int d = 0; d < 8; d++) {
        size_t *c = count[d];
        if (c[((src[0] ^ flip) >> (8 * d)) & 0xff] == n)
            continue; /* every value has this byte */
        size_t at = 0;
        for (int k = 0; k < 256; k++) {
            size_t m = c[k];
            c[k] = at;
            at += m;
        }
        for (size_t i = 0; i < n; i++) {
            u64 x = src[i];
            dst[c[((x ^ flip) >> (8 * d)) & 0xff]++] = x;
        }
        u64 *t = src;
        src = dst, dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof(u64));
    free(tmp), free(count);
    return 0;
}

/* Each group's durations sorted, and their sums into *totals (made here):
 * no Python, so without the GIL. 0, or -1 if out of memory. */
static int groups_sort(Groups *g, i128 **totals) {
    if (!(*totals = malloc((g->n ? g->n : 1) * sizeof(i128))))
        return -1;
    for (size_t i = 0; i < g->n; i++) {
        Vec *v = &g->vecs[i];
        if (sort_i64(v->v, v->n))
            return -1;
        i128 total = 0;
        for (size_t j = 0; j < v->n; j++)
            total += v->v[j];
        (*totals)[i] = total;
    }
    return 0;
}

/* {key: (sorted durations as int64 bytes, their sum)}, keys as first met (groups_sort's groups and sums). */
static PyObject *groups_dict(Groups *g, const i128 *totals) {
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    for (size_t i = 0; i < g->n; i++) {
        Vec *v = &g->vecs[i]; /* made in the order of keys */
        i128 total = totals[i];
        PyObject *key = PyLong_FromUnsignedLongLong(g->keys[i]);
        PyObject *bytes = PyBytes_FromStringAndSize((const char *)v->v, (Py_ssize_t)(v->n * sizeof(i64)));
        PyObject *sum = py_i128(total);
        PyObject *pair = bytes && sum ? PyTuple_Pack(2, bytes, sum) : NULL;
        int bad = !key || !pair || PyDict_SetItem(d, key, pair);
        Py_XDECREF(key), Py_XDECREF(bytes), Py_XDECREF(sum), Py_XDECREF(pair);
        if (bad) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

/* The goroutines counted with one name id: how many, and their sums. */
typedef struct {
    u64 name;
    size_t goroutines;
    i128 sum[3];
    i64 first, last_reason; /* blocked reasons, as Acc's */
} Group;

/* The goroutines' sums added up by name id: the groups in the order their first goroutine was
 * counted, each one's blocked reasons in the order first met (as adding the goroutines up in their
 * order gives them). */
typedef struct {
    Group *v;
    size_t n, cap;
    Reason *reasons;
    size_t nreasons, capreasons;
    Map index; /* name id -> position in v */
} Grouped;

static void grouped_free(Grouped *g) {
    free(g->v), free(g->reasons);
    map_free(&g->index);
}

static int group_blocked(Grouped *out, Group *grp, u64 reason, i128 ns) {
    for (i64 i = grp->first; i >= 0; i = out->reasons[i].next)
        if (out->reasons[i].reason == reason) {
            out->reasons[i].ns += ns;
            return 0;
        }
    if (grow((void **)&out->reasons, &out->capreasons, out->nreasons + 1, sizeof(Reason)))
        return -1;
    i64 at = (i64)out->nreasons++;
    out->reasons[at] = (Reason){reason, ns, -1};
    if (grp->last_reason >= 0)
        out->reasons[grp->last_reason].next = at;
    else
        grp->first = at;
    grp->last_reason = at;
    return 0;
}

static int group_goroutines(TopSumsObject *s, Grouped *out) {
    for (size_t i = 0; i < s->nacc; i++) {
        Acc *a = &s->acc[i];
        u64 *at = map_find(&s->name_index, (u64)a->g);
        u64 name = at ? s->names[*at].name : 0;
        u64 *slot = map_slot(&out->index, name, (u64)out->n);
        if (!slot)
            return -1;
        if (*slot == out->n) {
            if (grow((void **)&out->v, &out->cap, out->n + 1, sizeof(Group)))
                return -1;
            out->v[out->n++] = (Group){.name = name, .first = -1, .last_reason = -1};
        }
        Group *grp = &out->v[*slot];
        grp->goroutines++;
        for (int k = 0; k < 3; k++)
            grp->sum[k] += a->sum[k];
        for (i64 r = a->first; r >= 0; r = s->reasons[r].next)
            if (group_blocked(out, grp, s->reasons[r].reason, s->reasons[r].ns))
                return -1;
    }
    return 0;
}

static PyObject *group_row(Grouped *out, Group *grp) {
    PyObject *blocked = PyList_New(0);
    if (!blocked)
        return NULL;
    for (i64 i = grp->first; i >= 0; i = out->reasons[i].next) {
        PyObject *ns = py_i128(out->reasons[i].ns);
        PyObject *pair = ns ? Py_BuildValue("(KN)", (unsigned long long)out->reasons[i].reason, ns) : NULL;
        if (!pair || PyList_Append(blocked, pair)) {
            Py_XDECREF(pair);
            Py_DECREF(blocked);
            return NULL;
        }
        Py_DECREF(pair);
    }
    PyObject *r0 = py_i128(grp->sum[0]), *r1 = py_i128(grp->sum[1]), *r2 = py_i128(grp->sum[2]);
    if (!r0 || !r1 || !r2) {
        Py_XDECREF(r0), Py_XDECREF(r1), Py_XDECREF(r2);
        Py_DECREF(blocked);
        return NULL;
    }
    return Py_BuildValue("(KnNNNN)", (unsigned long long)grp->name, (Py_ssize_t)grp->goroutines, r0, r1, r2, blocked);
}

static PyObject *TopSums_take(TopSumsObject *self, PyObject *unused) {
    Grouped grouped = {0};
    PyObject *rows = NULL, *kinds = NULL, *regions = NULL, *tasks = NULL;
    i128 *totals[3] = {NULL, NULL, NULL};
    if (in_use(self))
        return NULL;
    /* The goroutines grouped and the durations sorted without the GIL (a
     * generation's are millions: the pool's threads run meanwhile); busy
     * keeps this object's other methods out until then. */
    int bad;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    bad = group_goroutines(self, &grouped) || groups_sort(&self->kinds, &totals[0]) ||
          groups_sort(&self->regions, &totals[1]) || groups_sort(&self->tasks, &totals[2]);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (bad) {
        PyErr_NoMemory();
        goto fail;
    }
    if (!(rows = PyList_New((Py_ssize_t)grouped.n)))
        goto fail;
    for (size_t i = 0; i < grouped.n; i++) {
        PyObject *row = group_row(&grouped, &grouped.v[i]);
        if (!row)
            goto fail;
        PyList_SET_ITEM(rows, (Py_ssize_t)i, row);
    }
    if (!(kinds = groups_dict(&self->kinds, totals[0])) || !(regions = groups_dict(&self->regions, totals[1])) ||
        !(tasks = groups_dict(&self->tasks, totals[2])))
        goto fail;
    grouped_free(&grouped);
    free(totals[0]), free(totals[1]), free(totals[2]);
    reset_interval(self);
    return Py_BuildValue("(NNNN)", rows, kinds, regions, tasks);
fail:
    grouped_free(&grouped);
    free(totals[0]), free(totals[1]), free(totals[2]);
    Py_XDECREF(rows), Py_XDECREF(kinds), Py_XDECREF(regions), Py_XDECREF(tasks);
    return NULL;
}

static PyObject *TopSums_forget(TopSumsObject *self, PyObject *args) {
    unsigned long long old;
    if (!PyArg_ParseTuple(args, "K", &old) || in_use(self))
        return NULL;
    if (self->nnames <= KEEP_NAMES)
        Py_RETURN_NONE;
    /* A goroutine counted since the last take whose name goes: its sums are found by its goroutine again. */
    for (size_t i = 0; i < self->nnames; i++) {
        Name *n = &self->names[i];
        if (n->last < old && n->epoch == self->epoch + 1 && map_put(&self->orphans, (u64)n->g, n->acc))
            return PyErr_NoMemory();
    }
    size_t kept = 0;
    for (size_t i = 0; i < self->nnames; i++)
        if (self->names[i].last >= old)
            self->names[kept++] = self->names[i];
    self->nnames = kept;
    map_free(&self->name_index);
    memset(&self->name_index, 0, sizeof self->name_index);
    for (size_t i = 0; i < kept; i++)
        if (map_put(&self->name_index, (u64)self->names[i].g, i))
            return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyMethodDef TopSums_methods[] = {
    {"feed", (PyCFunction)TopSums_feed, METH_VARARGS,
     "feed($self, kinds, resource_kinds, resource_ids, starts, ends, reasons, names, start_stacks, end_stacks, "
     "start_tables, end_tables, ids, since, index, root_of, /)\n--\n\nAdd a SpanBatch's columns to the sums (ids: "
     "the name id, u32, each of its name ids stands for)."},
    {"name", (PyCFunction)TopSums_name, METH_VARARGS, "name($self, g, name, index, /)\n--\n\nA creation names goroutine g."},
    {"name_all", (PyCFunction)TopSums_name_all, METH_VARARGS,
     "name_all($self, created, names, index, /)\n--\n\nCreations name goroutines: created[i] (u64) named names[i] (u64; "
     "0: not named)."},
    {"take", (PyCFunction)TopSums_take, METH_NOARGS, "take($self, /)\n--\n\nThe sums since the last take (the goroutines' by name id)."},
    {"forget", (PyCFunction)TopSums_forget, METH_VARARGS,
     "forget($self, old, /)\n--\n\nDrop the names of goroutines last seen before snapshot old, when there are many."},
    {NULL},
};

static PyTypeObject TopSumsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "livetrace._trace._ccore.TopSums",
    .tp_basicsize = sizeof(TopSumsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TopSums()\n--\n\ntop's per-span sums (twin: _views/top_sums.py's TopSums).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)TopSums_init,
    .tp_dealloc = (destructor)TopSums_dealloc,
    .tp_methods = TopSums_methods,
};

int top_register(PyObject *module) { return add_type(module, &TopSumsType, "TopSums"); }
