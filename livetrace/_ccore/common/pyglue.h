/* What the compiled core's Python-facing files share: bytes and column
 * tuples made from C memory, and a type added to the module. */

#ifndef LIVETRACE_PYGLUE_H
#define LIVETRACE_PYGLUE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "common/containers.h"

static inline PyObject *bytes_of(const void *p, size_t n) {
    return PyBytes_FromStringAndSize(n ? p : NULL, (Py_ssize_t)n);
}

/* The first n events of c, as a tuple of bytes in EventBatch's column order. */
static inline PyObject *columns_tuple(const Columns *c, size_t n) {
    return Py_BuildValue("(NNNNNNN)", bytes_of(c->code, n), bytes_of(c->time, n * 8), bytes_of(c->m, n * 8),
                         bytes_of(c->p, n * 8), bytes_of(c->g, n * 8), bytes_of(c->args, n * 8 * NARGS),
                         bytes_of(c->extra, n * 8 * NEXTRA));
}

/* Readies type and adds it to module as name: 0, or -1 with an exception set. */
static inline int add_type(PyObject *module, PyTypeObject *type, const char *name) {
    if (PyType_Ready(type) < 0)
        return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

#endif
