/* SPDX-License-Identifier: MIT */
/* Placements of threads on PUs: the static strategies, the sharing-aware
 * mapper and the cost model (mapping.h, docs/design/mapping.md).
 *
 * The sharing-aware mapper follows TreeMatch [Jeannot10] in what it
 * optimises: threads that communicate most share the deepest level of the
 * tree. TreeMatch groups bottom-up on a balanced tree (pairs per core,
 * groups of pairs per cache, ...) and pads with idle virtual threads; this
 * one splits top-down over the tree hwloc gives, which need not be balanced
 * (a process restricted to some CPUs sees a partial tree): at each node the
 * threads placed there are divided among the children, each part grown
 * greedily from the heaviest remaining pair by the thread with the most
 * communication with the part, then improved by pairwise swaps (the move of
 * [Kernighan70]'s partitioning heuristic) while a swap cuts less
 * communication. With the hop distance (mapping.h) the cost of a placement
 * is the sum of the cuts at each level, so each level's split minimises its
 * own term given the levels above. */
#include "mapping.h"
#include "topo_internal.h"

#include <schedstm/common.h>
#include <stdlib.h>
#include <string.h>

const char *sstm__map_static_name(sstm_map_static_t s) {
  switch (s) {
  case SSTM_MAP_COMPACT: return "compact";
  case SSTM_MAP_SCATTER: return "scatter";
  case SSTM_MAP_ROUND_ROBIN: return "round-robin";
  }
  return NULL;
}

/* Scatter order of the PUs under node x of level l: one PU from each child
 * in turn (each child's own scatter order), until all are taken. */
static void scatter_order(const sstm_topo_t *t, unsigned l, unsigned x, unsigned *out) {
  if (l == t->depth) {
    out[0] = x;
    return;
  }
  unsigned cb = t->child[l][x], ce = t->child[l][x + 1], k = ce - cb;
  unsigned base = t->first[l][x], n = t->first[l][x + 1] - base;
  /* Each child's order into a scratch area laid out like the PUs. */
  unsigned *sub = malloc((size_t)n * sizeof *sub);
  unsigned *taken = calloc(k, sizeof *taken);
  if (!sub || !taken) {
    /* Out of memory: logical order, still a valid placement. */
    for (unsigned i = 0; i < n; i++)
      out[i] = base + i;
    free(sub);
    free(taken);
    return;
  }
  for (unsigned c = cb; c < ce; c++)
    scatter_order(t, l + 1, c, sub + (t->first[l + 1][c] - base));
  for (unsigned i = 0; i < n;) {
    for (unsigned j = 0; j < k && i < n; j++) {
      unsigned c = cb + j, size = t->first[l + 1][c + 1] - t->first[l + 1][c];
      if (taken[j] < size) out[i++] = sub[t->first[l + 1][c] - base + taken[j]++];
    }
  }
  free(sub);
  free(taken);
}

int sstm__map_static(const sstm_topo_t *t, sstm_map_static_t s, unsigned n, unsigned *pu, char *err,
                     size_t errlen) {
  if (!t || !pu || n == 0 || n > SSTM_MAP_MAX_THREADS) {
    sstm__map_seterr(err, errlen, "map: %u threads (1..%u) or a NULL argument", n,
                     SSTM_MAP_MAX_THREADS);
    return SSTM_EINVAL;
  }
  if (!sstm__map_static_name(s)) {
    sstm__map_seterr(err, errlen, "map: unknown static strategy %d", (int)s);
    return SSTM_EINVAL;
  }
  unsigned P = t->npus;
  unsigned *order = malloc((size_t)P * sizeof *order);
  if (!order) {
    sstm__map_seterr(err, errlen, "map: out of memory");
    return SSTM_ENOMEM;
  }
  if (s == SSTM_MAP_COMPACT) {
    for (unsigned p = 0; p < P; p++)
      order[p] = p;
  } else if (s == SSTM_MAP_SCATTER) {
    scatter_order(t, 0, 0, order);
  } else {
    /* The r-th PU of every core, for r = 0, 1, ... (PUs of a core are
     * consecutive in logical order). */
    unsigned i = 0;
    for (unsigned r = 0; i < P; r++) {
      for (unsigned p = 0; p < P; p++) {
        unsigned rank = 0;
        while (rank < p && t->core_of[p - rank - 1] == t->core_of[p])
          rank++;
        if (rank == r) order[i++] = p;
      }
    }
  }
  for (unsigned i = 0; i < n; i++)
    pu[i] = order[i % P];
  free(order);
  return 0;
}

uint64_t sstm__map_cost(const sstm_topo_t *t, const uint64_t *m, unsigned n, const unsigned *pu) {
  uint64_t sum = 0;
  for (unsigned i = 0; i < n; i++) {
    for (unsigned j = i + 1; j < n; j++) {
      uint64_t w = m[(size_t)i * n + j];
      if (w == 0) continue;
      uint64_t d = sstm__topo_distance(t, pu[i], pu[j]);
      if (d != 0 && w > UINT64_MAX / d) return UINT64_MAX;
      if (sum > UINT64_MAX - w * d) return UINT64_MAX;
      sum += w * d;
    }
  }
  return sum;
}

/* ---- the sharing-aware mapper ---- */

typedef struct mapper {
  const sstm_topo_t *t;
  const uint64_t *m;
  unsigned n;
  unsigned *cap_prefix; /* [npus+1]: slots (thread capacity) of PUs < p */
  unsigned *pu;         /* output */
  /* scratch, sized for n threads */
  int *part, *part2;    /* [n]: the part of each thread, two candidates */
  double *g, *tp;       /* [n]: affinity to the part grown, to the threads placed */
  double *aff;          /* [n][kmax] affinity of each thread to each part */
  unsigned char *inset; /* [n], zero between uses: the threads being split */
  unsigned *want, *order, *tmp;
} mapper_t;

static double w_of(const mapper_t *mp, unsigned a, unsigned b) {
  return (double)mp->m[(size_t)a * mp->n + b];
}

/* Greedy split of th[0..cnt) into k parts of sizes want[0..k), into part[]:
 * the parts are filled largest first (index order on ties), each grown
 * from a seed by the unplaced thread with the most communication with the
 * part. A part starts at an end of the heaviest unplaced pair; with
 * boundary_seeds, at the unplaced thread with the most communication with
 * threads already placed, in this split or outside the threads being split
 * (it continues a chain or a ring where the previous part, or the
 * neighbouring node, stopped instead of cutting the rest into pieces), and
 * at the heaviest pair only when no thread has any. */
static void grow(mapper_t *mp, const unsigned *th, unsigned cnt, unsigned k, bool boundary_seeds,
                 int *part) {
  double *g = mp->g, *tp = mp->tp;
  unsigned *ord = mp->order;
  for (unsigned i = 0; i < cnt; i++) {
    part[i] = -1;
    tp[i] = 0;
  }
  if (boundary_seeds) { /* communication with threads outside th[] */
    for (unsigned i = 0; i < cnt; i++)
      mp->inset[th[i]] = 1;
    for (unsigned i = 0; i < cnt; i++)
      for (unsigned b = 0; b < mp->n; b++)
        if (!mp->inset[b]) tp[i] += w_of(mp, th[i], b);
    for (unsigned i = 0; i < cnt; i++)
      mp->inset[th[i]] = 0;
  }
  for (unsigned j = 0; j < k; j++)
    ord[j] = j;
  for (unsigned a = 1; a < k; a++) { /* insertion sort, stable: largest first */
    unsigned v = ord[a], b = a;
    while (b > 0 && mp->want[ord[b - 1]] < mp->want[v]) {
      ord[b] = ord[b - 1];
      b--;
    }
    ord[b] = v;
  }
  for (unsigned oi = 0; oi < k; oi++) {
    unsigned j = ord[oi], need = mp->want[j];
    if (need == 0) continue;
    int seed = -1;
    double best = 0;
    if (boundary_seeds) {
      for (unsigned a = 0; a < cnt; a++)
        if (part[a] < 0 && tp[a] > best) best = tp[a], seed = (int)a;
    }
    if (seed < 0) {
      best = -1;
      for (unsigned a = 0; a < cnt; a++) {
        if (part[a] >= 0) continue;
        if (seed < 0) seed = (int)a, best = 0;
        for (unsigned b = a + 1; b < cnt; b++) {
          if (part[b] >= 0) continue;
          double w = w_of(mp, th[a], th[b]);
          if (w > best) best = w, seed = (int)a;
        }
      }
    }
    for (unsigned i = 0; i < cnt; i++)
      g[i] = 0;
    for (unsigned c = 0; c < need; c++) {
      int pick = seed;
      if (c > 0) {
        double bw = -1;
        pick = -1;
        for (unsigned i = 0; i < cnt; i++)
          if (part[i] < 0 && g[i] > bw) bw = g[i], pick = (int)i;
      }
      part[pick] = (int)j;
      for (unsigned i = 0; i < cnt; i++) {
        if (part[i] >= 0) continue;
        double w = w_of(mp, th[i], th[pick]);
        g[i] += w;
        tp[i] += w;
      }
    }
  }
}

/* Improve part[] by best-improvement pairwise swaps [Kernighan70] while a
 * swap increases the communication inside the parts (at most 2 cnt swaps).
 * Returns that communication (twice the sum over pairs in one part). */
static double refine(mapper_t *mp, const unsigned *th, unsigned cnt, unsigned k, int *part) {
  double *aff = mp->aff; /* aff[i][j] = communication of th[i] with part j */
  for (unsigned i = 0; i < cnt; i++) {
    for (unsigned j = 0; j < k; j++)
      aff[(size_t)i * k + j] = 0;
    for (unsigned b = 0; b < cnt; b++)
      if (b != i) aff[(size_t)i * k + (unsigned)part[b]] += w_of(mp, th[i], th[b]);
  }
  for (unsigned iter = 0; k > 1 && iter < 2 * cnt; iter++) {
    double best = 0;
    unsigned ba = 0, bb = 0;
    for (unsigned a = 0; a < cnt; a++) {
      unsigned pa = (unsigned)part[a];
      const double *A = aff + (size_t)a * k;
      for (unsigned b = a + 1; b < cnt; b++) {
        unsigned pb = (unsigned)part[b];
        if (pa == pb) continue;
        const double *B = aff + (size_t)b * k;
        double gain = A[pb] - A[pa] + B[pa] - B[pb] - 2 * w_of(mp, th[a], th[b]);
        if (gain > best) best = gain, ba = a, bb = b;
      }
    }
    if (best <= 0) break;
    unsigned pa = (unsigned)part[ba], pb = (unsigned)part[bb];
    for (unsigned i = 0; i < cnt; i++) {
      double wa = w_of(mp, th[i], th[ba]), wb = w_of(mp, th[i], th[bb]);
      aff[(size_t)i * k + pa] += wb - wa;
      aff[(size_t)i * k + pb] += wa - wb;
    }
    part[ba] = (int)pb;
    part[bb] = (int)pa;
  }
  double inside = 0;
  for (unsigned i = 0; i < cnt; i++)
    inside += aff[(size_t)i * k + (unsigned)part[i]];
  return inside;
}

/* Split threads th[0..cnt) into k parts of sizes want[0..k) that keep the
 * most communication inside the parts: both seed rules of grow(), each
 * refined, the better kept (the first on a tie). Result in mp->part;
 * returns the communication kept inside the parts. */
static double split(mapper_t *mp, const unsigned *th, unsigned cnt, unsigned k) {
  grow(mp, th, cnt, k, false, mp->part);
  double a = refine(mp, th, cnt, k, mp->part);
  if (k < 2) return a;
  grow(mp, th, cnt, k, true, mp->part2);
  double b = refine(mp, th, cnt, k, mp->part2);
  if (b > a) memcpy(mp->part, mp->part2, (size_t)cnt * sizeof *mp->part);
  return b > a ? b : a;
}

/* Place threads th[0..cnt) under node x of level l. */
static int place(mapper_t *mp, unsigned l, unsigned x, unsigned *th, unsigned cnt) {
  const sstm_topo_t *t = mp->t;
  if (cnt == 0) return 0;
  if (l == t->depth) {
    for (unsigned i = 0; i < cnt; i++)
      mp->pu[th[i]] = x;
    return 0;
  }
  unsigned cb = t->child[l][x], k = t->child[l][x + 1] - cb;
  unsigned *caps = malloc((size_t)k * sizeof *caps);
  unsigned *sizes = malloc((size_t)k * sizeof *sizes);
  unsigned *sorted = malloc((size_t)cnt * sizeof *sorted);
  if (!caps || !sizes || !sorted) {
    free(caps), free(sizes), free(sorted);
    return SSTM_ENOMEM;
  }
  for (unsigned j = 0; j < k; j++) {
    unsigned c = cb + j;
    caps[j] = mp->cap_prefix[t->first[l + 1][c + 1]] - mp->cap_prefix[t->first[l + 1][c]];
    sizes[j] = 0;
  }
  /* Two ways to size the parts. Compact: the children with the most slots
   * first, each filled (as few packages as possible). Balanced: every child
   * in proportion to its slots (a group that fits a child can stay whole when
   * compact sizes would cut it, e.g. clusters of 8 on packages of 12). The
   * split that keeps more communication inside the children wins, compact
   * on a tie. */
  unsigned *bal = malloc((size_t)k * sizeof *bal);
  int *keep = malloc((size_t)cnt * sizeof *keep);
  if (!bal || !keep) {
    free(caps), free(sizes), free(sorted), free(bal), free(keep);
    return SSTM_ENOMEM;
  }
  unsigned left = cnt, total = 0;
  while (left > 0) {
    unsigned bj = k;
    for (unsigned j = 0; j < k; j++)
      if (sizes[j] == 0 && caps[j] > 0 && (bj == k || caps[j] > caps[bj])) bj = j;
    if (bj == k) break; /* not reached: the node's slots hold cnt threads */
    sizes[bj] = caps[bj] < left ? caps[bj] : left;
    left -= sizes[bj];
  }
  for (unsigned j = 0; j < k; j++)
    total += caps[j];
  left = cnt;
  for (unsigned j = 0; j < k; j++) {
    bal[j] = (unsigned)((uint64_t)cnt * caps[j] / total);
    left -= bal[j];
  }
  for (unsigned j = 0; left > 0; j = (j + 1) % k) {
    if (bal[j] < caps[j]) bal[j]++, left--;
  }
  for (unsigned j = 0; j < k; j++)
    mp->want[j] = sizes[j];
  double inside = split(mp, th, cnt, k);
  if (memcmp(bal, sizes, (size_t)k * sizeof *bal) != 0) {
    memcpy(keep, mp->part, (size_t)cnt * sizeof *keep);
    for (unsigned j = 0; j < k; j++)
      mp->want[j] = bal[j];
    if (split(mp, th, cnt, k) > inside)
      memcpy(sizes, bal, (size_t)k * sizeof *sizes);
    else
      memcpy(mp->part, keep, (size_t)cnt * sizeof *keep);
  }
  free(bal);
  free(keep);
  /* Group the threads by part (stable), then recurse part by part. */
  unsigned pos = 0;
  for (unsigned j = 0; j < k; j++)
    for (unsigned i = 0; i < cnt; i++)
      if (mp->part[i] == (int)j) sorted[pos++] = th[i];
  memcpy(th, sorted, (size_t)cnt * sizeof *th);
  free(sorted);
  int rc = 0;
  pos = 0;
  for (unsigned j = 0; j < k && rc == 0; j++) {
    rc = place(mp, l + 1, cb + j, th + pos, sizes[j]);
    pos += sizes[j];
  }
  free(caps);
  free(sizes);
  return rc;
}

int sstm__map_compute(const sstm_topo_t *t, const uint64_t *m, unsigned n, unsigned flags,
                      unsigned *pu, char *err, size_t errlen) {
  if (!t || !m || !pu || n == 0 || n > SSTM_MAP_MAX_THREADS) {
    sstm__map_seterr(err, errlen, "map: %u threads (1..%u) or a NULL argument", n,
                     SSTM_MAP_MAX_THREADS);
    return SSTM_EINVAL;
  }
  if (flags & ~(unsigned)SSTM_MAP_USE_SMT) {
    sstm__map_seterr(err, errlen, "map: unknown flags 0x%x", flags);
    return SSTM_EINVAL;
  }
  for (unsigned i = 0; i < n; i++) {
    if (m[(size_t)i * n + i] != 0) {
      sstm__map_seterr(err, errlen, "map: matrix diagonal (%u,%u) is not 0", i, i);
      return SSTM_EINVAL;
    }
    for (unsigned j = i + 1; j < n; j++) {
      if (m[(size_t)i * n + j] != m[(size_t)j * n + i]) {
        sstm__map_seterr(err, errlen, "map: matrix is not symmetric at (%u,%u)", i, j);
        return SSTM_EINVAL;
      }
    }
  }
  unsigned P = t->npus;
  mapper_t mp = {.t = t, .m = m, .n = n, .pu = pu};
  unsigned kmax = 1;
  for (unsigned l = 0; l < t->depth; l++)
    for (unsigned x = 0; x < t->count[l]; x++)
      if (t->child[l][x + 1] - t->child[l][x] > kmax) kmax = t->child[l][x + 1] - t->child[l][x];
  mp.cap_prefix = calloc((size_t)P + 1, sizeof *mp.cap_prefix);
  mp.part = malloc((size_t)n * sizeof *mp.part);
  mp.part2 = malloc((size_t)n * sizeof *mp.part2);
  mp.inset = calloc(n, 1);
  mp.g = malloc((size_t)n * sizeof *mp.g);
  mp.tp = malloc((size_t)n * sizeof *mp.tp);
  mp.aff = malloc((size_t)n * kmax * sizeof *mp.aff);
  mp.want = malloc((size_t)kmax * sizeof *mp.want);
  mp.order = malloc((size_t)kmax * sizeof *mp.order);
  mp.tmp = malloc((size_t)n * sizeof *mp.tmp);
  int rc = SSTM_ENOMEM;
  if (!mp.cap_prefix || !mp.part || !mp.part2 || !mp.inset || !mp.g || !mp.tp || !mp.aff ||
      !mp.want || !mp.order || !mp.tmp)
    goto out;
  /* Slots: one PU per core while the threads fit on the cores. */
  bool per_core = !(flags & SSTM_MAP_USE_SMT) && n <= t->ncores;
  unsigned nslots = per_core ? t->ncores : P;
  unsigned per_slot = (n + nslots - 1) / nslots;
  for (unsigned p = 0; p < P; p++) {
    bool slot = !per_core || p == 0 || t->core_of[p - 1] != t->core_of[p];
    mp.cap_prefix[p + 1] = mp.cap_prefix[p] + (slot ? per_slot : 0);
  }
  for (unsigned i = 0; i < n; i++)
    mp.tmp[i] = i;
  rc = place(&mp, 0, 0, mp.tmp, n);
out:
  if (rc == SSTM_ENOMEM) sstm__map_seterr(err, errlen, "map: out of memory");
  free(mp.cap_prefix);
  free(mp.part);
  free(mp.part2);
  free(mp.inset);
  free(mp.g);
  free(mp.tp);
  free(mp.aff);
  free(mp.want);
  free(mp.order);
  free(mp.tmp);
  return rc;
}
