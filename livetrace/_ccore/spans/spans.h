/* The span layer, compiled: livetrace._trace._ccore.SpanCore (the twin of
 * _trace/spans/twin.py: one pass over an EventBatch's columns, open spans kept per
 * goroutine and task across batches, spans out as columns) and
 * span_select (the twin of _trace/spans/select.py's select_rows). */

#ifndef LIVETRACE_SPANS_H
#define LIVETRACE_SPANS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The span model's numbers, as _trace/spans/model.py has them (span kinds
 * K_*, resource kinds RES_*, flags CLIPPED_*), and the columns' order
 * (SPAN_COL_*): the span core writes them, the selector and the profiles'
 * counter read them. */
#include "common/generated.h"

/* Adds SpanCore and span_select to the module: 0, or -1 with an exception. */
int spans_register(PyObject *module);
/* Adds span_select and span_take (spans_select.c): 0, or -1 with an exception. */
int span_select_register(PyObject *module);
/* Adds UserLogsCore and span_task_logs (spans_logs.c): 0, or -1 with an exception. */
int span_logs_register(PyObject *module);
/* Adds span_join_fits (spans_join.c): 0, or -1 with an exception. */
int span_join_register(PyObject *module);

#endif
