/* SPDX-License-Identifier: MIT */
/* Integration: a mesh-like structure of cells and neighbour lists, built
 * the way STAMP's yada [Minh08] builds its triangle mesh, under the
 * policies that make the loser of a conflict wait for the winner (ser-yield,
 * ser-block) and under suicide, with more threads than CPUs.
 *
 * The cells form a ring of `slots` positions. slots[i] is the live cell of
 * position i; a live cell's neighbour list (sorted by address, nodes from
 * sstm_malloc) holds exactly the cells of positions i-1 and i+1, and theirs
 * hold it. A replacement of position i, in one transaction:
 *   - checks the ring around i (the invariant below);
 *   - makes a new cell and its list (sstm_malloc, plain stores before the
 *     cell is published, as yada's element constructor does);
 *   - in both neighbours' lists unlinks the old cell's node (sstm_free) and
 *     links one for the new cell;
 *   - marks the old cell garbage and reads the mark back (read after
 *     write), frees the old cell and its nodes (sstm_free: reclaimed after
 *     the grace period);
 *   - publishes the new cell in slots[i], counts the replacement in
 *     version[i] and checks the ring around i again, now through its own
 *     writes (read after write of lists, of a cell it made and of nodes it
 *     changed).
 * A double replacement does positions i and i+1 in one transaction, the
 * second through the cell the first made, as yada's nested refinement
 * works on the region the encroached element's refinement left. An audit
 * checks the ring over a window of positions, in a declared read-only
 * transaction or not.
 *
 * The invariant (every committed state has it, and every transaction
 * checks it where its own view must have it):
 *   - a cell reached from slots[i] carries its magic words and position i,
 *     and is not garbage;
 *   - its list holds exactly the cells of slots[i-1] and slots[i+1], each
 *     live, each with this cell in its own list.
 * Fixed fields (magic, position, a node's cell) are read with plain loads,
 * as yada reads its elements' geometry: they are written before the
 * publishing commit and never again while a running attempt can reach the
 * block (grace periods, docs/design/core.md (5)). A violation seen inside a
 * transaction is an inconsistent snapshot (opacity, (3)): the test fails at
 * once, naming the transaction. At the end every position's cell is
 * checked again, and version[i] against the replacements each thread
 * counted for it: a lost update shows there.
 *
 * usage: mesh DESIGN POLICY THREADS [--ops N] [--scaled-ops N] [--slots S]
 *             [--yield-every K]   (a yield point yields with probability 1/K)
 */
#define _GNU_SOURCE
#include <sched.h>

#include "common_int.h"

#define MAGIC 0x6d6573685f63656cull

struct nbr;
struct cell {
  uint64_t magic;   /* plain: set before publication, never changed */
  long pos;         /* plain: the ring position it was made for */
  long gen;         /* plain: version[pos] after the replacement that made it */
  long garbage;     /* transactional: 1 once replaced */
  struct nbr *nbrs; /* transactional: neighbour list, sorted by cell address */
  uint64_t magic2;  /* plain, as magic */
};

struct nbr {
  struct cell *c;   /* plain: set before publication, never changed */
  struct nbr *next; /* transactional */
};

static long nslots;
static struct cell **slots; /* transactional */
static long *version;       /* transactional: replacements of each position */
static long ops_per_thread;

/* Yield points inside the transactions: with more threads than CPUs a
 * transaction that yields is a holder (or a doomed reader) off the CPU
 * while the others run, commit, free and reuse, which the ser-* policies
 * then wait for. Each point yields with probability 1/yield_every, drawn
 * from the thread's generator (deterministic per seed, apart from the
 * schedule). */
static __thread sstm_rng_t *yield_rng;
static uint64_t yield_every = 4;

static void maybe_yield(void) {
  if (yield_rng != NULL && sstm_rng_below(yield_rng, yield_every) == 0) sched_yield();
}

static long ring_prev(long i) { return (i + nslots - 1) % nslots; }
static long ring_next(long i) { return (i + 1) % nslots; }

static struct cell *ld_cell(struct cell *const *p) {
  return sstm_load_ptr((void *const *)(const void *)p);
}
static struct nbr *ld_nbr(struct nbr *const *p) {
  return sstm_load_ptr((void *const *)(const void *)p);
}

/* The fixed fields of a cell reached from position pos. */
static void check_fixed(const struct cell *c, long pos, const char *what) {
  if (c == NULL) FAIL("%s: position %ld holds no cell (inconsistent snapshot)", what, pos);
  if (c->magic != MAGIC || c->magic2 != MAGIC)
    FAIL("%s: cell %p of position %ld has magic %llx/%llx: not a live cell (freed under a "
         "running transaction?)",
         what, (const void *)c, pos, (unsigned long long)c->magic, (unsigned long long)c->magic2);
  if (c->pos != pos)
    FAIL("%s: cell %p reached from position %ld was made for position %ld (inconsistent "
         "snapshot)",
         what, (const void *)c, pos, c->pos);
}

/* Whether c's list holds x. At most 3 nodes are looked at: a live list has 2. */
static bool list_has(const struct cell *c, const struct cell *x) {
  const struct nbr *n = ld_nbr(&c->nbrs);
  for (int k = 0; n != NULL && k < 3; k++) {
    if (n->c == x) return true;
    n = ld_nbr(&n->next);
  }
  return false;
}

/* The invariant around position i, as the calling transaction sees it. */
static void ring_check(long i, const char *what) {
  struct cell *c = ld_cell(&slots[i]);
  check_fixed(c, i, what);
  if (sstm_load_i64((const int64_t *)&c->garbage) != 0)
    FAIL("%s: cell %p of position %ld is garbage (inconsistent snapshot)", what, (void *)c, i);
  struct cell *p = ld_cell(&slots[ring_prev(i)]), *q = ld_cell(&slots[ring_next(i)]);
  maybe_yield();
  check_fixed(p, ring_prev(i), what);
  check_fixed(q, ring_next(i), what);
  struct cell *lo = (uintptr_t)p < (uintptr_t)q ? p : q, *hi = lo == p ? q : p;
  const struct nbr *a = ld_nbr(&c->nbrs);
  const struct nbr *b = a ? ld_nbr(&a->next) : NULL;
  const struct nbr *z = b ? ld_nbr(&b->next) : NULL;
  if (a == NULL || b == NULL || z != NULL || a->c != lo || b->c != hi)
    FAIL("%s: the list of position %ld's cell %p is not {%p, %p} (inconsistent snapshot)", what, i,
         (void *)c, (void *)lo, (void *)hi);
  for (int k = 0; k < 2; k++) {
    struct cell *nb = k ? q : p;
    if (sstm_load_i64((const int64_t *)&nb->garbage) != 0)
      FAIL("%s: neighbour %p of position %ld is garbage (inconsistent snapshot)", what, (void *)nb,
           i);
    if (!list_has(nb, c))
      FAIL("%s: neighbour %p of position %ld does not list its cell %p (inconsistent snapshot)",
           what, (void *)nb, i, (void *)c);
  }
}

/* A new node for x, linked in front of next: plain stores, published by
 * the caller's transactional store of its address. */
static struct nbr *new_node(struct cell *x, struct nbr *next) {
  struct nbr *n = sstm_malloc(sizeof *n);
  CHECK_NOT_NULL(n);
  n->c = x;
  n->next = next;
  return n;
}

/* In owner's list, replace the node of old by one of fresh (sorted). */
static void list_replace(struct cell *owner, struct cell *old, struct cell *fresh) {
  struct nbr **pp = &owner->nbrs;
  struct nbr *cur = ld_nbr(pp);
  while (cur != NULL && cur->c != old) {
    pp = &cur->next;
    cur = ld_nbr(pp);
  }
  if (cur == NULL)
    FAIL("the list of %p lost its neighbour %p (inconsistent snapshot)", (void *)owner,
         (void *)old);
  sstm_store_ptr((void **)pp, ld_nbr(&cur->next));
  sstm_store_ptr((void **)&cur->next, NULL); /* as STAMP's list remove */
  sstm_free(cur);
  pp = &owner->nbrs;
  cur = ld_nbr(pp);
  while (cur != NULL && (uintptr_t)cur->c < (uintptr_t)fresh) {
    pp = &cur->next;
    cur = ld_nbr(pp);
  }
  sstm_store_ptr((void **)pp, new_node(fresh, cur));
}

/* Replace position i's cell (see the file comment). */
static void replace(long i) {
  ring_check(i, "replace, before");
  struct cell *c = ld_cell(&slots[i]);
  struct cell *p = ld_cell(&slots[ring_prev(i)]), *q = ld_cell(&slots[ring_next(i)]);
  long v = sstm_load_i64((const int64_t *)&version[i]) + 1;
  struct cell *n = sstm_malloc(sizeof *n);
  CHECK_NOT_NULL(n);
  n->magic = n->magic2 = MAGIC;
  n->pos = i;
  n->gen = v;
  n->garbage = 0;
  struct cell *lo = (uintptr_t)p < (uintptr_t)q ? p : q, *hi = lo == p ? q : p;
  n->nbrs = new_node(lo, new_node(hi, NULL));
  list_replace(p, c, n);
  maybe_yield();
  list_replace(q, c, n);
  sstm_store_i64((int64_t *)&c->garbage, 1);
  if (sstm_load_i64((const int64_t *)&c->garbage) != 1)
    FAIL("read after write: the garbage mark of %p reads back as 0", (void *)c);
  for (struct nbr *x = ld_nbr(&c->nbrs); x != NULL;) {
    struct nbr *next = ld_nbr(&x->next);
    sstm_free(x);
    x = next;
  }
  sstm_free(c);
  maybe_yield();
  sstm_store_ptr((void **)&slots[i], n);
  sstm_store_i64((int64_t *)&version[i], v);
  if (ld_cell(&slots[i]) != n || sstm_load_i64((const int64_t *)&version[i]) != v)
    FAIL("read after write: position %ld does not read back as written", i);
  ring_check(i, "replace, after");
}

struct op {
  int kind; /* 0: replace, 1: double replace, 2: audit */
  long i;
};

static void op_fn(void *arg) {
  const struct op *o = arg;
  switch (o->kind) {
  case 0: replace(o->i); break;
  case 1:
    replace(o->i);
    replace(ring_next(o->i));
    ring_check(o->i, "double replace, end");
    break;
  default:
    for (long k = 0; k < 4; k++)
      ring_check((o->i + k) % nslots, "audit");
  }
}

static void worker(sstm_tt_t *t) {
  long *mine = t->arg == NULL ? NULL : (long *)t->arg + (size_t)t->idx * (size_t)nslots;
  const sstm_attr_t ro = {.read_only = true};
  yield_rng = &t->rng;
  for (long k = 0; k < ops_per_thread; k++) {
    struct op o = {(int)sstm_rng_below(&t->rng, 4),
                   (long)sstm_rng_below(&t->rng, (uint64_t)nslots)};
    if (o.kind == 3) o.kind = 2;
    bool ro_audit = o.kind == 2 && sstm_rng_below(&t->rng, 2);
    CHECK_OK(sstm_run(ro_audit ? &ro : NULL, op_fn, &o));
    if (o.kind == 0) mine[o.i]++;
    if (o.kind == 1) mine[o.i]++, mine[ring_next(o.i)]++;
  }
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s DESIGN POLICY THREADS [--ops N] [--scaled-ops N] [--slots S]\n",
            argv[0]);
    return 2;
  }
  char name[128];
  snprintf(name, sizeof name, "mesh.%s.%s.%s", argv[1], argv[2], argv[3]);
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  unsigned threads = sstm_test_threads((unsigned)atoi(argv[3]));
  CHECK_GE_U(threads, 1);
  nslots = int_opt(argc, argv, "--slots", 24);
  CHECK_MSG(nslots >= 3, "--slots %ld: at least 3 (a ring of distinct neighbours)", nslots);
  ops_per_thread = int_opt_ops(argc, argv, 2000, 50);
  yield_every = (uint64_t)int_opt(argc, argv, "--yield-every", 4);
  CHECK_MSG(yield_every >= 1, "--yield-every %llu: at least 1", (unsigned long long)yield_every);
  int_init(design, argv[2]);
  CHECK_OK(sstm_thread_init());

  /* The initial ring, built before the threads start. */
  slots = calloc((size_t)nslots, sizeof *slots);
  version = calloc((size_t)nslots, sizeof *version);
  long *counts = calloc((size_t)threads * (size_t)nslots, sizeof *counts);
  CHECK_NOT_NULL(slots);
  CHECK_NOT_NULL(version);
  CHECK_NOT_NULL(counts);
  for (long i = 0; i < nslots; i++) {
    struct cell *c = malloc(sizeof *c);
    CHECK_NOT_NULL(c);
    *c = (struct cell){.magic = MAGIC, .pos = i, .magic2 = MAGIC};
    slots[i] = c;
  }
  for (long i = 0; i < nslots; i++) {
    struct cell *p = slots[ring_prev(i)], *q = slots[ring_next(i)];
    struct cell *lo = (uintptr_t)p < (uintptr_t)q ? p : q, *hi = lo == p ? q : p;
    slots[i]->nbrs = new_node(lo, new_node(hi, NULL));
  }

  sstm_test_run_threads(threads, true, worker, counts);

  /* Every position checked, outside any transaction now, and no
   * replacement lost. */
  for (long i = 0; i < nslots; i++) {
    struct op o = {2, i};
    CHECK_OK(sstm_run(NULL, op_fn, &o));
    long want = 0;
    for (unsigned t = 0; t < threads; t++)
      want += counts[(size_t)t * (size_t)nslots + (size_t)i];
    CHECK_MSG(version[i] == want, "position %ld: %ld replacements counted, %ld committed", i,
              version[i], want);
    CHECK_MSG(slots[i]->gen == want, "position %ld: its cell is of replacement %ld, not %ld", i,
              slots[i]->gen, want);
  }
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  printf("mesh: %u threads, %ld positions, %ld operations each, %llu commits, %llu aborts\n",
         threads, nslots, ops_per_thread, (unsigned long long)(s.commits_ro + s.commits_update),
         (unsigned long long)s.aborts_total);
  /* tear down: the cells and nodes go back through the grace period */
  for (long i = 0; i < nslots; i++) {
    for (struct nbr *x = slots[i]->nbrs; x != NULL;) {
      struct nbr *next = x->next;
      sstm_free(x);
      x = next;
    }
    sstm_free(slots[i]);
  }
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  free(slots);
  free(version);
  free(counts);
  printf("PASS %s\n", name);
  return 0;
}
