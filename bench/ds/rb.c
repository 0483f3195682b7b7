/* SPDX-License-Identifier: MIT */
/* bench/ds/rb.c: red-black tree set (CLRS algorithms with NULL leaves and
 * parent pointers). Every field access goes through the TM layer; fix-ups
 * keep the values they already loaded and store a colour only when it
 * changes, so that a transaction writes (and locks) as little as possible.
 *
 * Two kinds share this code and differ only in the search descent:
 *  "rb"     loads both children at every level and picks one without a
 *           branch (tm_pick_lt_ptr), which suits explicit barriers;
 *  "rb-aw"  the descent "as written" by a user who does not know the
 *           barriers: branch on the key comparison, load one child per
 *           step, as the trees of TinySTM's tests [Felber08] and of STAMP
 *           [Minh08] do. It measures the engine on code that was not
 *           shaped around it. */
#include <stdio.h>
#include <stdlib.h>

#include "intset_impl.h"
#include "tm.h"

enum { RB_BLACK = 0, RB_RED = 1 };

typedef struct rbnode {
  long key;
  long color;
  struct rbnode *left, *right, *parent;
} rbnode_t;

typedef struct rbset {
  rbnode_t *root;
} rbset_t;

/* ---- transactional field access --------------------------------------- */

TM_SAFE static inline rbnode_t *rb_left(rbnode_t *n) { return TM_LOAD_PTR(&n->left); }
TM_SAFE static inline rbnode_t *rb_right(rbnode_t *n) { return TM_LOAD_PTR(&n->right); }
TM_SAFE static inline rbnode_t *rb_parent(rbnode_t *n) { return TM_LOAD_PTR(&n->parent); }
TM_SAFE static inline long rb_key(rbnode_t *n) { return TM_LOAD_LONG(&n->key); }

/* NULL leaves are black. */
TM_SAFE static inline bool rb_is_red(rbnode_t *n) {
  return n != NULL && TM_LOAD_LONG(&n->color) == RB_RED;
}

/* Colour test for a node known to exist (no NULL test: that test would
 * make the compiler isolate a "NULL" path, which libitm cannot compile). */
TM_SAFE static inline bool rb_node_is_red(rbnode_t *n) { return TM_LOAD_LONG(&n->color) == RB_RED; }

TM_SAFE static inline void rb_set_color(rbnode_t *n, long c) { TM_STORE_LONG(&n->color, c); }

/* Make p's child link that points at old point at new (p NULL: the root). */
TM_SAFE static void rb_replace_child(rbset_t *t, rbnode_t *p, rbnode_t *old, rbnode_t *new_child) {
  if (p == NULL)
    TM_STORE_PTR(&t->root, new_child);
  else if (rb_left(p) == old)
    TM_STORE_PTR(&p->left, new_child);
  else
    TM_STORE_PTR(&p->right, new_child);
}

/* x's right child y takes x's place; x becomes y's left child. */
TM_SAFE static void rb_rotate_left(rbset_t *t, rbnode_t *x) {
  rbnode_t *y = rb_right(x);
  rbnode_t *b = rb_left(y);
  rbnode_t *p = rb_parent(x);
  TM_STORE_PTR(&x->right, b);
  if (b != NULL) TM_STORE_PTR(&b->parent, x);
  TM_STORE_PTR(&y->parent, p);
  rb_replace_child(t, p, x, y);
  TM_STORE_PTR(&y->left, x);
  TM_STORE_PTR(&x->parent, y);
}

/* Mirror of rb_rotate_left. */
TM_SAFE static void rb_rotate_right(rbset_t *t, rbnode_t *x) {
  rbnode_t *y = rb_left(x);
  rbnode_t *b = rb_right(y);
  rbnode_t *p = rb_parent(x);
  TM_STORE_PTR(&x->left, b);
  if (b != NULL) TM_STORE_PTR(&b->parent, x);
  TM_STORE_PTR(&y->parent, p);
  rb_replace_child(t, p, x, y);
  TM_STORE_PTR(&y->right, x);
  TM_STORE_PTR(&x->parent, y);
}

/* ---- lookup -------------------------------------------------------------- */

/* The node holding key, or NULL; *parentp gets the last node visited (the
 * parent for an insertion) and *went_left the side taken from it. With
 * as_written (a constant at every call site, so each kind gets its own
 * loop) the descent branches and loads one child per step. */
TM_SAFE static inline rbnode_t *rb_find_tx(rbset_t *t, long key, rbnode_t **parentp,
                                           bool *went_left, bool as_written) {
  rbnode_t *parent = NULL;
  rbnode_t *n = TM_LOAD_PTR(&t->root);
  bool left = false;
  while (n != NULL) {
    long k = rb_key(n);
    if (k == key) break;
    parent = n;
    left = key < k;
    if (as_written)
      n = left ? rb_left(n) : rb_right(n);
    else
      n = tm_pick_lt_ptr(key, k, rb_left(n), rb_right(n)); /* no branch: tm.h */
  }
  *parentp = parent;
  *went_left = left;
  return n;
}

/* ---- insertion ----------------------------------------------------------- */

/* Restore the red-black properties after linking the red node z. */
TM_SAFE static void rb_insert_fixup(rbset_t *t, rbnode_t *z) {
  for (;;) {
    rbnode_t *p = rb_parent(z);
    if (p == NULL) { /* z is the root: it is red here */
      rb_set_color(z, RB_BLACK);
      return;
    }
    if (!rb_is_red(p)) return;
    rbnode_t *g = rb_parent(p); /* p is red, so not the root */
    bool p_is_left = rb_left(g) == p;
    rbnode_t *u = p_is_left ? rb_right(g) : rb_left(g);
    if (rb_is_red(u)) { /* recolour and move up */
      rb_set_color(p, RB_BLACK);
      rb_set_color(u, RB_BLACK);
      rb_set_color(g, RB_RED);
      z = g;
      continue;
    }
    if (p_is_left) {
      if (rb_right(p) == z) { /* inner child: rotate it outside */
        rb_rotate_left(t, p);
        p = z;
      }
      rb_set_color(p, RB_BLACK);
      rb_set_color(g, RB_RED);
      rb_rotate_right(t, g);
    } else {
      if (rb_left(p) == z) {
        rb_rotate_right(t, p);
        p = z;
      }
      rb_set_color(p, RB_BLACK);
      rb_set_color(g, RB_RED);
      rb_rotate_left(t, g);
    }
    return;
  }
}

TM_SAFE static inline bool rb_add_tx(rbset_t *t, long key, bool as_written) {
  rbnode_t *parent;
  bool left;
  if (rb_find_tx(t, key, &parent, &left, as_written) != NULL) return false;
  rbnode_t *z = TM_MALLOC(sizeof *z);
  if (z == NULL) intset_out_of_memory();
  TM_INIT_LONG(&z->key, key);
  TM_INIT_LONG(&z->color, RB_RED);
  TM_INIT_PTR(&z->left, NULL);
  TM_INIT_PTR(&z->right, NULL);
  TM_INIT_PTR(&z->parent, parent);
  if (parent == NULL)
    TM_STORE_PTR(&t->root, z);
  else if (left)
    TM_STORE_PTR(&parent->left, z);
  else
    TM_STORE_PTR(&parent->right, z);
  rb_insert_fixup(t, z);
  return true;
}

/* ---- deletion ------------------------------------------------------------ */

/* One step of the deletion fix-up where the "doubly black" x (maybe NULL)
 * is the LEFT child of *xpp. Returns the next x and updates *xpp; returns
 * NULL with *xpp = NULL when the tree is balanced again. */
TM_SAFE static rbnode_t *rb_delete_fix_left(rbset_t *t, rbnode_t **xpp) {
  rbnode_t *xp = *xpp;
  rbnode_t *w = rb_right(xp); /* non-NULL: x's side is one black short */
  if (rb_node_is_red(w)) {
    rb_set_color(w, RB_BLACK);
    rb_set_color(xp, RB_RED);
    rb_rotate_left(t, xp);
    w = rb_right(xp);
  }
  rbnode_t *wl = rb_left(w), *wr = rb_right(w);
  bool wl_red = rb_is_red(wl), wr_red = rb_is_red(wr);
  if (!wl_red && !wr_red) {
    rb_set_color(w, RB_RED);
    *xpp = rb_parent(xp);
    return xp;
  }
  if (!wr_red) { /* wl red: rotate it to the outside */
    rb_set_color(wl, RB_BLACK);
    rb_set_color(w, RB_RED);
    rb_rotate_right(t, w);
    wr = w;
    w = wl;
  }
  long xp_color = TM_LOAD_LONG(&xp->color);
  if (xp_color == RB_RED) { /* w is black: swap colours with xp */
    rb_set_color(w, RB_RED);
    rb_set_color(xp, RB_BLACK);
  }
  rb_set_color(wr, RB_BLACK);
  rb_rotate_left(t, xp);
  *xpp = NULL;
  return NULL;
}

/* Mirror of rb_delete_fix_left (x is the RIGHT child of xp). */
TM_SAFE static rbnode_t *rb_delete_fix_right(rbset_t *t, rbnode_t **xpp) {
  rbnode_t *xp = *xpp;
  rbnode_t *w = rb_left(xp);
  if (rb_node_is_red(w)) {
    rb_set_color(w, RB_BLACK);
    rb_set_color(xp, RB_RED);
    rb_rotate_right(t, xp);
    w = rb_left(xp);
  }
  rbnode_t *wl = rb_left(w), *wr = rb_right(w);
  bool wl_red = rb_is_red(wl), wr_red = rb_is_red(wr);
  if (!wl_red && !wr_red) {
    rb_set_color(w, RB_RED);
    *xpp = rb_parent(xp);
    return xp;
  }
  if (!wl_red) {
    rb_set_color(wr, RB_BLACK);
    rb_set_color(w, RB_RED);
    rb_rotate_left(t, w);
    wl = w;
    w = wr;
  }
  long xp_color = TM_LOAD_LONG(&xp->color);
  if (xp_color == RB_RED) {
    rb_set_color(w, RB_RED);
    rb_set_color(xp, RB_BLACK);
  }
  rb_set_color(wl, RB_BLACK);
  rb_rotate_right(t, xp);
  *xpp = NULL;
  return NULL;
}

/* Restore the properties after removing a black node whose place is now
 * taken by x (maybe NULL) under parent xp (NULL: x is the root). */
TM_SAFE static void rb_delete_fixup(rbset_t *t, rbnode_t *x, rbnode_t *xp) {
  while (xp != NULL && !rb_is_red(x)) {
    if (rb_left(xp) == x)
      x = rb_delete_fix_left(t, &xp);
    else
      x = rb_delete_fix_right(t, &xp);
  }
  if (rb_is_red(x)) rb_set_color(x, RB_BLACK);
}

TM_SAFE static inline bool rb_remove_tx(rbset_t *t, long key, bool as_written) {
  rbnode_t *parent;
  bool left;
  rbnode_t *z = rb_find_tx(t, key, &parent, &left, as_written);
  if (z == NULL) return false;
  rbnode_t *zl = rb_left(z), *zr = rb_right(z);
  if (zl != NULL && zr != NULL) {
    /* Two children: move the successor's key here, remove the successor. */
    rbnode_t *y = zr, *yl;
    while ((yl = rb_left(y)) != NULL)
      y = yl;
    TM_STORE_LONG(&z->key, rb_key(y));
    z = y;
    zl = NULL;
    zr = rb_right(y);
  }
  rbnode_t *child = zl != NULL ? zl : zr;
  rbnode_t *p = rb_parent(z);
  if (child != NULL) TM_STORE_PTR(&child->parent, p);
  rb_replace_child(t, p, z, child);
  if (!rb_is_red(z)) rb_delete_fixup(t, child, p);
  TM_FREE(z);
  return true;
}

TM_SAFE static inline bool rb_contains_tx(rbset_t *t, long key, bool as_written) {
  rbnode_t *parent;
  bool left;
  return rb_find_tx(t, key, &parent, &left, as_written) != NULL;
}

/* ---- set interface ------------------------------------------------------- */

static void *rb_create(const intset_params_t *p) {
  (void)p;
  return calloc(1, sizeof(rbset_t));
}

static void rb_free_subtree(rbnode_t *n) {
  while (n != NULL) {
    rb_free_subtree(n->left);
    rbnode_t *right = n->right;
    free(n);
    n = right;
  }
}

static void rb_destroy(void *impl) {
  rbset_t *t = impl;
  rb_free_subtree(t->root);
  free(t);
}

/* One transaction per operation; AW is the as_written flag (a constant). */
#define RB_OPS(suffix, aw)                                                                         \
  static bool rb_add##suffix(void *impl, long key) {                                               \
    rbset_t *t = impl;                                                                             \
    TM_VOLATILE bool res;                                                                          \
    TM_ATOMIC_BEGIN(0)                                                                             \
    res = rb_add_tx(t, key, aw);                                                                   \
    TM_ATOMIC_END();                                                                               \
    return res;                                                                                    \
  }                                                                                                \
  static bool rb_remove##suffix(void *impl, long key) {                                            \
    rbset_t *t = impl;                                                                             \
    TM_VOLATILE bool res;                                                                          \
    TM_ATOMIC_BEGIN(0)                                                                             \
    res = rb_remove_tx(t, key, aw);                                                                \
    TM_ATOMIC_END();                                                                               \
    return res;                                                                                    \
  }                                                                                                \
  static bool rb_contains##suffix(void *impl, long key) {                                          \
    rbset_t *t = impl;                                                                             \
    TM_VOLATILE bool res;                                                                          \
    TM_ATOMIC_BEGIN(1)                                                                             \
    res = rb_contains_tx(t, key, aw);                                                              \
    TM_ATOMIC_END();                                                                               \
    return res;                                                                                    \
  }

RB_OPS(_pick, false)
RB_OPS(_aw, true)

static size_t rb_count(const rbnode_t *n) {
  return n == NULL ? 0 : 1 + rb_count(n->left) + rb_count(n->right);
}

static size_t rb_size(const void *impl) {
  const rbset_t *t = impl;
  return rb_count(t->root);
}

/* Check the subtree at n (keys strictly inside (lo, hi) where the bounds
 * exist, parent links, no red-red, equal black heights). Returns its black
 * height, or -1 with a message. */
static int rb_check_node(const rbnode_t *n, const rbnode_t *parent, const long *lo, const long *hi,
                         char *err, size_t errlen) {
  if (n == NULL) return 1;
  if (n->parent != parent) {
    snprintf(err, errlen, "node %ld: wrong parent link", n->key);
    return -1;
  }
  if ((lo != NULL && n->key <= *lo) || (hi != NULL && n->key >= *hi)) {
    snprintf(err, errlen, "node %ld: out of search-tree order", n->key);
    return -1;
  }
  if (n->color != RB_RED && n->color != RB_BLACK) {
    snprintf(err, errlen, "node %ld: bad colour %ld", n->key, n->color);
    return -1;
  }
  if (n->color == RB_RED && ((n->left != NULL && n->left->color == RB_RED) ||
                             (n->right != NULL && n->right->color == RB_RED))) {
    snprintf(err, errlen, "node %ld: red node with a red child", n->key);
    return -1;
  }
  int lh = rb_check_node(n->left, n, lo, &n->key, err, errlen);
  if (lh < 0) return -1;
  int rh = rb_check_node(n->right, n, &n->key, hi, err, errlen);
  if (rh < 0) return -1;
  if (lh != rh) {
    snprintf(err, errlen, "node %ld: black heights differ (%d vs %d)", n->key, lh, rh);
    return -1;
  }
  return lh + (n->color == RB_BLACK);
}

static int rb_check(const void *impl, char *err, size_t errlen) {
  const rbset_t *t = impl;
  if (t->root != NULL && t->root->color != RB_BLACK) {
    snprintf(err, errlen, "root is red");
    return -1;
  }
  return rb_check_node(t->root, NULL, NULL, NULL, err, errlen) < 0 ? -1 : 0;
}

const intset_ops_t intset_rb_ops = {
    .name = "rb",
    .create = rb_create,
    .destroy = rb_destroy,
    .add = rb_add_pick,
    .remove = rb_remove_pick,
    .contains = rb_contains_pick,
    .size = rb_size,
    .check = rb_check,
};

const intset_ops_t intset_rb_aw_ops = {
    .name = "rb-aw",
    .create = rb_create,
    .destroy = rb_destroy,
    .add = rb_add_aw,
    .remove = rb_remove_aw,
    .contains = rb_contains_aw,
    .size = rb_size,
    .check = rb_check,
};
