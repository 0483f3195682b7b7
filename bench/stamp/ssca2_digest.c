/* SPDX-License-Identifier: MIT */
/* A check and a result for STAMP's ssca2, which prints nothing about the
 * graph its kernel 1 (computeGraph) builds. bench/stamp/build.sh links this
 * file into both of ssca2's builds (schedstm and sequential) with
 * -Wl,--wrap=thread_start: every parallel region ssca2 starts runs as
 * before, and after the one that ran computeGraph this prints two lines.
 *
 * The check, of the transactional part: computeGraph counts, in
 * transactions, each vertex's implied in-edges (an out-edge i -> v of a
 * vertex i that v has no out-edge back to) into inDegree[v] and appends i
 * to v's list. This recounts them from the out-edge lists, single-threaded
 * and outside any transaction, and compares:
 *
 *   ssca2 implied in-degrees: consistent (V vertices, N implied edges)
 *   ssca2 implied in-degrees: MISMATCH at vertex v: counted C, computed K
 *
 * The result, for comparison with the sequential build's at one thread:
 *
 *   ssca2 graph digest: vertices=V edges=E directed=D undirected=U
 *                       adjacency=HHHHHHHHHHHHHHHH   (one line)
 *
 * where the adjacency hash sums a mixed 64-bit value over the out-edges and
 * the in-edges, so the order in which threads filled a list does not
 * change it. With more than one thread the digest legitimately differs
 * from the sequential run's: STAMP 0.9.10's computeGraph adds one vertex
 * per thread that sees the current maximum (`MAX(...) + 1` in a
 * transaction each thread runs), and its prefix_sums leaves the first
 * element of every thread's block but the first out of the local sums, so
 * in-edge list offsets (and the undirected edge count) depend on the
 * partition. Neither is a fault of the STM; the in-degree check above does
 * not depend on either.
 *
 * The check and the digest take time that the sequential build and the
 * schedstm build would both pay, which would pull their ratio towards 1:
 * a third line gives it,
 *
 *   ssca2 check time: cpu=S wall=S
 *
 * (seconds of process CPU and of wall time; one thread runs then), and the
 * harness subtracts it from the run's times.
 *
 * defs.h and computeGraph.h are STAMP's, from the tree the user provides;
 * the file is compiled with ssca2's own flags. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "computeGraph.h"
#include "defs.h"

void __real_thread_start(void (*fn)(void *), void *arg);
void __wrap_thread_start(void (*fn)(void *), void *arg);

/* splitmix64's finaliser: every input bit changes about half the output. */
static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

static uint64_t edge_hash(uint64_t from, uint64_t to, uint64_t kind) {
  return mix(mix(from * 4 + kind) ^ to);
}

/* Whether vertex v has an out-edge to u. */
static int has_out_edge(const graph *g, ULONGINT_T v, ULONGINT_T u) {
  for (LONGINT_T k = 0; k < g->outDegree[v]; k++)
    if (g->outVertexList[g->outVertexIndex[v] + (ULONGINT_T)k] == u) return 1;
  return 0;
}

static void check_implied(const graph *g) {
  LONGINT_T *count = calloc(g->numVertices ? g->numVertices : 1, sizeof *count);
  if (count == NULL) {
    printf("ssca2 implied in-degrees: not checked (out of memory)\n");
    return;
  }
  unsigned long total = 0;
  for (ULONGINT_T i = 0; i < g->numVertices; i++)
    for (LONGINT_T j = 0; j < g->outDegree[i]; j++) {
      ULONGINT_T v = g->outVertexList[g->outVertexIndex[i] + (ULONGINT_T)j];
      if (!has_out_edge(g, v, i)) {
        count[v]++;
        total++;
      }
    }
  for (ULONGINT_T v = 0; v < g->numVertices; v++)
    if (count[v] != g->inDegree[v]) {
      printf("ssca2 implied in-degrees: MISMATCH at vertex %lu: counted %ld, computed %ld\n",
             (unsigned long)v, (long)g->inDegree[v], (long)count[v]);
      free(count);
      return;
    }
  printf("ssca2 implied in-degrees: consistent (%lu vertices, %lu implied edges)\n",
         (unsigned long)g->numVertices, total);
  free(count);
}

static void print_digest(const graph *g) {
  uint64_t h = 0;
  for (ULONGINT_T v = 0; v < g->numVertices; v++) {
    for (LONGINT_T i = 0; i < g->outDegree[v]; i++)
      h += edge_hash(v, g->outVertexList[g->outVertexIndex[v] + (ULONGINT_T)i], 1);
    for (LONGINT_T i = 0; i < g->inDegree[v]; i++)
      h += edge_hash(g->inVertexList[g->inVertexIndex[v] + (ULONGINT_T)i], v, 2);
  }
  printf("ssca2 graph digest: vertices=%lu edges=%lu directed=%lu undirected=%lu "
         "adjacency=%016" PRIx64 "\n",
         (unsigned long)g->numVertices, (unsigned long)g->numEdges,
         (unsigned long)g->numDirectedEdges, (unsigned long)g->numUndirectedEdges, h);
}

static double seconds(struct timespec a, struct timespec b) {
  return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}

void __wrap_thread_start(void (*fn)(void *), void *arg) {
  __real_thread_start(fn, arg);
  if (fn != computeGraph) return;
  struct timespec c0, c1, w0, w1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  clock_gettime(CLOCK_MONOTONIC, &w0);
  const graph *g = ((computeGraph_arg_t *)arg)->GPtr;
  check_implied(g);
  print_digest(g);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  clock_gettime(CLOCK_MONOTONIC, &w1);
  printf("ssca2 check time: cpu=%.6f wall=%.6f\n", seconds(c0, c1), seconds(w0, w1));
  fflush(stdout);
}
