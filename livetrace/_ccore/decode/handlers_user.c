/* Handlers of user annotations (tasks, regions, logs, labels), metrics and
 * the experimental allocation events (see handlers.h). */

#include "decode/handlers.h"

static const Str *gen_string(Engine *e, u64 id) {
    static const Str empty = {"", 0};
    if (id == 0)
        return &empty;
    return map_get_ptr(&e->strings, id);
}

static int extra_string(Engine *e, const char *p, size_t n, u64 *idx) {
    if (!n) {
        *idx = 0;
        return 0;
    }
    for (size_t i = 0; i < e->nx; i++)
        if (e->xstr[i].n == n && memcmp(e->xstr[i].p, p, n) == 0) {
            *idx = i + 1;
            return 0;
        }
    char *copy = malloc(n);
    if (!copy || grow((void **)&e->xstr, &e->capx, e->nx + 1, sizeof(Str))) {
        free(copy);
        return fail(e, ERR_MEMORY, -1, "out of memory");
    }
    memcpy(copy, p, n);
    e->xstr[e->nx++] = (Str){copy, n};
    *idx = e->nx;
    return 0;
}

static void repr_bytes(char *buf, size_t size, const char *p, size_t n) {
    size_t k = (size_t)snprintf(buf, size, "b'");
    for (size_t i = 0; i < n && k + 5 < size; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\\' || ch == '\'')
            k += (size_t)snprintf(buf + k, size - k, "\\%c", ch);
        else if (ch >= 32 && ch < 127)
            buf[k++] = (char)ch;
        else
            k += (size_t)snprintf(buf + k, size - k, "\\x%02x", ch);
    }
    snprintf(buf + k, size - k, "'");
}


int h_task_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    u64 tid = a[0];
    if (map_get_ptr(&e->tasks, tid))
        return ORDER("task ID conflict: %llu", (unsigned long long)tid);
    if (e->fr)
        fresh_miss(e, NOTE_FIRST_TASK, tid);
    if (a[1] == 0) /* the background task is no parent */
        a[1] = NO_TASK;
    const Str *name = gen_string(e, a[2]);
    if (!name)
        return ORDER("invalid string ID %llu for %d event", (unsigned long long)a[2], code);
    Task *task = malloc(sizeof(Task));
    char *copy = malloc(name->n ? name->n : 1);
    if (!task || !copy || map_put_ptr(&e->tasks, tid, task)) {
        free(task);
        free(copy);
        return fail(e, ERR_MEMORY, -1, "out of memory");
    }
    memcpy(copy, name->p, name->n);
    *task = (Task){copy, name->n, a[1]};
    CHECK(USER_GO);
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_task_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    Task *task = map_del_ptr(&e->tasks, a[0]);
    u64 parent = NO_TASK, idx = 0;
    if (!task && e->fr)
        fresh_miss(e, NOTE_FIRST_TASK, a[0]);
    if (task) {
        parent = task->parent;
        int r = extra_string(e, task->name, task->n, &idx);
        free(task->name);
        free(task);
        if (r)
            return -1;
    }
    CHECK(USER_GO);
    if (e->fr) { /* a task begun before ends with the carried state's type and parent */
        U64s *s = &e->fr->task_ends;
        i64 out = e->mask[code] ? (i64)(e->nout + e->out.n) : -1; /* where emit writes it */
        if (fresh_push(e, s, (u64)out) || fresh_push(e, s, a[0]) || fresh_push(e, s, parent) || fresh_push(e, s, idx))
            return -1;
    }
    *nc = c;
    return emit(e, code, t, c, a, parent, idx) ? -1 : 1;
}

static G *region_g(Engine *e, int code, u64 *a, Ctx c, const Str **name) {
    if (check_ctx(e, c, USER_GO))
        return NULL;
    *name = gen_string(e, a[1]);
    if (!*name) {
        ORDER("invalid string ID %llu for %d event", (unsigned long long)a[1], code);
        return NULL;
    }
    G *s = g_get(e, (u64)c.g);
    if (!s)
        ORDER("encountered Ev%s without known state for current goroutine %lld", ename(e, code), (long long)c.g);
    return s;
}

int h_region_begin(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    const Str *name;
    G *s = region_g(e, code, a, c, &name);
    if (!s)
        return -1;
    char *copy = malloc(name->n ? name->n : 1);
    if (!copy || grow((void **)&s->regions, &s->capreg, s->nreg + 1, sizeof(Region))) {
        free(copy);
        return fail(e, ERR_MEMORY, -1, "out of memory");
    }
    memcpy(copy, name->p, name->n);
    s->regions[s->nreg++] = (Region){a[0], copy, name->n};
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_region_end(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    const Str *name;
    G *s = region_g(e, code, a, c, &name);
    if (!s)
        return -1;
    /* Regions that began before the trace did end without a begin. */
    if (s->nreg) {
        Region *top = &s->regions[s->nreg - 1];
        if (top->task != a[0] || top->n != name->n || memcmp(top->name, name->p, name->n) != 0) {
            char want[200], have[200];
            repr_bytes(want, sizeof want, name->p, name->n);
            repr_bytes(have, sizeof have, top->name, top->n);
            return ORDER("misuse of region in goroutine %llu: region end (%llu, %s) when the inner-most active region "
                         "start event is (%llu, %s)",
                         (unsigned long long)s->id, (unsigned long long)a[0], want, (unsigned long long)top->task,
                         have);
        }
        free(top->name);
        s->nreg--;
    } else if (e->fr) { /* perhaps a region begun before: the carry matches it */
        fresh_note2(e, NOTE_UNMATCHED, (u64)c.g, a[0], a[1]);
    }
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_user_go(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(USER_GO);
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_thread_proc(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MUST, MAY);
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}

int h_thread(Engine *e, int code, i64 t, u64 *a, Ctx c, Ctx *nc) {
    CHECK(MUST, MAY, MAY);
    *nc = c;
    return emit(e, code, t, c, a, 0, 0) ? -1 : 1;
}
