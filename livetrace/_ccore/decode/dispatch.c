/* Which handler orders an event of each code: the compiled twin of the
 * dispatch table of _trace/modern/order.py's Ordering, which a test compares
 * with this one (through the module's handlers()). */

#include "decode/handlers.h"

Handler HANDLERS[256];
static const char *NAMES[256];

void init_handlers(void) {
#define H(lo, hi, h) {lo, hi, h, #h}
    static const struct {
        int lo, hi;
        Handler h;
        const char *name;
    } rows[] = {
        H(EV_PROCS_CHANGE, EV_PROCS_CHANGE, h_user_go),
        H(EV_GO_LABEL, EV_GO_LABEL, h_user_go),
        H(EV_USER_LOG, EV_USER_LOG, h_user_go),
        H(EV_PROC_START, EV_PROC_START, h_proc_start),
        H(EV_PROC_STOP, EV_PROC_STOP, h_proc_stop),
        H(EV_PROC_STEAL, EV_PROC_STEAL, h_proc_steal),
        H(EV_PROC_STATUS, EV_PROC_STATUS, h_proc_status),
        H(EV_GO_CREATE, EV_GO_CREATE, h_go_create),
        H(EV_GO_CREATE_BLOCKED, EV_GO_CREATE_BLOCKED, h_go_create),
        H(EV_GO_CREATE_SYSCALL, EV_GO_CREATE_SYSCALL, h_go_create_syscall),
        H(EV_GO_START, EV_GO_START, h_go_start),
        H(EV_GO_DESTROY, EV_GO_DESTROY, h_go_stop_exec),
        H(EV_GO_STOP, EV_GO_BLOCK, h_go_stop_exec),
        H(EV_GO_DESTROY_SYSCALL, EV_GO_DESTROY_SYSCALL, h_go_destroy_syscall),
        H(EV_GO_UNBLOCK, EV_GO_UNBLOCK, h_go_unblock),
        H(EV_GO_SYSCALL_BEGIN, EV_GO_SYSCALL_BEGIN, h_syscall_begin),
        H(EV_GO_SYSCALL_END, EV_GO_SYSCALL_END, h_syscall_end),
        H(EV_GO_SYSCALL_END_BLOCKED, EV_GO_SYSCALL_END_BLOCKED, h_syscall_end_blocked),
        H(EV_GO_STATUS, EV_GO_STATUS, h_go_status),
        H(EV_GO_STATUS_STACK, EV_GO_STATUS_STACK, h_go_status),
        H(EV_STW_BEGIN, EV_STW_BEGIN, h_go_range_begin),
        H(EV_GC_MARK_ASSIST_BEGIN, EV_GC_MARK_ASSIST_BEGIN, h_go_range_begin),
        H(EV_STW_END, EV_STW_END, h_go_range_end),
        H(EV_GC_MARK_ASSIST_END, EV_GC_MARK_ASSIST_END, h_go_range_end),
        H(EV_GC_ACTIVE, EV_GC_ACTIVE, h_gc_active),
        H(EV_GC_BEGIN, EV_GC_BEGIN, h_gc_begin),
        H(EV_GC_END, EV_GC_END, h_gc_end),
        H(EV_GC_SWEEP_ACTIVE, EV_GC_SWEEP_ACTIVE, h_sweep_active),
        H(EV_GC_SWEEP_BEGIN, EV_GC_SWEEP_BEGIN, h_sweep_begin),
        H(EV_GC_SWEEP_END, EV_GC_SWEEP_END, h_sweep_end),
        H(EV_GC_MARK_ASSIST_ACTIVE, EV_GC_MARK_ASSIST_ACTIVE, h_go_range_active),
        H(EV_HEAP_ALLOC, EV_HEAP_GOAL, h_thread_proc),
        H(EV_USER_TASK_BEGIN, EV_USER_TASK_BEGIN, h_task_begin),
        H(EV_USER_TASK_END, EV_USER_TASK_END, h_task_end),
        H(EV_USER_REGION_BEGIN, EV_USER_REGION_BEGIN, h_region_begin),
        H(EV_USER_REGION_END, EV_USER_REGION_END, h_region_end),
        H(EV_GO_SWITCH, EV_GO_SWITCH_DESTROY, h_go_switch),
        H(EV_SPAN, EV_GOROUTINE_STACK_FREE, h_thread),
    };
#undef H
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int c = rows[i].lo; c <= rows[i].hi; c++) {
            HANDLERS[c] = rows[i].h;
            NAMES[c] = rows[i].name;
        }
}

const char *handler_name(int code) { return code >= 0 && code < 256 ? NAMES[code] : NULL; }
