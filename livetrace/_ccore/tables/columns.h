/* Arrow columns of the tables, compiled (columns.c): the twin of the
 * kernels of _tables/kernels.py and of _tables/goroutines.py's _seen */

#ifndef LIVETRACE_TABLE_COLUMNS_H
#define LIVETRACE_TABLE_COLUMNS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds the table_* functions to the module: 0, or -1 with an exception. */
int table_columns_register(PyObject *module);

#endif
