/* SPDX-License-Identifier: MIT */
/* Internal tests of the mapping subsystem (src/map/mapping.h), on hwloc
 * synthetic topologies (so they mean the same on any machine, also one
 * where hwloc sees 2 CPUs) and on the running machine:
 *  - topology: PU, core and level counts, hop distances, OS indexes, a
 *    single-core topology, XML round trip, malformed descriptions;
 *  - the cost model against hand-computed sums;
 *  - the static placements (compact, scatter, round-robin) PU by PU;
 *  - the sharing-aware mapper on known patterns: pairs land on one core,
 *    ring neighbours on contiguous arcs (optimal cost), two clusters on two
 *    packages, all-to-all as a permutation, more threads than PUs, fewer
 *    threads than cores (one per core unless SSTM_MAP_USE_SMT), a random
 *    clustered matrix at least as good as every static placement, and bad
 *    matrices refused;
 *  - the matrix file: round trip, comments and CRLF, and every kind of
 *    malformed file with the line and column of the fault;
 *  - the topology cache: round trip of synthetic machines (same distances,
 *    same placements), a stale key or version, corrupt files refused with
 *    the line (every truncation, random byte changes: refused or a valid
 *    tree, never a crash), and the running machine through a cache
 *    directory (written, read back, a corrupt file replaced, an unwritable
 *    directory reported).
 */
#define _GNU_SOURCE /* fmemopen, CPU_SETSIZE */
#include <hwloc.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/check.h"
#include "../common/runner.h"
#include "map/mapping.h"

static char err[256];

static sstm_topo_t *synth(const char *desc) {
  sstm_topo_t *t = NULL;
  err[0] = '\0';
  int rc = sstm__topo_load_synthetic(desc, &t, err, sizeof err);
  CHECK_MSG(rc == 0, "load \"%s\": %d %s", desc, rc, err);
  return t;
}

static uint64_t *matrix(unsigned n) { return calloc((size_t)n * n, sizeof(uint64_t)); }

static void link_w(uint64_t *m, unsigned n, unsigned a, unsigned b, uint64_t w) {
  m[(size_t)a * n + b] = m[(size_t)b * n + a] = w;
}

#define XEON "Package:8 [NUMANode] L3Cache:1 L2Cache:12 L1dCache:1 Core:1 PU:2"
#define OPTERON "Package:4 Group:2 [NUMANode] L3Cache:1 L2Cache:4 Core:2 PU:1"

TEST(topology_xeon_levels_and_distances) {
  sstm_topo_t *t = synth(XEON);
  CHECK_EQ_U(sstm__topo_npus(t), 192);
  CHECK_EQ_U(sstm__topo_ncores(t), 96);
  CHECK_EQ_U(sstm__topo_depth(t), 3); /* package, core, PU */
  CHECK_FALSE(sstm__topo_single_core(t));
  CHECK_CONTAINS(sstm__topo_describe(t), "Package:8");
  CHECK_CONTAINS(sstm__topo_describe(t), "PU:192");
  CHECK_CONTAINS(sstm__topo_describe(t), "8 NUMA nodes");
  CHECK_EQ_U(sstm__topo_distance(t, 5, 5), 0);
  CHECK_EQ_U(sstm__topo_distance(t, 0, 1), 1);   /* SMT siblings */
  CHECK_EQ_U(sstm__topo_distance(t, 0, 2), 2);   /* same package */
  CHECK_EQ_U(sstm__topo_distance(t, 0, 23), 2);  /* last PU of package 0 */
  CHECK_EQ_U(sstm__topo_distance(t, 0, 24), 3);  /* next package */
  CHECK_EQ_U(sstm__topo_distance(t, 191, 0), 3); /* symmetric */
  CHECK_EQ_U(sstm__topo_core_of(t, 0), 0);
  CHECK_EQ_U(sstm__topo_core_of(t, 1), 0);
  CHECK_EQ_U(sstm__topo_core_of(t, 191), 95);
  CHECK_EQ_I(sstm__topo_os_index(t, 77), 77);
  sstm__topo_free(t);
}

TEST(topology_opteron_levels_and_distances) {
  sstm_topo_t *t = synth(OPTERON);
  CHECK_EQ_U(sstm__topo_npus(t), 64);
  CHECK_EQ_U(sstm__topo_ncores(t), 64);
  CHECK_EQ_U(sstm__topo_depth(t), 4);           /* package, die (NUMA, L3), L2 module, core */
  CHECK_EQ_U(sstm__topo_distance(t, 0, 1), 1);  /* one module's two cores */
  CHECK_EQ_U(sstm__topo_distance(t, 0, 2), 2);  /* one die, one NUMA node */
  CHECK_EQ_U(sstm__topo_distance(t, 0, 8), 3);  /* the package's other die */
  CHECK_EQ_U(sstm__topo_distance(t, 0, 16), 4); /* another package */
  CHECK_CONTAINS(sstm__topo_describe(t), "8 NUMA nodes");
  sstm__topo_free(t);
}

TEST(topology_single_core) {
  sstm_topo_t *t = synth("Core:1 PU:2");
  CHECK_EQ_U(sstm__topo_npus(t), 2);
  CHECK_EQ_U(sstm__topo_ncores(t), 1);
  CHECK_TRUE(sstm__topo_single_core(t));
  CHECK_EQ_U(sstm__topo_depth(t), 1);
  sstm__topo_free(t);
  t = synth("PU:1");
  CHECK_EQ_U(sstm__topo_npus(t), 1);
  CHECK_EQ_U(sstm__topo_depth(t), 0);
  CHECK_TRUE(sstm__topo_single_core(t));
  CHECK_EQ_STR(sstm__topo_describe(t), "PU:1");
  /* Every thread maps to the one PU, at no cost. */
  uint64_t *m = matrix(3);
  link_w(m, 3, 0, 1, 9);
  link_w(m, 3, 1, 2, 4);
  unsigned pu[3] = {7, 7, 7};
  CHECK_OK(sstm__map_compute(t, m, 3, 0, pu, err, sizeof err));
  for (unsigned i = 0; i < 3; i++)
    CHECK_EQ_U(pu[i], 0);
  CHECK_EQ_U(sstm__map_cost(t, m, 3, pu), 0);
  CHECK_OK(sstm__map_static(t, SSTM_MAP_SCATTER, 3, pu, err, sizeof err));
  for (unsigned i = 0; i < 3; i++)
    CHECK_EQ_U(pu[i], 0);
  free(m);
  sstm__topo_free(t);
}

TEST(topology_of_the_running_machine) {
  sstm_topo_t *t = NULL;
  CHECK_RC(sstm__topo_load_system(&t, err, sizeof err), 0);
  unsigned n = sstm__topo_npus(t);
  CHECK_GE_U(n, 1);
  cpu_set_t allowed;
  CHECK_EQ_I(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  CHECK_LE_U(n, (unsigned)CPU_COUNT(&allowed));
  for (unsigned p = 0; p < n; p++) {
    int os = sstm__topo_os_index(t, p);
    CHECK_TRUE(os >= 0 && os < CPU_SETSIZE);
    CHECK_TRUE(CPU_ISSET(os, &allowed));
    for (unsigned q = 0; q < n; q++)
      CHECK_EQ_U(sstm__topo_distance(t, p, q), sstm__topo_distance(t, q, p));
  }
  CHECK_EQ_U(sstm__topo_single_core(t), sstm__topo_ncores(t) == 1);
  sstm__topo_free(t);
}

/* The topology follows the thread's affinity (taskset), not only hwloc's
 * allowed set (the cgroup's): restricted to one CPU, it is one PU, that
 * CPU, one core; the mapping is then disabled as for a machine of one
 * core. */
TEST(topology_follows_the_affinity) {
  cpu_set_t allowed;
  CHECK_EQ_I(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  unsigned tried = 0;
  for (int c = 0; c < CPU_SETSIZE && tried < 2; c++) {
    if (!CPU_ISSET(c, &allowed)) continue;
    tried++;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    CHECK_EQ_I(sched_setaffinity(0, sizeof one, &one), 0);
    sstm_topo_t *t = NULL;
    int rc = sstm__topo_load_system(&t, err, sizeof err);
    CHECK_EQ_I(sched_setaffinity(0, sizeof allowed, &allowed), 0);
    CHECK_RC(rc, 0);
    CHECK_EQ_U(sstm__topo_npus(t), 1);
    CHECK_EQ_I(sstm__topo_os_index(t, 0), c);
    CHECK_TRUE(sstm__topo_single_core(t));
    sstm__topo_free(t);
  }
  CHECK_GE_U(tried, 1);
}

TEST(topology_from_xml_matches_its_source) {
  hwloc_topology_t h;
  CHECK_EQ_I(hwloc_topology_init(&h), 0);
  CHECK_EQ_I(hwloc_topology_set_synthetic(h, OPTERON), 0);
  CHECK_EQ_I(hwloc_topology_load(h), 0);
  char path[] = "/tmp/sstm-map-XXXXXX";
  int fd = mkstemp(path);
  CHECK_GE_I(fd, 0);
  close(fd);
  CHECK_EQ_I(hwloc_topology_export_xml(h, path, 0), 0);
  hwloc_topology_destroy(h);
  sstm_topo_t *x = NULL, *s = synth(OPTERON);
  CHECK_RC(sstm__topo_load_xml(path, &x, err, sizeof err), 0);
  CHECK_EQ_U(sstm__topo_npus(x), sstm__topo_npus(s));
  CHECK_EQ_U(sstm__topo_depth(x), sstm__topo_depth(s));
  CHECK_EQ_STR(sstm__topo_describe(x), sstm__topo_describe(s));
  for (unsigned p = 0; p < 64; p++)
    for (unsigned q = 0; q < 64; q += 7)
      CHECK_EQ_U(sstm__topo_distance(x, p, q), sstm__topo_distance(s, p, q));
  unlink(path);
  sstm__topo_free(x);
  sstm__topo_free(s);
  CHECK_RC(sstm__topo_load_xml("/nonexistent/topo.xml", &x, err, sizeof err), SSTM_EINVAL);
  CHECK_NULL(x);
  CHECK_CONTAINS(err, "/nonexistent/topo.xml");
}

TEST(topology_bad_input) {
  sstm_topo_t *t = (sstm_topo_t *)&err;
  CHECK_RC(sstm__topo_load_synthetic("Package:x Core:2", &t, err, sizeof err), SSTM_EINVAL);
  CHECK_NULL(t);
  CHECK_CONTAINS(err, "invalid hwloc synthetic description \"Package:x Core:2\"");
  CHECK_RC(sstm__topo_load_synthetic(NULL, &t, err, sizeof err), SSTM_EINVAL);
  CHECK_RC(sstm__topo_load_synthetic("PU:2", NULL, NULL, 0), SSTM_EINVAL);
}

/* A synthetic description with more PUs than supported is refused before
 * hwloc builds it: "Package:1000 Core:1000 PU:1000" (10^9 PUs) made hwloc
 * allocate every object first (sstm_init with SCHEDSTM_MAP_TOPOLOGY so set
 * ran for minutes and gigabytes, and the watchdog ends this test then).
 * Memory children and attributes are not levels. (The largest supported
 * count, 65536, loads too, slowly: hwloc's objects.) */
TEST(topology_too_large_is_refused_before_it_is_built) {
  static const char *const big[] = {
      "Package:1000 Core:1000 PU:1000",
      "Package:65536 Core:65536 PU:65536 PU:65536",
      "1000 1000 1000",
      "Package:2 [NUMANode(memory=1000000)] Core:1000000 PU:2",
      "Package:257 Core:128 PU:2",
      "Package:99999999999999999999999 PU:2",
  };
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    sstm_topo_t *t = (sstm_topo_t *)&err;
    CHECK_RC(sstm__topo_load_synthetic(big[i], &t, err, sizeof err), SSTM_EINVAL);
    CHECK_NULL(t);
    CHECK_CONTAINS(err, "more than the 65536 processing units supported");
  }
  sstm_topo_t *t = NULL;
  CHECK_OK(sstm__topo_load_synthetic(
      "Package:2 [NUMANode(memory=1000000)] Core:128 PU:2(indexes=0:512)", &t, err, sizeof err));
  CHECK_EQ_U(sstm__topo_npus(t), 512);
  sstm__topo_free(t);
}

/* 4 PUs: two packages of two single-PU cores; distance 1 within a package,
 * 2 across. */
TEST(cost_model_hand_computed) {
  sstm_topo_t *t = synth("Package:2 Core:2 PU:1");
  uint64_t *m = matrix(4);
  link_w(m, 4, 0, 1, 10);
  link_w(m, 4, 0, 2, 3);
  link_w(m, 4, 1, 3, 5);
  link_w(m, 4, 2, 3, 7);
  unsigned id[4] = {0, 1, 2, 3};
  /* 0,1 in package 0; 2,3 in package 1: 10*1 + 3*2 + 5*2 + 7*1 = 33 */
  CHECK_EQ_U(sstm__map_cost(t, m, 4, id), 33);
  unsigned alt[4] = {0, 2, 1, 3};
  /* 0,2 together; 1,3 together: 10*2 + 3*1 + 5*1 + 7*2 = 42 */
  CHECK_EQ_U(sstm__map_cost(t, m, 4, alt), 42);
  unsigned same[4] = {1, 1, 1, 1};
  CHECK_EQ_U(sstm__map_cost(t, m, 4, same), 0);
  /* The mapper finds the 33 (the optimum: 0-1 and 2-3 are the heavy pairs). */
  unsigned pu[4];
  CHECK_OK(sstm__map_compute(t, m, 4, 0, pu, err, sizeof err));
  CHECK_EQ_U(sstm__map_cost(t, m, 4, pu), 33);
  /* Saturation instead of a wrapped sum. */
  link_w(m, 4, 0, 3, UINT64_MAX / 2);
  CHECK_EQ_U(sstm__map_cost(t, m, 4, alt), UINT64_MAX);
  free(m);
  sstm__topo_free(t);
}

TEST(static_placements) {
  sstm_topo_t *t = synth("Package:2 Core:2 PU:2");
  unsigned pu[10];
  static const unsigned compact[10] = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1};
  static const unsigned scatter[10] = {0, 4, 2, 6, 1, 5, 3, 7, 0, 4};
  static const unsigned rr[10] = {0, 2, 4, 6, 1, 3, 5, 7, 0, 2};
  CHECK_OK(sstm__map_static(t, SSTM_MAP_COMPACT, 10, pu, err, sizeof err));
  CHECK_EQ_MEM(pu, compact, sizeof compact);
  CHECK_OK(sstm__map_static(t, SSTM_MAP_SCATTER, 10, pu, err, sizeof err));
  CHECK_EQ_MEM(pu, scatter, sizeof scatter);
  CHECK_OK(sstm__map_static(t, SSTM_MAP_ROUND_ROBIN, 10, pu, err, sizeof err));
  CHECK_EQ_MEM(pu, rr, sizeof rr);
  CHECK_EQ_STR(sstm__map_static_name(SSTM_MAP_ROUND_ROBIN), "round-robin");
  CHECK_NULL(sstm__map_static_name((sstm_map_static_t)99));
  CHECK_RC(sstm__map_static(t, (sstm_map_static_t)99, 4, pu, err, sizeof err), SSTM_EINVAL);
  CHECK_CONTAINS(err, "unknown static strategy 99");
  CHECK_RC(sstm__map_static(t, SSTM_MAP_COMPACT, 0, pu, err, sizeof err), SSTM_EINVAL);
  CHECK_RC(sstm__map_static(t, SSTM_MAP_COMPACT, SSTM_MAP_MAX_THREADS + 1, pu, err, sizeof err),
           SSTM_EINVAL);
  sstm__topo_free(t);
}

/* 16 threads, pairs (i, i+8) communicate: each pair lands on one core. */
TEST(mapper_pairs_share_a_core) {
  sstm_topo_t *t = synth("Package:2 Core:4 PU:2");
  uint64_t *m = matrix(16);
  for (unsigned i = 0; i < 8; i++)
    link_w(m, 16, i, i + 8, 1000 + i);
  for (unsigned i = 0; i < 16; i++) /* background noise */
    for (unsigned j = i + 1; j < 16; j++)
      if (m[i * 16 + j] == 0) link_w(m, 16, i, j, 1);
  unsigned pu[16], pu2[16];
  CHECK_OK(sstm__map_compute(t, m, 16, 0, pu, err, sizeof err));
  for (unsigned i = 0; i < 8; i++)
    CHECK_EQ_U(sstm__topo_distance(t, pu[i], pu[i + 8]), 1);
  /* A permutation of the PUs. */
  unsigned seen = 0;
  for (unsigned i = 0; i < 16; i++)
    seen |= 1u << pu[i];
  CHECK_EQ_X(seen, 0xffff);
  /* Deterministic. */
  CHECK_OK(sstm__map_compute(t, m, 16, 0, pu2, err, sizeof err));
  CHECK_EQ_MEM(pu, pu2, sizeof pu);
  free(m);
  sstm__topo_free(t);
}

/* A ring of 16 threads on 4 packages x 2 cores x 2 PUs: the optimum puts
 * arcs of 4 in each package (2 pairs on cores at distance 1, 1 edge at 2,
 * 4 edges across packages at 3): 100 * (4 * (2 + 2) + 4 * 3) = 2800. */
TEST(mapper_ring_neighbours_on_arcs) {
  sstm_topo_t *t = synth("Package:4 Core:2 PU:2");
  unsigned n = 16;
  uint64_t *m = matrix(n);
  /* Thread numbers scrambled along the ring, so the identity is no help. */
  unsigned ring[16];
  for (unsigned i = 0; i < n; i++)
    ring[i] = (i * 5 + 3) % n;
  for (unsigned i = 0; i < n; i++)
    link_w(m, n, ring[i], ring[(i + 1) % n], 100);
  unsigned pu[16];
  CHECK_OK(sstm__map_compute(t, m, n, 0, pu, err, sizeof err));
  CHECK_EQ_U(sstm__map_cost(t, m, n, pu), 2800);
  unsigned st[16];
  for (int s = SSTM_MAP_COMPACT; s <= SSTM_MAP_ROUND_ROBIN; s++) {
    CHECK_OK(sstm__map_static(t, (sstm_map_static_t)s, n, st, err, sizeof err));
    CHECK_GE_U(sstm__map_cost(t, m, n, st), 2800);
  }
  free(m);
  sstm__topo_free(t);
}

/* Two clusters (even and odd threads) on two packages: one each. */
TEST(mapper_two_clusters_two_packages) {
  sstm_topo_t *t = synth("Package:2 Core:4 PU:1");
  uint64_t *m = matrix(8);
  for (unsigned i = 0; i < 8; i++)
    for (unsigned j = i + 1; j < 8; j++)
      link_w(m, 8, i, j, (i % 2 == j % 2) ? 50 : 1);
  unsigned pu[8];
  CHECK_OK(sstm__map_compute(t, m, 8, 0, pu, err, sizeof err));
  for (unsigned i = 2; i < 8; i++)
    CHECK_EQ_U(pu[i] / 4, pu[i % 2] / 4);
  CHECK_NE_U(pu[0] / 4, pu[1] / 4);
  free(m);
  sstm__topo_free(t);
}

/* Uniform communication: every full placement costs the same; the mapper's
 * is a permutation with the compact cost. */
TEST(mapper_all_to_all) {
  sstm_topo_t *t = synth("Package:2 Core:3 PU:2");
  unsigned n = 12;
  uint64_t *m = matrix(n);
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = i + 1; j < n; j++)
      link_w(m, n, i, j, 7);
  unsigned pu[12], c[12];
  CHECK_OK(sstm__map_compute(t, m, n, 0, pu, err, sizeof err));
  CHECK_OK(sstm__map_static(t, SSTM_MAP_COMPACT, n, c, err, sizeof err));
  CHECK_EQ_U(sstm__map_cost(t, m, n, pu), sstm__map_cost(t, m, n, c));
  unsigned seen = 0;
  for (unsigned i = 0; i < n; i++)
    seen |= 1u << pu[i];
  CHECK_EQ_X(seen, 0xfff);
  free(m);
  sstm__topo_free(t);
}

/* 64 threads in 8 clusters of 8 on the Xeon (8 packages of 12 cores):
 * filling packages in turn (12 threads each) would cut clusters; each
 * cluster stays in one package. */
TEST(mapper_clusters_stay_whole_when_filling_would_cut_them) {
  sstm_topo_t *t = synth(XEON);
  unsigned n = 64;
  uint64_t *m = matrix(n);
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = i + 1; j < n; j++)
      if ((i * 37) % 8 == (j * 37) % 8) link_w(m, n, i, j, 100);
  unsigned pu[64];
  CHECK_OK(sstm__map_compute(t, m, n, 0, pu, err, sizeof err));
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = i + 1; j < n; j++)
      if ((i * 37) % 8 == (j * 37) % 8) CHECK_EQ_U(sstm__topo_distance(t, pu[i], pu[j]), 2);
  CHECK_EQ_U(sstm__map_cost(t, m, n, pu), 8 * 28 * 100 * 2);
  free(m);
  sstm__topo_free(t);
}

/* A ring of 256 threads on the Opteron's 64 PUs, 4 threads per PU: the
 * optimum keeps an arc of 4 on each PU and cuts the ring 64 times: 32 times
 * inside an L2 module (distance 1), 24 inside a die (2), 4 between the dies
 * of a package (3), 4 across packages (4): 100 * (32 + 48 + 12 + 16). */
TEST(mapper_ring_oversubscribed_keeps_arcs) {
  sstm_topo_t *t = synth(OPTERON);
  unsigned n = 256;
  uint64_t *m = matrix(n);
  unsigned *ring = malloc(n * sizeof *ring), *pu = malloc(n * sizeof *pu);
  for (unsigned i = 0; i < n; i++)
    ring[i] = (i * 29 + 11) % n;
  for (unsigned i = 0; i < n; i++)
    link_w(m, n, ring[i], ring[(i + 1) % n], 100);
  CHECK_OK(sstm__map_compute(t, m, n, 0, pu, err, sizeof err));
  CHECK_EQ_U(sstm__map_cost(t, m, n, pu), 10800);
  free(ring);
  free(pu);
  free(m);
  sstm__topo_free(t);
}

/* 12 threads in 4 cliques of 3 on 4 PUs: a clique per PU, cost 0. */
TEST(mapper_more_threads_than_pus) {
  sstm_topo_t *t = synth("Package:2 Core:2 PU:1");
  unsigned n = 12;
  uint64_t *m = matrix(n);
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = i + 1; j < n; j++)
      link_w(m, n, i, j, i % 4 == j % 4 ? 20 : 1);
  unsigned pu[12], load[4] = {0};
  CHECK_OK(sstm__map_compute(t, m, n, 0, pu, err, sizeof err));
  for (unsigned i = 0; i < n; i++) {
    CHECK_LT_U(pu[i], 4);
    load[pu[i]]++;
    CHECK_EQ_U(pu[i], pu[i % 4]);
  }
  for (unsigned p = 0; p < 4; p++)
    CHECK_EQ_U(load[p], 3);
  free(m);
  sstm__topo_free(t);
}

/* 4 threads in two pairs on 2 packages x 4 cores x 2 PUs: one thread per
 * core, each pair in one package; with SSTM_MAP_USE_SMT, a pair per core. */
TEST(mapper_fewer_threads_than_cores) {
  sstm_topo_t *t = synth("Package:2 Core:4 PU:2");
  uint64_t *m = matrix(4);
  link_w(m, 4, 0, 3, 40);
  link_w(m, 4, 1, 2, 40);
  link_w(m, 4, 0, 1, 1);
  unsigned pu[4];
  CHECK_OK(sstm__map_compute(t, m, 4, 0, pu, err, sizeof err));
  for (unsigned i = 0; i < 4; i++)
    for (unsigned j = i + 1; j < 4; j++)
      CHECK_NE_U(sstm__topo_core_of(t, pu[i]), sstm__topo_core_of(t, pu[j]));
  CHECK_EQ_U(sstm__topo_distance(t, pu[0], pu[3]), 2);
  CHECK_EQ_U(sstm__topo_distance(t, pu[1], pu[2]), 2);
  CHECK_OK(sstm__map_compute(t, m, 4, SSTM_MAP_USE_SMT, pu, err, sizeof err));
  CHECK_EQ_U(sstm__topo_distance(t, pu[0], pu[3]), 1);
  CHECK_EQ_U(sstm__topo_distance(t, pu[1], pu[2]), 1);
  free(m);
  sstm__topo_free(t);
}

/* Random clustered matrices on the Xeon: the mapper is at least as good as
 * each static placement (each cluster fits a package, so this is no close
 * call). */
TEST(mapper_beats_static_placements_on_clusters) {
  sstm_topo_t *t = synth(XEON);
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  for (unsigned n = 32; n <= 192; n += 80) {
    uint64_t *m = matrix(n);
    unsigned *perm = malloc(n * sizeof *perm), *pu = malloc(n * sizeof *pu);
    for (unsigned i = 0; i < n; i++)
      perm[i] = i;
    for (unsigned i = n - 1; i > 0; i--) {
      unsigned j = (unsigned)sstm_rng_below(&rng, i + 1), x = perm[i];
      perm[i] = perm[j], perm[j] = x;
    }
    for (unsigned i = 0; i < n; i++)
      for (unsigned j = i + 1; j < n; j++)
        link_w(m, n, perm[i], perm[j],
               (i / 8 == j / 8 ? 100 : 0) + sstm_rng_below(&rng, 3) * (i / 24 == j / 24));
    CHECK_OK(sstm__map_compute(t, m, n, 0, pu, err, sizeof err));
    uint64_t mine = sstm__map_cost(t, m, n, pu);
    unsigned *st = malloc(n * sizeof *st);
    for (int s = SSTM_MAP_COMPACT; s <= SSTM_MAP_ROUND_ROBIN; s++) {
      CHECK_OK(sstm__map_static(t, (sstm_map_static_t)s, n, st, err, sizeof err));
      CHECK_LE_U(mine, sstm__map_cost(t, m, n, st));
    }
    free(st);
    free(m);
    free(perm);
    free(pu);
  }
  sstm__topo_free(t);
}

TEST(mapper_refuses_bad_matrices) {
  sstm_topo_t *t = synth("Package:2 Core:2 PU:1");
  uint64_t *m = matrix(3);
  unsigned pu[3];
  m[0 * 3 + 1] = 4; /* (1,0) stays 0 */
  CHECK_RC(sstm__map_compute(t, m, 3, 0, pu, err, sizeof err), SSTM_EINVAL);
  CHECK_CONTAINS(err, "not symmetric at (0,1)");
  m[1] = 0;
  m[2 * 3 + 2] = 1;
  CHECK_RC(sstm__map_compute(t, m, 3, 0, pu, err, sizeof err), SSTM_EINVAL);
  CHECK_CONTAINS(err, "diagonal (2,2)");
  m[8] = 0;
  CHECK_RC(sstm__map_compute(t, m, 0, 0, pu, err, sizeof err), SSTM_EINVAL);
  CHECK_RC(sstm__map_compute(t, m, 3, 0x10, pu, err, sizeof err), SSTM_EINVAL);
  CHECK_CONTAINS(err, "unknown flags 0x10");
  CHECK_RC(sstm__map_compute(t, NULL, 3, 0, pu, err, sizeof err), SSTM_EINVAL);
  CHECK_OK(sstm__map_compute(t, m, 3, 0, pu, NULL, 0));
  free(m);
  sstm__topo_free(t);
}

/* ---- matrix files ---- */

static int read_text(const char *text, uint64_t **m, unsigned *n) {
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  CHECK_NOT_NULL(f);
  err[0] = '\0';
  int rc = sstm__cmat_read(f, "t.mat", m, n, err, sizeof err);
  fclose(f);
  return rc;
}

TEST(matrix_file_round_trip) {
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  unsigned n = 37;
  uint64_t *m = matrix(n);
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = i + 1; j < n; j++)
      link_w(m, n, i, j, (i + j) % 5 == 0 ? UINT64_MAX : sstm_rng_next(&rng) >> (i % 64));
  char path[] = "/tmp/sstm-mat-XXXXXX";
  int fd = mkstemp(path);
  CHECK_GE_I(fd, 0);
  close(fd);
  CHECK_OK(sstm__cmat_save(path, m, n, err, sizeof err));
  uint64_t *back = NULL;
  unsigned bn = 0;
  CHECK_OK(sstm__cmat_load(path, &back, &bn, err, sizeof err));
  CHECK_EQ_U(bn, n);
  CHECK_EQ_MEM(back, m, (size_t)n * n * sizeof *m);
  unlink(path);
  free(back);
  free(m);
  /* Comments, blank lines, tabs and CRLF anywhere. */
  CHECK_OK(read_text("# saved by hand\n\nschedstm-comm-matrix 1\r\n  # two threads\n"
                     "threads\t2\n0 3\r\n\n3\t0\n# end\n",
                     &back, &bn));
  CHECK_EQ_U(bn, 2);
  CHECK_EQ_U(back[1], 3);
  CHECK_EQ_U(back[2], 3);
  free(back);
}

TEST(matrix_file_malformed) {
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"", "t.mat:1: empty file"},
      {"# only a comment\n", "t.mat:2: empty file"},
      {"schedstm-matrix 1\n", "t.mat:1:1: expected the header"},
      {"schedstm-comm-matrix\n", "t.mat:1:21: expected the format version"},
      {"schedstm-comm-matrix 2\n", "t.mat:1:22: unsupported format version \"2\""},
      {"schedstm-comm-matrix 1 x\n", "t.mat:1:24: unexpected text after the header"},
      {"schedstm-comm-matrix 1\n", "t.mat:2: unexpected end of file: expected \"threads N\""},
      {"schedstm-comm-matrix 1\nthread 2\n", "t.mat:2:1: expected \"threads N\""},
      {"schedstm-comm-matrix 1\nthreads 0\n", "t.mat:2:9: thread count must be"},
      {"schedstm-comm-matrix 1\nthreads 4097\n", "t.mat:2:9: thread count must be"},
      {"schedstm-comm-matrix 1\nthreads -2\n", "t.mat:2:9: thread count must be"},
      {"schedstm-comm-matrix 1\nthreads 2 2\n", "t.mat:2:11: unexpected text after the"},
      {"schedstm-comm-matrix 1\nthreads 2\n0 1\n", "t.mat:4: unexpected end of file: 1 of 2"},
      {"schedstm-comm-matrix 1\nthreads 2\n0\n1 0\n", "t.mat:3:2: row 0 has 1 numbers, expected 2"},
      {"schedstm-comm-matrix 1\nthreads 2\n0 1 2\n", "t.mat:3:5: row 0 has more than 2 numbers"},
      {"schedstm-comm-matrix 1\nthreads 2\n0 x\n", "t.mat:3:3: \"x\" is not a non-negative"},
      {"schedstm-comm-matrix 1\nthreads 2\n0 -1\n", "t.mat:3:3: \"-1\" is not a non-negative"},
      {"schedstm-comm-matrix 1\nthreads 2\n0 1.5\n", "t.mat:3:3: \"1.5\" is not"},
      {"schedstm-comm-matrix 1\nthreads 2\n0 18446744073709551616\n",
       "t.mat:3:3: number \"18446744073709551616\" is larger than 2^64-1"},
      {"schedstm-comm-matrix 1\nthreads 2\n1 0\n", "t.mat:3:1: diagonal cell (0,0) is 1"},
      {"schedstm-comm-matrix 1\nthreads 2\n0 1\n2 0\n",
       "t.mat:4:1: cell (1,0) is 2 but (0,1) is 1: the matrix must be symmetric"},
      {"schedstm-comm-matrix 1\nthreads 1\n0\n0\n", "t.mat:4:1: unexpected text after the last"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t *m = (uint64_t *)&err;
    unsigned n = 99;
    CHECK_RC(read_text(bad[i].text, &m, &n), SSTM_EINVAL);
    CHECK_MSG(strstr(err, bad[i].want) != NULL, "case %zu: got \"%s\", want \"%s\"", i, err,
              bad[i].want);
    CHECK_EQ_PTR(m, (uint64_t *)&err); /* untouched on failure */
    CHECK_EQ_U(n, 99);
  }
  uint64_t *m;
  unsigned n;
  CHECK_RC(sstm__cmat_load("/nonexistent/m.mat", &m, &n, err, sizeof err), SSTM_EPERM);
  CHECK_CONTAINS(err, "cannot open /nonexistent/m.mat: No such file");
  uint64_t one = 0;
  CHECK_RC(sstm__cmat_save("/nonexistent/m.mat", &one, 1, err, sizeof err), SSTM_EPERM);
  CHECK_CONTAINS(err, "cannot create /nonexistent/m.mat");
  CHECK_RC(sstm__cmat_save("/nonexistent/m.mat", &one, 0, err, sizeof err), SSTM_EINVAL);
  CHECK_CONTAINS(err, "0 threads");
  /* A line without an end (a binary file, /dev/zero) is refused once it is
   * longer than any row can be, not read until memory runs out (and then
   * reported as an empty file). */
  const char *head = "schedstm-comm-matrix 1\n# ";
  size_t big = (1u << 20) + 16;
  char *text = malloc(strlen(head) + big + 1);
  CHECK_NOT_NULL(text);
  strcpy(text, head);
  memset(text + strlen(head), 'x', big);
  text[strlen(head) + big] = '\0';
  m = (uint64_t *)&err;
  CHECK_RC(read_text(text, &m, &n), SSTM_EINVAL);
  CHECK_CONTAINS(err, "t.mat:2: line longer than 1048576 bytes");
  CHECK_EQ_PTR(m, (uint64_t *)&err);
  free(text);
  CHECK_RC(sstm__cmat_load("/dev/zero", &m, &n, err, sizeof err), SSTM_EINVAL);
  CHECK_CONTAINS(err, "/dev/zero:1: line longer than");
}

/* ---- the topology cache ---- */

/* t as a cache file's text for key k (malloc'd). */
static char *cache_text(const sstm_topo_key_t *k, const sstm_topo_t *t) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CHECK(f != NULL);
  CHECK_OK(sstm__topo_cache_write(f, k, t));
  CHECK_EQ_I(fclose(f), 0);
  return buf;
}

static char cache_path[] = "/tmp/sstm-topo-cache-XXXXXX";
static bool cache_path_made;

static void put_file(const char *path, const char *text, size_t len) {
  /* A new file each time: rewriting a truncated one can make ext4 write
   * it out at close (auto_da_alloc), seconds over a whole test. */
  (void)unlink(path);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  CHECK_EQ_U(fwrite(text, 1, len, f), len);
  CHECK_EQ_I(fclose(f), 0);
}

/* Read text as a cache file for key k. */
static int read_cache_text(const char *text, size_t len, const sstm_topo_key_t *k,
                           sstm_topo_t **out) {
  if (!cache_path_made) {
    int fd = mkstemp(cache_path);
    CHECK_GE_I(fd, 0);
    close(fd);
    cache_path_made = true;
  }
  put_file(cache_path, text, len);
  err[0] = '\0';
  return sstm__topo_cache_read(cache_path, k, out, err, sizeof err);
}

/* Everything the mapper reads of a topology is the same in a and b. */
static void same_topology(const sstm_topo_t *a, const sstm_topo_t *b) {
  unsigned n = sstm__topo_npus(a);
  CHECK_EQ_U(sstm__topo_npus(b), n);
  CHECK_EQ_U(sstm__topo_ncores(b), sstm__topo_ncores(a));
  CHECK_EQ_U(sstm__topo_depth(b), sstm__topo_depth(a));
  CHECK_EQ_STR(sstm__topo_describe(b), sstm__topo_describe(a));
  CHECK_EQ_U(sstm__topo_single_core(b), sstm__topo_single_core(a));
  for (unsigned l = 0; l < sstm__topo_depth(a); l++)
    CHECK_EQ_U(sstm__topo_uniform_arity(b, l), sstm__topo_uniform_arity(a, l));
  for (unsigned p = 0; p < n; p++) {
    CHECK_EQ_I(sstm__topo_os_index(b, p), sstm__topo_os_index(a, p));
    CHECK_EQ_U(sstm__topo_core_of(b, p), sstm__topo_core_of(a, p));
    for (unsigned q = 0; q < n; q += 1 + n / 64)
      CHECK_EQ_U(sstm__topo_distance(b, p, q), sstm__topo_distance(a, p, q));
  }
  /* The same placement of a random matrix. */
  unsigned nt = n < 48 ? n + 3 : 48;
  uint64_t *m = matrix(nt);
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed());
  for (unsigned i = 0; i < nt; i++)
    for (unsigned j = i + 1; j < nt; j++)
      m[i * nt + j] = m[j * nt + i] = sstm_rng_below(&r, 4) == 0 ? sstm_rng_below(&r, 100) : 0;
  unsigned *pa = calloc(nt, sizeof *pa), *pb = calloc(nt, sizeof *pb);
  CHECK_OK(sstm__map_compute(a, m, nt, 0, pa, err, sizeof err));
  CHECK_OK(sstm__map_compute(b, m, nt, 0, pb, err, sizeof err));
  CHECK_EQ_MEM(pa, pb, nt * sizeof *pa);
  free(pa);
  free(pb);
  free(m);
}

TEST(topology_cache_round_trip) {
  static const char *const descs[] = {
      XEON, OPTERON, "PU:1", "Core:1 PU:4", "Core:2 PU:1", "Package:2 [NUMANode] Core:3 PU:2"};
  sstm_topo_key_t k;
  sstm__topo_key(&k);
  CHECK_CONTAINS(k.text, "\ncpus ");
  CHECK(strncmp(k.name, "topo-", 5) == 0);
  for (size_t i = 0; i < sizeof descs / sizeof descs[0]; i++) {
    sstm_topo_t *s = synth(descs[i]), *c = NULL;
    char *text = cache_text(&k, s);
    CHECK_MSG(read_cache_text(text, strlen(text), &k, &c) == 0, "%s: %s", descs[i], err);
    same_topology(s, c);
    /* What it writes back is what it read. */
    char *again = cache_text(&k, c);
    CHECK_EQ_STR(again, text);
    free(again);
    free(text);
    sstm__topo_free(s);
    sstm__topo_free(c);
  }
  unlink(cache_path);
}

/* The key of a CPU set whose list is long: a host of 1024 CPUs allowed
 * every other one, or two of every three (taskset -c 0-1023:2, a cgroup's
 * cpuset without SMT siblings). Each set has a key, line and file name of
 * its own. The list did not fit the key's buffer and became "?", so every
 * such set of a host had the same key and file: a topology cached for one
 * was read back for another. */
TEST(topology_cache_keys_long_cpu_lists_apart) {
  cpu_set_t sets[3];
  for (int i = 0; i < 3; i++)
    CPU_ZERO(&sets[i]);
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (c % 2 == 0) CPU_SET(c, &sets[0]); /* 0,2,4,...,1022 */
    if (c % 2 == 0 && c != 1000) CPU_SET(c, &sets[1]);
    if (c % 3 != 2) CPU_SET(c, &sets[2]); /* 0-1,3-4,...: the longest list */
  }
  sstm_topo_key_t k[3];
  for (int i = 0; i < 3; i++) {
    sstm__topo_key_of(&k[i], &sets[i]);
    static char list[8192];
    sstm__topo_cpu_list(&sets[i], list, sizeof list);
    CHECK(strlen(list) > 1000);
    char line[8200];
    snprintf(line, sizeof line, "\ncpus %s\n", list);
    CHECK_CONTAINS(k[i].text, line);
  }
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++) {
      CHECK_NE_I(strcmp(k[i].name, k[j].name), 0);
      CHECK_NE_I(strcmp(k[i].text, k[j].text), 0);
    }
}

TEST(topology_cache_stale_key_or_version) {
  sstm_topo_key_t k, other;
  sstm__topo_key(&k);
  sstm_topo_t *s = synth("Package:2 Core:2 PU:2"), *c = (sstm_topo_t *)&err;
  char *text = cache_text(&k, s);
  static const char *const parts[] = {"kernel", "boot", "host", "online", "cpus", "hwloc"};
  for (size_t i = 0; i < 6; i++) {
    other = k;
    char *at = strstr(other.text, parts[i]);
    CHECK(at != NULL);
    at[strlen(parts[i]) + 1] ^= 0x01; /* the value's first byte */
    CHECK_RC(read_cache_text(text, strlen(text), &other, &c), SSTM_TOPO_CACHE_STALE);
    char want[64];
    snprintf(want, sizeof want, "the %s differs", parts[i]);
    CHECK_CONTAINS(err, want);
    CHECK_NULL(c);
  }
  /* Another format version: the one before (whose trees were not
   * restricted to the affinity) and a later one. */
  for (char v = '1'; v <= '3'; v += 2) {
    char *other_v = strdup(text);
    CHECK_CONTAINS(other_v, "schedstm-topo-cache 2\n");
    other_v[strlen("schedstm-topo-cache ")] = v;
    CHECK_RC(read_cache_text(other_v, strlen(other_v), &k, &c), SSTM_TOPO_CACHE_STALE);
    char want[96];
    snprintf(want, sizeof want, "format \"schedstm-topo-cache %c\", this library writes", v);
    CHECK_CONTAINS(err, want);
    free(other_v);
  }
  CHECK_RC(sstm__topo_cache_read("/nonexistent/topo.txt", &k, &c, err, sizeof err),
           SSTM_TOPO_CACHE_MISSING);
  free(text);
  sstm__topo_free(s);
  unlink(cache_path);
}

/* Replace the first occurrence of from in text by to (malloc'd). */
static char *edit(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  CHECK_MSG(at != NULL, "\"%s\" not in the file", from);
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  return out;
}

TEST(topology_cache_corrupt_files_are_refused) {
  sstm_topo_key_t k;
  sstm__topo_key(&k);
  /* 2 packages x 2 cores x 2 PUs: levels 2 4 8 ("levels 3 2 4 8"). */
  sstm_topo_t *s = synth("Package:2 Core:2 PU:2");
  char *text = cache_text(&k, s);
  CHECK_CONTAINS(text, "\nlevels 3 2 4 8\npus 8 4\n0 0 0 0 0\n1 0 0 0 1\n2 1 0 1 2\n");
  static const struct {
    const char *from, *to, *want;
  } bad[] = {
      {"schedstm-topo-cache 2", "schedstm-topo-cachex 2",
       "not a schedstm topology cache file (expected \"schedstm-topo-cache 2\")"},
      {"desc ", "dssc ", "expected \"desc <text>\""},
      {"levels 3 2 4 8", "levels 3 2 4", "a level's node count is not a number above"},
      {"levels 3 2 4 8", "levels 3 2 4 8 9", "more node counts than the depth"},
      {"levels 3 2 4 8", "levels 3 4 2 8", "a level's node count is not a number above"},
      {"levels 3 2 4 8", "levels 65 2 4 8", "the depth is not a number up to 64"},
      {"levels 3 2 4 8", "levels 3 2 4 7", "the deepest level's node count is not the PU count"},
      {"levels 3 2 4 8", "levels x", "the depth is not a number"},
      {"pus 8 4", "pus 0 4", "the PU count is not a number from 1 to 65536"},
      {"pus 8 4", "pus 8 9", "the core count is not a number from 1 to the PU count"},
      {"pus 8 4", "pus 99999999999999999999 4", "the PU count is not a number"},
      {"pus 8 4", "pus 8 4 1", "the core count"},
      {"\n1 0 0 0 1\n", "\n0 0 0 0 1\n", "an OS index appears twice"},
      {"\n1 0 0 0 1\n", "\n1024 0 0 0 1\n", "an OS index is not a number below CPU_SETSIZE"},
      {"\n1 0 0 0 1\n", "\n1 2 0 0 1\n", "core numbers do not start at 0"},
      {"\n0 0 0 0 0\n", "\n0 1 0 0 0\n", "core numbers do not start at 0"},
      {"\n2 1 0 1 2\n", "\n2 1 1 0 2\n", "a node spans two parents"},
      {"\n2 1 0 1 2\n", "\n2 1 0 2 2\n", "node numbers do not grow by 0 or 1"},
      {"\n1 0 0 0 1\n", "\n1 0 0 0 2\n", "node numbers do not grow by 0 or 1"},
      {"\n1 0 0 0 1\n", "\n1 0 0 0 0\n", "a PU's last node is not itself"},
      {"\n0 0 0 0 0\n", "\n0 0 1 0 0\n", "the first PU's node numbers are not 0"},
      {"\n1 0 0 0 1\n", "\n1 0 0 0 1 0\n", "more node numbers than the depth"},
      {"\n1 0 0 0 1\n", "\n1 0 0 0\n", "a node number is out of range"},
      {"\n1 0 0 0 1\n", "\n1 0 0 0 -1\n", "a node number is out of range"},
      {"\n7 3 1 3 7\nend\n", "\n", "the file ends before the last PU"},
      {"\nend\n", "\n", "expected \"end\""},
      {"\nend\n", "\nend\nmore\n", "text after \"end\""},
      {"\nend\n", "\nfin\n", "expected \"end\""},
      {"\nend\n", "\nend", "expected \"end\""},
      {"desc ", "desc \x01", "control or non-ASCII byte"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *t = edit(text, bad[i].from, bad[i].to);
    sstm_topo_t *c = (sstm_topo_t *)&err;
    int rc = read_cache_text(t, strlen(t), &k, &c);
    CHECK_MSG(rc == SSTM_EINVAL && strstr(err, bad[i].want) != NULL,
              "case %zu: got %d \"%s\", want \"%s\"", i, rc, err, bad[i].want);
    CHECK_CONTAINS(err, cache_path); /* the file, and the line: "path:N: " */
    CHECK_NULL(c);
    free(t);
  }
  /* Every truncation, and random byte changes: refused or, when the change
   * kept a valid tree (a digit of the description), a usable topology;
   * never a crash (the sanitizer builds run this too). */
  size_t len = strlen(text);
  for (size_t cut = 0; cut < len; cut++) {
    sstm_topo_t *c = NULL;
    int rc = read_cache_text(text, cut, &k, &c);
    CHECK_MSG(rc == SSTM_EINVAL || rc == SSTM_TOPO_CACHE_STALE, "cut at %zu: %d", cut, rc);
    CHECK_NULL(c);
  }
  sstm_rng_t r;
  sstm_rng_seed(&r, sstm_test_seed());
  char *t = malloc(len + 1);
  unsigned loaded = 0;
  for (unsigned round = 0; round < 1000; round++) {
    memcpy(t, text, len + 1);
    unsigned changes = 1 + (unsigned)sstm_rng_below(&r, 3);
    for (unsigned j = 0; j < changes; j++)
      t[sstm_rng_below(&r, len)] =
          (char)(sstm_rng_below(&r, 4) ? '0' + sstm_rng_below(&r, 10) : sstm_rng_below(&r, 256));
    sstm_topo_t *c = NULL;
    int rc = read_cache_text(t, len, &k, &c);
    CHECK_MSG(rc == 0 || rc == SSTM_EINVAL || rc == SSTM_TOPO_CACHE_STALE, "round %u: %d", round,
              rc);
    if (rc == 0) {
      loaded++;
      unsigned n = sstm__topo_npus(c);
      for (unsigned p = 0; p < n; p++)
        for (unsigned q = 0; q < n; q++)
          CHECK_EQ_U(sstm__topo_distance(c, p, q), sstm__topo_distance(c, q, p));
      unsigned pu[12];
      uint64_t m[144] = {0};
      m[1] = m[12] = 5;
      CHECK_OK(sstm__map_compute(c, m, 12, 0, pu, err, sizeof err));
      for (unsigned i = 0; i < 12; i++)
        CHECK_LT_U(pu[i], n);
      sstm__topo_free(c);
    } else {
      CHECK_NULL(c);
    }
  }
  CHECK_LT_U(loaded, 1000); /* most changes are refused */
  free(t);
  free(text);
  sstm__topo_free(s);
  unlink(cache_path);
}

/* A cache path that is not a regular file is refused at once: a FIFO (no
 * writer: an open that waits for one would hold sstm_init for ever), a
 * directory. */
TEST(topology_cache_refuses_what_is_not_a_regular_file_without_waiting) {
  sstm_topo_key_t k;
  sstm__topo_key(&k);
  char dir[] = "/tmp/sstm-topo-fifo-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[sizeof dir + 16];
  snprintf(path, sizeof path, "%s/fifo", dir);
  CHECK_EQ_I(mkfifo(path, 0600), 0);
  sstm_topo_t *c = (sstm_topo_t *)&err;
  CHECK_RC(sstm__topo_cache_read(path, &k, &c, err, sizeof err), SSTM_EINVAL);
  CHECK_CONTAINS(err, "not a regular file");
  CHECK_NULL(c);
  c = (sstm_topo_t *)&err;
  CHECK_RC(sstm__topo_cache_read(dir, &k, &c, err, sizeof err), SSTM_EINVAL);
  CHECK_CONTAINS(err, "not a regular file");
  CHECK_NULL(c);
  unlink(path);
  rmdir(dir);
}

TEST(topology_cache_of_the_running_machine) {
  char dir[] = "/tmp/sstm-topo-dir-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char sub[sizeof dir + 32], note[800];
  snprintf(sub, sizeof sub, "%s/a/b", dir); /* missing parents are made */
  sstm_topo_t *fresh = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL;
  CHECK_OK(sstm__topo_load_system(&fresh, err, sizeof err));
  CHECK_OK(sstm__topo_load_system_cached(sub, &t1, note, sizeof note, err, sizeof err));
  CHECK_EQ_STR(note, "hwloc (cached)");
  CHECK_OK(sstm__topo_load_system_cached(sub, &t2, note, sizeof note, err, sizeof err));
  CHECK_EQ_STR(note, "cache");
  same_topology(fresh, t1);
  same_topology(fresh, t2);
  /* A corrupt file: a clear note, a fresh load, the file written again. */
  sstm_topo_key_t k;
  sstm__topo_key(&k);
  char path[sizeof sub + 160];
  snprintf(path, sizeof path, "%s/%s", sub, k.name);
  put_file(path, "schedstm-topo-cache 2\ngarbage\n", 30);
  CHECK_OK(sstm__topo_load_system_cached(sub, &t3, note, sizeof note, err, sizeof err));
  CHECK_CONTAINS(note, "hwloc (cache stale: ");
  CHECK_CONTAINS(note, path);
  CHECK_CONTAINS(note, ": the kernel differs; cached)");
  same_topology(fresh, t3);
  sstm__topo_free(t3);
  put_file(path, "not a cache\n", 12);
  CHECK_OK(sstm__topo_load_system_cached(sub, &t3, note, sizeof note, err, sizeof err));
  CHECK_CONTAINS(note, "hwloc (cache refused: ");
  CHECK_CONTAINS(note, ":1: not a schedstm topology cache file");
  CHECK_CONTAINS(note, "; cached)");
  sstm__topo_free(t3);
  CHECK_OK(sstm__topo_load_system_cached(sub, &t3, note, sizeof note, err, sizeof err));
  CHECK_EQ_STR(note, "cache");
  sstm__topo_free(t3);
  /* A directory that cannot be made: loaded, not cached, said why. */
  char blocked[sizeof path + 8];
  snprintf(blocked, sizeof blocked, "%s/x", path); /* under a regular file */
  CHECK_OK(sstm__topo_load_system_cached(blocked, &t3, note, sizeof note, err, sizeof err));
  CHECK_CONTAINS(note, "hwloc (not cached: ");
  CHECK_CONTAINS(note, "Not a directory");
  sstm__topo_free(t3);
  CHECK_OK(sstm__topo_load_system_cached("", &t3, note, sizeof note, err, sizeof err));
  CHECK_EQ_STR(note, "hwloc");
  sstm__topo_free(t3);
  sstm__topo_free(fresh);
  sstm__topo_free(t1);
  sstm__topo_free(t2);
  char cmd[sizeof dir + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK_EQ_I(system(cmd), 0);
}

SSTM_TEST_MAIN()
