/* Values of the modern event model, which both the engine and the legacy
 * conversion write (twin: _trace/model/events.py): the statuses goroutines and
 * procs have on the wire (GoStatus, ProcStatus events), the states they
 * mean, and the task id that means none, all named in generated.h. */

#ifndef LIVETRACE_MODEL_H
#define LIVETRACE_MODEL_H

#include "common/generated.h"

/* (decode/engine.c, from generated.h's initializers) status -> state, and
 * the names of each, for messages and JSON */
extern const int GO_STATUS_STATE[GO_STATUS_COUNT], PROC_STATUS_STATE[PROC_STATUS_COUNT];
extern const char *const GO_STATUS_NAMES[GO_STATUS_COUNT], *const PROC_STATUS_NAMES[PROC_STATUS_COUNT];
extern const char *const GS_NAMES[GS_COUNT], *const PS_NAMES[PS_COUNT];

#endif
