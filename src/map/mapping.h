/* SPDX-License-Identifier: MIT */
/* Sharing-aware thread mapping: the machine's topology, the mapping
 * algorithms and the communication-matrix file (docs/design/mapping.md).
 *
 * This is the internal interface between the mapping subsystem (src/map)
 * and whoever drives it: the run-time side (detection, trigger, pinning)
 * and the evaluation tool tools/sstm-mapeval. None of it touches the
 * engine, threads or the CPU affinity of anything: it computes.
 *
 * Topology. A tree read from hwloc (the running machine, an hwloc
 * synthetic description, or an hwloc XML file), reduced to its splitting
 * levels: the hwloc levels that have more objects than the level above
 * (a level of one object per parent, such as an L1 cache per core, tells
 * nothing about who shares what). Processing units (PUs) are numbered
 * 0..npus-1 in hwloc's logical order, so every node of the tree covers a
 * contiguous range of PUs. NUMA nodes are hwloc memory children: they count
 * through the normal object they hang under (a package, a die's L3).
 *
 * Distance. distance(a, b) is the number of splitting levels below the
 * deepest common ancestor of PUs a and b: 0 for the same PU, 1 for two PUs
 * of one core (or of one L2 module where the core has one PU), up to
 * depth() for PUs that share only the machine. It is a hop count, not a
 * latency: see docs/design/mapping.md for what that leaves out.
 *
 * Cost model. cost(placement) = sum over thread pairs i < j of
 * m[i][j] * distance(pu[i], pu[j]). With the hop distance this equals the
 * sum, over the levels, of the communication cut at that level, which is
 * what the top-down grouping of sstm__map_compute minimises level by level.
 *
 * Matrix. n x n, row-major, uint64_t, symmetric with a zero diagonal: m[i][j]
 * counts communication events between threads i and j.
 *
 * Errors. Functions that can fail return 0 or a negative SSTM_E* code
 * (<schedstm/common.h>) and, when err is not NULL, write a one-line message
 * (NUL-terminated, truncated to errlen) saying what was wrong. Nothing here
 * prints. Every function is thread-safe on distinct objects; a topology is
 * immutable after loading, so any number of threads may query it at once.
 */
#ifndef SSTM_MAP_MAPPING_H
#define SSTM_MAP_MAPPING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- topology ---- */

typedef struct sstm_topo sstm_topo_t;

/* Most PUs a topology may have, most threads a mapping or matrix may have. */
#define SSTM_TOPO_MAX_PUS 65536u
#define SSTM_MAP_MAX_THREADS 4096u

/* Load the topology of the running machine as hwloc sees it, restricted to
 * the PUs the calling thread may run on: hwloc's allowed set (the cgroup's
 * cpuset) and its affinity (sched_getaffinity: taskset). Allocates;
 * release with sstm__topo_free. Returns 0, SSTM_ENOMEM, or SSTM_EINVAL when
 * hwloc cannot load a topology (message in err). */
int sstm__topo_load_system(sstm_topo_t **out, char *err, size_t errlen);

/* Load an hwloc synthetic topology ("Package:2 [NUMANode] Core:4 PU:2";
 * hwloc's synthetic syntax). The OS index of each PU is its logical index.
 * Returns 0, SSTM_ENOMEM, or SSTM_EINVAL (NULL or malformed description:
 * hwloc's reason in err). */
int sstm__topo_load_synthetic(const char *desc, sstm_topo_t **out, char *err, size_t errlen);

/* Load a topology from an hwloc XML file (lstopo's output), e.g. one saved
 * on another machine. Returns 0, SSTM_ENOMEM, or SSTM_EINVAL (unreadable or
 * malformed file). */
int sstm__topo_load_xml(const char *path, sstm_topo_t **out, char *err, size_t errlen);

/* Release a topology (NULL is ignored). */
void sstm__topo_free(sstm_topo_t *t);

/* Number of PUs (>= 1). */
unsigned sstm__topo_npus(const sstm_topo_t *t);
/* Number of cores (>= 1; a PU that hwloc places under no core is its own). */
unsigned sstm__topo_ncores(const sstm_topo_t *t);
/* The core (0..ncores-1, logical order) of PU pu; pu < npus. */
unsigned sstm__topo_core_of(const sstm_topo_t *t, unsigned pu);
/* The operating system's CPU number of PU pu (for cpu_set_t); pu < npus. */
int sstm__topo_os_index(const sstm_topo_t *t, unsigned pu);
/* Number of splitting levels below the root (0 for a single PU): the
 * largest distance two PUs can have. */
unsigned sstm__topo_depth(const sstm_topo_t *t);
/* Hop distance between PUs a and b (both < npus), see above. */
unsigned sstm__topo_distance(const sstm_topo_t *t, unsigned a, unsigned b);
/* The number of children of every node at level l (0 = the root,
 * l < depth), or 0 when the nodes of that level differ (a partial tree).
 * For tools that need a balanced tree (Scotch's tree-leaf architecture). */
unsigned sstm__topo_uniform_arity(const sstm_topo_t *t, unsigned l);
/* True when the topology has a single core (one or several PUs): mapping
 * has nothing to choose, the caller reports it disabled. */
bool sstm__topo_single_core(const sstm_topo_t *t);
/* A one-line description, e.g. "Package:8 Core:96 PU:192 (8 NUMA nodes)":
 * the splitting levels with their object counts. Valid while t lives. */
const char *sstm__topo_describe(const sstm_topo_t *t);

/* ---- the topology cache ----
 *
 * hwloc's discovery of the running machine costs tens of milliseconds per
 * process (hwloc_topology_init opens its plugins, whose libraries pull in
 * X11, OpenCL, libxml2; the discovery reads sysfs), and an hwloc XML
 * export read back through hwloc still pays the plugins. So the cache holds
 * the reduced tree above, the only thing mapping uses, as a small text file
 * read without hwloc (docs/design/mapping.md, "The topology cache"). It is
 * keyed by what could change the tree: the kernel (release and version),
 * the boot (boot_id: hardware changes need one), the host name, the online
 * CPUs, the process's CPU set and hwloc's version. The file name holds the
 * host and a hash of the CPU set, so a directory keeps one file per host
 * and CPU set; the file holds the whole key, checked line by line. */

/* The longest list sstm__topo_cpu_list writes for a cpu_set_t, with its
 * NUL: CPU_SETSIZE (1024) CPUs, each a number of at most 4 digits and a
 * separator (a host allowing two CPUs of every three, 0-1,3-4,..., comes
 * close). */
#define SSTM_TOPO_CPU_LIST_MAX (5 * 1024 + 1)

/* The running machine's key. text: the key lines, '\n'-terminated each
 * (the CPU set's list whole); name: the cache file's name in its
 * directory. */
typedef struct sstm_topo_key {
  char text[8192];
  char name[128];
} sstm_topo_key_t;

/* Fill k for the calling process (its CPU set: sched_getaffinity). A part
 * that cannot be read is written as "?", which still keys consistently. */
void sstm__topo_key(sstm_topo_key_t *k);

/* Write t to f as a cache file with key k. Returns 0 or SSTM_EPERM. */
int sstm__topo_cache_write(FILE *f, const sstm_topo_key_t *k, const sstm_topo_t *t);

/* Results of sstm__topo_cache_read besides 0 (loaded) and the errors. */
enum { SSTM_TOPO_CACHE_MISSING = 1, SSTM_TOPO_CACHE_STALE = 2 };

/* Read the cache file at path for key k. Returns 0 with *out loaded (free
 * with sstm__topo_free), SSTM_TOPO_CACHE_MISSING (no such file),
 * SSTM_TOPO_CACHE_STALE (another key or format version: the reason in err),
 * SSTM_ENOMEM, or SSTM_EINVAL for a file that is not a valid cache file
 * (err: "path:line: what was expected"): every count, index and ordering
 * the tree's invariants need is checked, so a corrupt file is refused,
 * never trusted. Nothing is allocated on failure. */
int sstm__topo_cache_read(const char *path, const sstm_topo_key_t *k, sstm_topo_t **out, char *err,
                          size_t errlen);

/* The running machine's topology through the cache in directory dir
 * (NULL or "": no cache): read it when valid, else load it from hwloc
 * (sstm__topo_load_system) and save it there (created if missing, one
 * level; written to a temporary file then renamed, so a reader never sees
 * half a file). note receives where the topology came from, for
 * sstm_describe: "cache", "hwloc", "hwloc, cached", "hwloc (cache stale:
 * ...)", "hwloc (cache refused: path:line: ...)", "hwloc (not cached:
 * ...)". Returns what sstm__topo_load_system returns; a cache problem is
 * never an error. */
/* Look the running machine up in the cache of directory dir (NULL or "":
 * none). 0 with *out loaded, else SSTM_TOPO_CACHE_MISSING (no file, a
 * stale or a refused one: note says which and why) or SSTM_ENOMEM. */
int sstm__topo_cache_lookup(const char *dir, sstm_topo_t **out, char *note, size_t notelen);

#ifdef CPU_SETSIZE /* <sched.h> with _GNU_SOURCE */
/* A CPU set as a list ("0-3,8"; "?" when empty), as the kernel writes them. */
void sstm__topo_cpu_list(const cpu_set_t *s, char *buf, size_t len);
/* sstm__topo_key for the CPU set `set` (NULL: unknown) instead of the
 * calling process's: for tests, which give it CPU sets that this machine
 * cannot have (more CPUs than it has). */
void sstm__topo_key_of(sstm_topo_key_t *k, const cpu_set_t *set);
#endif

int sstm__topo_load_system_cached(const char *dir, sstm_topo_t **out, char *note, size_t notelen,
                                  char *err, size_t errlen);

/* ---- placements ---- */

/* A placement gives each thread i < n a PU: pu[i] < npus. Several threads
 * may share a PU when n > npus (or by choice of the caller). */

typedef enum sstm_map_static {
  SSTM_MAP_COMPACT = 0, /* PUs in logical order: SMT siblings first, then the
                           cores of one cache / package, then the next */
  SSTM_MAP_SCATTER,     /* spread over the top level first: consecutive threads
                           as far apart as the tree allows */
  SSTM_MAP_ROUND_ROBIN, /* one thread per core in logical order (sharing the
                           last-level cache, not a core), the second PUs of
                           each core only when every core has a thread */
} sstm_map_static_t;

/* Name of a static strategy ("compact", ...), NULL for an unknown value. */
const char *sstm__map_static_name(sstm_map_static_t s);

/* A static placement of n threads (1 <= n <= SSTM_MAP_MAX_THREADS). With more
 * threads than PUs thread i goes where thread i mod npus goes. Writes pu[0..n).
 * Returns 0 or SSTM_EINVAL (n out of range, unknown strategy). */
int sstm__map_static(const sstm_topo_t *t, sstm_map_static_t s, unsigned n, unsigned *pu, char *err,
                     size_t errlen);

/* Flags of sstm__map_compute. */
enum {
  /* Use every PU of a core before the next core. Off by default: while
   * n <= ncores the mapper uses one PU per core (two threads on SMT siblings
   * share one core's execution units, which the cost model cannot see), and
   * only with more threads than cores the other PUs. */
  SSTM_MAP_USE_SMT = 1u << 0,
};

/* The sharing-aware placement of n threads (1 <= n <= SSTM_MAP_MAX_THREADS)
 * whose communication matrix is m (n x n, symmetric, zero diagonal; checked).
 * Recursive grouping down the tree [Jeannot10]: at each node, the threads
 * placed there are split among its children, the most-communicating threads
 * kept together (greedy growth from the heaviest pair, then pairwise swaps
 * while they cut less communication), each child taking as many threads as
 * it has slots, fullest child first. Slots: one PU per core while
 * n <= ncores (unless SSTM_MAP_USE_SMT), every PU otherwise; with n above the
 * slot count each slot takes ceil(n / slots) threads at most. Deterministic:
 * the same inputs give the same placement. Allocates O(n * arity) scratch
 * memory; takes O(depth * n^3) time at worst (docs/benchmarks.md: tens of
 * ms for 256 threads).
 * Returns 0, SSTM_ENOMEM, or SSTM_EINVAL (n out of range, NULL, m not
 * symmetric or with a non-zero diagonal, unknown flag). */
int sstm__map_compute(const sstm_topo_t *t, const uint64_t *m, unsigned n, unsigned flags,
                      unsigned *pu, char *err, size_t errlen);

/* The cost of a placement under the model above: sum over i < j of
 * m[i][j] * distance(pu[i], pu[j]), saturating at UINT64_MAX. Every pu[i]
 * must be < npus (not checked: a caller's placement comes from this file). */
uint64_t sstm__map_cost(const sstm_topo_t *t, const uint64_t *m, unsigned n, const unsigned *pu);

/* ---- communication-matrix files ----
 *
 * Text, one matrix per file (docs/design/mapping.md, "Matrix file"):
 *
 *   # any number of comment lines ('#' first on the line) and blank lines
 *   schedstm-comm-matrix 1
 *   threads 3
 *   0 5 1
 *   5 0 0
 *   1 0 0
 *
 * The header line, then "threads N" (1 <= N <= SSTM_MAP_MAX_THREADS), then N
 * rows of N decimal integers (0 .. 2^64-1) separated by blanks; the matrix
 * must be symmetric with a zero diagonal. Comment and blank lines may appear
 * anywhere; nothing else may follow the last row. A line is at most 1 MiB. */

/* Write matrix m (n x n) to f in the format above. Returns 0, SSTM_EINVAL
 * (n out of range, NULL) or SSTM_EPERM (a write error). */
int sstm__cmat_write(FILE *f, const uint64_t *m, unsigned n, char *err, size_t errlen);
/* Write m to the file at path (created or truncated), as sstm__cmat_write.
 * SSTM_EPERM also when the file cannot be created (strerror in err). */
int sstm__cmat_save(const char *path, const uint64_t *m, unsigned n, char *err, size_t errlen);

/* Read a matrix from f; name is used in messages ("name:line:col: ...").
 * On success *m is a malloc'd n x n array (free it) and *n its order. On
 * failure nothing is allocated and err says where and what: SSTM_EINVAL (a
 * malformed file: wrong header, a count out of range, a token that is not a
 * number, a number out of range, a short or long row, a missing or extra
 * row, an asymmetric cell, a non-zero diagonal), SSTM_ENOMEM, SSTM_EPERM
 * (a read error). */
int sstm__cmat_read(FILE *f, const char *name, uint64_t **m, unsigned *n, char *err, size_t errlen);
/* Read the file at path, as sstm__cmat_read (SSTM_EPERM: cannot open). */
int sstm__cmat_load(const char *path, uint64_t **m, unsigned *n, char *err, size_t errlen);

#endif /* SSTM_MAP_MAPPING_H */
