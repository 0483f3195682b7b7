/* SPDX-License-Identifier: MIT */
/* The machine's topology for thread mapping, read from hwloc [Broquedis10] and reduced to
 * a plain tree of splitting levels (mapping.h). hwloc is used only while
 * loading: the tree is copied out and the hwloc topology destroyed, so the
 * queries are plain array reads and a topology costs no hwloc state. */
#define _GNU_SOURCE
#include <sched.h>

#include "mapping.h"
#include "topo_internal.h"

#include <hwloc.h>
#include <hwloc/glibc-sched.h>

#include <errno.h>
#include <schedstm/common.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void sstm__map_seterr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

void sstm__topo_free(sstm_topo_t *t) {
  if (!t) return;
  for (unsigned l = 0; l <= t->depth; l++) {
    if (t->first) free(t->first[l]);
    if (t->child) free(t->child[l]);
  }
  free(t->first);
  free(t->child);
  free(t->count);
  free(t->path);
  free(t->os_index);
  free(t->core_of);
  free(t);
}

int sstm__topo_index(sstm_topo_t *t) {
  /* first[l][x]: the first PU of node x at level l; child[l][x]: its first
   * child at level l+1 (child[l][count[l]] closes the last range). */
  for (unsigned l = 0; l <= t->depth; l++) {
    t->first[l] = calloc(t->count[l] + 1, sizeof **t->first);
    t->child[l] = calloc(t->count[l] + 1, sizeof **t->child);
    if (!t->first[l] || !t->child[l]) return SSTM_ENOMEM;
    t->first[l][t->count[l]] = t->npus;
  }
  t->first[0][0] = 0;
  for (unsigned l = 1; l <= t->depth; l++) {
    for (unsigned p = t->npus; p-- > 0;)
      t->first[l][t->path[(size_t)p * t->depth + (l - 1)]] = p;
  }
  for (unsigned l = 0; l < t->depth; l++) {
    unsigned y = 0;
    for (unsigned x = 0; x <= t->count[l]; x++) {
      while (y < t->count[l + 1] && t->first[l + 1][y] < t->first[l][x])
        y++;
      t->child[l][x] = x == t->count[l] ? t->count[l + 1] : y;
    }
  }
  return 0;
}

/* Copy the tree out of a loaded hwloc topology. */
static int topo_extract(hwloc_topology_t h, sstm_topo_t **out, char *err, size_t errlen) {
  int pudepth = hwloc_get_type_depth(h, HWLOC_OBJ_PU);
  int npus_i = hwloc_get_nbobjs_by_depth(h, (unsigned)pudepth);
  if (pudepth < 0 || npus_i <= 0) {
    sstm__map_seterr(err, errlen, "topology: hwloc found no processing unit");
    return SSTM_EINVAL;
  }
  if ((unsigned)npus_i > SSTM_TOPO_MAX_PUS) {
    sstm__map_seterr(err, errlen, "topology: %d processing units, more than the %u supported",
                     npus_i, SSTM_TOPO_MAX_PUS);
    return SSTM_EINVAL;
  }
  unsigned npus = (unsigned)npus_i;
  unsigned ncand = (unsigned)pudepth; /* candidate levels: hwloc depths 1..pudepth */
  int rc = SSTM_ENOMEM;
  sstm_topo_t *t = calloc(1, sizeof *t);
  hwloc_obj_t *pus = calloc(npus, sizeof *pus);
  /* ids[d * npus + p]: the node of PU p at candidate depth d+1 (DFS numbering). */
  uint32_t *ids = calloc((size_t)ncand * npus + 1, sizeof *ids);
  unsigned *cnt = calloc(ncand + 1, sizeof *cnt);
  int *keep = calloc(ncand + 1, sizeof *keep);
  if (!t || !pus || !ids || !cnt || !keep) goto fail;
  t->npus = npus;
  for (unsigned p = 0; p < npus; p++)
    pus[p] = hwloc_get_obj_by_depth(h, (unsigned)pudepth, p);

  /* Number the nodes of each candidate depth in PU order. A PU with no
   * ancestor at that depth (a level that does not span the machine) gets a
   * virtual node shared with its neighbours under the same parent node. PUs
   * are in DFS order, so each node covers a contiguous range of PUs. */
  for (unsigned d = 0; d < ncand; d++) {
    hwloc_obj_t prev_anc = NULL;
    uint32_t c = 0;
    for (unsigned p = 0; p < npus; p++) {
      hwloc_obj_t anc = hwloc_get_ancestor_obj_by_depth(h, d + 1, pus[p]);
      if ((unsigned)pudepth == d + 1) anc = pus[p];
      bool parent_changed =
          d > 0 && p > 0 && ids[(d - 1) * npus + p] != ids[(d - 1) * npus + p - 1];
      if (p > 0 && (anc != prev_anc || parent_changed)) c++;
      ids[d * npus + p] = c;
      prev_anc = anc;
    }
    cnt[d] = c + 1;
  }
  /* Keep the splitting depths: more nodes than the kept depth above. */
  unsigned depth = 0, above = 1;
  for (unsigned d = 0; d < ncand; d++) {
    if (cnt[d] > above) {
      keep[d] = 1;
      depth++;
      above = cnt[d];
    }
  }
  t->depth = depth;
  t->count = calloc(depth + 1, sizeof *t->count);
  t->first = calloc(depth + 1, sizeof *t->first);
  t->child = calloc(depth + 1, sizeof *t->child);
  t->path = calloc((size_t)npus * (depth ? depth : 1), sizeof *t->path);
  t->os_index = calloc(npus, sizeof *t->os_index);
  t->core_of = calloc(npus, sizeof *t->core_of);
  if (!t->count || !t->first || !t->child || !t->path || !t->os_index || !t->core_of) goto fail;
  t->count[0] = 1;
  size_t dlen = 0;
  t->desc[0] = '\0';
  for (unsigned d = 0, l = 1; d < ncand; d++) {
    if (!keep[d]) continue;
    t->count[l] = cnt[d];
    for (unsigned p = 0; p < npus; p++)
      t->path[(size_t)p * depth + (l - 1)] = ids[d * npus + p];
    char tname[32];
    hwloc_obj_type_snprintf(tname, sizeof tname, hwloc_get_obj_by_depth(h, d + 1, 0), 0);
    int w =
        snprintf(t->desc + dlen, sizeof t->desc - dlen, "%s%s:%u", dlen ? " " : "", tname, cnt[d]);
    if (w > 0 && (size_t)w < sizeof t->desc - dlen) dlen += (size_t)w;
    l++;
  }
  int nnuma = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
  if (depth == 0)
    snprintf(t->desc, sizeof t->desc, "PU:1");
  else if (nnuma > 1 && dlen < sizeof t->desc)
    snprintf(t->desc + dlen, sizeof t->desc - dlen, " (%d NUMA nodes)", nnuma);

  if (sstm__topo_index(t) != 0) goto fail;

  /* Cores: hwloc's Core ancestor; a PU under no core is a core of its own. */
  hwloc_obj_t prev_core = NULL;
  unsigned core = 0;
  for (unsigned p = 0; p < npus; p++) {
    t->os_index[p] = (int)pus[p]->os_index;
    hwloc_obj_t c = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_CORE, pus[p]);
    if (p > 0 && (c == NULL || c != prev_core)) core++;
    t->core_of[p] = core;
    prev_core = c;
  }
  t->ncores = core + 1;
  rc = 0;
  *out = t;
  t = NULL;
fail:
  if (rc == SSTM_ENOMEM) sstm__map_seterr(err, errlen, "topology: out of memory");
  sstm__topo_free(t);
  free(pus);
  free(ids);
  free(cnt);
  free(keep);
  return rc;
}

enum { SRC_SYSTEM, SRC_SYNTHETIC, SRC_XML };

/* Restrict a loaded system topology to the CPUs the calling thread may run
 * on (sched_getaffinity: `taskset`, a parent's sched_setaffinity). hwloc's
 * own "allowed" set is the cgroup's cpuset only, so without this a process
 * started under `taskset -c 0` on a machine of two cores would be mapped
 * onto both, every thread of the other core falling back to the whole set,
 * and a process allowed one CPU would not be seen as single-core. 0, or an
 * error with err set. */
static int restrict_to_affinity(hwloc_topology_t h, char *err, size_t errlen) {
  cpu_set_t cs;
  if (sched_getaffinity(0, sizeof cs, &cs) != 0) return 0; /* keep hwloc's view */
  hwloc_bitmap_t b = hwloc_bitmap_alloc();
  if (b == NULL) {
    sstm__map_seterr(err, errlen, "topology: out of memory");
    return SSTM_ENOMEM;
  }
  int rc = 0;
  hwloc_cpuset_from_glibc_sched_affinity(h, b, &cs, sizeof cs);
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(h);
  hwloc_bitmap_and(b, b, all);
  if (hwloc_bitmap_iszero(b)) {
    sstm__map_seterr(err, errlen,
                     "topology: none of the CPUs this thread may run on is in hwloc's topology");
    rc = SSTM_EINVAL;
  } else if (!hwloc_bitmap_isequal(b, all) &&
             hwloc_topology_restrict(h, b, HWLOC_RESTRICT_FLAG_REMOVE_CPULESS) != 0) {
    sstm__map_seterr(err, errlen, "topology: hwloc could not restrict it to the allowed CPUs: %s",
                     strerror(errno));
    rc = SSTM_EINVAL;
  }
  hwloc_bitmap_free(b);
  return rc;
}

/* The processing units a synthetic description makes, the product of its
 * levels' arities ("Package:2 Core:4 PU:2", or bare "2 4 2"), saturated
 * at cap + 1: hwloc builds every object of the description before the
 * count is checked (topo_extract), so "Package:1000 Core:1000 PU:1000"
 * would take gigabytes and minutes first. Memory children ("[NUMANode]")
 * and attributes ("(memory=...)", "(indexes=...)") count nothing; a level
 * whose arity is not plain digits counts 1 (hwloc then refuses it). */
static uint64_t synthetic_pus(const char *d, uint64_t cap) {
  uint64_t prod = 1;
  unsigned nest = 0; /* inside [...] or (...) */
  for (const char *p = d; *p;) {
    if (*p == '[' || *p == '(') {
      nest++, p++;
    } else if (*p == ']' || *p == ')') {
      nest -= nest > 0, p++;
    } else if (nest > 0 || *p == ' ' || *p == '\t' || *p == '\n') {
      p++;
    } else { /* a level: TYPE:N or N */
      const char *s = p;
      while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '(' && *p != '[')
        p++;
      const char *c = memchr(s, ':', (size_t)(p - s)), *n = c ? c + 1 : s;
      uint64_t a = 0;
      const char *q = n;
      for (; q < p && *q >= '0' && *q <= '9'; q++)
        a = a > cap ? cap + 1 : a * 10 + (uint64_t)(*q - '0');
      if (q == n || q != p) continue;
      if (a > cap) a = cap + 1;
      prod = a != 0 && prod > (cap + 1) / a ? cap + 1 : prod * a;
    }
  }
  return prod;
}

static int topo_load(int src, const char *arg, sstm_topo_t **out, char *err, size_t errlen) {
  if (!out || (src != SRC_SYSTEM && !arg)) {
    sstm__map_seterr(err, errlen, "topology: NULL argument");
    return SSTM_EINVAL;
  }
  *out = NULL;
  if (src == SRC_SYNTHETIC && synthetic_pus(arg, SSTM_TOPO_MAX_PUS) > SSTM_TOPO_MAX_PUS) {
    sstm__map_seterr(err, errlen,
                     "topology: the synthetic description \"%s\" has more than the %u "
                     "processing units supported",
                     arg, SSTM_TOPO_MAX_PUS);
    return SSTM_EINVAL;
  }
  hwloc_topology_t h;
  if (hwloc_topology_init(&h) != 0) {
    sstm__map_seterr(err, errlen, "topology: hwloc_topology_init failed: %s", strerror(errno));
    return SSTM_ENOMEM;
  }
  /* hwloc prints its own diagnostics of bad XML unless told not to. */
  int rc = 0;
  if (src == SRC_SYNTHETIC && hwloc_topology_set_synthetic(h, arg) != 0) {
    sstm__map_seterr(err, errlen, "topology: invalid hwloc synthetic description \"%s\"", arg);
    rc = SSTM_EINVAL;
  } else if (src == SRC_XML && hwloc_topology_set_xml(h, arg) != 0) {
    sstm__map_seterr(err, errlen, "topology: cannot read hwloc XML file %s: %s", arg,
                     strerror(errno));
    rc = SSTM_EINVAL;
  } else if (hwloc_topology_load(h) != 0) {
    sstm__map_seterr(err, errlen, "topology: hwloc could not load the %s topology: %s",
                     src == SRC_XML         ? "XML"
                     : src == SRC_SYNTHETIC ? "synthetic"
                                            : "system",
                     strerror(errno));
    rc = SSTM_EINVAL;
  } else if (src != SRC_SYSTEM || (rc = restrict_to_affinity(h, err, errlen)) == 0) {
    rc = topo_extract(h, out, err, errlen);
  }
  hwloc_topology_destroy(h);
  return rc;
}

int sstm__topo_load_system(sstm_topo_t **out, char *err, size_t errlen) {
  return topo_load(SRC_SYSTEM, NULL, out, err, errlen);
}

int sstm__topo_load_synthetic(const char *desc, sstm_topo_t **out, char *err, size_t errlen) {
  return topo_load(SRC_SYNTHETIC, desc, out, err, errlen);
}

int sstm__topo_load_xml(const char *path, sstm_topo_t **out, char *err, size_t errlen) {
  return topo_load(SRC_XML, path, out, err, errlen);
}

unsigned sstm__topo_npus(const sstm_topo_t *t) { return t->npus; }
unsigned sstm__topo_ncores(const sstm_topo_t *t) { return t->ncores; }
unsigned sstm__topo_core_of(const sstm_topo_t *t, unsigned pu) { return t->core_of[pu]; }
int sstm__topo_os_index(const sstm_topo_t *t, unsigned pu) { return t->os_index[pu]; }
unsigned sstm__topo_depth(const sstm_topo_t *t) { return t->depth; }
bool sstm__topo_single_core(const sstm_topo_t *t) { return t->ncores == 1; }
const char *sstm__topo_describe(const sstm_topo_t *t) { return t->desc; }

unsigned sstm__topo_distance(const sstm_topo_t *t, unsigned a, unsigned b) {
  if (a == b) return 0;
  const uint32_t *pa = t->path + (size_t)a * t->depth, *pb = t->path + (size_t)b * t->depth;
  for (unsigned l = 0; l < t->depth; l++) {
    if (pa[l] != pb[l]) return t->depth - l;
  }
  return 0; /* not reached: distinct PUs differ at the PU level */
}

unsigned sstm__topo_uniform_arity(const sstm_topo_t *t, unsigned l) {
  if (l >= t->depth) return 0;
  unsigned a = t->child[l][1] - t->child[l][0];
  for (unsigned x = 1; x < t->count[l]; x++)
    if (t->child[l][x + 1] - t->child[l][x] != a) return 0;
  return a;
}
