/* `livetrace tail`'s text lines for a batch's events, straight from the
 * columns (twin: _cli/render/text.py's event_text). */

#ifndef LIVETRACE_TEXT_H
#define LIVETRACE_TEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* text_lines(codes, times, threads, procs, goroutines, args, extra, t0,
 * wall_base, provisional, kind_columns, quotes, frames, xquotes, miss,
 * other) -> bytes: one line per event, each ending in a newline, as the
 * twin's lines in UTF-8. kind_columns: 256 bytes objects, the kind column
 * of each code (padded, coloured if asked). quotes, frames and xquotes
 * cache (id -> bytes) a string's quoted text, a stack's "  @ func
 * file:line" (or b"") and a derived string's quoted text; miss(kind, id)
 * ("quote", "frame" or "xquote") makes one, which the core caches there. other(i) -> bytes
 * makes the whole line of any event this code does not write itself. */
PyObject *text_lines(PyObject *self, PyObject *args);

#endif
