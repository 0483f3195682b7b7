/* SPDX-License-Identifier: MIT */
/* bench/ds/intset.c: dispatch of intset.h onto the structures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intset_impl.h"

struct intset {
  const intset_ops_t *ops;
  void *impl;
  intset_kind_t kind;
};

static const intset_ops_t *const kind_ops[INTSET_KIND_COUNT] = {
    [INTSET_LL] = &intset_ll_ops,       [INTSET_SL] = &intset_sl_ops,
    [INTSET_RB] = &intset_rb_ops,       [INTSET_HS] = &intset_hs_ops,
    [INTSET_RB_AW] = &intset_rb_aw_ops, [INTSET_SL_AW] = &intset_sl_aw_ops,
};

/* An insertion (the initial fill included) found no memory: the set does
 * not fit. Inside a transaction there is no way back to the caller; the run
 * ends as a failed one (exit status 1), not with a core dump. */
TM_PURE void intset_out_of_memory(void) {
  fputs("intset: out of memory allocating a node: the set does not fit in memory\n", stderr);
  exit(1);
}

intset_t *intset_create(intset_kind_t kind, const intset_params_t *params) {
  if ((unsigned)kind >= INTSET_KIND_COUNT) return NULL;
  intset_params_t p = {0};
  if (params != NULL) p = *params;
  intset_t *s = malloc(sizeof *s);
  if (s == NULL) return NULL;
  s->ops = kind_ops[kind];
  s->kind = kind;
  s->impl = s->ops->create(&p);
  if (s->impl == NULL) {
    free(s);
    return NULL;
  }
  return s;
}

void intset_destroy(intset_t *s) {
  if (s == NULL) return;
  s->ops->destroy(s->impl);
  free(s);
}

bool intset_add(intset_t *s, long key) { return s->ops->add(s->impl, key); }

bool intset_remove(intset_t *s, long key) { return s->ops->remove(s->impl, key); }

bool intset_contains(intset_t *s, long key) { return s->ops->contains(s->impl, key); }

size_t intset_size(const intset_t *s) { return s->ops->size(s->impl); }

int intset_check(const intset_t *s, char *err, size_t errlen) {
  if (errlen > 0) err[0] = '\0';
  return s->ops->check(s->impl, err, errlen);
}

intset_kind_t intset_kind(const intset_t *s) { return s->kind; }

const char *intset_kind_name(intset_kind_t k) {
  /* The name comes with the operations (one table): a kind mapped to
   * another structure's operations cannot pass for itself. */
  return (unsigned)k < INTSET_KIND_COUNT ? kind_ops[k]->name : "?";
}

int intset_kind_parse(const char *name, intset_kind_t *out) {
  for (int k = 0; k < INTSET_KIND_COUNT; k++) {
    if (strcmp(name, kind_ops[k]->name) == 0) {
      *out = (intset_kind_t)k;
      return 0;
    }
  }
  return -1;
}
