/* The per-span sums of `livetrace top`, compiled:
 * livetrace._trace._ccore.TopSums (top.c), the twin of _views/top_sums.py's
 * TopSums. */

#ifndef LIVETRACE_TOP_H
#define LIVETRACE_TOP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds TopSums to the module: 0, or -1 with an exception. */
int top_register(PyObject *module);

#endif
