/* `livetrace tail --spans`'s lines, text or JSON, for a batch of spans,
 * straight from its columns (twin: _cli/render/spans.py's SpanLines). */

#ifndef LIVETRACE_SPAN_LINES_H
#define LIVETRACE_SPAN_LINES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* span_lines(columns, lo, hi, json, t0, kinds, names, stacks, miss, logs,
 * other, log_json=None, piece_lines=0) -> [bytes]: one line per span of
 * the rows lo to hi (not included), each ending in a newline, in pieces of
 * piece_lines lines (0: one piece; none for no rows). columns: the SpanBatch's 15 columns as buffers; kinds: 9 bytes objects, per span kind
 * its JSON name, or (text) its padded and painted column; names (name id
 * -> bytes) and stacks ((tables key << 32 | stack id) -> bytes) cache a
 * name's and a stack's piece, b"" for an empty name or a stack with
 * nothing to show; miss(kind, id) ("name" or "stack") makes one, which the
 * core caches there; logs: the rows that have logs, whose JSON lines
 * take their logs' JSON from log_json(i) -> bytes, or, log_json None,
 * are other(i) -> bytes, as is the line of any span this code does not
 * write. */
PyObject *span_lines(PyObject *self, PyObject *args);

#endif
