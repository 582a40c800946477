/* UserLogsCore: the compiled twin of _trace/spans/logs.py's UserLogs, whose
 * state (the open tasks and regions with their logs; split, what the join
 * resolves: tasks and regions from before the generation) lives in hash
 * maps here, not in Python dicts: a busy service begins and ends a region
 * or a task per request and exits goroutines that held them, and a dict
 * step or two for each held the GIL for a sixth of a span view's Python.
 * Python sees the state as the twin's dicts when it asks (export), and
 * loads what it sets (set_tasks, set_regions). The logs stay Python lists,
 * made only for a task or region that logs, or when asked for. */

#include "spans/spans.h"

#include <string.h>

#include "common/containers.h"
#include "common/pyglue.h"

typedef struct {
    u64 task;
    i64 seq;
    PyObject *logs; /* a list, or NULL: none yet */
} Region;

/* A goroutine's open regions, innermost last. */
typedef struct {
    Region *r;
    size_t n, cap;
} Regions;

typedef struct {
    PyObject_HEAD int split, busy;
    Py_ssize_t max_logs;
    PyObject *prior; /* the Prior class */
    i64 seq;         /* regions begun so far */
    Map tasks;       /* open task -> its logs (a list, or NULL: none yet) */
    Map regions;     /* goroutine -> Regions* */
    /* Split mode only: */
    Map touched;         /* task -> 1: begun or ended in the generation */
    Map pending_tasks;   /* task not seen begin -> list of its logs */
    Map pops;            /* goroutine -> regions from before it ended << 1 | whether it exited */
    Map pending_regions; /* goroutine -> list of (pops, task, log) */
} LogsObject;

static PyObject *EMPTY; /* b"" */

static int refuse_busy(LogsObject *self) {
    if (self->busy)
        PyErr_SetString(PyExc_RuntimeError, "UserLogsCore is in use: its scan is running");
    return self->busy;
}

static void regions_free(Regions *rs) {
    for (size_t k = 0; k < rs->n; k++)
        Py_XDECREF(rs->r[k].logs);
    free(rs->r);
    free(rs);
}

/* Empties a map whose values are Python references (or NULL), or with
 * regions, Regions. */
static void map_clear_objects(Map *m, int regions) {
    size_t pos = 0;
    u64 key, *val;
    while (map_next(m, &pos, &key, &val)) {
        if (regions)
            regions_free((Regions *)(uintptr_t)*val);
        else
            Py_XDECREF((PyObject *)(uintptr_t)*val);
    }
    map_free(m);
    memset(m, 0, sizeof *m);
}

static inline PyObject *obj(u64 v) { return (PyObject *)(uintptr_t)v; }
static inline u64 val_of(PyObject *o) { return (u64)(uintptr_t)o; }

/* The list in *slot (made if NULL): borrowed, or NULL with an exception. */
static PyObject *list_in(u64 *slot) {
    if (!*slot) {
        PyObject *l = PyList_New(0);
        if (!l)
            return NULL;
        *slot = val_of(l);
    }
    return obj(*slot);
}

/* entry appended to the logs in *slot, if they hold fewer than the cap. */
static int append_capped(LogsObject *self, u64 *slot, PyObject *entry) {
    if (*slot ? PyList_GET_SIZE(obj(*slot)) >= self->max_logs : self->max_logs <= 0)
        return 0;
    PyObject *logs = list_in(slot);
    return logs ? PyList_Append(logs, entry) : -1;
}

/* The list of key in m (a map of lists), made if absent: borrowed, or NULL. */
static PyObject *list_of(Map *m, u64 key) {
    u64 *slot = map_slot(m, key, 0);
    if (!slot) {
        PyErr_NoMemory();
        return NULL;
    }
    return list_in(slot);
}

/* The logs held by a value taken out of a map, or a fresh empty list: a new reference. */
static PyObject *logs_out(PyObject *logs) { return logs ? logs : PyList_New(0); }

static int append_steal(PyObject *list, PyObject *item) {
    if (!item)
        return -1;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static PyObject *string_of(PyObject *strings, u64 id) {
    PyObject *key = PyLong_FromUnsignedLongLong(id);
    if (!key)
        return NULL;
    PyObject *s = PyDict_GetItemWithError(strings, key);
    Py_DECREF(key);
    if (!s && !PyErr_Occurred())
        s = EMPTY;
    return s; /* borrowed */
}

static int on_log(LogsObject *self, u64 g, u64 task, const u64 *a, PyObject *strings) {
    PyObject *cat = string_of(strings, a[1]), *msg = cat ? string_of(strings, a[2]) : NULL;
    PyObject *entry = msg ? PyTuple_Pack(2, cat, msg) : NULL;
    if (!entry)
        return -1;
    int rc = -1;
    u64 *logs = map_find(&self->tasks, task);
    if (logs) {
        if (append_capped(self, logs, entry) < 0)
            goto done;
    } else if (self->split && !map_find(&self->touched, task)) {
        PyObject *pending = list_of(&self->pending_tasks, task);
        if (!pending || PyList_Append(pending, entry) < 0)
            goto done;
    }
    Regions *rs = map_get_ptr(&self->regions, g);
    for (size_t k = 0; rs && k < rs->n; k++) {
        if (rs->r[k].task != task)
            continue;
        u64 slot = val_of(rs->r[k].logs);
        int bad = append_capped(self, &slot, entry) < 0;
        rs->r[k].logs = obj(slot);
        if (bad)
            goto done;
    }
    if (self->split) {
        u64 *p = map_find(&self->pops, g);
        if (!(p && (*p & 1))) {
            PyObject *pending = list_of(&self->pending_regions, g);
            if (!pending ||
                append_steal(pending, Py_BuildValue("(LKO)", (long long)(p ? *p >> 1 : 0), task, entry)) < 0)
                goto done;
        }
    }
    rc = 0;
done:
    Py_DECREF(entry);
    return rc;
}

/* g's regions, made empty if it has none: NULL when out of memory. */
static Regions *regions_at(Map *m, u64 g) {
    u64 *slot = map_slot(m, g, 0), none;
    if (slot && !*slot) {
        Regions *rs = calloc(1, sizeof *rs);
        if (!rs) {
            map_del(m, g, &none);
            return NULL;
        }
        *slot = (u64)(uintptr_t)rs;
    }
    return slot ? (Regions *)(uintptr_t)*slot : NULL;
}

static int on_region_begin(LogsObject *self, u64 g, u64 task) {
    Regions *rs = regions_at(&self->regions, g);
    if (!rs || grow((void **)&rs->r, &rs->cap, rs->n + 1, sizeof(Region))) {
        PyErr_NoMemory();
        return -1;
    }
    rs->r[rs->n++] = (Region){task, ++self->seq, NULL};
    return 0;
}

static int on_region_end(LogsObject *self, u64 g, PyObject *ended) {
    Regions *rs = map_get_ptr(&self->regions, g);
    if (rs && rs->n) {
        PyObject *logs = logs_out(rs->r[--rs->n].logs);
        if (!rs->n) {
            map_del_ptr(&self->regions, g);
            regions_free(rs);
        }
        return append_steal(ended, logs);
    }
    u64 *p = self->split ? map_find(&self->pops, g) : NULL;
    if (self->split && !(p && (*p & 1))) { /* one from before the generation */
        if (!p && !(p = map_slot(&self->pops, g, 0))) {
            PyErr_NoMemory();
            return -1;
        }
        PyObject *prior = PyObject_CallFunction(self->prior, "LL", (long long)g, (long long)(*p >> 1));
        if (prior)
            *p += 2;
        return append_steal(ended, prior);
    }
    return append_steal(ended, PyList_New(0)); /* none open: the core clips one */
}

static int on_task_end(LogsObject *self, u64 task, PyObject *ended) {
    u64 v = 0;
    int had = map_del(&self->tasks, task, &v);
    PyObject *value;
    if (had || !self->split || map_find(&self->touched, task)) {
        value = logs_out(obj(v));
    } else {
        u64 pending = 0;
        map_del(&self->pending_tasks, task, &pending);
        PyObject *logs = logs_out(obj(pending));
        value = logs ? PyObject_CallFunction(self->prior, "KLN", task, -1LL, logs) : NULL;
    }
    PyObject *key = value ? PyLong_FromUnsignedLongLong(task) : NULL;
    int rc = key ? PyDict_SetItem(ended, key, value) : -1;
    Py_XDECREF(key);
    Py_XDECREF(value);
    if (rc < 0)
        return -1;
    if (self->split && map_put(&self->touched, task, 1)) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static int on_task_begin(LogsObject *self, u64 task) {
    u64 *slot = map_slot(&self->tasks, task, 0);
    if (!slot || (self->split && map_put(&self->touched, task, 1))) {
        PyErr_NoMemory();
        return -1;
    }
    Py_XDECREF(obj(*slot)); /* a task begun again starts with no logs */
    *slot = 0;
    u64 pending = 0;
    if (self->split && map_del(&self->pending_tasks, task, &pending))
        Py_DECREF(obj(pending));
    return 0;
}

/* A goroutine's exit ends its open regions, innermost first. */
static int on_goroutine_exit(LogsObject *self, u64 g, PyObject *ended) {
    Regions *rs = map_del_ptr(&self->regions, g);
    int rc = 0;
    while (rs && rs->n && rc == 0) {
        rc = append_steal(ended, logs_out(rs->r[--rs->n].logs));
        rs->r[rs->n].logs = NULL;
    }
    if (rs)
        regions_free(rs);
    if (rc < 0 || !self->split || !(map_find(&self->pops, g) || map_find(&self->pending_regions, g)))
        return rc;
    u64 *p = map_slot(&self->pops, g, 0);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    *p |= 1;
    return 0;
}

static int L_init(LogsObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"split", "max_logs", "prior", NULL};
    int split;
    Py_ssize_t max_logs;
    PyObject *prior;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "pnO", names, &split, &max_logs, &prior))
        return -1;
    if (self->prior) {
        PyErr_SetString(PyExc_RuntimeError, "UserLogsCore is made once");
        return -1;
    }
    self->split = split;
    self->max_logs = max_logs;
    Py_INCREF(prior);
    self->prior = prior;
    return 0;
}

static void L_dealloc(LogsObject *self) {
    map_clear_objects(&self->tasks, 0);
    map_clear_objects(&self->regions, 1);
    map_free(&self->touched);
    map_clear_objects(&self->pending_tasks, 0);
    map_free(&self->pops);
    map_clear_objects(&self->pending_regions, 0);
    Py_XDECREF(self->prior);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The rows a scan steps on: task, region and log events, and goroutine
 * exits where they matter. A few in a thousand: found without the GIL. */
static size_t marked_rows(const u8 *codes, size_t n, int exits, size_t *rows) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        u8 c = codes[i];
        int user = c >= EV_USER_TASK_BEGIN && c <= EV_USER_LOG;
        int exit = exits && (c == EV_GO_DESTROY || c == EV_GO_DESTROY_SYSCALL);
        rows[m] = i;
        m += (size_t)(user | exit);
    }
    return m;
}

static int scan_rows(LogsObject *self, const u8 *codes, const i64 *gs, const u64 *as, size_t n, PyObject *strings,
                     PyObject *tasks_out, PyObject *regions_out) {
    /* Goroutine exits matter only while a region is open (split: or may be). */
    int exits = self->regions.len || self->regions.has_zero || (n && memchr(codes, EV_USER_REGION_BEGIN, n)) ||
                (self->split && (self->pops.len || self->pops.has_zero || self->pending_regions.len ||
                                 self->pending_regions.has_zero));
    size_t *rows = malloc((n ? n : 1) * sizeof *rows), m;
    if (!rows) {
        PyErr_NoMemory();
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    m = marked_rows(codes, n, exits, rows);
    Py_END_ALLOW_THREADS
    int rc = 0;
    for (size_t k = 0; k < m && rc == 0; k++) {
        size_t i = rows[k];
        u8 c = codes[i];
        u64 g = (u64)gs[i], a0 = as[i * NARGS];
        if (c == EV_USER_LOG)
            rc = on_log(self, g, a0, &as[i * NARGS], strings);
        else if (c == EV_USER_REGION_BEGIN)
            rc = on_region_begin(self, g, a0);
        else if (c == EV_USER_REGION_END)
            rc = on_region_end(self, g, regions_out);
        else if (c == EV_USER_TASK_BEGIN)
            rc = on_task_begin(self, a0);
        else if (c == EV_USER_TASK_END)
            rc = on_task_end(self, a0, tasks_out);
        else
            rc = on_goroutine_exit(self, g, regions_out);
    }
    free(rows);
    return rc;
}

/* scan(codes, goroutines, args, strings) -> (ended tasks' logs by task, ended regions' logs in order) */
static PyObject *L_scan(LogsObject *self, PyObject *args) {
    Py_buffer cb, gb, ab;
    PyObject *strings;
    if (!PyArg_ParseTuple(args, "y*y*y*O!", &cb, &gb, &ab, &PyDict_Type, &strings))
        return NULL;
    PyObject *result = NULL, *tasks_out = NULL, *regions_out = NULL;
    size_t n = (size_t)cb.len;
    if (refuse_busy(self))
        goto done;
    if ((size_t)gb.len < n * 8 || (size_t)ab.len < n * 8 * NARGS) {
        PyErr_SetString(PyExc_ValueError, "UserLogsCore.scan: columns shorter than the codes");
        goto done;
    }
    if (!(tasks_out = PyDict_New()) || !(regions_out = PyList_New(0)))
        goto done;
    /* A Prior made, or a string's hash, may run Python that lets another
     * thread in: none of this object's calls may run meanwhile. */
    self->busy = 1;
    int rc = scan_rows(self, cb.buf, gb.buf, ab.buf, n, strings, tasks_out, regions_out);
    self->busy = 0;
    if (rc == 0)
        result = PyTuple_Pack(2, tasks_out, regions_out);
done:
    Py_XDECREF(tasks_out);
    Py_XDECREF(regions_out);
    PyBuffer_Release(&cb);
    PyBuffer_Release(&gb);
    PyBuffer_Release(&ab);
    return result;
}

/* {key: value} of a map of lists (made where NULL, and kept: the twin's
 * lists are the state's own), keys signed or not. */
static PyObject *dict_of_lists(Map *m, int signed_keys) {
    PyObject *out = PyDict_New();
    size_t pos = 0;
    u64 key, *val;
    while (out && map_next(m, &pos, &key, &val)) {
        PyObject *k = signed_keys ? PyLong_FromLongLong((i64)key) : PyLong_FromUnsignedLongLong(key);
        PyObject *v = k ? list_in(val) : NULL;
        if (!v || PyDict_SetItem(out, k, v) < 0)
            Py_CLEAR(out);
        Py_XDECREF(k);
    }
    return out;
}

static PyObject *regions_dict(Map *m) {
    PyObject *out = PyDict_New();
    size_t pos = 0;
    u64 key, *val;
    while (out && map_next(m, &pos, &key, &val)) {
        Regions *rs = (Regions *)(uintptr_t)*val;
        PyObject *k = PyLong_FromLongLong((i64)key), *l = k ? PyList_New((Py_ssize_t)rs->n) : NULL;
        for (size_t i = 0; l && i < rs->n; i++) {
            u64 slot = val_of(rs->r[i].logs);
            PyObject *logs = list_in(&slot);
            rs->r[i].logs = obj(slot);
            PyObject *t = logs ? Py_BuildValue("(KLO)", rs->r[i].task, (long long)rs->r[i].seq, logs) : NULL;
            if (!t)
                Py_CLEAR(l);
            else
                PyList_SET_ITEM(l, (Py_ssize_t)i, t);
        }
        if (!l || PyDict_SetItem(out, k, l) < 0)
            Py_CLEAR(out);
        Py_XDECREF(k);
        Py_XDECREF(l);
    }
    return out;
}

static PyObject *touched_set(const Map *m) {
    PyObject *out = PySet_New(NULL);
    size_t pos = 0;
    u64 key, *val;
    while (out && map_next(m, &pos, &key, &val)) {
        PyObject *k = PyLong_FromUnsignedLongLong(key);
        if (!k || PySet_Add(out, k) < 0)
            Py_CLEAR(out);
        Py_XDECREF(k);
    }
    return out;
}

static PyObject *pops_dict(const Map *m) {
    PyObject *out = PyDict_New();
    size_t pos = 0;
    u64 key, *val;
    while (out && map_next(m, &pos, &key, &val)) {
        PyObject *k = PyLong_FromLongLong((i64)key);
        PyObject *v = k ? Py_BuildValue("[Li]", (long long)(*val >> 1), (int)(*val & 1)) : NULL;
        if (!v || PyDict_SetItem(out, k, v) < 0)
            Py_CLEAR(out);
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    return out;
}

/* export() -> (tasks, regions, seq, touched, pending_tasks, pops, pending_regions), as the twin holds them */
static PyObject *L_export(LogsObject *self, PyObject *unused) {
    (void)unused;
    if (refuse_busy(self))
        return NULL;
    return Py_BuildValue("(NNLNNNN)", dict_of_lists(&self->tasks, 0), regions_dict(&self->regions),
                         (long long)self->seq, touched_set(&self->touched), dict_of_lists(&self->pending_tasks, 0),
                         pops_dict(&self->pops), dict_of_lists(&self->pending_regions, 1));
}

/* What set_tasks and set_regions are given, per kind of state. */
typedef struct {
    const char *expected; /* the TypeError's message */
    int regions;          /* values are Regions (else Python lists) */
    int signed_keys;
} Shape;

static const Shape TASKS = {"set_tasks: {task id: list of logs} expected", 0, 0};
static const Shape REGIONS = {"set_regions: {goroutine: list of (task, seq, logs)} expected", 1, 1};

/* One goroutine's regions as set_regions is given them: a list of (task, seq, logs). */
static Regions *regions_of(PyObject *list) {
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, REGIONS.expected);
        return NULL;
    }
    Regions *rs = calloc(1, sizeof(Regions));
    size_t n = (size_t)PyList_GET_SIZE(list);
    if (!rs || (n && grow((void **)&rs->r, &rs->cap, n, sizeof(Region)))) {
        free(rs);
        PyErr_NoMemory();
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(list, (Py_ssize_t)i);
        unsigned long long task;
        long long seq;
        PyObject *logs;
        if (!PyTuple_Check(t) || !PyArg_ParseTuple(t, "KLO!", &task, &seq, &PyList_Type, &logs)) {
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_TypeError, REGIONS.expected);
            }
            regions_free(rs);
            return NULL;
        }
        Py_INCREF(logs);
        rs->r[rs->n++] = (Region){(u64)task, (i64)seq, logs};
    }
    return rs;
}

/* A dict's entry as the map holds it: 0, or -1 with an exception. */
static int entry_of(const Shape *shape, PyObject *k, PyObject *v, u64 *key, u64 *val) {
    if (!PyLong_Check(k) || (!shape->regions && !PyList_Check(v))) {
        PyErr_SetString(PyExc_TypeError, shape->expected);
        return -1;
    }
    *key = shape->signed_keys ? (u64)PyLong_AsLongLong(k) : PyLong_AsUnsignedLongLong(k);
    if (*key == (u64)-1 && PyErr_Occurred())
        return -1;
    if (shape->regions) {
        Regions *rs = regions_of(v);
        *val = (u64)(uintptr_t)rs;
        return rs ? 0 : -1;
    }
    Py_INCREF(v);
    *val = val_of(v);
    return 0;
}

/* The dict in args into *m, in place of what it held: all of it, or (an
 * entry of the wrong shape) none. */
static PyObject *load(LogsObject *self, PyObject *args, Map *m, const Shape *shape) {
    PyObject *d, *k, *v;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &d) || refuse_busy(self))
        return NULL;
    Map fresh = {0};
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        u64 key, val, *slot;
        if (entry_of(shape, k, v, &key, &val) < 0)
            goto fail;
        if (!(slot = map_slot(&fresh, key, 0))) { /* (a dict's keys are distinct: no slot is filled twice) */
            if (shape->regions)
                regions_free((Regions *)(uintptr_t)val);
            else
                Py_DECREF(obj(val));
            PyErr_NoMemory();
            goto fail;
        }
        *slot = val;
    }
    map_clear_objects(m, shape->regions);
    *m = fresh;
    Py_RETURN_NONE;
fail:
    map_clear_objects(&fresh, shape->regions);
    return NULL;
}

/* set_tasks({task: list of logs}): the open tasks, in place of those held. */
static PyObject *L_set_tasks(LogsObject *self, PyObject *args) { return load(self, args, &self->tasks, &TASKS); }

/* set_regions({goroutine: [(task, seq, logs), ...]}): the open regions, in place of those held. */
static PyObject *L_set_regions(LogsObject *self, PyObject *args) {
    return load(self, args, &self->regions, &REGIONS);
}

static PyObject *L_clear(LogsObject *self, PyObject *unused) {
    (void)unused;
    if (refuse_busy(self))
        return NULL;
    map_clear_objects(&self->tasks, 0);
    map_clear_objects(&self->regions, 1);
    Py_RETURN_NONE;
}

static PyObject *L_get_seq(LogsObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLongLong(self->seq);
}

static int L_set_seq(LogsObject *self, PyObject *value, void *closure) {
    (void)closure;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "seq cannot be deleted");
        return -1;
    }
    long long seq = PyLong_AsLongLong(value);
    if (seq == -1 && PyErr_Occurred())
        return -1;
    self->seq = (i64)seq;
    return 0;
}

static PyGetSetDef L_getset[] = {
    {"seq", (getter)L_get_seq, (setter)L_set_seq, "How many regions have begun (their order's count).", NULL},
    {NULL},
};

static PyMethodDef L_methods[] = {
    {"scan", (PyCFunction)L_scan, METH_VARARGS,
     "scan($self, codes, goroutines, args, strings, /)\n--\n\n"
     "A batch's tasks, regions and logs followed: (the logs of the tasks ended, by task; of the regions ended, "
     "in order)."},
    {"export", (PyCFunction)L_export, METH_NOARGS,
     "export($self, /)\n--\n\n(tasks, regions, seq, touched, pending_tasks, pops, pending_regions), as UserLogs "
     "holds them; the lists are the state's own."},
    {"set_tasks", (PyCFunction)L_set_tasks, METH_VARARGS,
     "set_tasks($self, tasks, /)\n--\n\nThe open tasks ({task: list of logs}), in place of those held."},
    {"set_regions", (PyCFunction)L_set_regions, METH_VARARGS,
     "set_regions($self, regions, /)\n--\n\nThe open regions ({goroutine: [(task, seq, logs), ...]}, "
     "outermost first), in place of those held."},
    {"clear", (PyCFunction)L_clear, METH_NOARGS, "clear($self, /)\n--\n\nForget the open tasks and regions."},
    {NULL},
};

static PyTypeObject UserLogsCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "livetrace._trace._ccore.UserLogsCore",
    .tp_basicsize = sizeof(LogsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)L_init,
    .tp_dealloc = (destructor)L_dealloc,
    .tp_methods = L_methods,
    .tp_getset = L_getset,
    .tp_doc = "UserLogsCore(split, max_logs, prior)\n--\n\nThe state and scan of _trace/spans/logs.py's "
              "UserLogs, compiled (CompiledUserLogs wraps it).",
};

/* span_task_logs(kinds, tasks, task_logs, TASK) -> {row: tuple of its logs} for each task span (kind TASK)
 * whose task has logs in task_logs: the twin is _trace/spans/builder.py's span_logs' loop over the task spans. */
static PyObject *span_task_logs(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer kb, tb;
    PyObject *logs;
    long kind;
    if (!PyArg_ParseTuple(args, "y*y*O!l", &kb, &tb, &PyDict_Type, &logs, &kind))
        return NULL;
    PyObject *out = PyDict_New();
    const u8 *kinds = kb.buf;
    const u64 *tasks = tb.buf;
    size_t n = (size_t)kb.len;
    if (out && (size_t)tb.len < n * 8) {
        PyErr_SetString(PyExc_ValueError, "span_task_logs: the tasks column is shorter than the kinds");
        Py_CLEAR(out);
    }
    for (size_t i = 0; out && i < n; i++) {
        if (kinds[i] != kind)
            continue;
        PyObject *id = PyLong_FromUnsignedLongLong(tasks[i]), *got = NULL;
        int bad = !id || (!(got = PyDict_GetItemWithError(logs, id)) && PyErr_Occurred());
        Py_XDECREF(id);
        int some = bad || !got ? 0 : PyObject_IsTrue(got);
        if (bad || some < 0) {
            Py_CLEAR(out);
            break;
        }
        if (!some)
            continue;
        PyObject *row = PyLong_FromSize_t(i), *entries = PySequence_Tuple(got);
        if (!row || !entries || PyDict_SetItem(out, row, entries) < 0)
            Py_CLEAR(out);
        Py_XDECREF(row);
        Py_XDECREF(entries);
    }
    PyBuffer_Release(&kb);
    PyBuffer_Release(&tb);
    return out;
}

static PyMethodDef logs_methods[] = {
    {"span_task_logs", span_task_logs, METH_VARARGS,
     "span_task_logs($module, kinds, tasks, task_logs, task_kind, /)\n--\n\n"
     "The logs of a batch's task spans whose task has any, by row."},
    {NULL},
};

int span_logs_register(PyObject *module) {
    if (!EMPTY && !(EMPTY = PyBytes_FromStringAndSize("", 0)))
        return -1;
    if (add_type(module, &UserLogsCoreType, "UserLogsCore") < 0)
        return -1;
    return PyModule_AddFunctions(module, logs_methods);
}
