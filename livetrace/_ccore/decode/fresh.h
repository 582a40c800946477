/* A fresh engine: one that orders a generation as if it were the trace's
 * first, so that several generations can be ordered at once, each by its own
 * engine in its own thread (twin: _trace/modern/carry.py's FreshOrdering).
 *
 * It runs the same handlers as the sequential engine. It differs only in what
 * it finds the first time it looks something up: every goroutine, proc, task
 * and thread is absent to it, where the sequential engine could find the
 * state the generation before left. So it notes each place where that state
 * could have mattered, and the in-order carry step (_trace/modern/carry.py's
 * carry) checks the notes against the carried state: it patches the few
 * events the carried state changes, or orders the generation again.
 *
 * The notes are taken where a look-up misses (a cold path: a busy generation
 * misses where it creates a goroutine or begins a task, kept apart as plain
 * numbers, and at its start, before the statuses restate what it runs) and
 * where a thread's proc or goroutine left from before is decided on, which
 * a thread that restated its context never does. A hit costs nothing more. */

#ifndef LIVETRACE_FRESH_H
#define LIVETRACE_FRESH_H

#include "common/containers.h"

/* A thread's cells left from the generation before, unknown to a fresh engine
 * (they read as NO_ID to the handlers, as the twin's _Unk does). */
enum { UNK_P = 1, UNK_G = 2 };

/* What a note is (the numbers are those _trace/modern/carry_compiled.py
 * reads: keep them in step). */
enum {
    NOTE_FIRST_G,       /* key's first look-up missed: code, args, context of the attempt; accepted, out */
    NOTE_FIRST_P,
    NOTE_FIRST_TASK,
    NOTE_GC,            /* the first attempt of a GC event: code, args, context; accepted */
    NOTE_READ,          /* thread m's cell key (0 proc, 1 goroutine) left from before was decided on */
    NOTE_SYSCALL_SELF,  /* a goroutine (key) restated in a syscall on its own thread m, whose goroutine is g */
    NOTE_SYSCALL_OTHER, /* a goroutine (key) restated in a syscall on thread m, first met there; out */
    NOTE_UNKNOWN_CTX,   /* event out was emitted by thread m with the cells in unk left from before */
    NOTE_ACTIVE,        /* a range (type args[1]) restated as active on proc (args[0] 0) or goroutine (1) key;
                         * args[2] 1: one began or ended there before */
    NOTE_UNMATCHED,     /* goroutine key ended a region (task args[0], name string args[1]) with none begun */
    NOTE_ITERATED,      /* every thread's proc was looked at */
};

typedef struct {
    u8 kind, code, accepted, unk;
    u64 key;
    u64 args[4];
    i64 m, p, g;
    i64 out; /* the event's index among those the generation wrote out, -1 none (not written, or not one) */
} Note;

/* A growable array of u64. */
typedef struct {
    u64 *v;
    size_t len, cap;
} U64s;

typedef struct {
    Note *n;
    size_t len, cap;
    /* The common notes, kept apart as plain numbers (a busy generation has
     * thousands): goroutines first met at their creation, tasks first met
     * at their begin, and every TaskEnd (out, task, parent, derived string). */
    U64s created, begun, task_ends;
    IdSet ranged[2]; /* procs (0) and goroutines (1) a range began or ended on */
    IdSet seen_g, seen_p, seen_task; /* keys looked up so far */
    int gc_noted;
    /* Events the filter left out, which still count in the times a carry clamps */
    u64 *skips; /* pairs (out, count): count events left out came before the out-th event written */
    size_t nskips, capskips;
    u64 nskipped;
    /* the attempt being tried: its cursor (code, arguments, thread; the
     * thread's cells are the attempt's context until it happens) */
    const struct Cursor_ *cur;
} Fresh;

#endif
