/* The hash map's slow paths (growing, deleting, freeing) and the event columns. */

#include "common/containers.h"

int map_resize(Map *m, size_t cap) {
    MapSlot *old = m->s;
    size_t oldcap = m->cap;
    MapSlot *s = calloc(cap, sizeof(MapSlot));
    if (!s)
        return -1;
    m->s = s;
    m->cap = cap;
    m->len = 0;
    size_t mask = cap - 1;
    for (size_t k = 0; k < oldcap; k++) {
        if (!old[k].key)
            continue;
        size_t i = hmix(old[k].key) & mask;
        while (s[i].key)
            i = (i + 1) & mask;
        s[i] = old[k];
        m->len++;
    }
    free(old);
    return 0;
}

int map_del(Map *m, u64 k, u64 *val) {
    if (!k) {
        if (!m->has_zero)
            return 0;
        m->has_zero = 0;
        *val = m->zero_val;
        return 1;
    }
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1, i = hmix(k) & mask;
    while (m->s[i].key && m->s[i].key != k)
        i = (i + 1) & mask;
    if (!m->s[i].key)
        return 0;
    *val = m->s[i].val;
    m->s[i].key = 0;
    m->len--;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->s[j].key)
            break;
        size_t h = hmix(m->s[j].key) & mask;
        /* move the entry back unless its home lies cyclically in (i, j] */
        int stays = (i <= j) ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            m->s[i] = m->s[j];
            m->s[j].key = 0;
            i = j;
        }
    }
    return 1;
}

void map_free(Map *m) {
    free(m->s);
    m->s = NULL;
    m->cap = m->len = 0;
    m->has_zero = 0;
}

void map_each_ptr(const Map *m, void (*fn)(void *)) {
    if (m->has_zero)
        fn((void *)(uintptr_t)m->zero_val);
    for (size_t i = 0; i < m->cap; i++)
        if (m->s[i].key)
            fn((void *)(uintptr_t)m->s[i].val);
}

int cols_reserve(Columns *c, size_t need) {
    if (need <= c->cap)
        return 0;
    if (c->borrowed)
        return -1;
    size_t nc = c->cap ? c->cap : 1024;
    while (nc < need)
        nc *= 2;
    /* Each column that did grow keeps its new room, should a later one fail. */
#define RE(f, n)                                      \
    {                                                 \
        void *q = realloc(c->f, (n) * sizeof(*c->f)); \
        if (!q)                                       \
            return -1;                                \
        c->f = q;                                     \
    }
    RE(code, nc) RE(time, nc) RE(m, nc) RE(p, nc) RE(g, nc) RE(args, nc * NARGS) RE(extra, nc * NEXTRA)
#undef RE
    c->cap = nc;
    return 0;
}

void cols_free(Columns *c) {
    free(c->code), free(c->time), free(c->m), free(c->p), free(c->g), free(c->args), free(c->extra);
    *c = (Columns){0};
}
