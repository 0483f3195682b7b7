/* SPDX-License-Identifier: MIT */
/* sstm-mapeval: evaluate thread placements on a topology under the cost
 * model of src/map/mapping.h (communication x hop distance), without
 * running anything: for each communication matrix and each strategy it
 * prints the placement's cost and the time taken to compute it.
 *
 * Strategies:
 *   none         no placement, as the Linux scheduler would leave it:
 *                modelled as a random balanced placement (distinct random
 *                cores while the threads fit on the cores, else a random
 *                permutation of the PUs, each PU taking threads in turn),
 *                the cost averaged over --seeds placements;
 *   compact, scatter, round-robin   sstm__map_static;
 *   stmap        sstm__map_compute (one PU per core while n <= cores);
 *   stmap-smt    sstm__map_compute with SSTM_MAP_USE_SMT;
 *   scotch       Scotch's static mapper [Pellegrini96]: the matrix as a
 *                graph mapped onto a tree-leaf architecture with the
 *                topology's arities and the hop distances as link costs,
 *                on the same slots as stmap (cores while n <= cores; the
 *                first n of them when there are fewer threads). Edge
 *                weights are scaled to 1..1000 (Scotch's 32-bit integers
 *                must hold the sums), so it optimises a rounded matrix; its
 *                placement is evaluated on the exact one.
 *
 * Matrices come from files (--matrix, the format of mapping.h; one whose
 * counts could make a cost pass 2^64-1 on the topology is refused) or from
 * generated patterns (--pattern, --threads), their thread numbers
 * scrambled by a seeded permutation so that no strategy gains from the
 * numbering.
 *
 * Output: CSV on standard output, one line per matrix and strategy:
 *   topology,matrix,threads,strategy,cost,rel_none,ms,max_load
 * rel_none = cost / cost of none; ms = mean time of one computation
 * (repeated for at least 20 ms); max_load = most threads on one PU.
 * Not installed: it links Scotch, which the library does not use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <scotch.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "map/mapping.h"

/* The two machines of docs/design/mapping.md's topology table, as hwloc
 * synthetic descriptions: eight Xeon E5-4650 (192 PUs) and four Opteron
 * 6276 (64 PUs). */
#define XEON_DESC "Package:8 [NUMANode] L3Cache:1 L2Cache:12 L1dCache:1 Core:1 PU:2"
#define OPTERON_DESC "Package:4 Group:2 [NUMANode] L3Cache:1 L2Cache:4 Core:2 PU:1"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("sstm-mapeval: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

static uint64_t rng_state;
static uint64_t rng_next(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static unsigned rng_below(unsigned n) { return (unsigned)(rng_next() % n); }

static void shuffle(unsigned *a, unsigned n) {
  for (unsigned i = n; i > 1; i--) {
    unsigned j = rng_below(i), x = a[i - 1];
    a[i - 1] = a[j], a[j] = x;
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- generated matrices ---- */

static uint64_t *gen_pattern(const char *pat, unsigned n) {
  uint64_t *m = calloc((size_t)n * n, sizeof *m);
  unsigned *perm = malloc(n * sizeof *perm);
  if (!m || !perm) die("out of memory");
  for (unsigned i = 0; i < n; i++)
    perm[i] = i;
  shuffle(perm, n);
#define W(a, b, w)                                                                                 \
  do {                                                                                             \
    uint64_t w_ = (w);                                                                             \
    m[(size_t)perm[a] * n + perm[b]] += w_;                                                        \
    m[(size_t)perm[b] * n + perm[a]] += w_;                                                        \
  } while (0)
  if (strcmp(pat, "pairs") == 0) {
    for (unsigned i = 0; i + 1 < n; i += 2)
      W(i, i + 1, 1000 + rng_below(100));
  } else if (strcmp(pat, "ring") == 0) {
    for (unsigned i = 0; i < n && n > 1; i++)
      if (i != (i + 1) % n) W(i, (i + 1) % n, 1000 + rng_below(100));
  } else if (strcmp(pat, "clusters") == 0) { /* clusters of 8, weak links in between */
    for (unsigned i = 0; i < n; i++)
      for (unsigned j = i + 1; j < n; j++)
        W(i, j, i / 8 == j / 8 ? 100 + rng_below(20) : rng_below(3));
  } else if (strcmp(pat, "random") == 0) {
    for (unsigned i = 0; i < n; i++)
      for (unsigned j = i + 1; j < n; j++)
        W(i, j, rng_below(100));
  } else {
    die("unknown pattern \"%s\" (pairs, ring, clusters, random)", pat);
  }
#undef W
  free(perm);
  return m;
}

/* ---- Scotch ---- */

static int scotch_map(const sstm_topo_t *t, const uint64_t *m, unsigned n, unsigned *pu, char *err,
                      size_t errlen) {
  unsigned depth = sstm__topo_depth(t), levels = depth, stride = 1;
  if (depth == 0) {
    for (unsigned i = 0; i < n; i++)
      pu[i] = 0;
    return 0;
  }
  SCOTCH_Num size[32], link[32];
  if (depth > 32) return snprintf(err, errlen, "topology deeper than 32 levels"), -1;
  for (unsigned l = 0; l < depth; l++) {
    unsigned a = sstm__topo_uniform_arity(t, l);
    if (a == 0) return snprintf(err, errlen, "Scotch's tree-leaf needs a balanced tree"), -1;
    size[l] = (SCOTCH_Num)a;
  }
  /* The same slots as stmap: drop the SMT level while the threads fit on
   * the cores (the last level is then the PUs of a core). */
  unsigned npus = sstm__topo_npus(t), ncores = sstm__topo_ncores(t);
  if (n <= ncores && ncores < npus && (unsigned)size[depth - 1] == npus / ncores) {
    levels = depth - 1;
    stride = npus / ncores;
  }
  for (unsigned l = 0; l < levels; l++)
    link[l] = (SCOTCH_Num)(depth - l);
  uint64_t wmax = 0;
  size_t edges = 0;
  for (size_t i = 0; i < (size_t)n * n; i++) {
    if (m[i] > wmax) wmax = m[i];
    edges += m[i] != 0;
  }
  SCOTCH_Num *vert = malloc((n + 1) * sizeof *vert), *edge = malloc((edges + 1) * sizeof *edge),
             *load = malloc((edges + 1) * sizeof *load), *part = malloc(n * sizeof *part);
  if (!vert || !edge || !load || !part) die("out of memory");
  size_t e = 0;
  for (unsigned i = 0; i < n; i++) {
    vert[i] = (SCOTCH_Num)e;
    for (unsigned j = 0; j < n; j++) {
      uint64_t w = m[(size_t)i * n + j];
      if (w == 0) continue;
      edge[e] = (SCOTCH_Num)j;
      long double s = (long double)w * 1000.0L / (long double)wmax;
      load[e++] = s < 1 ? 1 : (SCOTCH_Num)(s + 0.5L);
    }
  }
  vert[n] = (SCOTCH_Num)e;
  /* With fewer threads than terminals Scotch would balance the threads over
   * every terminal, spreading them over the whole machine; like stmap (whose
   * fullest-child-first split uses as few packages as it can) it gets the
   * first n terminals in logical order (SCOTCH_archSub). */
  SCOTCH_Num nterm = 1, *termtab = malloc(n * sizeof *termtab);
  if (!termtab) die("out of memory");
  for (unsigned l = 0; l < levels; l++)
    nterm *= size[l];
  for (unsigned i = 0; i < n; i++)
    termtab[i] = (SCOTCH_Num)i;
  SCOTCH_Graph g;
  SCOTCH_Arch arch, sub;
  SCOTCH_Strat strat;
  int rc = -1;
  SCOTCH_graphInit(&g);
  SCOTCH_archInit(&arch);
  SCOTCH_archInit(&sub);
  SCOTCH_stratInit(&strat);
  if (SCOTCH_graphBuild(&g, 0, (SCOTCH_Num)n, vert, vert + 1, NULL, NULL, (SCOTCH_Num)e, edge,
                        load) != 0 ||
      SCOTCH_graphCheck(&g) != 0) {
    snprintf(err, errlen, "SCOTCH_graphBuild failed");
  } else if (SCOTCH_archTleaf(&arch, (SCOTCH_Num)levels, size, link) != 0) {
    snprintf(err, errlen, "SCOTCH_archTleaf failed");
  } else if (nterm > (SCOTCH_Num)n && SCOTCH_archSub(&sub, &arch, (SCOTCH_Num)n, termtab) != 0) {
    snprintf(err, errlen, "SCOTCH_archSub failed");
  } else if (SCOTCH_graphMap(&g, nterm > (SCOTCH_Num)n ? &sub : &arch, &strat, part) != 0) {
    snprintf(err, errlen, "SCOTCH_graphMap failed");
  } else {
    /* A sub-architecture numbers its terminals 0..n-1, here terminals 0..n-1
     * of the whole tree. */
    for (unsigned i = 0; i < n; i++)
      pu[i] = (unsigned)part[i] * stride;
    rc = 0;
  }
  SCOTCH_stratExit(&strat);
  SCOTCH_archExit(&sub);
  SCOTCH_archExit(&arch);
  SCOTCH_graphExit(&g);
  free(vert), free(edge), free(load), free(part), free(termtab);
  return rc;
}

/* ---- the none model ---- */

static void random_placement(const sstm_topo_t *t, unsigned n, unsigned *pu) {
  unsigned npus = sstm__topo_npus(t), ncores = sstm__topo_ncores(t);
  unsigned *slots = malloc(npus * sizeof *slots);
  if (!slots) die("out of memory");
  unsigned ns = 0;
  bool per_core = n <= ncores;
  for (unsigned p = 0; p < npus; p++)
    if (!per_core || p == 0 || sstm__topo_core_of(t, p) != sstm__topo_core_of(t, p - 1))
      slots[ns++] = p;
  if (per_core) { /* a random PU of each core */
    for (unsigned s = 0; s < ns; s++) {
      unsigned k = 1;
      while (slots[s] + k < npus &&
             sstm__topo_core_of(t, slots[s] + k) == sstm__topo_core_of(t, slots[s]))
        k++;
      slots[s] += rng_below(k);
    }
  }
  shuffle(slots, ns);
  for (unsigned i = 0; i < n; i++)
    pu[i] = slots[i % ns];
  free(slots);
}

/* ---- evaluation ---- */

static unsigned max_load(const unsigned *pu, unsigned n, unsigned npus) {
  unsigned *c = calloc(npus, sizeof *c), mx = 0;
  if (!c) die("out of memory");
  for (unsigned i = 0; i < n; i++)
    if (++c[pu[i]] > mx) mx = c[pu[i]];
  free(c);
  return mx;
}

static unsigned seeds = 20;

/* A matrix whose costs fit: sstm__map_cost saturates at 2^64-1, and a
 * saturated cost printed as a number (every strategy the same, rel_none 1)
 * would compare placements that were never compared. The largest cost any
 * placement can have is the sum of the counts times the topology's depth
 * (the largest distance); a matrix past it is refused. */
static void check_cost_range(const sstm_topo_t *t, const char *mname, const uint64_t *m,
                             unsigned n) {
  uint64_t sum = 0, d = sstm__topo_depth(t);
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = i + 1; j < n; j++) {
      uint64_t w = m[(size_t)i * n + j];
      if (sum > UINT64_MAX - w || (d != 0 && sum + w > UINT64_MAX / d))
        die("%s: counts too large: a placement's cost (the sum of count x distance, distances up "
            "to %" PRIu64 " here) would pass 2^64-1; scale the counts down",
            mname, d);
      sum += w;
    }
}

static void evaluate(const char *tname, const sstm_topo_t *t, const char *mname, const uint64_t *m,
                     unsigned n) {
  static const char *const names[] = {"none",  "compact",   "scatter", "round-robin",
                                      "stmap", "stmap-smt", "scotch"};
  unsigned *pu = malloc(n * sizeof *pu);
  if (!pu) die("out of memory");
  double none = 0;
  char err[256];
  for (unsigned s = 0; s < sizeof names / sizeof names[0]; s++) {
    double cost = 0, ms = 0;
    unsigned reps = 0, load = 0;
    if (s == 0) {
      for (unsigned k = 0; k < seeds; k++) {
        random_placement(t, n, pu);
        cost += (double)sstm__map_cost(t, m, n, pu);
        unsigned l = max_load(pu, n, sstm__topo_npus(t));
        if (l > load) load = l;
      }
      cost /= seeds;
      none = cost;
    } else {
      double t0 = now_ms(), t1;
      do {
        int rc;
        if (s <= 3)
          rc = sstm__map_static(t, (sstm_map_static_t)(s - 1), n, pu, err, sizeof err);
        else if (s <= 5)
          rc = sstm__map_compute(t, m, n, s == 5 ? SSTM_MAP_USE_SMT : 0, pu, err, sizeof err);
        else
          rc = scotch_map(t, m, n, pu, err, sizeof err);
        if (rc != 0) {
          fprintf(stderr, "sstm-mapeval: %s on %s: %s\n", names[s], mname, err);
          goto next;
        }
        reps++;
        t1 = now_ms();
      } while (t1 - t0 < 20 && reps < 1000);
      ms = (t1 - t0) / reps;
      cost = (double)sstm__map_cost(t, m, n, pu);
      load = max_load(pu, n, sstm__topo_npus(t));
    }
    printf("%s,%s,%u,%s,%.1f,%.4f,%.3f,%u\n", tname, mname, n, names[s], cost,
           none > 0 ? cost / none : 1.0, ms, load);
  next:;
  }
  free(pu);
}

/* An option's number: decimal digits only (no sign, space or prefix), at
 * most max; anything else ends the program with a message (a seed or a
 * count mistyped must not run something else, or for ever). */
static unsigned long long arg_number(const char *opt, const char *v, unsigned long long max) {
  char *end = NULL;
  errno = 0;
  unsigned long long n = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
  if (end == NULL || *end || errno || n > max)
    die("%s: bad value \"%s\" (a decimal number, at most %llu)", opt, v, max);
  return n;
}

/* Most matrix files one run evaluates (--matrix). */
#define MAX_FILES 256u

/* Most placements averaged per matrix (--seeds). */
#define SEEDS_MAX 1000000u

/* The patterns of --pattern (gen_pattern). */
static const char *const PATTERNS[] = {"pairs", "ring", "clusters", "random"};

static void usage(FILE *out, int status) __attribute__((noreturn));
static void usage(FILE *out, int status) {
  fprintf(out,
          "usage: sstm-mapeval [--topo T] [--seed N] [--seeds N]\n"
          "                    [--matrix FILE]... [--pattern P --threads N,N,...]\n"
          "Evaluates thread placements under the mapping's cost model (communication\n"
          "times hop distance) without running anything: for each matrix and each\n"
          "strategy, the placement's cost and the time taken to compute it.\n"
          "  --topo T        the topology: xeon (default: 8 packages x 12 cores x 2 PUs),\n"
          "                  opteron (4 packages x 2 dies x 4 modules x 2 cores), system\n"
          "                  (this machine), xml:PATH (an hwloc XML file) or an hwloc\n"
          "                  synthetic description (docs/design/mapping.md)\n"
          "  --matrix FILE   a communication matrix (SCHEDSTM_MAP_DUMP's format), up to %u\n"
          "  --pattern P     a generated matrix: pairs, ring, clusters or random, its\n"
          "  --threads LIST  thread counts (comma-separated, 1..%u), thread numbers\n"
          "                  scrambled by the seed\n"
          "  --seed N        the seed of the patterns and of none's placements (1)\n"
          "  --seeds N       random placements averaged for none, 1..%u (20)\n"
          "  -h, --help      this text\n"
          "Strategies: none (a random balanced placement, as the OS might leave it),\n"
          "compact, scatter, round-robin, stmap, stmap-smt (stmap with SMT siblings),\n"
          "scotch (Scotch's static mapper on the same slots as stmap).\n"
          "Output: CSV on standard output, one line per matrix and strategy:\n"
          "  topology,matrix,threads,strategy,cost,rel_none,ms,max_load\n"
          "rel_none = cost / none's cost; ms = mean time of one computation;\n"
          "max_load = most threads on one PU. Exit status 0, 2 on an error.\n",
          MAX_FILES, SSTM_MAP_MAX_THREADS, SEEDS_MAX);
  exit(status);
}

int main(int argc, char **argv) {
  const char *topo = "xeon", *pattern = NULL, *threads = NULL;
  const char *files[MAX_FILES];
  unsigned nfiles = 0;
  rng_state = 1;
  for (int i = 1; i < argc; i += 2) { /* every option but --help takes a value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) usage(stdout, 0);
    if (strcmp(a, "--topo") != 0 && strcmp(a, "--matrix") != 0 && strcmp(a, "--pattern") != 0 &&
        strcmp(a, "--threads") != 0 && strcmp(a, "--seed") != 0 && strcmp(a, "--seeds") != 0)
      die("unknown option '%s' (--help lists the options)", a);
    if (!v) die("%s needs a value", a);
    if (strcmp(a, "--topo") == 0)
      topo = v;
    else if (strcmp(a, "--matrix") == 0 && nfiles < MAX_FILES)
      files[nfiles++] = v;
    else if (strcmp(a, "--matrix") == 0)
      die("--matrix: at most %u files", MAX_FILES);
    else if (strcmp(a, "--pattern") == 0)
      pattern = v;
    else if (strcmp(a, "--threads") == 0)
      threads = v;
    else if (strcmp(a, "--seed") == 0)
      rng_state = arg_number(a, v, UINT64_MAX);
    else
      seeds = (unsigned)arg_number(a, v, SEEDS_MAX);
  }
  if (seeds == 0) die("--seeds: at least 1");
  if (!pattern && nfiles == 0)
    die("nothing to evaluate: give --matrix FILE or --pattern P --threads N,... (--help)");
  if (pattern && !threads) die("--pattern needs --threads");
  if (threads && !pattern) die("--threads goes with --pattern");
  /* The pattern and its thread counts are checked before anything is
   * printed: a mistake there leaves no partial CSV behind. */
  unsigned counts[256], ncounts = 0;
  if (pattern) {
    bool known = false;
    for (size_t k = 0; k < sizeof PATTERNS / sizeof PATTERNS[0]; k++)
      known = known || strcmp(pattern, PATTERNS[k]) == 0;
    if (!known) die("unknown pattern \"%s\" (pairs, ring, clusters, random)", pattern);
    /* every item of the list a count: strtok_r would skip an empty one */
    if (threads[0] == '\0' || threads[0] == ',' || strstr(threads, ",,") ||
        threads[strlen(threads) - 1] == ',')
      die("--threads: an empty item in \"%s\"", threads);
    char *list = strdup(threads), *save = NULL;
    if (!list) die("out of memory");
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      unsigned long long n = arg_number("--threads", tok, SSTM_MAP_MAX_THREADS);
      if (n == 0) die("bad thread count \"%s\"", tok);
      if (ncounts == sizeof counts / sizeof counts[0])
        die("--threads: at most %zu counts", sizeof counts / sizeof counts[0]);
      counts[ncounts++] = (unsigned)n;
    }
    free(list);
  }
  sstm_topo_t *t = NULL;
  char err[512];
  int rc;
  if (strcmp(topo, "xeon") == 0)
    rc = sstm__topo_load_synthetic(XEON_DESC, &t, err, sizeof err);
  else if (strcmp(topo, "opteron") == 0)
    rc = sstm__topo_load_synthetic(OPTERON_DESC, &t, err, sizeof err);
  else if (strcmp(topo, "system") == 0)
    rc = sstm__topo_load_system(&t, err, sizeof err);
  else if (strncmp(topo, "xml:", 4) == 0)
    rc = sstm__topo_load_xml(topo + 4, &t, err, sizeof err);
  else
    rc = sstm__topo_load_synthetic(topo, &t, err, sizeof err);
  if (rc != 0) die("%s", err);
  fprintf(stderr, "sstm-mapeval: topology %s: %s\n", topo, sstm__topo_describe(t));
  /* Every matrix file is read and checked before anything is printed, as
   * the options are: a malformed file or one whose costs do not fit ends
   * the run with no partial CSV. Read again below, one at a time, so that
   * no more than one matrix is held at once. */
  for (unsigned f = 0; f < nfiles; f++) {
    uint64_t *m;
    unsigned n;
    if (sstm__cmat_load(files[f], &m, &n, err, sizeof err) != 0) die("%s", err);
    check_cost_range(t, files[f], m, n);
    free(m);
  }
  printf("topology,matrix,threads,strategy,cost,rel_none,ms,max_load\n");
  for (unsigned f = 0; f < nfiles; f++) {
    uint64_t *m;
    unsigned n;
    if (sstm__cmat_load(files[f], &m, &n, err, sizeof err) != 0) die("%s", err);
    check_cost_range(t, files[f], m, n);
    const char *base = strrchr(files[f], '/');
    evaluate(topo, t, base ? base + 1 : files[f], m, n);
    free(m);
  }
  for (unsigned k = 0; k < ncounts; k++) {
    uint64_t *m = gen_pattern(pattern, counts[k]);
    evaluate(topo, t, pattern, m, counts[k]);
    free(m);
  }
  sstm__topo_free(t);
  return 0;
}
