/* SPDX-License-Identifier: MIT */
/* bench/ds/intset.h: integer sets written once against bench/tm/tm.h.
 *
 * Four structures behind one interface: a sorted linked list, a skip list,
 * a red-black tree and a hash set (a fixed array of sorted lists); the tree
 * and the skip list also in an "as written" form (kinds "rb-aw", "sl-aw"). Each
 * operation runs as ONE transaction of the back-end the library was built
 * for (targets bench_ds_schedstm, bench_ds_itm, bench_ds_seq); called inside
 * an enclosing transaction it becomes part of it (flat nesting).
 *
 * Thread rules: add/remove/contains from any thread registered with the
 * back-end (tm_thread_enter); create/destroy/size/check while no operation
 * runs. Keys are any long value.
 */
#ifndef BENCH_INTSET_H
#define BENCH_INTSET_H

#include <stdbool.h>
#include <stddef.h>

typedef enum intset_kind {
  INTSET_LL = 0, /* sorted linked list */
  INTSET_SL = 1, /* skip list */
  INTSET_RB = 2, /* red-black tree */
  INTSET_HS = 3, /* hash set of sorted lists */
  /* The same structures with the search "as written" (plain branching
   * descent, one load per step, no value kept across levels), where the
   * port above differs from that form. The sorted list and the hash set
   * are already written that way (key, then next, once per node). */
  INTSET_RB_AW = 4, /* red-black tree, branching descent */
  INTSET_SL_AW = 5, /* skip list, key re-read at every step */
  INTSET_KIND_COUNT
} intset_kind_t;

typedef struct intset_params {
  size_t buckets;  /* hash set: bucket count (0: INTSET_DEFAULT_BUCKETS) */
  int levels;      /* skip list: maximum level, 1..INTSET_SL_MAX_LEVEL
                      (0: derived from range_hint) */
  long range_hint; /* expected key range, for defaults (0: unknown) */
} intset_params_t;

#define INTSET_DEFAULT_BUCKETS (1UL << 17)
#define INTSET_SL_MAX_LEVEL 32

typedef struct intset intset_t;

/* Create an empty set (non-transactional). params may be NULL. Returns NULL
 * on allocation failure or bad parameters. */
intset_t *intset_create(intset_kind_t kind, const intset_params_t *params);

/* Free the set and its nodes (non-transactional, no concurrent use). */
void intset_destroy(intset_t *s);

/* Insert key; true if it was absent. One transaction. */
bool intset_add(intset_t *s, long key);

/* Remove key; true if it was present. One transaction. */
bool intset_remove(intset_t *s, long key);

/* Membership test. One read-only transaction. */
bool intset_contains(intset_t *s, long key);

/* Number of keys (non-transactional traversal). */
size_t intset_size(const intset_t *s);

/* Validate the structure's invariants (non-transactional): ordering, no
 * duplicates, red-black colouring and black heights, skip-list level
 * membership, bucket placement. Returns 0, or -1 with a message in err. */
int intset_check(const intset_t *s, char *err, size_t errlen);

/* The set's kind. */
intset_kind_t intset_kind(const intset_t *s);

/* Short name ("ll", "sl", "rb", "hs", "rb-aw", "sl-aw") and its inverse (0, or -1 if
 * unknown). */
const char *intset_kind_name(intset_kind_t k);
int intset_kind_parse(const char *name, intset_kind_t *out);

#endif /* BENCH_INTSET_H */
