/* What the modern and legacy halves of the compiled core both build on:
 * integer types, growable arrays, a u64-keyed hash map and event columns. The lookups are
 * inline: they are on every decoder's per-event path. */

#ifndef LIVETRACE_CONTAINERS_H
#define LIVETRACE_CONTAINERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t i64;

/* Unaligned loads of a column's i-th value: the columns are whatever buffers the caller gives. */
static inline i64 ld_i64(const u8 *p, size_t i) {
    i64 v;
    memcpy(&v, p + i * 8, 8);
    return v;
}
static inline u64 ld_u64(const u8 *p, size_t i) {
    u64 v;
    memcpy(&v, p + i * 8, 8);
    return v;
}
static inline u32 ld_u32(const u8 *p, size_t i) {
    u32 v;
    memcpy(&v, p + i * 4, 4);
    return v;
}

/* Grows *ptr to hold at least need elements, doubling: 0, or -1 when out of memory. */
static inline int grow(void **ptr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*ptr, nc * elem);
    if (!p)
        return -1;
    *ptr = p;
    *cap = nc;
    return 0;
}

/* A 64-bit hash finalizer (MurmurHash3's) for open-addressing tables. */
static inline size_t hmix(u64 x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (size_t)x;
}

/* u64 -> u64, open addressing with linear probing and backward-shift
 * deletion. Key 0 marks an empty slot (so a calloc'd table is empty), and
 * the entry for key 0 itself lives beside the table. A zeroed Map is an
 * empty one. Values may be pointers (map_get_ptr, map_put_ptr). */
typedef struct {
    u64 key, val;
} MapSlot;

typedef struct {
    MapSlot *s;
    size_t cap, len; /* len: entries in the table, key 0's not counted */
    int has_zero;
    u64 zero_val;
} Map;

int map_resize(Map *m, size_t cap);
/* Removes k: 1 and its value in *val if it was there, else 0. */
int map_del(Map *m, u64 k, u64 *val);
void map_free(Map *m);
/* Calls fn on every value, as a pointer. */
void map_each_ptr(const Map *m, void (*fn)(void *));

/* The value slot of k, or NULL when k is not in the map. */
static inline u64 *map_find(const Map *m, u64 k) {
    if (!k)
        return m->has_zero ? (u64 *)&m->zero_val : NULL;
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1, i = hmix(k) & mask;
    while (m->s[i].key) {
        if (m->s[i].key == k)
            return &m->s[i].val;
        i = (i + 1) & mask;
    }
    return NULL;
}

/* The value slot of k, made (holding v0) if k is new; NULL when out of memory. */
static inline u64 *map_slot(Map *m, u64 k, u64 v0) {
    if (!k) {
        if (!m->has_zero) {
            m->has_zero = 1;
            m->zero_val = v0;
        }
        return &m->zero_val;
    }
    if ((m->len + 1) * 2 > m->cap && map_resize(m, m->cap ? m->cap * 2 : 16))
        return NULL;
    size_t mask = m->cap - 1, i = hmix(k) & mask;
    while (m->s[i].key) {
        if (m->s[i].key == k)
            return &m->s[i].val;
        i = (i + 1) & mask;
    }
    m->s[i].key = k;
    m->s[i].val = v0;
    m->len++;
    return &m->s[i].val;
}

/* Sets k to v: 0, or -1 when out of memory. */
static inline int map_put(Map *m, u64 k, u64 v) {
    u64 *slot = map_slot(m, k, v);
    if (!slot)
        return -1;
    *slot = v;
    return 0;
}

static inline void *map_get_ptr(const Map *m, u64 k) {
    u64 *v = map_find(m, k);
    return v ? (void *)(uintptr_t)*v : NULL;
}

static inline int map_put_ptr(Map *m, u64 k, void *p) { return map_put(m, k, (u64)(uintptr_t)p); }

/* Removes k and gives its value as a pointer (NULL: it was not there). */
static inline void *map_del_ptr(Map *m, u64 k) {
    u64 v;
    return map_del(m, k, &v) ? (void *)(uintptr_t)v : NULL;
}

/* Walks the entries (key 0's first, then the table's, in no set order):
 * start with *pos 0; 1 and the entry in *key, *val while there is one. The
 * map must not change during the walk. */
static inline int map_next(const Map *m, size_t *pos, u64 *key, u64 **val) {
    if (*pos == 0) {
        *pos = 1;
        if (m->has_zero) {
            *key = 0;
            *val = (u64 *)&m->zero_val;
            return 1;
        }
    }
    for (; *pos - 1 < m->cap; (*pos)++) {
        MapSlot *s = &m->s[*pos - 1];
        if (s->key) {
            (*pos)++;
            *key = s->key;
            *val = &s->val;
            return 1;
        }
    }
    return 0;
}

/* A set of u64 ids. A generation numbers its stacks and strings up from 1,
 * so the small ids are bits, tested without hashing; the rest go to a map.
 * A zeroed IdSet is an empty one. */
#define IDSET_BITS (1u << 16)

typedef struct {
    u64 bits[IDSET_BITS / 64];
    Map big;
} IdSet;

/* Adds id: 0, or -1 when out of memory. */
static inline int idset_add(IdSet *s, u64 id) {
    if (id < IDSET_BITS) {
        s->bits[id / 64] |= (u64)1 << (id % 64);
        return 0;
    }
    return map_put(&s->big, id, 1);
}

static inline int idset_has(const IdSet *s, u64 id) {
    if (id < IDSET_BITS)
        return (int)(s->bits[id / 64] >> (id % 64)) & 1;
    return map_find(&s->big, id) != NULL;
}

static inline void idset_clear(IdSet *s) {
    memset(s->bits, 0, sizeof s->bits);
    map_free(&s->big);
}

/* Events as columns, as an EventBatch holds them: per event a code, a time,
 * its thread, proc and goroutine (-1: none), NARGS arguments (unused ones
 * 0) and NEXTRA extra values. */
#define NARGS 4  /* the most arguments any event has */
#define NEXTRA 2
/* An EventBatch's columns as Python hands them over: codes, times,
 * threads, procs, goroutines, args, extra; each one's bytes per event. */
#define EVENT_NCOLS 7
#define EVENT_COL_WIDTHS {1, 8, 8, 8, 8, 8 * NARGS, 8 * NEXTRA}

typedef struct {
    size_t n, cap;
    u8 *code;
    i64 *time, *m, *p, *g;
    u64 *args, *extra;
    int borrowed; /* the columns are memory someone else owns: never grown or freed here */
} Columns;

/* Room for need events: 0, or -1 when out of memory (or borrowed columns are full). */
int cols_reserve(Columns *c, size_t need);
void cols_free(Columns *c);

#endif
