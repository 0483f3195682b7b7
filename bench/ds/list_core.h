/* SPDX-License-Identifier: MIT */
/* bench/ds/list_core.h: a NULL-terminated sorted singly linked list,
 * shared by the linked-list set and the buckets of the hash set. The
 * *_tx functions run inside the caller's transaction; the others are
 * non-transactional. Every node field is read once per visit. */
#ifndef BENCH_LIST_CORE_H
#define BENCH_LIST_CORE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "intset_impl.h"
#include "tm.h"

typedef struct lnode {
  long key;
  struct lnode *next;
} lnode_t;

/* Find the first node with key >= key, starting at the link *head. Returns
 * the link that points at it (so the caller can splice there) and stores
 * the node (NULL at the end) in *curp; *found tells whether its key is key. */
TM_SAFE static inline lnode_t **lcore_seek_tx(lnode_t **head, long key, lnode_t **curp,
                                              bool *found) {
  lnode_t **link = head;
  lnode_t *cur = TM_LOAD_PTR(link);
  long ck = 0;
  while (cur != NULL && (ck = TM_LOAD_LONG(&cur->key)) < key) {
    link = &cur->next;
    cur = TM_LOAD_PTR(link);
  }
  *curp = cur;
  *found = cur != NULL && ck == key;
  return link;
}

/* Insert key into the list at *head; true if it was absent. */
TM_SAFE static inline bool lcore_add_tx(lnode_t **head, long key) {
  lnode_t *cur;
  bool found;
  lnode_t **link = lcore_seek_tx(head, key, &cur, &found);
  if (found) return false;
  lnode_t *n = TM_MALLOC(sizeof *n);
  if (n == NULL) intset_out_of_memory();
  TM_INIT_LONG(&n->key, key);
  TM_INIT_PTR(&n->next, cur);
  TM_STORE_PTR(link, n);
  return true;
}

/* Remove key from the list at *head; true if it was present. */
TM_SAFE static inline bool lcore_remove_tx(lnode_t **head, long key) {
  lnode_t *cur;
  bool found;
  lnode_t **link = lcore_seek_tx(head, key, &cur, &found);
  if (!found) return false;
  lnode_t *next = TM_LOAD_PTR(&cur->next);
  TM_STORE_PTR(link, next);
  TM_FREE(cur);
  return true;
}

/* Membership test inside a transaction. */
TM_SAFE static inline bool lcore_contains_tx(lnode_t **head, long key) {
  lnode_t *cur;
  bool found;
  lcore_seek_tx(head, key, &cur, &found);
  return found;
}

/* Non-transactional: number of nodes. */
static inline size_t lcore_size(const lnode_t *n) {
  size_t count = 0;
  for (; n != NULL; n = n->next)
    count++;
  return count;
}

/* Non-transactional: free every node. */
static inline void lcore_free_all(lnode_t *n) {
  while (n != NULL) {
    lnode_t *next = n->next;
    free(n);
    n = next;
  }
}

/* Non-transactional: keys strictly increasing. Returns 0 or -1 + message. */
static inline int lcore_check_sorted(const lnode_t *n, char *err, size_t errlen) {
  for (; n != NULL && n->next != NULL; n = n->next) {
    if (n->key >= n->next->key) {
      snprintf(err, errlen, "list out of order: %ld before %ld", n->key, n->next->key);
      return -1;
    }
  }
  return 0;
}

#endif /* BENCH_LIST_CORE_H */
