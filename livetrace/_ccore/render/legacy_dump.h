/* `go tool trace -d` of a legacy trace, compiled (legacy_dump.c). */

#ifndef LIVETRACE_LEGACY_DUMP_H
#define LIVETRACE_LEGACY_DUMP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds legacy_dump to the module: 0, or -1 with an exception. */
int legacy_dump_register(PyObject *module);

#endif
