/* The unit tables summed from a unit's goroutine_states, compiled
 * (units.c): the twin of _tables/sums.py's unit_sums on pyarrow */

#ifndef LIVETRACE_TABLE_UNITS_H
#define LIVETRACE_TABLE_UNITS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds table_unit_sums to the module: 0, or -1 with an exception. */
int table_units_register(PyObject *module);

#endif
