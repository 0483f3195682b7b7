/* SPDX-License-Identifier: MIT */
/* The topology's representation, shared by the files of src/map only. */
#ifndef SSTM_MAP_TOPO_INTERNAL_H
#define SSTM_MAP_TOPO_INTERNAL_H

#include "mapping.h"

/* Levels 0..depth: level 0 is the root (one node), level depth the PUs
 * (node x is PU x). A node covers PUs first[l][x] .. first[l][x+1]-1 and
 * has children child[l][x] .. child[l][x+1]-1 at level l+1. */
struct sstm_topo {
  unsigned npus, ncores, depth;
  unsigned *count;   /* nodes per level, [depth+1] */
  unsigned **first;  /* [depth+1][count+1] */
  unsigned **child;  /* [depth+1][count+1] (unused at level depth) */
  uint32_t *path;    /* [npus][depth]: node of each PU at levels 1..depth */
  int *os_index;     /* [npus] */
  unsigned *core_of; /* [npus] */
  char desc[160];
};

/* Build first[] and child[] from count[] and path[] (allocates; 0 or
 * SSTM_ENOMEM). */
int sstm__topo_index(sstm_topo_t *t);

/* Format a message into err (when err != NULL and errlen > 0). */
void sstm__map_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* SSTM_MAP_TOPO_INTERNAL_H */
