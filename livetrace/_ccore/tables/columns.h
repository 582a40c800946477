/* Arrow columns of the tables, compiled (columns.c): the twin of
 * _tables/kernels.py's event_columns and lookup. */

#ifndef LIVETRACE_TABLE_COLUMNS_H
#define LIVETRACE_TABLE_COLUMNS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds table_event_columns, table_lookup and table_span_partition to the module: 0, or -1 with an exception. */
int table_columns_register(PyObject *module);

#endif
