/* A generation's string and stack batches into its Python tables (tables.c). */

#ifndef LIVETRACE_TABLES_H
#define LIVETRACE_TABLES_H

#include <Python.h>

PyObject *table_strings(PyObject *self, PyObject *args);
PyObject *table_stacks(PyObject *self, PyObject *args);

#endif
