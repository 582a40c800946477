/* JSON lines for a batch's events: the twin of _cli/render/jsonl.py's
 * JsonlEncoder for state transitions and the common annotations, written
 * straight from the columns; other events' lines come from Python. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <time.h>

#include "decode/engine.h"
#include "render/jsonl.h"
#include "render/partcache.h"
#include "render/textbuf.h"

/* v ns as whole seconds, rounded down, and the nanoseconds left (0 to 1e9 - 1). */
static void split_ns(i64 v, i64 *sec, i64 *nsec) {
    *sec = v / 1000000000;
    *nsec = v % 1000000000;
    if (*nsec < 0) {
        *nsec += 1000000000;
        (*sec)--;
    }
}

/* A generation's clock, for the lines' "wall": its base split, and the
 * last second written, as text (strftime is slow, and a second holds
 * thousands of lines). */
typedef struct {
    int has;
    i64 base_sec, base_nsec;
    i64 sec; /* the second text holds */
    size_t len;
    char text[48]; /* , "wall": "YYYY-MM-DDTHH:MM:SS, padded: copied whole */
} Wall;

static void wall_open(Wall *w, int has_wall, i64 wall_base) {
    *w = (Wall){.has = has_wall, .sec = INT64_MIN};
    split_ns(wall_base, &w->base_sec, &w->base_nsec);
}

/* A line's start to its time, padded (copied whole, then cut to n). */
typedef struct {
    char s[48];
    size_t n;
} Head;

#define HEAD(kind) {"{\"kind\": \"" kind "\", \"time_ns\": ", sizeof("{\"kind\": \"" kind "\", \"time_ns\": ") - 1}

/* The most a head writes: the kind's start, four numbers, the wall time. */
#define HEAD_ROOM (sizeof(((Head *)0)->s) + 4 * 24 + sizeof(((Wall *)0)->text) + 64)

/* {"kind": K, "time_ns": T, ["wall": W, ]"g": G, "p": P, "m": M */
static void line_head(TextBuf *b, const Head *h, i64 t, i64 g, i64 p, i64 m, Wall *w) {
    if (tb_room(b, HEAD_ROOM))
        return; /* sticky: the line's end fails */
    memcpy(b->p + b->n, h->s, sizeof h->s);
    b->n += h->n;
    tb_i64_raw(b, t);
    if (w->has) {
        /* In seconds and nanoseconds apart: the base and a time each fit
         * int64 nanoseconds, their sum may not (Python's does). */
        i64 sec, nsec;
        split_ns(t, &sec, &nsec);
        sec += w->base_sec;
        nsec += w->base_nsec;
        if (nsec >= 1000000000) {
            sec++;
            nsec -= 1000000000;
        }
        if (sec != w->sec) {
            time_t tt = (time_t)sec;
            struct tm tm = {0};
            gmtime_r(&tt, &tm);
            static const char pre[] = ", \"wall\": \"";
            memcpy(w->text, pre, sizeof pre - 1);
            w->len = sizeof pre - 1 + strftime(w->text + sizeof pre - 1, sizeof w->text - sizeof pre, "%Y-%m-%dT%H:%M:%S", &tm);
            w->sec = sec;
        }
        memcpy(b->p + b->n, w->text, sizeof w->text);
        b->n += w->len;
        if (nsec) {
            /* nine digits, two at a time, less the zeros at the end */
            char frac[10];
            u32 v = (u32)nsec;
            frac[0] = '.';
            frac[9] = (char)('0' + v % 10);
            v /= 10;
            for (int k = 7; k >= 1; k -= 2, v /= 100)
                memcpy(frac + k, TB_DIGITS2 + 2 * (v % 100), 2);
            size_t k = 10;
            while (frac[k - 1] == '0')
                k--;
            memcpy(b->p + b->n, frac, sizeof frac);
            b->n += k;
        }
        TB_LIT_RAW(b, "Z\"");
    }
    TB_LIT_RAW(b, ", \"g\": ");
    tb_i64_raw(b, g);
    TB_LIT_RAW(b, ", \"p\": ");
    tb_i64_raw(b, p);
    TB_LIT_RAW(b, ", \"m\": ");
    tb_i64_raw(b, m);
}

/* The end of a line: the event's stack and the closing brace. stacks NULL:
 * provisional_dict's ending, the stack as its id (0 for none), which the
 * frames of a legacy trace before its footer are not known for. */
static int line_tail(TextBuf *b, int c, const u64 *a, PartCache *stacks) {
    int si = T_STACK[c];
    u64 sid = si != 255 ? a[si] : 0;
    if (!stacks) {
        TB_LIT(b, ", \"provisional\": true, \"stack_id\": ");
        tb_u64(b, sid);
    } else {
        TB_LIT(b, ", \"stack\": ");
        if (!sid)
            TB_LIT(b, "[]");
        else if (part_put(b, stacks, sid))
            return -1;
    }
    return TB_LIT(b, "}\n");
}

/* Metric, TaskBegin, RegionBegin/End, Log, and the GC's sweep and mark
 * assist range lines, as event_dict has them (provisional_dict's when stacks
 * is NULL). */
static int annotation_line(TextBuf *b, int c, i64 t, i64 g, i64 p, i64 m, const u64 *a, const u64 *x, Wall *w,
                           PartCache *strings, PartCache *extras, PartCache *stacks) {
    static const Head heads[] = {
        [EV_PROCS_CHANGE] = HEAD("Metric"), [EV_HEAP_ALLOC] = HEAD("Metric"), [EV_HEAP_GOAL] = HEAD("Metric"),
        [EV_USER_TASK_BEGIN] = HEAD("TaskBegin"), [EV_USER_TASK_END] = HEAD("TaskEnd"), [EV_GO_LABEL] = HEAD("Label"),
        [EV_USER_REGION_BEGIN] = HEAD("RegionBegin"), [EV_USER_REGION_END] = HEAD("RegionEnd"),
        [EV_USER_LOG] = HEAD("Log"), [EV_GC_SWEEP_ACTIVE] = HEAD("RangeActive"),
        [EV_GC_SWEEP_BEGIN] = HEAD("RangeBegin"), [EV_GC_SWEEP_END] = HEAD("RangeEnd"),
        [EV_GC_MARK_ASSIST_ACTIVE] = HEAD("RangeActive"), [EV_GC_MARK_ASSIST_BEGIN] = HEAD("RangeBegin"),
        [EV_GC_MARK_ASSIST_END] = HEAD("RangeEnd")};
    line_head(b, &heads[c], t, g, p, m, w);
    switch (c) {
    case EV_PROCS_CHANGE: TB_LIT(b, ", \"name\": \"/sched/gomaxprocs:threads\", \"value\": "); tb_u64(b, a[0]); break;
    case EV_HEAP_ALLOC: TB_LIT(b, ", \"name\": \"/memory/classes/heap/objects:bytes\", \"value\": "); tb_u64(b, a[0]); break;
    case EV_HEAP_GOAL: TB_LIT(b, ", \"name\": \"/gc/heap/goal:bytes\", \"value\": "); tb_u64(b, a[0]); break;
    case EV_USER_TASK_BEGIN:
        TB_LIT(b, ", \"task\": ");
        tb_u64(b, a[0]);
        TB_LIT(b, ", \"parent\": ");
        if (a[1] == NO_TASK)
            TB_LIT(b, "null");
        else
            tb_u64(b, a[1]);
        TB_LIT(b, ", \"type\": ");
        if (part_put(b, strings, a[2]))
            return -1;
        break;
    case EV_USER_TASK_END: /* its parent and type the decoder's, in extra: the type an extra string */
        TB_LIT(b, ", \"task\": ");
        tb_u64(b, a[0]);
        TB_LIT(b, ", \"parent\": ");
        if (x[0] == NO_TASK)
            TB_LIT(b, "null");
        else
            tb_u64(b, x[0]);
        TB_LIT(b, ", \"type\": ");
        if (part_put(b, extras, x[1]))
            return -1;
        break;
    case EV_GO_LABEL:
        TB_LIT(b, ", \"label\": ");
        if (part_put(b, strings, a[0]))
            return -1;
        break;
    case EV_USER_REGION_BEGIN: case EV_USER_REGION_END:
        TB_LIT(b, ", \"task\": ");
        tb_u64(b, a[0]);
        TB_LIT(b, ", \"type\": ");
        if (part_put(b, strings, a[1]))
            return -1;
        break;
    /* The ranges of a busy service (the rest are rare): event_dict's name, scope and attributes. */
    case EV_GC_SWEEP_ACTIVE: case EV_GC_SWEEP_BEGIN: case EV_GC_SWEEP_END:
        TB_LIT(b, ", \"name\": \"GC incremental sweep\", \"scope\": \"Proc(");
        if (c == EV_GC_SWEEP_ACTIVE)
            tb_u64(b, a[0]);
        else
            tb_i64(b, p);
        TB_LIT(b, ")\"");
        if (c == EV_GC_SWEEP_END) {
            TB_LIT(b, ", \"attributes\": {\"bytes swept\": ");
            tb_u64(b, a[0]);
            TB_LIT(b, ", \"bytes reclaimed\": ");
            tb_u64(b, a[1]);
            TB_LIT(b, "}");
        }
        break;
    case EV_GC_MARK_ASSIST_ACTIVE: case EV_GC_MARK_ASSIST_BEGIN: case EV_GC_MARK_ASSIST_END:
        TB_LIT(b, ", \"name\": \"GC mark assist\", \"scope\": \"Goroutine(");
        if (c == EV_GC_MARK_ASSIST_ACTIVE)
            tb_u64(b, a[0]);
        else
            tb_i64(b, g);
        TB_LIT(b, ")\"");
        if (c == EV_GC_MARK_ASSIST_END)
            TB_LIT(b, ", \"attributes\": {}");
        break;
    case EV_USER_LOG:
        TB_LIT(b, ", \"task\": ");
        tb_u64(b, a[0]);
        TB_LIT(b, ", \"category\": ");
        if (part_put(b, strings, a[1]))
            return -1;
        TB_LIT(b, ", \"message\": ");
        if (part_put(b, strings, a[2]))
            return -1;
        break;
    }
    return line_tail(b, c, a, stacks);
}

/* The text so far onto the list of pieces (the buffer given up): 0, or -1
 * with an exception set. */
static int put_piece_out(TextBuf *b, PyObject *pieces) {
    PyObject *text = tb_finish(b);
    if (!text)
        return -1;
    int r = PyList_Append(pieces, text);
    Py_DECREF(text);
    return r;
}

PyObject *jsonl_lines(const EventView *v, size_t piece_lines, int has_wall, i64 wall_base, PyObject *strings,
                      PyObject *stacks, PyObject *extras, PyObject *miss, PyObject *other) {
    PyObject *result = NULL, *pieces = NULL;
    TextBuf b = {0};
    PartCache sp = {0}, kp = {0}, xp = {0};
    size_t n = v->n;
    const u8 *code = v->code;
    const i64 *time = v->time, *m = v->m, *p = v->p, *g = v->g;
    const u64 *a_all = v->args, *x_all = v->extra;
    PartCache *kpp = stacks ? &kp : NULL, *xpp = stacks && extras ? &xp : NULL;
    /* Pieces of piece_lines lines (all in one, 0): a piece of a few hundred lines is written in warm memory. */
    size_t per = piece_lines && piece_lines < n ? piece_lines : n, room = per * 1024;
    if (!(pieces = PyList_New(0)) || part_cache_open(&sp, strings, miss, "string") ||
        (kpp && part_cache_open(kpp, stacks, miss, "stack")) || (xpp && part_cache_open(xpp, extras, miss, "extra")) ||
        tb_init(&b, room))
        goto fail;
    /* The lines are written without the GIL (textbuf.h's Gil). */
    Gil gil = {NULL, 1};
    b.gil = sp.gil = kp.gil = xp.gil = &gil;
    gil_free(&gil);
    Wall wall;
    wall_open(&wall, has_wall, wall_base);
    static const Head transition = HEAD("StateTransition");
    for (size_t i = 0; i < n; i++) {
        if (i && i % per == 0) { /* a piece full: the next */
            gil_hold(&gil);
            if (put_piece_out(&b, pieces) || tb_init(&b, room))
                goto fail;
            b.gil = &gil;
            gil_free(&gil);
        }
        int c = code[i];
        const u64 *a = a_all + i * NARGS, *x = x_all + i * NEXTRA;
        int proc = 0, old, new_, has_t = 0;
        i64 rid_signed = 0;
        u64 rid = 0, reason = 0, tstack = 0;
        int rid_is_signed = 0;
        switch (c) {
        case EV_PROC_START: proc = 1, rid = a[0], old = PS_IDLE, new_ = PS_RUNNING; break;
        case EV_PROC_STOP: proc = 1, rid_signed = p[i], rid_is_signed = 1, old = PS_RUNNING, new_ = PS_IDLE; break;
        case EV_PROC_STEAL: proc = 1, rid = a[0], old = x[0] == PROC_SYSCALL_ABANDONED ? PS_IDLE : PS_RUNNING, new_ = PS_IDLE; break;
        case EV_PROC_STATUS:
            proc = 1, rid = a[0], old = (int)x[0], new_ = a[1] < PROC_STATUS_COUNT ? PROC_STATUS_STATE[a[1]] : 0;
            break;
        case EV_GO_CREATE: case EV_GO_CREATE_BLOCKED:
            rid = a[0], old = GS_NOT_EXIST, new_ = c == EV_GO_CREATE_BLOCKED ? GS_WAITING : GS_RUNNABLE, has_t = 1, tstack = a[1];
            break;
        case EV_GO_CREATE_SYSCALL: rid = a[0], old = GS_NOT_EXIST, new_ = GS_SYSCALL; break;
        case EV_GO_START: rid = a[0], old = GS_RUNNABLE, new_ = GS_RUNNING; break;
        case EV_GO_DESTROY: rid_signed = g[i], rid_is_signed = 1, old = GS_RUNNING, new_ = GS_NOT_EXIST; break;
        case EV_GO_DESTROY_SYSCALL: rid_signed = g[i], rid_is_signed = 1, old = GS_SYSCALL, new_ = GS_NOT_EXIST; break;
        case EV_GO_STOP: case EV_GO_BLOCK:
            rid_signed = g[i], rid_is_signed = 1, old = GS_RUNNING, new_ = c == EV_GO_STOP ? GS_RUNNABLE : GS_WAITING;
            reason = a[0], has_t = a[1] != 0, tstack = a[1];
            break;
        case EV_GO_UNBLOCK: case EV_GO_SWITCH: case EV_GO_SWITCH_DESTROY: rid = a[0], old = GS_WAITING, new_ = GS_RUNNABLE; break;
        case EV_GO_SYSCALL_BEGIN: rid_signed = g[i], rid_is_signed = 1, old = GS_RUNNING, new_ = GS_SYSCALL, has_t = a[1] != 0, tstack = a[1]; break;
        case EV_GO_SYSCALL_END: rid_signed = g[i], rid_is_signed = 1, old = GS_SYSCALL, new_ = GS_RUNNING; break;
        case EV_GO_SYSCALL_END_BLOCKED: rid_signed = g[i], rid_is_signed = 1, old = GS_SYSCALL, new_ = GS_RUNNABLE; break;
        case EV_GO_STATUS: case EV_GO_STATUS_STACK:
            rid = a[0], old = (int)x[0], new_ = a[2] < GO_STATUS_COUNT ? GO_STATUS_STATE[a[2]] : 0;
            has_t = c == EV_GO_STATUS_STACK && a[3] != 0, tstack = c == EV_GO_STATUS_STACK ? a[3] : 0;
            break;
        case EV_PROCS_CHANGE: case EV_HEAP_ALLOC: case EV_HEAP_GOAL: case EV_USER_TASK_BEGIN:
        case EV_USER_REGION_BEGIN: case EV_USER_REGION_END: case EV_USER_LOG: case EV_GC_SWEEP_ACTIVE:
        case EV_GC_SWEEP_BEGIN: case EV_GC_SWEEP_END: case EV_GC_MARK_ASSIST_ACTIVE: case EV_GC_MARK_ASSIST_BEGIN:
        case EV_GC_MARK_ASSIST_END:
            if (annotation_line(&b, c, time[i], g[i], p[i], m[i], a, x, &wall, &sp, xpp, kpp))
                goto fail;
            continue;
        /* Exact lines only (a provisional line's stack is its id), and a task's end with the extra strings. */
        case EV_USER_TASK_END: case EV_GO_LABEL:
            if (kpp && (c != EV_USER_TASK_END || xpp)) {
                if (annotation_line(&b, c, time[i], g[i], p[i], m[i], a, x, &wall, &sp, xpp, kpp))
                    goto fail;
                continue;
            }
            /* fall through */
        default: {
            gil_hold(&gil);
            PyObject *line = PyObject_CallFunction(other, "n", (Py_ssize_t)i);
            if (!line)
                goto done;
            Py_ssize_t len;
            const char *s = PyUnicode_AsUTF8AndSize(line, &len);
            int r = s ? tb_put(&b, s, (size_t)len) : -1;
            GIL_HELD();
            Py_DECREF(line);
            if (r || TB_LIT(&b, "\n"))
                goto fail;
            gil_free(&gil);
            continue;
        }
        }
        if (old < 0 || old >= GS_COUNT || (proc && old >= PS_COUNT))
            old = 0;
        line_head(&b, &transition, time[i], g[i], p[i], m[i], &wall);
        if (proc)
            TB_LIT(&b, ", \"resource\": \"proc\", \"id\": ");
        else
            TB_LIT(&b, ", \"resource\": \"goroutine\", \"id\": ");
        if (rid_is_signed)
            tb_i64(&b, rid_signed);
        else
            tb_u64(&b, rid);
        const char *on = proc ? PS_NAMES[old] : GS_NAMES[old], *nn = proc ? PS_NAMES[new_] : GS_NAMES[new_];
        TB_LIT(&b, ", \"from\": \"");
        tb_put(&b, on, strlen(on));
        TB_LIT(&b, "\", \"to\": \"");
        tb_put(&b, nn, strlen(nn));
        TB_LIT(&b, "\", \"reason\": ");
        if (reason) {
            if (part_put(&b, &sp, reason))
                goto done;
        } else {
            TB_LIT(&b, "\"\"");
        }
        if (kpp && (has_t || c == EV_GO_CREATE || c == EV_GO_CREATE_BLOCKED)) {
            TB_LIT(&b, ", \"transition_stack\": ");
            if (tstack) {
                if (part_put(&b, kpp, tstack))
                    goto done;
            } else {
                TB_LIT(&b, "[]");
            }
        }
        if (line_tail(&b, c, a, kpp))
            goto fail;
    }
    gil_hold(&gil);
    if (n && put_piece_out(&b, pieces))
        goto fail;
    result = pieces;
    pieces = NULL;
    goto done;
fail:
    gil_hold(b.gil);
    if (!PyErr_Occurred())
        PyErr_NoMemory();
done:
    gil_hold(b.gil);
    Py_XDECREF(pieces);
    Py_XDECREF(b.obj);
    part_cache_close(&sp), part_cache_close(&kp), part_cache_close(&xp);
    return result;
}
