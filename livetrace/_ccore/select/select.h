/* Choosing events by a filter, on a batch's columns (twin:
 * _trace/select/events.py). */

#ifndef LIVETRACE_SELECT_H
#define LIVETRACE_SELECT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* select_indices(codes, procs, goroutines, args, kinds, roles, stack_arg,
 * goroutine_ids, proc_ids, region_ids, log_ids, stack_ids, candidates):
 * the kept events' indexes (native int64, as bytes). */
PyObject *select_indices(PyObject *self, PyObject *args);

/* take_columns(indices, codes, times, threads, procs, goroutines, args,
 * extra): the seven columns of the events at indices, as bytes. */
PyObject *take_columns(PyObject *self, PyObject *args);

#endif
