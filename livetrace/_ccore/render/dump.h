/* The text dumps, line for line what Go's `go tool trace -d=parsed` and
 * `-d=wire` print (twin: _cli/render/dump.py's parsed_text and wire_lines). */

#ifndef LIVETRACE_DUMP_H
#define LIVETRACE_DUMP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* dump_parsed(codes, times, threads, procs, goroutines, args, extra, heads, strings, stacks, extra_strings,
 * miss, other) -> bytes */
PyObject *dump_parsed_py(PyObject *self, PyObject *args);
/* dump_wire(payload, codes, starts, args, table, names, quote) -> bytes */
PyObject *dump_wire_py(PyObject *self, PyObject *args);

#endif
