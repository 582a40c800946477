/* Values of the modern event model, which both the engine and the legacy
 * conversion write (twin: _trace/model/events.py): the statuses goroutines and
 * procs have on the wire (GoStatus, ProcStatus events), the states they
 * mean, and the task id that means none. */

#ifndef LIVETRACE_MODEL_H
#define LIVETRACE_MODEL_H

#include <stdint.h>

#define NO_TASK UINT64_MAX

enum { GO_BAD, GO_RUNNABLE, GO_RUNNING, GO_SYSCALL, GO_WAITING, GO_STATUS_COUNT };
enum { PROC_BAD, PROC_RUNNING, PROC_IDLE, PROC_SYSCALL, PROC_SYSCALL_ABANDONED, PROC_STATUS_COUNT };
enum { GS_UNDETERMINED, GS_NOT_EXIST, GS_RUNNABLE, GS_RUNNING, GS_WAITING, GS_SYSCALL, GS_COUNT };
enum { PS_UNDETERMINED, PS_NOT_EXIST, PS_RUNNING, PS_IDLE, PS_COUNT };

/* (engine.c) status -> state, and the names of each, for messages and JSON */
extern const int GO_STATUS_STATE[GO_STATUS_COUNT], PROC_STATUS_STATE[PROC_STATUS_COUNT];
extern const char *const GO_STATUS_NAMES[GO_STATUS_COUNT], *const PROC_STATUS_NAMES[PROC_STATUS_COUNT];
extern const char *const GS_NAMES[GS_COUNT], *const PS_NAMES[PS_COUNT];

#endif
