/* The counting behind Go's pprof-like trace profiles, compiled:
 * livetrace._trace._ccore.ProfileCounts (pprof.c), the twin of
 * _views/pprof.py's ProfileBuilder.feed and end_trace. */

#ifndef LIVETRACE_PPROF_H
#define LIVETRACE_PPROF_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds ProfileCounts to the module: 0, or -1 with an exception. */
int pprof_register(PyObject *module);

#endif
