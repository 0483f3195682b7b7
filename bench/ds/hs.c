/* SPDX-License-Identifier: MIT */
/* bench/ds/hs.c: hash set, a fixed array of sorted-list buckets. */
#include <stdlib.h>

#include "intset_impl.h"
#include "list_core.h"

typedef struct hsset {
  size_t nbuckets;
  lnode_t **buckets; /* each a NULL-terminated sorted list */
} hsset_t;

/* Bucket of a key: hashed so that neighbouring keys do not share a lock
 * stripe of the bucket array. */
TM_SAFE static inline lnode_t **hs_bucket(const hsset_t *s, long key) {
  return &s->buckets[intset_mix(key) % s->nbuckets];
}

static void *hs_create(const intset_params_t *p) {
  hsset_t *s = malloc(sizeof *s);
  if (s == NULL) return NULL;
  s->nbuckets = p->buckets != 0 ? p->buckets : INTSET_DEFAULT_BUCKETS;
  s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
  if (s->buckets == NULL) {
    free(s);
    return NULL;
  }
  return s;
}

static void hs_destroy(void *impl) {
  hsset_t *s = impl;
  for (size_t b = 0; b < s->nbuckets; b++)
    lcore_free_all(s->buckets[b]);
  free(s->buckets);
  free(s);
}

static bool hs_add(void *impl, long key) {
  hsset_t *s = impl;
  TM_VOLATILE bool res;
  TM_ATOMIC_BEGIN(0)
  res = lcore_add_tx(hs_bucket(s, key), key);
  TM_ATOMIC_END();
  return res;
}

static bool hs_remove(void *impl, long key) {
  hsset_t *s = impl;
  TM_VOLATILE bool res;
  TM_ATOMIC_BEGIN(0)
  res = lcore_remove_tx(hs_bucket(s, key), key);
  TM_ATOMIC_END();
  return res;
}

static bool hs_contains(void *impl, long key) {
  hsset_t *s = impl;
  TM_VOLATILE bool res;
  TM_ATOMIC_BEGIN(1)
  res = lcore_contains_tx(hs_bucket(s, key), key);
  TM_ATOMIC_END();
  return res;
}

static size_t hs_size(const void *impl) {
  const hsset_t *s = impl;
  size_t count = 0;
  for (size_t b = 0; b < s->nbuckets; b++)
    count += lcore_size(s->buckets[b]);
  return count;
}

/* Every bucket sorted, every key in the bucket its hash selects. */
static int hs_check(const void *impl, char *err, size_t errlen) {
  const hsset_t *s = impl;
  for (size_t b = 0; b < s->nbuckets; b++) {
    if (lcore_check_sorted(s->buckets[b], err, errlen) != 0) return -1;
    for (const lnode_t *n = s->buckets[b]; n != NULL; n = n->next) {
      if (hs_bucket(s, n->key) != &s->buckets[b]) {
        snprintf(err, errlen, "key %ld in bucket %zu, hashes elsewhere", n->key, b);
        return -1;
      }
    }
  }
  return 0;
}

const intset_ops_t intset_hs_ops = {
    .name = "hs",
    .create = hs_create,
    .destroy = hs_destroy,
    .add = hs_add,
    .remove = hs_remove,
    .contains = hs_contains,
    .size = hs_size,
    .check = hs_check,
};
