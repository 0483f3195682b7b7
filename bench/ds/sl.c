/* SPDX-License-Identifier: MIT */
/* bench/ds/sl.c: skip-list set. A node's level is derived from a hash of
 * its key (geometric, p = 1/2), so no random-number generator is needed
 * inside transactions. The head is a sentinel with every level; the end of
 * each level is NULL.
 *
 * Two kinds share this code and differ only in the search:
 *  "sl"     a node met again one level down is not re-read (its key is
 *           kept from the level above);
 *  "sl-aw"  the search "as written" in the usual form (as in TinySTM's
 *           test program [Felber08]): the key of the node after the
 *           predecessor is loaded at every step, also when that node was
 *           just read one level up. It measures the engine on the loads
 *           such code makes (re-reads of a stripe already read). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "intset_impl.h"
#include "tm.h"

typedef struct snode {
  long key;
  int level;            /* links in next[], 1..max_level */
  struct snode *next[]; /* next[l]: successor at level l */
} snode_t;

typedef struct slset {
  snode_t *head; /* sentinel with max_level links, key unused */
  int max_level;
} slset_t;

/* Level of a key's node: 1 + trailing zeros of its hash, capped. */
TM_SAFE static inline int sl_level_of(long key, int max_level) {
  uint64_t h = intset_mix(key) | (1ULL << (max_level - 1));
  return 1 + __builtin_ctzll(h);
}

static size_t sl_node_size(int level) {
  return sizeof(snode_t) + (size_t)level * sizeof(snode_t *);
}

/* Default maximum level: about log2 of the key range. */
static int sl_default_levels(long range) {
  int levels = 4;
  while (levels < INTSET_SL_MAX_LEVEL && (1L << levels) < range)
    levels++;
  return levels;
}

static void *sl_create(const intset_params_t *p) {
  int levels = p->levels != 0 ? p->levels : sl_default_levels(p->range_hint);
  if (levels < 1 || levels > INTSET_SL_MAX_LEVEL) return NULL;
  slset_t *s = malloc(sizeof *s);
  if (s == NULL) return NULL;
  s->head = calloc(1, sl_node_size(levels));
  if (s->head == NULL) {
    free(s);
    return NULL;
  }
  s->head->level = levels;
  s->max_level = levels;
  return s;
}

static void sl_destroy(void *impl) {
  slset_t *s = impl;
  snode_t *n = s->head;
  while (n != NULL) {
    snode_t *next = n->next[0];
    free(n);
    n = next;
  }
  free(s);
}

/* Find, at every level, the last node with key < key (preds) and its
 * successor (succs). A node met again one level down is not re-read unless
 * as_written (a constant at every call site). Returns true if succs[0]
 * holds key. */
TM_SAFE static inline bool sl_seek_tx(const slset_t *s, long key, snode_t **preds, snode_t **succs,
                                      bool as_written) {
  snode_t *pred = s->head;
  snode_t *known = NULL; /* last node whose key was loaded */
  long known_key = 0;
  snode_t *cur = NULL; /* after the loop: the successor at level 0 (max_level >= 1) */
  for (int l = s->max_level - 1; l >= 0; l--) {
    cur = TM_LOAD_PTR(&pred->next[l]);
    while (cur != NULL) {
      if (as_written || cur != known) {
        known = cur;
        known_key = TM_LOAD_LONG(&cur->key);
      }
      if (known_key >= key) break;
      pred = cur;
      cur = TM_LOAD_PTR(&cur->next[l]);
    }
    preds[l] = pred;
    succs[l] = cur;
  }
  return cur != NULL && known_key == key;
}

/* Membership: like sl_seek_tx but stops at the first level holding key. */
TM_SAFE static inline bool sl_contains_tx(const slset_t *s, long key, bool as_written) {
  snode_t *pred = s->head;
  snode_t *known = NULL;
  long known_key = 0;
  for (int l = s->max_level - 1; l >= 0; l--) {
    snode_t *cur = TM_LOAD_PTR(&pred->next[l]);
    while (cur != NULL) {
      if (as_written || cur != known) {
        known = cur;
        known_key = TM_LOAD_LONG(&cur->key);
      }
      if (known_key >= key) break;
      pred = cur;
      cur = TM_LOAD_PTR(&cur->next[l]);
    }
    if (cur != NULL && known_key == key) return true;
  }
  return false;
}

TM_SAFE static inline bool sl_add_tx(const slset_t *s, long key, bool as_written) {
  snode_t *preds[INTSET_SL_MAX_LEVEL], *succs[INTSET_SL_MAX_LEVEL];
  if (sl_seek_tx(s, key, preds, succs, as_written)) return false;
  int level = sl_level_of(key, s->max_level);
  snode_t *n = TM_MALLOC(sl_node_size(level));
  if (n == NULL) intset_out_of_memory();
  TM_INIT_LONG(&n->key, key);
  TM_INIT_INT(&n->level, level);
  for (int l = 0; l < level; l++)
    TM_INIT_PTR(&n->next[l], succs[l]);
  for (int l = 0; l < level; l++)
    TM_STORE_PTR(&preds[l]->next[l], n);
  return true;
}

TM_SAFE static inline bool sl_remove_tx(const slset_t *s, long key, bool as_written) {
  snode_t *preds[INTSET_SL_MAX_LEVEL], *succs[INTSET_SL_MAX_LEVEL];
  if (!sl_seek_tx(s, key, preds, succs, as_written)) return false;
  snode_t *victim = succs[0];
  int level = TM_LOAD_INT(&victim->level);
  for (int l = 0; l < level; l++) {
    snode_t *next = TM_LOAD_PTR(&victim->next[l]);
    TM_STORE_PTR(&preds[l]->next[l], next);
  }
  TM_FREE(victim);
  return true;
}

/* One transaction per operation; aw is the as_written flag (a constant). */
#define SL_OPS(suffix, aw)                                                                         \
  static bool sl_add##suffix(void *impl, long key) {                                               \
    const slset_t *s = impl;                                                                       \
    TM_VOLATILE bool res;                                                                          \
    TM_ATOMIC_BEGIN(0)                                                                             \
    res = sl_add_tx(s, key, aw);                                                                   \
    TM_ATOMIC_END();                                                                               \
    return res;                                                                                    \
  }                                                                                                \
  static bool sl_remove##suffix(void *impl, long key) {                                            \
    const slset_t *s = impl;                                                                       \
    TM_VOLATILE bool res;                                                                          \
    TM_ATOMIC_BEGIN(0)                                                                             \
    res = sl_remove_tx(s, key, aw);                                                                \
    TM_ATOMIC_END();                                                                               \
    return res;                                                                                    \
  }                                                                                                \
  static bool sl_contains##suffix(void *impl, long key) {                                          \
    const slset_t *s = impl;                                                                       \
    TM_VOLATILE bool res;                                                                          \
    TM_ATOMIC_BEGIN(1)                                                                             \
    res = sl_contains_tx(s, key, aw);                                                              \
    TM_ATOMIC_END();                                                                               \
    return res;                                                                                    \
  }

SL_OPS(_cached, false)
SL_OPS(_aw, true)

static size_t sl_size(const void *impl) {
  const slset_t *s = impl;
  size_t count = 0;
  for (const snode_t *n = s->head->next[0]; n != NULL; n = n->next[0])
    count++;
  return count;
}

/* Level 0 strictly sorted with valid node levels; every higher level is a
 * sorted list holding exactly the level-0 nodes tall enough for it. */
static int sl_check_level(const slset_t *s, int l, char *err, size_t errlen) {
  const snode_t *below = s->head->next[0];
  for (const snode_t *n = s->head->next[l]; n != NULL; n = n->next[l]) {
    while (below != NULL && below->level <= l)
      below = below->next[0];
    if (below != n) {
      snprintf(err, errlen, "level %d: node %ld is not the next tall node", l, n->key);
      return -1;
    }
    if (n->next[l] != NULL && n->key >= n->next[l]->key) {
      snprintf(err, errlen, "level %d out of order: %ld before %ld", l, n->key, n->next[l]->key);
      return -1;
    }
    below = below->next[0];
  }
  while (below != NULL && below->level <= l)
    below = below->next[0];
  if (below != NULL) {
    snprintf(err, errlen, "level %d misses node %ld", l, below->key);
    return -1;
  }
  return 0;
}

static int sl_check(const void *impl, char *err, size_t errlen) {
  const slset_t *s = impl;
  for (const snode_t *n = s->head->next[0]; n != NULL; n = n->next[0]) {
    if (n->level < 1 || n->level > s->max_level || n->level != sl_level_of(n->key, s->max_level)) {
      snprintf(err, errlen, "node %ld has bad level %d", n->key, n->level);
      return -1;
    }
  }
  for (int l = 0; l < s->max_level; l++) {
    if (sl_check_level(s, l, err, errlen) != 0) return -1;
  }
  return 0;
}

const intset_ops_t intset_sl_ops = {
    .name = "sl",
    .create = sl_create,
    .destroy = sl_destroy,
    .add = sl_add_cached,
    .remove = sl_remove_cached,
    .contains = sl_contains_cached,
    .size = sl_size,
    .check = sl_check,
};

const intset_ops_t intset_sl_aw_ops = {
    .name = "sl-aw",
    .create = sl_create,
    .destroy = sl_destroy,
    .add = sl_add_aw,
    .remove = sl_remove_aw,
    .contains = sl_contains_aw,
    .size = sl_size,
    .check = sl_check,
};
