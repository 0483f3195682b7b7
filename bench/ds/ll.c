/* SPDX-License-Identifier: MIT */
/* bench/ds/ll.c: sorted linked-list set. */
#include <stdlib.h>

#include "intset_impl.h"
#include "list_core.h"

typedef struct llset {
  lnode_t *head; /* first node, NULL if empty */
} llset_t;

static void *ll_create(const intset_params_t *p) {
  (void)p;
  return calloc(1, sizeof(llset_t));
}

static void ll_destroy(void *impl) {
  llset_t *s = impl;
  lcore_free_all(s->head);
  free(s);
}

static bool ll_add(void *impl, long key) {
  llset_t *s = impl;
  TM_VOLATILE bool res;
  TM_ATOMIC_BEGIN(0)
  res = lcore_add_tx(&s->head, key);
  TM_ATOMIC_END();
  return res;
}

static bool ll_remove(void *impl, long key) {
  llset_t *s = impl;
  TM_VOLATILE bool res;
  TM_ATOMIC_BEGIN(0)
  res = lcore_remove_tx(&s->head, key);
  TM_ATOMIC_END();
  return res;
}

static bool ll_contains(void *impl, long key) {
  llset_t *s = impl;
  TM_VOLATILE bool res;
  TM_ATOMIC_BEGIN(1)
  res = lcore_contains_tx(&s->head, key);
  TM_ATOMIC_END();
  return res;
}

static size_t ll_size(const void *impl) {
  const llset_t *s = impl;
  return lcore_size(s->head);
}

static int ll_check(const void *impl, char *err, size_t errlen) {
  const llset_t *s = impl;
  return lcore_check_sorted(s->head, err, errlen);
}

const intset_ops_t intset_ll_ops = {
    .name = "ll",
    .create = ll_create,
    .destroy = ll_destroy,
    .add = ll_add,
    .remove = ll_remove,
    .contains = ll_contains,
    .size = ll_size,
    .check = ll_check,
};
