/* A fresh engine's notes (see fresh.h): where the state a generation
 * inherits could have changed how it is ordered. */

#include "decode/engine.h"

int engine_make_fresh(Engine *e) {
    if (e->fr)
        return 0;
    e->fr = calloc(1, sizeof(Fresh));
    return e->fr ? 0 : -1;
}

void fresh_free(Fresh *f) {
    if (!f)
        return;
    free(f->n);
    free(f->created.v);
    free(f->begun.v);
    free(f->task_ends.v);
    idset_clear(&f->ranged[0]);
    idset_clear(&f->ranged[1]);
    idset_clear(&f->seen_g);
    idset_clear(&f->seen_p);
    idset_clear(&f->seen_task);
    free(f->skips);
    free(f);
}

/* A note of the attempt being tried, its context and arguments filled in;
 * NULL (the engine's error set) when out of memory. */
Note *fresh_note(Engine *e, int kind, u64 key) {
    Fresh *f = e->fr;
    if (grow((void **)&f->n, &f->cap, f->len + 1, sizeof(Note))) {
        fail(e, ERR_MEMORY, -1, "out of memory");
        return NULL;
    }
    const Cursor *c = f->cur;
    Note *n = &f->n[f->len++];
    *n = (Note){.kind = (u8)kind, .code = (u8)c->code, .key = key, .m = NO_ID, .p = NO_ID, .g = NO_ID, .out = -1};
    memcpy(n->args, c->args, sizeof n->args);
    if (c->ms) {
        n->m = c->m;
        n->p = c->ms->p;
        n->g = c->ms->g;
        n->unk = c->ms->unk;
    }
    return n;
}

int fresh_push(Engine *e, U64s *s, u64 x) {
    if (grow((void **)&s->v, &s->cap, s->len + 1, sizeof(u64)))
        return fail(e, ERR_MEMORY, -1, "out of memory");
    s->v[s->len++] = x;
    return 0;
}

void fresh_miss(Engine *e, int kind, u64 key) {
    /* All ones is no id: a context's NO_ID looked up (the twin's look-up of
     * -1 or of a cell left from before, which its carry passes over). */
    if (key == (u64)NO_ID)
        return;
    Fresh *f = e->fr;
    IdSet *seen = kind == NOTE_FIRST_G ? &f->seen_g : kind == NOTE_FIRST_P ? &f->seen_p : &f->seen_task;
    if (idset_has(seen, key))
        return;
    if (idset_add(seen, key)) {
        fail(e, ERR_MEMORY, -1, "out of memory");
        return;
    }
    /* What it creates or begins (those handlers never wait): a carried
     * state that has it sends the generation back, nothing else. */
    int code = f->cur->code;
    if (key == f->cur->args[0] && kind == NOTE_FIRST_G &&
        (code == EV_GO_CREATE || code == EV_GO_CREATE_BLOCKED || code == EV_GO_CREATE_SYSCALL)) {
        fresh_push(e, &f->created, key);
        return;
    }
    if (key == f->cur->args[0] && kind == NOTE_FIRST_TASK && code == EV_USER_TASK_BEGIN) {
        fresh_push(e, &f->begun, key);
        return;
    }
    fresh_note(e, kind, key);
}

void fresh_read(Engine *e, M *m, int cell) {
    u8 bit = cell ? UNK_G : UNK_P;
    if (m->read & bit) /* a thread that never restates decides on the same cell at every event */
        return;
    m->read |= bit;
    Note *n = fresh_note(e, NOTE_READ, (u64)cell);
    if (n)
        n->m = m->id;
}

void fresh_skip(Engine *e) {
    Fresh *f = e->fr;
    u64 at = (u64)(e->nout + e->out.n);
    f->nskipped++;
    if (f->nskips && f->skips[2 * f->nskips - 2] == at) {
        f->skips[2 * f->nskips - 1]++;
        return;
    }
    if (grow((void **)&f->skips, &f->capskips, 2 * f->nskips + 2, sizeof(u64))) {
        fail(e, ERR_MEMORY, -1, "out of memory");
        return;
    }
    f->skips[2 * f->nskips] = at;
    f->skips[2 * f->nskips + 1] = 1;
    f->nskips++;
}

/* After an attempt made its event happen: the notes it took learn that it
 * did (and which event it wrote, if it wrote one), the events it wrote with
 * cells left from before are noted, and the thread's cells stay unknown
 * only where the handler passed them on (a handler sets a cell to NO_ID
 * itself only after checking that it held something, which an unknown cell
 * does not). 0, or -1 when out of memory. */
int fresh_happened(Engine *e, M *ms, Ctx nc, size_t before, size_t notes_before, u64 skipped_before) {
    Fresh *f = e->fr;
    size_t written = e->out.n - before;
    i64 out = written == 1 && f->nskipped == skipped_before ? (i64)(e->nout + e->out.n - 1) : -1;
    for (size_t i = notes_before; i < f->len; i++) {
        Note *n = &f->n[i];
        n->accepted = 1;
        n->out = out;
    }
    u8 unk = e->cur_unk;
    if (!unk)
        return 0;
    for (size_t j = before; j < e->out.n; j++) {
        u8 bits = (u8)(((unk & UNK_P) && e->out.p[j] == NO_ID ? UNK_P : 0) |
                       ((unk & UNK_G) && e->out.g[j] == NO_ID ? UNK_G : 0));
        if (!bits)
            continue;
        Note *n = fresh_note(e, NOTE_UNKNOWN_CTX, 0);
        if (!n)
            return -1;
        n->unk = bits;
        n->out = (i64)(e->nout + j);
    }
    ms->unk = (u8)(((unk & UNK_P) && nc.p == NO_ID ? UNK_P : 0) | ((unk & UNK_G) && nc.g == NO_ID ? UNK_G : 0));
    e->cur_unk = 0;
    return e->err ? -1 : 0;
}
