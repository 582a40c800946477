/* The ordering engine's handlers, one per kind of event (twin: the methods
 * of _trace/modern/order.py's Ordering). A handler either makes the event happen
 * (1, with the thread's new context in *nc), finds it cannot happen yet (0),
 * or fails (-1, the engine's error set). dispatch.c maps codes to them. */

#ifndef LIVETRACE_HANDLERS_H
#define LIVETRACE_HANDLERS_H

#include "decode/engine.h"

typedef int (*Handler)(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);

/* code -> handler (NULL: the code never stands in a batch to be ordered) */
extern Handler HANDLERS[256];
void init_handlers(void);
/* The handler's name, for the module's introspection; NULL for no handler. */
const char *handler_name(int code);

/* handlers_sched.c: procs, goroutines, syscalls */
int h_proc_status(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_proc_start(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_proc_stop(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_proc_steal(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_status(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_create(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_stop_exec(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_start(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_unblock(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_switch(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_syscall_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_syscall_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_syscall_end_blocked(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_create_syscall(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_destroy_syscall(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);

/* handlers_gc.c: the collector, and the ranges of procs and goroutines */
int h_gc_active(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_gc_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_gc_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_sweep_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_sweep_active(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_sweep_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_range_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_range_active(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_go_range_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);

/* handlers_user.c: tasks, regions, annotations, metrics, experimental events */
int h_task_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_task_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_region_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_region_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_user_go(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_thread_proc(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);
int h_thread(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc);

/* ---- what the handlers share ---- */

enum { MUST_NOT, MAY, MUST };

/* A fresh engine decides on the thread's cells left from before (fresh.h). */
static inline void fresh_reads(Engine *e) {
    M *m = e->fr->cur->ms;
    if (e->cur_unk & UNK_P)
        fresh_read(e, m, 0);
    if (e->cur_unk & UNK_G)
        fresh_read(e, m, 1);
}

/* Whether the context has a proc, where a fresh engine notes the decision. */
static inline int has_proc(Engine *e, Ctx c) {
    if (e->cur_unk & UNK_P)
        fresh_read(e, e->fr->cur->ms, 0);
    return c.p != NO_ID;
}

/* A fresh engine's note of the attempt, with key and two arguments of its own. */
static inline void fresh_note2(Engine *e, int kind, u64 key, u64 a0, u64 a1) {
    Note *n = fresh_note(e, kind, key);
    if (n) {
        n->args[0] = a0;
        n->args[1] = a1;
    }
}

/* Whether the thread, proc and goroutine of the context are as required. */
static inline int check_ctx(Engine *e, Ctx c, int rm, int rp, int rg) {
    if (e->cur_unk) /* the twin compares all three, MAY too */
        fresh_reads(e);
    i64 have[3] = {c.m, c.p, c.g};
    int req[3] = {rm, rp, rg};
    static const char *const what[3] = {"thread", "proc", "goroutine"};
    for (int k = 0; k < 3; k++) {
        if (req[k] == MUST && have[k] == NO_ID)
            return ORDER("expected a %s but didn't have one", what[k]);
        if (req[k] == MUST_NOT && have[k] != NO_ID)
            return ORDER("expected no %s but had one", what[k]);
    }
    return 0;
}
#define CHECK(...) \
    if (check_ctx(e, c, __VA_ARGS__)) return -1
#define USER_GO MUST, MUST, MUST

static inline int next_seq(u64 seq_gen, u64 seq, u64 gen, u64 want) {
    return seq_gen == gen && seq != UINT64_MAX && want == seq + 1;
}

#endif
