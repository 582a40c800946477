/* span_join_fits: the loop of _trace/spans/join.py's SpanJoin._fits over a
 * generation's first touches (one per goroutine it first touches: thousands
 * on a busy service), in C: whether the join's patches can express what the
 * state carried in changes about them. The twin is that loop in Python. */

#include "spans/spans.h"

/* The records' types and what a touch found, numbered as in _trace/spans/twin.py. */
enum { FT_G, FT_P, FT_GC, FT_STW, FT_MA };
enum { END = 2 };

/* span_join_fits(touches, states, procs, gc_open, stw_open, assists, state_field) -> bool */
static PyObject *span_join_fits(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *touches, *states, *procs, *assists;
    int gc, stw;
    Py_ssize_t field;
    if (!PyArg_ParseTuple(args, "O!O!O!ppO!n", &PyList_Type, &touches, &PyDict_Type, &states, &PyDict_Type, &procs,
                          &gc, &stw, &PyDict_Type, &assists, &field))
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(touches); i++) {
        PyObject *t = PyList_GET_ITEM(touches, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 4) {
            PyErr_SetString(PyExc_TypeError, "span_join_fits: a touch is a tuple (index, type, what, key, ...)");
            return NULL;
        }
        long typ = PyLong_AsLong(PyTuple_GET_ITEM(t, 1)), what = PyLong_AsLong(PyTuple_GET_ITEM(t, 2));
        if ((typ == -1 || what == -1) && PyErr_Occurred())
            return NULL;
        PyObject *key = PyTuple_GET_ITEM(t, 3);
        int clash = 0;
        if (typ == FT_G) {
            PyObject *p = PyDict_GetItemWithError(states, key);
            if (!p && PyErr_Occurred())
                return NULL;
            if (p) {
                if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) <= field) {
                    PyErr_SetString(PyExc_TypeError, "span_join_fits: a carried span is a tuple with its state");
                    return NULL;
                }
                long state = PyLong_AsLong(PyTuple_GET_ITEM(p, field));
                if (state == -1 && PyErr_Occurred())
                    return NULL;
                clash = state != what;
            }
        } else if (typ == FT_P) {
            clash = !what ? PyDict_Contains(procs, key) : 0;
        } else if (typ == FT_GC) {
            clash = what == END && gc;
        } else if (typ == FT_STW) {
            clash = what == END && stw;
        } else if (typ == FT_MA) {
            clash = what == END ? PyDict_Contains(assists, key) : 0;
        }
        if (clash < 0)
            return NULL;
        if (clash)
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* span_join_take_states(touches, states, tasks, task_logs, FT_TASK, END) -> [(touch, carried or None)]:
 * each goroutine's first touch takes (pops) the span its goroutine carried in, if any, and is left out
 * if none; a task's is left out where it is no end and the task carried nothing in; the other
 * touches are kept, in order, for the join's loop (_Patch.apply's; the twin is _Patch.take_states). */
static PyObject *span_join_take_states(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *touches, *states, *tasks, *task_logs;
    long ft_task, end;
    if (!PyArg_ParseTuple(args, "O!O!O!O!ll", &PyList_Type, &touches, &PyDict_Type, &states, &PyDict_Type, &tasks,
                          &PyDict_Type, &task_logs, &ft_task, &end))
        return NULL;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < PyList_GET_SIZE(touches); i++) {
        PyObject *t = PyList_GET_ITEM(touches, i), *p = NULL;
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 4) {
            PyErr_SetString(PyExc_TypeError, "span_join_take_states: a touch is a tuple (index, type, what, key, ...)");
            goto fail;
        }
        long typ = PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
        if (typ == -1 && PyErr_Occurred())
            goto fail;
        if (typ == FT_G) {
            PyObject *key = PyTuple_GET_ITEM(t, 3);
            if (!(p = PyDict_GetItemWithError(states, key))) {
                if (PyErr_Occurred())
                    goto fail;
                continue;
            }
            Py_INCREF(p);
            if (PyDict_DelItem(states, key) < 0) {
                Py_DECREF(p);
                goto fail;
            }
        } else if (typ == ft_task) {
            long what = PyLong_AsLong(PyTuple_GET_ITEM(t, 2));
            if (what == -1 && PyErr_Occurred())
                goto fail;
            PyObject *key = PyTuple_GET_ITEM(t, 3);
            int carried = what == end ? 1 : PyDict_Contains(tasks, key);
            if (carried == 0)
                carried = PyDict_Contains(task_logs, key);
            if (carried < 0)
                goto fail;
            if (!carried)
                continue;
        }
        PyObject *pair = PyTuple_Pack(2, t, p ? p : Py_None);
        Py_XDECREF(p);
        if (!pair || PyList_Append(out, pair) < 0) {
            Py_XDECREF(pair);
            goto fail;
        }
        Py_DECREF(pair);
    }
    return out;
fail:
    Py_XDECREF(out);
    return NULL;
}

static PyMethodDef join_methods[] = {
    {"span_join_take_states", span_join_take_states, METH_VARARGS,
     "span_join_take_states($module, touches, states, tasks, task_logs, ft_task, end, /)\n--\n\n"
     "The touches the join must look at, each with the span its goroutine carried in (popped from states)."},
    {"span_join_fits", span_join_fits, METH_VARARGS,
     "span_join_fits($module, touches, states, procs, gc_open, stw_open, assists, state_field, /)\n--\n\n"
     "Whether no first touch of a generation clashes with the spans carried in (SpanJoin._fits's loop)."},
    {NULL},
};

int span_join_register(PyObject *module) { return PyModule_AddFunctions(module, join_methods); }
