/* user_logs_scan: the compiled twin of _trace/spans/logs.py's UserLogs.scan:
 * The state stays the UserLogs object's dicts, lists and sets (the join reads
 * and patches them), so this does on them, in C, exactly the steps the twin
 * does in Python: a batch's task, region and log events (and goroutine exits
 * while a region is or may be open) cost no Python call each. */

#include "spans/spans.h"

#include "common/containers.h"

typedef struct {
    int split;
    Py_ssize_t max_logs;
    PyObject *tasks, *regions, *touched, *pending_tasks, *pops, *pending_regions, *prior;
} State;

static PyObject *EMPTY, *ONE; /* b"", 1 */

/* d.pop(key, None), a new reference in *out (NULL when absent; out may be NULL): 0, or -1. */
static int dict_pop(PyObject *d, PyObject *key, PyObject **out) {
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (out)
        *out = NULL;
    if (!v)
        return PyErr_Occurred() ? -1 : 0;
    Py_INCREF(v);
    if (PyDict_DelItem(d, key) < 0) {
        Py_DECREF(v);
        return -1;
    }
    if (out)
        *out = v;
    else
        Py_DECREF(v);
    return 0;
}

/* d.setdefault(key, new list or [0, 0]): a borrowed reference, or NULL. */
static PyObject *setdefault_list(PyObject *d, PyObject *key, int pair) {
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (v || PyErr_Occurred())
        return v;
    PyObject *fresh = pair ? Py_BuildValue("[ii]", 0, 0) : PyList_New(0);
    if (!fresh)
        return NULL;
    v = PyDict_SetDefault(d, key, fresh);
    Py_DECREF(fresh);
    return v;
}

/* Whether pops.get(g, [0, 0])[1] is true: 1, 0, or -1. */
static int exited(const State *s, PyObject *g) {
    PyObject *p = PyDict_GetItemWithError(s->pops, g);
    if (!p)
        return PyErr_Occurred() ? -1 : 0;
    return PyObject_IsTrue(PyList_GET_ITEM(p, 1));
}

static int append_capped(PyObject *logs, PyObject *entry, Py_ssize_t cap) {
    return PyList_GET_SIZE(logs) < cap ? PyList_Append(logs, entry) : 0;
}

static int on_log(const State *s, PyObject *g, PyObject *a0, const u64 *a, PyObject *strings) {
    int rc = -1;
    PyObject *k1 = PyLong_FromUnsignedLongLong(a[1]), *k2 = PyLong_FromUnsignedLongLong(a[2]), *entry = NULL;
    if (!k1 || !k2)
        goto done;
    PyObject *cat = PyDict_GetItemWithError(strings, k1);
    if (!cat && PyErr_Occurred())
        goto done;
    PyObject *msg = PyDict_GetItemWithError(strings, k2);
    if (!msg && PyErr_Occurred())
        goto done;
    entry = PyTuple_Pack(2, cat ? cat : EMPTY, msg ? msg : EMPTY);
    if (!entry)
        goto done;
    PyObject *logs = PyDict_GetItemWithError(s->tasks, a0);
    if (logs) {
        if (append_capped(logs, entry, s->max_logs) < 0)
            goto done;
    } else if (PyErr_Occurred()) {
        goto done;
    } else if (s->split) {
        int seen = PySet_Contains(s->touched, a0);
        if (seen < 0)
            goto done;
        if (!seen) {
            PyObject *pending = setdefault_list(s->pending_tasks, a0, 0);
            if (!pending || PyList_Append(pending, entry) < 0)
                goto done;
        }
    }
    PyObject *stack = PyDict_GetItemWithError(s->regions, g);
    if (!stack && PyErr_Occurred())
        goto done;
    for (Py_ssize_t k = 0; stack && k < PyList_GET_SIZE(stack); k++) {
        PyObject *r = PyList_GET_ITEM(stack, k);
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(r, 0), a0, Py_EQ);
        if (same < 0 || (same && append_capped(PyTuple_GET_ITEM(r, 2), entry, s->max_logs) < 0))
            goto done;
    }
    if (s->split) {
        PyObject *p = PyDict_GetItemWithError(s->pops, g);
        if (!p && PyErr_Occurred())
            goto done;
        int gone = p ? PyObject_IsTrue(PyList_GET_ITEM(p, 1)) : 0;
        if (gone < 0)
            goto done;
        if (!gone) {
            PyObject *pending = setdefault_list(s->pending_regions, g, 0);
            PyObject *depth = p ? PyList_GET_ITEM(p, 0) : NULL, *zero = NULL;
            if (!depth)
                depth = zero = PyLong_FromLong(0);
            PyObject *item = depth ? PyTuple_Pack(3, depth, a0, entry) : NULL;
            Py_XDECREF(zero);
            int bad = !pending || !item || PyList_Append(pending, item) < 0;
            Py_XDECREF(item);
            if (bad)
                goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(k1);
    Py_XDECREF(k2);
    Py_XDECREF(entry);
    return rc;
}

static int on_region_end(const State *s, PyObject *g, PyObject *ended) {
    PyObject *stack = PyDict_GetItemWithError(s->regions, g);
    if (!stack && PyErr_Occurred())
        return -1;
    if (stack && PyList_GET_SIZE(stack)) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        if (PyList_Append(ended, PyTuple_GET_ITEM(PyList_GET_ITEM(stack, top), 2)) < 0)
            return -1;
        if (PyList_SetSlice(stack, top, top + 1, NULL) < 0)
            return -1;
        return top ? 0 : PyDict_DelItem(s->regions, g);
    }
    int gone = s->split ? exited(s, g) : 1;
    if (gone < 0)
        return -1;
    PyObject *got;
    if (!gone) {
        PyObject *p = setdefault_list(s->pops, g, 1);
        if (!p)
            return -1;
        PyObject *depth = PyList_GET_ITEM(p, 0);
        if (!(got = PyObject_CallFunctionObjArgs(s->prior, g, depth, NULL)))
            return -1;
        PyObject *next = PyNumber_Add(depth, ONE);
        if (!next || PyList_SetItem(p, 0, next) < 0) {
            Py_DECREF(got);
            return -1;
        }
    } else if (!(got = PyList_New(0))) { /* none open: the core clips one */
        return -1;
    }
    int rc = PyList_Append(ended, got);
    Py_DECREF(got);
    return rc;
}

static int on_task_end(const State *s, PyObject *a0, PyObject *ended) {
    PyObject *got = NULL, *value = NULL;
    if (dict_pop(s->tasks, a0, &got) < 0)
        return -1;
    int seen = 1;
    if (!got && s->split && (seen = PySet_Contains(s->touched, a0)) < 0)
        return -1;
    if (got || seen) {
        value = got ? got : PyList_New(0);
        got = NULL;
    } else {
        PyObject *pending = NULL;
        if (dict_pop(s->pending_tasks, a0, &pending) < 0)
            return -1;
        if (!pending && !(pending = PyList_New(0)))
            return -1;
        PyObject *minus = PyLong_FromLong(-1);
        value = minus ? PyObject_CallFunctionObjArgs(s->prior, a0, minus, pending, NULL) : NULL;
        Py_XDECREF(minus);
        Py_DECREF(pending);
    }
    if (!value)
        return -1;
    int rc = PyDict_SetItem(ended, a0, value);
    Py_DECREF(value);
    if (rc < 0)
        return -1;
    return s->split ? PySet_Add(s->touched, a0) : 0;
}

static int on_goroutine_exit(const State *s, PyObject *g, PyObject *ended) {
    PyObject *stack = NULL;
    if (dict_pop(s->regions, g, &stack) < 0)
        return -1;
    if (stack) { /* a goroutine's exit ends its open regions, innermost first */
        for (Py_ssize_t k = PyList_GET_SIZE(stack) - 1; k >= 0; k--) {
            if (PyList_Append(ended, PyTuple_GET_ITEM(PyList_GET_ITEM(stack, k), 2)) < 0) {
                Py_DECREF(stack);
                return -1;
            }
        }
        Py_DECREF(stack);
    }
    if (!s->split)
        return 0;
    int known = PyDict_Contains(s->pops, g);
    if (!known && (known = PyDict_Contains(s->pending_regions, g)) == 0)
        return 0;
    if (known < 0)
        return -1;
    PyObject *p = setdefault_list(s->pops, g, 1);
    if (!p)
        return -1;
    Py_INCREF(ONE);
    return PyList_SetItem(p, 1, ONE);
}

/* user_logs_scan(codes, goroutines, args, strings, split, tasks, regions, seq, touched, pending_tasks, pops,
 * pending_regions, Prior, max_logs) -> (ended tasks' logs, ended regions' logs, seq) */
static PyObject *user_logs_scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer cb, gb, ab;
    PyObject *strings;
    Py_ssize_t seq;
    State s;
    if (!PyArg_ParseTuple(args, "y*y*y*O!pO!O!nO!O!O!O!On", &cb, &gb, &ab, &PyDict_Type, &strings, &s.split,
                          &PyDict_Type, &s.tasks, &PyDict_Type, &s.regions, &seq, &PySet_Type, &s.touched,
                          &PyDict_Type, &s.pending_tasks, &PyDict_Type, &s.pops, &PyDict_Type, &s.pending_regions,
                          &s.prior, &s.max_logs))
        return NULL;
    PyObject *result = NULL, *tasks_out = PyDict_New(), *regions_out = PyList_New(0);
    const u8 *codes = cb.buf;
    size_t n = (size_t)cb.len;
    if (!tasks_out || !regions_out)
        goto done;
    if ((size_t)gb.len < n * 8 || (size_t)ab.len < n * 8 * NARGS) {
        PyErr_SetString(PyExc_ValueError, "user_logs_scan: columns shorter than the codes");
        goto done;
    }
    /* Goroutine exits matter only while a region is open (split: or may be). */
    int exits = PyDict_GET_SIZE(s.regions) || (n && memchr(codes, EV_USER_REGION_BEGIN, n)) ||
                (s.split && (PyDict_GET_SIZE(s.pops) || PyDict_GET_SIZE(s.pending_regions)));
    const i64 *gs = gb.buf;
    const u64 *as = ab.buf;
    for (size_t i = 0; i < n; i++) {
        u8 c = codes[i];
        int exit = c == EV_GO_DESTROY || c == EV_GO_DESTROY_SYSCALL;
        if (!(c >= EV_USER_TASK_BEGIN && c <= EV_USER_LOG) && !(exit && exits))
            continue;
        PyObject *g = PyLong_FromLongLong(gs[i]), *a0 = PyLong_FromUnsignedLongLong(as[i * NARGS]);
        int rc = -1;
        if (!g || !a0) {
            rc = -1;
        } else if (c == EV_USER_LOG) {
            rc = on_log(&s, g, a0, &as[i * NARGS], strings);
        } else if (c == EV_USER_REGION_BEGIN) {
            seq++;
            PyObject *stack = setdefault_list(s.regions, g, 0), *logs = PyList_New(0);
            PyObject *r = logs ? Py_BuildValue("(OnO)", a0, seq, logs) : NULL;
            rc = stack && r ? PyList_Append(stack, r) : -1;
            Py_XDECREF(r);
            Py_XDECREF(logs);
        } else if (c == EV_USER_REGION_END) {
            rc = on_region_end(&s, g, regions_out);
        } else if (c == EV_USER_TASK_BEGIN) {
            PyObject *logs = PyList_New(0);
            rc = logs ? PyDict_SetItem(s.tasks, a0, logs) : -1;
            Py_XDECREF(logs);
            if (rc == 0 && s.split) {
                rc = PySet_Add(s.touched, a0);
                if (rc == 0)
                    rc = dict_pop(s.pending_tasks, a0, NULL) < 0 ? -1 : 0;
            }
        } else if (c == EV_USER_TASK_END) {
            rc = on_task_end(&s, a0, tasks_out);
        } else {
            rc = on_goroutine_exit(&s, g, regions_out);
        }
        Py_XDECREF(g);
        Py_XDECREF(a0);
        if (rc < 0)
            goto done;
    }
    result = Py_BuildValue("(OOn)", tasks_out, regions_out, seq);
done:
    Py_XDECREF(tasks_out);
    Py_XDECREF(regions_out);
    PyBuffer_Release(&cb);
    PyBuffer_Release(&gb);
    PyBuffer_Release(&ab);
    return result;
}

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
    {"user_logs_scan", user_logs_scan, METH_VARARGS,
     "user_logs_scan($module, codes, goroutines, args, strings, split, tasks, regions, seq, touched, "
     "pending_tasks, pops, pending_regions, prior, max_logs, /)\n--\n\n"
     "UserLogs.scan, compiled: (the logs of the tasks ended, of the regions ended, the regions' count)."},
    {NULL},
};

int span_logs_register(PyObject *module) {
    if (!EMPTY && !(EMPTY = PyBytes_FromStringAndSize("", 0)))
        return -1;
    if (!ONE && !(ONE = PyLong_FromLong(1)))
        return -1;
    return PyModule_AddFunctions(module, logs_methods);
}
