/* SPDX-License-Identifier: MIT */
/* bench/ds/sb7.c: the STMBench7-like object graph and its operations (see
 * sb7.h). Every shared access goes through TM_LOAD_x / TM_STORE_x; memory
 * is obtained with TM_MALLOC and released with TM_FREE inside the
 * transaction that unlinks it. Helpers that touch only the calling
 * thread's private context (random numbers, DFS marks, result tallies) are
 * TM_PURE: they run again from scratch when an attempt restarts. */
#define _GNU_SOURCE
#include "sb7.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tm.h"

/* ---- the objects --------------------------------------------------------
 * Fields are long or pointers (the access layer's word types). Objects that
 * sit in arrays are padded to 64 bytes so that neighbours do not share a
 * lock stripe of the usual sizes. */

typedef struct sb7_comp sb7_comp_t;
typedef struct sb7_base sb7_base_t;

typedef struct sb7_conn {
  struct sb7_atomic *to;
  long length;
} sb7_conn_t;

typedef struct sb7_atomic {
  long id;         /* composite id * SB7_MAX_ATOMIC + index */
  long build_date; /* [0, SB7_DATE_RANGE); the date index list it is in */
  long x, y;       /* swapped by updates; x + y never changes */
  long nswaps;     /* swaps done on this part */
  sb7_comp_t *owner;
  struct sb7_atomic *date_prev, *date_next; /* date index chain */
  sb7_conn_t out[SB7_CONN];
  long type;
  long pad_;
} sb7_atomic_t;

typedef struct sb7_doc {
  long id;      /* = its composite part's id */
  long version; /* toggles done: text is upper case when odd */
  sb7_comp_t *comp;
  long nwords;
  long text[]; /* 8 letters per word */
} sb7_doc_t;

typedef struct sb7_link {
  sb7_comp_t *comp;
  sb7_base_t *base;
  struct sb7_link *next_in_base; /* chain of the base's components */
  struct sb7_link *next_in_comp; /* chain of the composite's users */
} sb7_link_t;

struct sb7_comp {
  long id;
  long build_date;
  sb7_comp_t *idx_next; /* id index chain */
  sb7_doc_t *doc;
  long nused; /* links in used_in */
  sb7_link_t *used_in;
  long nparts;
  long pad_;
  sb7_atomic_t parts[]; /* parts[0] is the root part */
};

typedef struct sb7_complex {
  long id;
  long build_date;
  long level; /* >= 2; children are base assemblies at level 2 */
  long nchild;
  struct sb7_complex *parent;
  void **child;
  long pad_[2];
} sb7_complex_t;

struct sb7_base {
  long id;
  long build_date;
  long ncomps; /* links in comps */
  sb7_complex_t *parent;
  sb7_link_t *comps;
  long pad_[3];
};

/* Padded list heads of the two indexes. */
typedef struct sb7_cslot {
  sb7_comp_t *head;
  long pad_[7];
} sb7_cslot_t;

typedef struct sb7_dslot {
  struct sb7_atomic *head;
  long pad_[7];
} sb7_dslot_t;

_Static_assert(sizeof(sb7_atomic_t) == 128, "atomic part layout");
_Static_assert(sizeof(sb7_complex_t) == 64 && sizeof(struct sb7_base) == 64, "assembly layout");

struct sb7 {
  sb7_params_t p;
  long A; /* atomic parts per composite */
  long ncomplex, nbase;
  sb7_complex_t *complex; /* [0] is the root */
  sb7_base_t *base;       /* base assembly id i is base[i - 1] */
  sb7_cslot_t *index;     /* composite id index, index_mask + 1 buckets */
  long index_mask;
  sb7_dslot_t *dates; /* SB7_DATE_RANGE lists of atomic parts */
  long initial_links;
  long links_per_comp_milli; /* initial links per composite part, x 1000 */
};

/* ---- private helpers (pure: no shared memory) --------------------------- */

#define SB7_LETTER_FLIP 0x2020202020202020UL

TM_PURE static void sb7_oom(void) __attribute__((noreturn));
/* As intset_out_of_memory: the graph does not fit; a failed run (exit
 * status 1), not a core dump. */
TM_PURE static void sb7_oom(void) {
  fprintf(stderr, "sb7: out of memory allocating the graph: it does not fit in memory (-z, -A)\n");
  exit(1);
}

TM_PURE static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/* splitmix64 stream: any state is valid. */
TM_PURE static inline uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

TM_PURE static inline long rnd_below(uint64_t *s, long n) {
  return n <= 0 ? 0 : (long)(((unsigned __int128)rnd(s) * (uint64_t)n) >> 64);
}

TM_PURE static void res_add(uint64_t *field, uint64_t n) { *field += n; }

TM_PURE static void marks_clear(sb7_thread_t *t) {
  memset(t->visited, 0, t->visited_words * sizeof *t->visited);
}

/* Mark part i of the composite being traversed; true if it was unmarked. */
TM_PURE static bool mark(sb7_thread_t *t, long i) {
  if (i < 0 || (size_t)i >= t->visited_words * 64) return false;
  uint64_t bit = 1ULL << (i & 63);
  if (t->visited[i >> 6] & bit) return false;
  t->visited[i >> 6] |= bit;
  return true;
}

/* Start of every attempt: count it, forget what the previous one did. */
TM_PURE static void attempt_begin(sb7_thread_t *t) {
  t->attempts++;
  memset(&t->res, 0, sizeof t->res);
}

#if defined(TM_BACKEND_SCHEDSTM)
/* A retry that starts after the deadline gives up (it would otherwise keep
 * the run going for as long as it keeps losing). An irrevocable retry (a
 * policy's escalation) cannot be cancelled, and needs not: it will commit. */
TM_PURE static bool give_up(const sb7_thread_t *t) {
  return t->attempts > 1 && t->stop != NULL && !sstm_is_irrevocable() &&
         atomic_load_explicit(t->stop, memory_order_relaxed);
}

#define SB7_GIVE_UP_IF_STOPPED(t)                                                                  \
  do {                                                                                             \
    if (give_up(t)) sstm_cancel();                                                                 \
  } while (0)
#else
/* libitm falls back to serial mode by itself; seq never retries. */
#define SB7_GIVE_UP_IF_STOPPED(t) ((void)(t))
#endif

/* Occurrences of byte ch in an 8-byte word. */
TM_PURE static inline long count_byte(uint64_t w, unsigned char ch) {
  long n = 0;
  for (int k = 0; k < 8; k++)
    n += ((w >> (8 * k)) & 0xff) == ch;
  return n;
}

/* Deterministic initial values, recomputed by the check. */
TM_SAFE static long x0_of(const sb7_t *db, long id) {
  return (long)(mix64((uint64_t)id ^ db->p.seed) % 1000);
}
TM_SAFE static long y0_of(const sb7_t *db, long id) {
  return (long)(mix64((uint64_t)id * 3 + 1 + db->p.seed) % 1000);
}
/* Lower-case text word j of document id. */
TM_SAFE static long doc_word(const sb7_t *db, long id, long j) {
  uint64_t h = mix64(((uint64_t)id << 20) ^ (uint64_t)j ^ (db->p.seed * 7));
  uint64_t w = 0;
  for (int k = 0; k < 8; k++)
    w |= (uint64_t)('a' + ((h >> (8 * k)) & 0xff) % 26) << (8 * k);
  return (long)w;
}

TM_PURE static inline long date_wrap(long d) {
  d %= SB7_DATE_RANGE;
  return d < 0 ? d + SB7_DATE_RANGE : d;
}

/* ---- the id index -------------------------------------------------------- */

TM_SAFE static inline long index_bucket(const sb7_t *db, long id) {
  return (long)(mix64((uint64_t)id) & (uint64_t)db->index_mask);
}

TM_SAFE static sb7_comp_t *comp_lookup(sb7_t *db, long id) {
  sb7_comp_t *c = TM_LOAD_PTR(&db->index[index_bucket(db, id)].head);
  while (c != NULL && TM_LOAD_LONG(&c->id) != id)
    c = TM_LOAD_PTR(&c->idx_next);
  return c;
}

/* The first composite part found from id upwards, trying n ids. */
TM_SAFE static sb7_comp_t *comp_probe(sb7_t *db, long id, int n) {
  long range = (long)db->p.id_range;
  for (int i = 0; i < n; i++) {
    sb7_comp_t *c = comp_lookup(db, 1 + (id - 1 + i) % range);
    if (c != NULL) return c;
  }
  return NULL;
}

TM_SAFE static long random_id(sb7_t *db, uint64_t *rs) {
  return 1 + rnd_below(rs, (long)db->p.id_range);
}

/* c is fresh (private to this transaction). */
TM_SAFE static void index_insert_fresh(sb7_t *db, sb7_comp_t *c, long id) {
  sb7_comp_t **head = &db->index[index_bucket(db, id)].head;
  TM_INIT_PTR(&c->idx_next, TM_LOAD_PTR(head));
  TM_STORE_PTR(head, c);
}

TM_SAFE static void index_remove(sb7_t *db, sb7_comp_t *c) {
  long id = TM_LOAD_LONG(&c->id);
  sb7_comp_t **link = &db->index[index_bucket(db, id)].head;
  sb7_comp_t *cur = TM_LOAD_PTR(link);
  while (cur != NULL && cur != c) {
    link = &cur->idx_next;
    cur = TM_LOAD_PTR(link);
  }
  if (cur == c) TM_STORE_PTR(link, TM_LOAD_PTR(&c->idx_next));
}

/* ---- the date index ------------------------------------------------------ */

TM_SAFE static inline sb7_atomic_t **date_head(sb7_t *db, long d) { return &db->dates[d].head; }

/* p is fresh: only the list head and its old first element are shared. */
TM_SAFE static void date_insert_fresh(sb7_t *db, sb7_atomic_t *p, long d) {
  sb7_atomic_t **head = date_head(db, d);
  sb7_atomic_t *h = TM_LOAD_PTR(head);
  TM_INIT_LONG(&p->build_date, d);
  TM_INIT_PTR(&p->date_prev, NULL);
  TM_INIT_PTR(&p->date_next, h);
  if (h != NULL) TM_STORE_PTR(&h->date_prev, p);
  TM_STORE_PTR(head, p);
}

TM_SAFE static void date_insert(sb7_t *db, sb7_atomic_t *p, long d) {
  sb7_atomic_t **head = date_head(db, d);
  sb7_atomic_t *h = TM_LOAD_PTR(head);
  TM_STORE_LONG(&p->build_date, d);
  TM_STORE_PTR(&p->date_prev, NULL);
  TM_STORE_PTR(&p->date_next, h);
  if (h != NULL) TM_STORE_PTR(&h->date_prev, p);
  TM_STORE_PTR(head, p);
}

TM_SAFE static void date_remove(sb7_t *db, sb7_atomic_t *p) {
  long d = TM_LOAD_LONG(&p->build_date);
  sb7_atomic_t *prev = TM_LOAD_PTR(&p->date_prev);
  sb7_atomic_t *next = TM_LOAD_PTR(&p->date_next);
  if (prev != NULL)
    TM_STORE_PTR(&prev->date_next, next);
  else
    TM_STORE_PTR(date_head(db, d), next);
  if (next != NULL) TM_STORE_PTR(&next->date_prev, prev);
}

/* Move p by delta dates (wrapping), in the index too. */
TM_SAFE static void date_move(sb7_t *db, sb7_thread_t *t, sb7_atomic_t *p, long delta) {
  long d = TM_LOAD_LONG(&p->build_date);
  date_remove(db, p);
  date_insert(db, p, date_wrap(d + delta));
  res_add(&t->res.moves, 1);
}

/* ---- composite parts ----------------------------------------------------- */

/* A new composite part with its atomic graph and document, its parts in the
 * date index (not yet in the id index). */
TM_SAFE static sb7_comp_t *comp_new(sb7_t *db, long id, uint64_t *rs) {
  long A = db->A, W = (long)db->p.doc_words;
  sb7_comp_t *c = TM_MALLOC(sizeof *c + (size_t)A * sizeof(sb7_atomic_t));
  sb7_doc_t *doc = TM_MALLOC(sizeof *doc + (size_t)W * sizeof(long));
  if (c == NULL || doc == NULL) sb7_oom();
  TM_INIT_LONG(&c->id, id);
  TM_INIT_LONG(&c->build_date, rnd_below(rs, 10000));
  TM_INIT_PTR(&c->idx_next, NULL);
  TM_INIT_PTR(&c->doc, doc);
  TM_INIT_LONG(&c->nused, 0);
  TM_INIT_PTR(&c->used_in, NULL);
  TM_INIT_LONG(&c->nparts, A);
  TM_INIT_LONG(&c->pad_, 0);
  TM_INIT_LONG(&doc->id, id);
  TM_INIT_LONG(&doc->version, 0);
  TM_INIT_PTR(&doc->comp, c);
  TM_INIT_LONG(&doc->nwords, W);
  for (long j = 0; j < W; j++)
    TM_INIT_LONG(&doc->text[j], doc_word(db, id, j));
  for (long i = 0; i < A; i++) {
    sb7_atomic_t *p = &c->parts[i];
    long pid = id * SB7_MAX_ATOMIC + i;
    TM_INIT_LONG(&p->id, pid);
    TM_INIT_LONG(&p->x, x0_of(db, pid));
    TM_INIT_LONG(&p->y, y0_of(db, pid));
    TM_INIT_LONG(&p->nswaps, 0);
    TM_INIT_PTR(&p->owner, c);
    TM_INIT_LONG(&p->type, rnd_below(rs, 10));
    TM_INIT_LONG(&p->pad_, 0);
    for (int k = 0; k < SB7_CONN; k++) {
      long to = k == 0 ? (i + 1) % A : rnd_below(rs, A);
      TM_INIT_PTR(&p->out[k].to, &c->parts[to]);
      TM_INIT_LONG(&p->out[k].length, 1 + rnd_below(rs, 100));
    }
    date_insert_fresh(db, p, rnd_below(rs, SB7_DATE_RANGE));
  }
  return c;
}

/* Link c to b (a new link at the head of both chains). */
TM_SAFE static void link_new(sb7_base_t *b, sb7_comp_t *c) {
  sb7_link_t *l = TM_MALLOC(sizeof *l);
  if (l == NULL) sb7_oom();
  TM_INIT_PTR(&l->comp, c);
  TM_INIT_PTR(&l->base, b);
  TM_INIT_PTR(&l->next_in_base, TM_LOAD_PTR(&b->comps));
  TM_INIT_PTR(&l->next_in_comp, TM_LOAD_PTR(&c->used_in));
  TM_STORE_PTR(&b->comps, l);
  TM_STORE_LONG(&b->ncomps, TM_LOAD_LONG(&b->ncomps) + 1);
  TM_STORE_PTR(&c->used_in, l);
  TM_STORE_LONG(&c->nused, TM_LOAD_LONG(&c->nused) + 1);
}

/* Remove l from its base's chain. */
TM_SAFE static void unchain_from_base(sb7_link_t *l) {
  sb7_base_t *b = TM_LOAD_PTR(&l->base);
  sb7_link_t **at = &b->comps;
  sb7_link_t *cur = TM_LOAD_PTR(at);
  while (cur != NULL && cur != l) {
    at = &cur->next_in_base;
    cur = TM_LOAD_PTR(at);
  }
  if (cur == l) {
    TM_STORE_PTR(at, TM_LOAD_PTR(&l->next_in_base));
    TM_STORE_LONG(&b->ncomps, TM_LOAD_LONG(&b->ncomps) - 1);
  }
}

/* Remove l from its composite part's chain. */
TM_SAFE static void unchain_from_comp(sb7_link_t *l) {
  sb7_comp_t *c = TM_LOAD_PTR(&l->comp);
  sb7_link_t **at = &c->used_in;
  sb7_link_t *cur = TM_LOAD_PTR(at);
  while (cur != NULL && cur != l) {
    at = &cur->next_in_comp;
    cur = TM_LOAD_PTR(at);
  }
  if (cur == l) {
    TM_STORE_PTR(at, TM_LOAD_PTR(&l->next_in_comp));
    TM_STORE_LONG(&c->nused, TM_LOAD_LONG(&c->nused) - 1);
  }
}

/* ---- visiting ------------------------------------------------------------ */

/* t3 moves the parts whose x exceeds y by this much: about one in eight
 * (x, y uniform in [0, 1000)); which ones depends on the swaps done. */
#define SB7_DATE_SKEW 500

enum visit_mode {
  V_READ,       /* read x, y of every atomic part (DFS) */
  V_SWAP,       /* swap x, y of every atomic part (DFS) */
  V_DATE,       /* move the date of every part with x > y + 500 (DFS) */
  V_ROOT,       /* read the root part only */
  V_DOC_READ,   /* count 'I' in the document */
  V_DOC_TOGGLE, /* toggle the case of the document */
};

TM_SAFE static long part_read(sb7_thread_t *t, sb7_atomic_t *p) {
  res_add(&t->res.visited, 1);
  return TM_LOAD_LONG(&p->x) + TM_LOAD_LONG(&p->y);
}

TM_SAFE static long part_swap(sb7_thread_t *t, sb7_atomic_t *p) {
  long x = TM_LOAD_LONG(&p->x), y = TM_LOAD_LONG(&p->y);
  TM_STORE_LONG(&p->x, y);
  TM_STORE_LONG(&p->y, x);
  TM_STORE_LONG(&p->nswaps, TM_LOAD_LONG(&p->nswaps) + 1);
  res_add(&t->res.visited, 1);
  res_add(&t->res.swaps, 1);
  return x + y;
}

TM_SAFE static long part_visit(sb7_t *db, sb7_thread_t *t, sb7_atomic_t *p, int mode) {
  switch (mode) {
  case V_SWAP: return part_swap(t, p);
  case V_DATE: {
    long x = TM_LOAD_LONG(&p->x), y = TM_LOAD_LONG(&p->y);
    res_add(&t->res.visited, 1);
    if (x > y + SB7_DATE_SKEW) date_move(db, t, p, 1);
    return x - y;
  }
  default: return part_read(t, p);
  }
}

TM_SAFE static long dfs(sb7_t *db, sb7_thread_t *t, sb7_comp_t *c, sb7_atomic_t *p, int mode) {
  long sum = part_visit(db, t, p, mode);
  for (int k = 0; k < SB7_CONN; k++) {
    sb7_atomic_t *q = TM_LOAD_PTR(&p->out[k].to);
    if (q != NULL && mark(t, (long)(q - c->parts))) sum += dfs(db, t, c, q, mode);
  }
  return sum;
}

TM_SAFE static long doc_count(sb7_thread_t *t, sb7_doc_t *d, unsigned char ch) {
  long n = TM_LOAD_LONG(&d->nwords), count = 0;
  for (long j = 0; j < n; j++)
    count += count_byte((uint64_t)TM_LOAD_LONG(&d->text[j]), ch);
  res_add(&t->res.visited, 1);
  return count;
}

TM_SAFE static long doc_toggle(sb7_thread_t *t, sb7_doc_t *d) {
  long n = TM_LOAD_LONG(&d->nwords);
  for (long j = 0; j < n; j++) {
    long w = TM_LOAD_LONG(&d->text[j]);
    TM_STORE_LONG(&d->text[j], (long)((uint64_t)w ^ SB7_LETTER_FLIP));
  }
  TM_STORE_LONG(&d->version, TM_LOAD_LONG(&d->version) + 1);
  res_add(&t->res.visited, 1);
  res_add(&t->res.toggles, 1);
  return n;
}

TM_SAFE static long visit_comp(sb7_t *db, sb7_thread_t *t, sb7_comp_t *c, int mode) {
  switch (mode) {
  case V_ROOT: return part_read(t, &c->parts[0]);
  case V_DOC_READ: return doc_count(t, TM_LOAD_PTR(&c->doc), 'I');
  case V_DOC_TOGGLE: return doc_toggle(t, TM_LOAD_PTR(&c->doc));
  default:
    marks_clear(t);
    mark(t, 0);
    return dfs(db, t, c, &c->parts[0], mode);
  }
}

TM_SAFE static long trav_base(sb7_t *db, sb7_thread_t *t, sb7_base_t *b, int mode) {
  long sum = TM_LOAD_LONG(&b->build_date);
  for (sb7_link_t *l = TM_LOAD_PTR(&b->comps); l != NULL; l = TM_LOAD_PTR(&l->next_in_base))
    sum += visit_comp(db, t, TM_LOAD_PTR(&l->comp), mode);
  return sum;
}

TM_SAFE static long trav_complex(sb7_t *db, sb7_thread_t *t, sb7_complex_t *a, int mode) {
  long level = TM_LOAD_LONG(&a->level), n = TM_LOAD_LONG(&a->nchild);
  void **child = TM_LOAD_PTR(&a->child);
  long sum = TM_LOAD_LONG(&a->build_date);
  for (long i = 0; i < n; i++) {
    void *ch = TM_LOAD_PTR(&child[i]);
    sum += level > 2 ? trav_complex(db, t, ch, mode) : trav_base(db, t, ch, mode);
  }
  return sum;
}

/* Q7-like: every atomic part of every composite part in the index. */
TM_SAFE static long scan_index(sb7_t *db, sb7_thread_t *t) {
  long sum = 0;
  for (long b = 0; b <= db->index_mask; b++) {
    for (sb7_comp_t *c = TM_LOAD_PTR(&db->index[b].head); c != NULL;
         c = TM_LOAD_PTR(&c->idx_next)) {
      long n = TM_LOAD_LONG(&c->nparts);
      for (long i = 0; i < n; i++)
        sum += TM_LOAD_LONG(&c->parts[i].build_date) + TM_LOAD_LONG(&c->parts[i].x);
      res_add(&t->res.visited, (uint64_t)n);
    }
  }
  return sum;
}

/* ---- short traversals ---------------------------------------------------- */

/* Random path from the root to a base assembly. */
TM_SAFE static sb7_base_t *random_base_path(sb7_t *db, uint64_t *rs, long *sum) {
  sb7_complex_t *a = &db->complex[0];
  for (;;) {
    long level = TM_LOAD_LONG(&a->level), n = TM_LOAD_LONG(&a->nchild);
    void **child = TM_LOAD_PTR(&a->child);
    *sum += TM_LOAD_LONG(&a->build_date);
    void *ch = TM_LOAD_PTR(&child[rnd_below(rs, n)]);
    if (level <= 2) return ch;
    a = ch;
  }
}

/* A random component of b (its current bag), or NULL if it has none. */
TM_SAFE static sb7_comp_t *random_component(sb7_base_t *b, uint64_t *rs) {
  long n = TM_LOAD_LONG(&b->ncomps);
  if (n <= 0) return NULL;
  long k = rnd_below(rs, n);
  sb7_link_t *l = TM_LOAD_PTR(&b->comps);
  while (k-- > 0 && l != NULL)
    l = TM_LOAD_PTR(&l->next_in_base);
  return l != NULL ? TM_LOAD_PTR(&l->comp) : NULL;
}

#define SB7_WALK_STEPS 16

/* Data-dependent walk from the root part: at each step go to the target
 * with the largest x. With swap, every visited part's x and y are swapped,
 * which changes the choices of later walks. */
TM_SAFE static long walk(sb7_t *db, sb7_thread_t *t, sb7_comp_t *c, bool swap) {
  sb7_atomic_t *p = &c->parts[0];
  long sum = 0;
  for (int s = 0; s < SB7_WALK_STEPS && p != NULL; s++) {
    sum += part_visit(db, t, p, swap ? V_SWAP : V_READ);
    sb7_atomic_t *best = NULL;
    long best_x = LONG_MIN;
    for (int k = 0; k < SB7_CONN; k++) {
      sb7_atomic_t *q = TM_LOAD_PTR(&p->out[k].to);
      long qx = TM_LOAD_LONG(&q->x);
      if (qx > best_x) {
        best_x = qx;
        best = q;
      }
    }
    p = best;
  }
  return sum;
}

/* ---- the operations ------------------------------------------------------ */

const char *const sb7_category_name[SB7_NCATS] = {"long_traversal", "short_traversal",
                                                  "short_operation", "structural"};

const sb7_op_info_t sb7_op_info[SB7_NOPS] = {
    [SB7_T1] = {"t1", SB7_CAT_LONG, true,
                "DFS of every atomic graph under the hierarchy, read x+y"},
    [SB7_T2] = {"t2", SB7_CAT_LONG, false, "DFS of every atomic graph, swap x and y of every part"},
    [SB7_T3] = {"t3", SB7_CAT_LONG, false,
                "DFS of every atomic graph, move the date of parts with x > y + 500"},
    [SB7_T4] = {"t4", SB7_CAT_LONG, true, "every document under the hierarchy, count 'I'"},
    [SB7_T5] = {"t5", SB7_CAT_LONG, false, "every document under the hierarchy, toggle case"},
    [SB7_T6] = {"t6", SB7_CAT_LONG, true, "root part of every composite part under the hierarchy"},
    [SB7_Q7] = {"q7", SB7_CAT_LONG, true, "every atomic part of every composite part in the index"},
    [SB7_ST1] = {"st1", SB7_CAT_SHORT_TRAV, true, "random path down, walk by largest x, read"},
    [SB7_ST2] = {"st2", SB7_CAT_SHORT_TRAV, true,
                 "random path to a base assembly, count 'I' in its documents"},
    [SB7_ST3] = {"st3", SB7_CAT_SHORT_TRAV, true,
                 "atomic part up to the root through every base assembly using it"},
    [SB7_ST6] = {"st6", SB7_CAT_SHORT_TRAV, false, "random path down, walk by largest x, swapping"},
    [SB7_ST7] = {"st7", SB7_CAT_SHORT_TRAV, false, "random path down, toggle a document"},
    [SB7_ST8] = {"st8", SB7_CAT_SHORT_TRAV, false,
                 "random path to a base assembly, update its and its parts' dates"},
    [SB7_OP1] = {"op1", SB7_CAT_SHORT_OP, true, "10 atomic parts by id, read"},
    [SB7_OP2] = {"op2", SB7_CAT_SHORT_OP, true,
                 "atomic parts with a date in a 1% range (date index), read"},
    [SB7_OP3] = {"op3", SB7_CAT_SHORT_OP, true, "composite part by id: document and users' dates"},
    [SB7_OP4] = {"op4", SB7_CAT_SHORT_OP, true,
                 "base assembly by id: latest root part of its components"},
    [SB7_OP9] = {"op9", SB7_CAT_SHORT_OP, false, "10 atomic parts by id, swap"},
    [SB7_OP10] = {"op10", SB7_CAT_SHORT_OP, false,
                  "atomic parts with a date in a 2-date range, moved out of it"},
    [SB7_OP11] = {"op11", SB7_CAT_SHORT_OP, false,
                  "composite part by id: update its date and its root part's"},
    [SB7_OP12] = {"op12", SB7_CAT_SHORT_OP, false, "composite part by id: toggle its document"},
    [SB7_SM1] = {"sm1", SB7_CAT_STRUCT, false,
                 "create a composite part, link it to base assemblies"},
    [SB7_SM2] = {"sm2", SB7_CAT_STRUCT, false, "delete a composite part and its links"},
    [SB7_SM3] = {"sm3", SB7_CAT_STRUCT, false, "link a composite part to a base assembly"},
    [SB7_SM4] = {"sm4", SB7_CAT_STRUCT, false, "unlink a component from a base assembly"},
};

int sb7_op_parse(const char *name) {
  for (int i = 0; i < SB7_NOPS; i++)
    if (strcmp(name, sb7_op_info[i].name) == 0) return i;
  return -1;
}

/* Lookup attempts of the operations that want an existing composite part
 * (about half the ids are in use). */
#define SB7_PROBES 8

TM_SAFE static long op_parts_by_id(sb7_t *db, sb7_thread_t *t, uint64_t *rs, bool swap, long *sum) {
  long found = 0;
  for (int i = 0; i < 10; i++) {
    sb7_comp_t *c = comp_lookup(db, random_id(db, rs));
    if (c == NULL) continue;
    sb7_atomic_t *p = &c->parts[rnd_below(rs, TM_LOAD_LONG(&c->nparts))];
    *sum += swap ? part_swap(t, p) : part_read(t, p) + TM_LOAD_LONG(&p->build_date);
    found++;
  }
  return found > 0;
}

TM_SAFE static long op_date_range(sb7_t *db, sb7_thread_t *t, uint64_t *rs, long width, bool move,
                                  long *sum) {
  long lo = rnd_below(rs, SB7_DATE_RANGE);
  for (long d = 0; d < width; d++) {
    sb7_atomic_t *p = TM_LOAD_PTR(date_head(db, date_wrap(lo + d)));
    while (p != NULL) {
      sb7_atomic_t *next = TM_LOAD_PTR(&p->date_next);
      if (move)
        date_move(db, t, p, width); /* out of [lo, lo + width) */
      else
        *sum += part_read(t, p);
      p = next;
    }
  }
  return 1;
}

TM_SAFE static long op_base_latest(sb7_t *db, sb7_thread_t *t, uint64_t *rs, long *sum) {
  sb7_base_t *b = &db->base[rnd_below(rs, db->nbase)];
  long best = -1;
  for (sb7_link_t *l = TM_LOAD_PTR(&b->comps); l != NULL; l = TM_LOAD_PTR(&l->next_in_base)) {
    sb7_comp_t *c = TM_LOAD_PTR(&l->comp);
    long d = TM_LOAD_LONG(&c->parts[0].build_date);
    if (d > best) {
      best = d;
      *sum += TM_LOAD_LONG(&c->parts[0].x);
    }
    res_add(&t->res.visited, 1);
  }
  return best >= 0;
}

TM_SAFE static long op_up(sb7_t *db, sb7_thread_t *t, uint64_t *rs, long *sum) {
  sb7_comp_t *c = comp_probe(db, random_id(db, rs), SB7_PROBES);
  if (c == NULL) return 0;
  *sum += part_read(t, &c->parts[rnd_below(rs, TM_LOAD_LONG(&c->nparts))]);
  for (sb7_link_t *l = TM_LOAD_PTR(&c->used_in); l != NULL; l = TM_LOAD_PTR(&l->next_in_comp)) {
    sb7_base_t *b = TM_LOAD_PTR(&l->base);
    *sum += TM_LOAD_LONG(&b->build_date);
    for (sb7_complex_t *a = TM_LOAD_PTR(&b->parent); a != NULL; a = TM_LOAD_PTR(&a->parent))
      *sum += TM_LOAD_LONG(&a->build_date);
  }
  return 1;
}

TM_SAFE static long op_comp_users(sb7_t *db, sb7_thread_t *t, uint64_t *rs, long *sum) {
  sb7_comp_t *c = comp_probe(db, random_id(db, rs), SB7_PROBES);
  if (c == NULL) return 0;
  *sum += doc_count(t, TM_LOAD_PTR(&c->doc), 'I');
  for (sb7_link_t *l = TM_LOAD_PTR(&c->used_in); l != NULL; l = TM_LOAD_PTR(&l->next_in_comp))
    *sum += TM_LOAD_LONG(&((sb7_base_t *)TM_LOAD_PTR(&l->base))->build_date);
  return 1;
}

TM_SAFE static long op_update_base_dates(sb7_t *db, sb7_thread_t *t, uint64_t *rs, long *sum) {
  sb7_base_t *b = random_base_path(db, rs, sum);
  TM_STORE_LONG(&b->build_date, TM_LOAD_LONG(&b->build_date) + 1);
  for (sb7_link_t *l = TM_LOAD_PTR(&b->comps); l != NULL; l = TM_LOAD_PTR(&l->next_in_base)) {
    sb7_comp_t *c = TM_LOAD_PTR(&l->comp);
    TM_STORE_LONG(&c->build_date, TM_LOAD_LONG(&c->build_date) + 1);
    res_add(&t->res.visited, 1);
  }
  return 1;
}

TM_SAFE static long op_comp_dates(sb7_t *db, sb7_thread_t *t, uint64_t *rs) {
  sb7_comp_t *c = comp_probe(db, random_id(db, rs), SB7_PROBES);
  if (c == NULL) return 0;
  TM_STORE_LONG(&c->build_date, TM_LOAD_LONG(&c->build_date) + 1);
  date_move(db, t, &c->parts[0], 1);
  return 1;
}

TM_SAFE static long op_comp_toggle(sb7_t *db, sb7_thread_t *t, uint64_t *rs) {
  sb7_comp_t *c = comp_probe(db, random_id(db, rs), SB7_PROBES);
  if (c == NULL) return 0;
  doc_toggle(t, TM_LOAD_PTR(&c->doc));
  return 1;
}

/* A new composite part is linked to as many base assemblies, on average, as
 * the initial ones (initial links / initial composite parts), so that
 * creations and deletions keep the number of links stationary. */
TM_SAFE static long sm_create(sb7_t *db, sb7_thread_t *t, uint64_t *rs) {
  long id = random_id(db, rs);
  if (comp_lookup(db, id) != NULL) return 0;
  long nlinks = db->links_per_comp_milli / 1000;
  if (rnd_below(rs, 1000) < db->links_per_comp_milli % 1000) nlinks++;
  sb7_comp_t *c = comp_new(db, id, rs);
  index_insert_fresh(db, c, id);
  for (long k = 0; k < nlinks; k++) {
    sb7_base_t *b = &db->base[rnd_below(rs, db->nbase)];
    if (TM_LOAD_LONG(&b->ncomps) >= (long)db->p.max_comps_per_base)
      continue; /* full: one link fewer */
    link_new(b, c);
    res_add(&t->res.linked, 1);
  }
  res_add(&t->res.created, 1);
  return 1;
}

TM_SAFE static long sm_delete(sb7_t *db, sb7_thread_t *t, uint64_t *rs) {
  sb7_comp_t *c = comp_lookup(db, random_id(db, rs));
  if (c == NULL) return 0;
  sb7_link_t *l = TM_LOAD_PTR(&c->used_in);
  while (l != NULL) {
    sb7_link_t *next = TM_LOAD_PTR(&l->next_in_comp);
    unchain_from_base(l);
    TM_FREE(l);
    res_add(&t->res.unlinked, 1);
    l = next;
  }
  long n = TM_LOAD_LONG(&c->nparts);
  for (long i = 0; i < n; i++) {
    res_add(&t->res.del_swaps, (uint64_t)TM_LOAD_LONG(&c->parts[i].nswaps));
    date_remove(db, &c->parts[i]);
  }
  sb7_doc_t *doc = TM_LOAD_PTR(&c->doc);
  res_add(&t->res.del_toggles, (uint64_t)TM_LOAD_LONG(&doc->version));
  index_remove(db, c);
  TM_FREE(doc);
  TM_FREE(c);
  res_add(&t->res.deleted, 1);
  return 1;
}

TM_SAFE static long sm_link(sb7_t *db, sb7_thread_t *t, uint64_t *rs) {
  sb7_base_t *b = &db->base[rnd_below(rs, db->nbase)];
  if (TM_LOAD_LONG(&b->ncomps) >= (long)db->p.max_comps_per_base) return 0;
  sb7_comp_t *c = comp_probe(db, random_id(db, rs), SB7_PROBES);
  if (c == NULL) return 0;
  link_new(b, c);
  res_add(&t->res.linked, 1);
  return 1;
}

TM_SAFE static long sm_unlink(sb7_t *db, sb7_thread_t *t, uint64_t *rs) {
  sb7_base_t *b = &db->base[rnd_below(rs, db->nbase)];
  long n = TM_LOAD_LONG(&b->ncomps);
  if (n <= 0) return 0;
  long k = rnd_below(rs, n);
  sb7_link_t *l = TM_LOAD_PTR(&b->comps);
  while (k-- > 0 && l != NULL)
    l = TM_LOAD_PTR(&l->next_in_base);
  if (l == NULL) return 0;
  unchain_from_base(l);
  unchain_from_comp(l);
  TM_FREE(l);
  res_add(&t->res.unlinked, 1);
  return 1;
}

/* The body of operation op (inside its transaction). Returns 1 if done, 0
 * if its precondition did not hold. */
TM_SAFE static long op_body(sb7_t *db, sb7_thread_t *t, int op, uint64_t *rs, long *sum) {
  switch (op) {
  case SB7_T1: *sum += trav_complex(db, t, &db->complex[0], V_READ); return 1;
  case SB7_T2: *sum += trav_complex(db, t, &db->complex[0], V_SWAP); return 1;
  case SB7_T3: *sum += trav_complex(db, t, &db->complex[0], V_DATE); return 1;
  case SB7_T4: *sum += trav_complex(db, t, &db->complex[0], V_DOC_READ); return 1;
  case SB7_T5: *sum += trav_complex(db, t, &db->complex[0], V_DOC_TOGGLE); return 1;
  case SB7_T6: *sum += trav_complex(db, t, &db->complex[0], V_ROOT); return 1;
  case SB7_Q7: *sum += scan_index(db, t); return 1;
  case SB7_ST1:
  case SB7_ST6: {
    sb7_comp_t *c = random_component(random_base_path(db, rs, sum), rs);
    if (c == NULL) return 0;
    *sum += walk(db, t, c, op == SB7_ST6);
    return 1;
  }
  case SB7_ST2: {
    sb7_base_t *b = random_base_path(db, rs, sum);
    for (sb7_link_t *l = TM_LOAD_PTR(&b->comps); l != NULL; l = TM_LOAD_PTR(&l->next_in_base))
      *sum += doc_count(t, TM_LOAD_PTR(&((sb7_comp_t *)TM_LOAD_PTR(&l->comp))->doc), 'I');
    return 1;
  }
  case SB7_ST3: return op_up(db, t, rs, sum);
  case SB7_ST7: {
    sb7_comp_t *c = random_component(random_base_path(db, rs, sum), rs);
    if (c == NULL) return 0;
    *sum += doc_toggle(t, TM_LOAD_PTR(&c->doc));
    return 1;
  }
  case SB7_ST8: return op_update_base_dates(db, t, rs, sum);
  case SB7_OP1: return op_parts_by_id(db, t, rs, false, sum);
  case SB7_OP2: return op_date_range(db, t, rs, SB7_DATE_RANGE / 100, false, sum);
  case SB7_OP3: return op_comp_users(db, t, rs, sum);
  case SB7_OP4: return op_base_latest(db, t, rs, sum);
  case SB7_OP9: return op_parts_by_id(db, t, rs, true, sum);
  case SB7_OP10: return op_date_range(db, t, rs, 2, true, sum);
  case SB7_OP11: return op_comp_dates(db, t, rs);
  case SB7_OP12: return op_comp_toggle(db, t, rs);
  case SB7_SM1: return sm_create(db, t, rs);
  case SB7_SM2: return sm_delete(db, t, rs);
  case SB7_SM3: return sm_link(db, t, rs);
  case SB7_SM4: return sm_unlink(db, t, rs);
  default: return 0;
  }
}

static void tally_add(sb7_tally_t *to, const sb7_tally_t *from) {
  to->visited += from->visited;
  to->swaps += from->swaps;
  to->toggles += from->toggles;
  to->moves += from->moves;
  to->created += from->created;
  to->deleted += from->deleted;
  to->linked += from->linked;
  to->unlinked += from->unlinked;
  to->del_swaps += from->del_swaps;
  to->del_toggles += from->del_toggles;
}

/* Results leave the transaction through volatile locals (schedstm restarts
 * like longjmp) and through the private context (reset per attempt). */
sb7_status_t sb7_run(sb7_thread_t *t, sb7_op_t op) {
  sb7_t *db = t->db;
  const uint64_t seed = rnd(&t->rng);
  const bool ro = sb7_op_info[op].read_only;
  TM_VOLATILE long status = SB7_CANCELLED;
  TM_VOLATILE long checksum = 0;
  t->attempts = 0;
  TM_ATOMIC_BEGIN(ro)
  status = SB7_CANCELLED;
  attempt_begin(t);
  SB7_GIVE_UP_IF_STOPPED(t);
  uint64_t rs = seed;
  long sum = 0;
  long done = op_body(db, t, (int)op, &rs, &sum);
  checksum = sum;
  status = done ? SB7_OK : SB7_FAILED;
  TM_ATOMIC_END();
  t->checksum += (uint64_t)checksum;
  (void)ro; /* only schedstm takes the read-only hint */
  if (status != SB7_CANCELLED) tally_add(&t->total, &t->res);
  return (sb7_status_t)status;
}

/* ---- set-up ---------------------------------------------------------------- */

void sb7_params_default(sb7_params_t *p, unsigned scale) {
  if (scale == 0) scale = 1;
  *p = (sb7_params_t){
      .levels = 5,
      .fanout = 3,
      .base_fanout = 6 * scale,
      .comps_per_base = 3,
      .max_comps_per_base = 6,
      .composites = 200 * scale,
      .id_range = 400 * scale,
      .atomic_per_comp = 100,
      .doc_words = 32,
      .seed = 1,
  };
}

int sb7_thread_init(sb7_thread_t *t, sb7_t *db, uint64_t seed, uint64_t stream,
                    const atomic_bool *stop) {
  memset(t, 0, sizeof *t);
  t->db = db;
  t->rng = mix64(seed ^ (stream * 0xD1B54A32D192ED03ULL)) + stream;
  t->stop = stop;
  t->visited_words = ((size_t)db->A + 63) / 64;
  t->visited = calloc(t->visited_words, sizeof *t->visited);
  return t->visited != NULL ? 0 : -1;
}

void sb7_thread_fini(sb7_thread_t *t) {
  free(t->visited);
  t->visited = NULL;
}

static int build_hierarchy(sb7_t *db) {
  const sb7_params_t *p = &db->p;
  long nlow = 1; /* level-2 assemblies */
  db->ncomplex = 0;
  for (unsigned l = p->levels; l >= 2; l--) {
    db->ncomplex += nlow;
    if (l > 2) nlow *= p->fanout;
  }
  nlow = 1;
  for (unsigned l = p->levels; l > 2; l--)
    nlow *= p->fanout;
  db->nbase = nlow * p->base_fanout;
  db->complex = aligned_alloc(64, sizeof(sb7_complex_t) * (size_t)db->ncomplex);
  db->base = aligned_alloc(64, sizeof(sb7_base_t) * (size_t)db->nbase);
  if (db->complex == NULL || db->base == NULL) return -1;
  memset(db->complex, 0, sizeof(sb7_complex_t) * (size_t)db->ncomplex);
  memset(db->base, 0, sizeof(sb7_base_t) * (size_t)db->nbase);
  uint64_t rs = p->seed ^ 0xA55A;
  /* Breadth first: complex[0] is the root, children follow level by level. */
  long next_complex = 1, next_base = 0;
  db->complex[0] = (sb7_complex_t){.id = 1, .level = p->levels};
  for (long i = 0; i < db->ncomplex; i++) {
    sb7_complex_t *a = &db->complex[i];
    a->build_date = rnd_below(&rs, 10000);
    long n = a->level > 2 ? (long)p->fanout : (long)p->base_fanout;
    a->child = calloc((size_t)n, sizeof *a->child);
    if (a->child == NULL) return -1;
    a->nchild = n;
    for (long k = 0; k < n; k++) {
      if (a->level > 2) {
        sb7_complex_t *c = &db->complex[next_complex];
        *c = (sb7_complex_t){.id = next_complex + 1, .level = a->level - 1, .parent = a};
        next_complex++;
        a->child[k] = c;
      } else {
        sb7_base_t *b = &db->base[next_base];
        *b = (sb7_base_t){.id = next_base + 1, .parent = a, .build_date = rnd_below(&rs, 10000)};
        next_base++;
        a->child[k] = b;
      }
    }
  }
  return next_complex == db->ncomplex && next_base == db->nbase ? 0 : -1;
}

/* Kept out of line: the atomic block must not share a frame with the
 * caller's loop variables (libitm's restart is a longjmp). */
__attribute__((noinline)) static void create_tx(sb7_t *db, long id, uint64_t seed) {
  TM_ATOMIC_BEGIN(0)
  uint64_t rs = seed;
  sb7_comp_t *c = comp_new(db, id, &rs);
  index_insert_fresh(db, c, id);
  TM_ATOMIC_END();
}

__attribute__((noinline)) static void link_tx(sb7_t *db, sb7_base_t *b, long id) {
  TM_ATOMIC_BEGIN(0)
  sb7_comp_t *c = comp_lookup(db, id);
  if (c != NULL) link_new(b, c);
  TM_ATOMIC_END();
}

sb7_t *sb7_create(const sb7_params_t *p, char *err, size_t errlen) {
  if (p->levels < 2 || p->levels > 12 || p->fanout < 1 || p->base_fanout < 1 ||
      p->atomic_per_comp < 1 || p->atomic_per_comp > SB7_MAX_ATOMIC || p->doc_words < 1 ||
      p->composites < 1 || p->id_range < p->composites ||
      p->comps_per_base > p->max_comps_per_base) {
    snprintf(err, errlen, "bad sb7 parameters");
    return NULL;
  }
  sb7_t *db = calloc(1, sizeof *db);
  if (db == NULL) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  db->p = *p;
  db->A = p->atomic_per_comp;
  long nbuckets = 1;
  while (nbuckets < (long)p->id_range / 2)
    nbuckets *= 2;
  db->index_mask = nbuckets - 1;
  db->index = aligned_alloc(64, sizeof(sb7_cslot_t) * (size_t)nbuckets);
  db->dates = aligned_alloc(64, sizeof(sb7_dslot_t) * SB7_DATE_RANGE);
  if (db->index == NULL || db->dates == NULL || build_hierarchy(db) != 0) {
    sb7_destroy(db);
    snprintf(err, errlen, "out of memory building the hierarchy");
    return NULL;
  }
  memset(db->index, 0, sizeof(sb7_cslot_t) * (size_t)nbuckets);
  memset(db->dates, 0, sizeof(sb7_dslot_t) * SB7_DATE_RANGE);

  /* Initial composite parts: distinct random ids (partial Fisher-Yates). */
  long range = (long)p->id_range, n = (long)p->composites;
  long *ids = malloc(sizeof *ids * (size_t)range);
  if (ids == NULL) {
    sb7_destroy(db);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  for (long i = 0; i < range; i++)
    ids[i] = i + 1;
  uint64_t rs = p->seed ^ 0x5B7;
  for (long i = 0; i < n; i++) {
    long j = i + rnd_below(&rs, range - i);
    long tmp = ids[i];
    ids[i] = ids[j];
    ids[j] = tmp;
    create_tx(db, ids[i], rnd(&rs));
  }
  /* Initial links: comps_per_base random composite parts per base. */
  for (long b = 0; b < db->nbase; b++)
    for (unsigned k = 0; k < p->comps_per_base; k++)
      link_tx(db, &db->base[b], ids[rnd_below(&rs, n)]);
  db->initial_links = db->nbase * (long)p->comps_per_base;
  db->links_per_comp_milli = db->initial_links * 1000 / n;
  free(ids);
  return db;
}

void sb7_destroy(sb7_t *db) {
  if (db == NULL) return;
  if (db->base != NULL) {
    for (long b = 0; b < db->nbase; b++) {
      sb7_link_t *l = db->base[b].comps;
      while (l != NULL) {
        sb7_link_t *next = l->next_in_base;
        free(l);
        l = next;
      }
    }
  }
  if (db->index != NULL) {
    for (long b = 0; b <= db->index_mask; b++) {
      sb7_comp_t *c = db->index[b].head;
      while (c != NULL) {
        sb7_comp_t *next = c->idx_next;
        free(c->doc);
        free(c);
        c = next;
      }
    }
  }
  if (db->complex != NULL)
    for (long i = 0; i < db->ncomplex; i++)
      free(db->complex[i].child);
  free(db->complex);
  free(db->base);
  free(db->index);
  free(db->dates);
  free(db);
}

/* ---- the invariant check (non-transactional) ----------------------------- */

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    snprintf(err, errlen, __VA_ARGS__);                                                            \
    goto out;                                                                                      \
  } while (0)

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (sb7_comp_t *const *)a;
  uintptr_t y = (uintptr_t) * (sb7_comp_t *const *)b;
  return x < y ? -1 : x > y;
}

/* The live composite part that contains address q (exact part boundary
 * when part is true, the composite itself otherwise), or NULL. Never
 * dereferences q. */
static const sb7_comp_t *live_find(sb7_comp_t *const *sorted, long n, long A, const void *q,
                                   bool part) {
  uintptr_t a = (uintptr_t)q;
  long lo = 0, hi = n - 1, found = -1;
  while (lo <= hi) { /* last composite starting at or before a */
    long mid = (lo + hi) / 2;
    if ((uintptr_t)sorted[mid] <= a) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  if (found < 0) return NULL;
  const sb7_comp_t *c = sorted[found];
  if (!part) return (uintptr_t)c == a ? c : NULL;
  uintptr_t first = (uintptr_t)&c->parts[0];
  if (a < first || a >= first + (uintptr_t)A * sizeof(sb7_atomic_t) ||
      (a - first) % sizeof(sb7_atomic_t) != 0)
    return NULL;
  return c;
}

static bool base_valid(const sb7_t *db, const sb7_base_t *b) {
  uintptr_t a = (uintptr_t)b, first = (uintptr_t)db->base;
  return a >= first && a < first + (uintptr_t)db->nbase * sizeof *b && (a - first) % sizeof *b == 0;
}

static int check_hierarchy(const sb7_t *db, char *err, size_t errlen) {
  int rc = -1;
  char *seen = calloc((size_t)db->nbase, 1);
  sb7_complex_t **stack = malloc(sizeof *stack * (size_t)db->ncomplex);
  long top = 0, ncomplex = 0, nbase = 0;
  if (seen == NULL || stack == NULL) FAIL("out of memory");
  if (db->complex[0].parent != NULL || db->complex[0].level != (long)db->p.levels)
    FAIL("root assembly: bad parent or level");
  stack[top++] = &db->complex[0];
  while (top > 0) {
    sb7_complex_t *a = stack[--top];
    if (++ncomplex > db->ncomplex) FAIL("more complex assemblies reachable than built (cycle?)");
    for (long k = 0; k < a->nchild; k++) {
      if (a->level > 2) {
        sb7_complex_t *c = a->child[k];
        if (c->parent != a || c->level != a->level - 1)
          FAIL("complex assembly %ld: bad parent or level", c->id);
        if (top >= db->ncomplex) FAIL("complex assembly stack overflow (shared child?)");
        stack[top++] = c;
      } else {
        sb7_base_t *b = a->child[k];
        if (!base_valid(db, b) || b->parent != a)
          FAIL("base assembly under complex %ld: bad pointer or parent", a->id);
        if (seen[b - db->base]++) FAIL("base assembly %ld reachable twice", b->id);
        nbase++;
      }
    }
  }
  if (ncomplex != db->ncomplex || nbase != db->nbase)
    FAIL("hierarchy reaches %ld complex / %ld base assemblies, built %ld / %ld", ncomplex, nbase,
         db->ncomplex, db->nbase);
  rc = 0;
out:
  free(seen);
  free(stack);
  return rc;
}

static int check_comp(const sb7_t *db, const sb7_comp_t *c, long *swaps, long *toggles, long *users,
                      char *err, size_t errlen) {
  long A = db->A, id = c->id;
  if (c->nparts != A) FAIL("composite %ld: %ld atomic parts, expected %ld", id, c->nparts, A);
  const sb7_doc_t *d = c->doc;
  if (d == NULL || d->id != id || d->comp != c || d->nwords != (long)db->p.doc_words ||
      d->version < 0)
    FAIL("composite %ld: bad document", id);
  for (long j = 0; j < d->nwords; j++) {
    uint64_t want = (uint64_t)doc_word(db, id, j);
    if (d->version & 1) want ^= SB7_LETTER_FLIP;
    if ((uint64_t)d->text[j] != want)
      FAIL("composite %ld: document word %ld does not match version %ld (torn toggle)", id, j,
           d->version);
  }
  *toggles += d->version;
  for (long i = 0; i < A; i++) {
    const sb7_atomic_t *p = &c->parts[i];
    long pid = id * SB7_MAX_ATOMIC + i;
    if (p->id != pid || p->owner != c)
      FAIL("atomic part %ld of composite %ld: bad id or owner", i, id);
    if (p->build_date < 0 || p->build_date >= SB7_DATE_RANGE)
      FAIL("atomic part %ld: date %ld out of range", pid, p->build_date);
    long x0 = x0_of(db, pid), y0 = y0_of(db, pid);
    bool odd = p->nswaps & 1;
    if (p->nswaps < 0 || p->x != (odd ? y0 : x0) || p->y != (odd ? x0 : y0))
      FAIL("atomic part %ld: x=%ld y=%ld after %ld swaps, built with x=%ld y=%ld", pid, p->x, p->y,
           p->nswaps, x0, y0);
    *swaps += p->nswaps;
    for (int k = 0; k < SB7_CONN; k++) {
      const sb7_atomic_t *q = p->out[k].to;
      if (q < &c->parts[0] || q >= &c->parts[A])
        FAIL("atomic part %ld: connection %d leaves its composite part", pid, k);
      if (k == 0 && q != &c->parts[(i + 1) % A])
        FAIL("atomic part %ld: ring connection broken", pid);
    }
  }
  long n = 0;
  for (const sb7_link_t *l = c->used_in; l != NULL; l = l->next_in_comp) {
    if (++n > c->nused || l->comp != c || !base_valid(db, l->base))
      FAIL("composite %ld: bad used-in chain", id);
  }
  if (n != c->nused)
    FAIL("composite %ld: used-in chain has %ld links, count says %ld", id, n, c->nused);
  *users += n;
  return 0;
out:
  return -1;
}

void sb7_initial_shape(const sb7_t *db, sb7_shape_t *s) {
  memset(s, 0, sizeof *s);
  s->complex_assemblies = db->ncomplex;
  s->base_assemblies = db->nbase;
  s->composites = (long)db->p.composites;
  s->atomic_parts = s->composites * db->A;
  s->documents = s->composites;
  s->links = db->initial_links;
}

int sb7_check(const sb7_t *db, const sb7_tally_t *total, sb7_shape_t *shape, char *err,
              size_t errlen) {
  int rc = -1;
  long range = (long)db->p.id_range, A = db->A;
  const sb7_comp_t **by_id = calloc((size_t)range + 1, sizeof *by_id);
  sb7_comp_t **sorted = malloc(sizeof *sorted * (size_t)range);
  uint8_t *in_dates = calloc((size_t)range + 1, (size_t)A);
  long ncomp = 0, swaps = 0, toggles = 0, users = 0, links = 0, dated = 0;
  if (by_id == NULL || sorted == NULL || in_dates == NULL) FAIL("out of memory");
  if (check_hierarchy(db, err, errlen) != 0) goto out;

  /* The id index: each composite part once, in its bucket. */
  for (long b = 0; b <= db->index_mask; b++) {
    for (sb7_comp_t *c = db->index[b].head; c != NULL; c = c->idx_next) {
      if (c->id < 1 || c->id > range) FAIL("composite id %ld out of [1, %ld]", c->id, range);
      if (index_bucket(db, c->id) != b)
        FAIL("composite %ld in index bucket %ld, hashes to %ld", c->id, b, index_bucket(db, c->id));
      if (by_id[c->id] != NULL) FAIL("composite id %ld in the index twice", c->id);
      by_id[c->id] = c;
      sorted[ncomp++] = c;
    }
  }
  qsort(sorted, (size_t)ncomp, sizeof *sorted, cmp_ptr);
  for (long i = 0; i < ncomp; i++)
    if (check_comp(db, sorted[i], &swaps, &toggles, &users, err, errlen) != 0) goto out;

  /* Base assemblies' bags: links to live composite parts, each also in
   * that part's used-in chain. */
  for (long b = 0; b < db->nbase; b++) {
    const sb7_base_t *ba = &db->base[b];
    long n = 0;
    for (const sb7_link_t *l = ba->comps; l != NULL; l = l->next_in_base) {
      if (++n > ba->ncomps || l->base != ba) FAIL("base assembly %ld: bad component chain", ba->id);
      if (live_find(sorted, ncomp, A, l->comp, false) == NULL)
        FAIL("base assembly %ld links a composite part that is not in the index", ba->id);
      const sb7_link_t *u = l->comp->used_in;
      while (u != NULL && u != l)
        u = u->next_in_comp;
      if (u == NULL)
        FAIL("base assembly %ld: link to composite %ld missing from its used-in chain", ba->id,
             l->comp->id);
    }
    if (n != ba->ncomps)
      FAIL("base assembly %ld: %ld components, count says %ld", ba->id, n, ba->ncomps);
    if (n > (long)db->p.max_comps_per_base)
      FAIL("base assembly %ld: %ld components, limit %u", ba->id, n, db->p.max_comps_per_base);
    links += n;
  }
  if (links != users) FAIL("%ld links in base assemblies, %ld in used-in chains", links, users);

  /* The date index: every atomic part of a live composite once, in the
   * list of its date, with consistent back pointers. */
  for (long d = 0; d < SB7_DATE_RANGE; d++) {
    const sb7_atomic_t *prev = NULL;
    for (const sb7_atomic_t *p = db->dates[d].head; p != NULL; p = p->date_next) {
      const sb7_comp_t *c = live_find(sorted, ncomp, A, p, true);
      if (c == NULL) FAIL("date %ld lists an atomic part of no live composite part", d);
      long i = p - c->parts;
      if (p->build_date != d || p->date_prev != prev)
        FAIL("atomic part %ld in the list of date %ld: date %ld, bad back pointer", p->id, d,
             p->build_date);
      if (in_dates[c->id * A + i]++) FAIL("atomic part %ld twice in the date index", p->id);
      dated++;
      prev = p;
    }
  }
  if (dated != ncomp * A)
    FAIL("date index holds %ld atomic parts, the live composite parts %ld", dated, ncomp * A);

  if (total != NULL) {
    long want = (long)db->p.composites + (long)total->created - (long)total->deleted;
    if (ncomp != want)
      FAIL("%ld composite parts, expected %ld (initial %u + created %llu - deleted %llu)", ncomp,
           want, db->p.composites, (unsigned long long)total->created,
           (unsigned long long)total->deleted);
    want = db->initial_links + (long)total->linked - (long)total->unlinked;
    if (links != want)
      FAIL("%ld links, expected %ld (initial %ld + linked %llu - unlinked %llu)", links, want,
           db->initial_links, (unsigned long long)total->linked,
           (unsigned long long)total->unlinked);
    want = (long)total->swaps - (long)total->del_swaps;
    if (swaps != want)
      FAIL("live parts record %ld swaps, committed operations %ld (lost update?)", swaps, want);
    want = (long)total->toggles - (long)total->del_toggles;
    if (toggles != want)
      FAIL("live documents record %ld toggles, committed operations %ld (lost update?)", toggles,
           want);
  }
  if (shape != NULL) {
    *shape = (sb7_shape_t){.complex_assemblies = db->ncomplex,
                           .base_assemblies = db->nbase,
                           .composites = ncomp,
                           .atomic_parts = ncomp * A,
                           .links = links,
                           .documents = ncomp};
    shape->bytes = ncomp * (long)(sizeof(sb7_comp_t) + (size_t)A * sizeof(sb7_atomic_t) +
                                  sizeof(sb7_doc_t) + db->p.doc_words * sizeof(long)) +
                   links * (long)sizeof(sb7_link_t) + db->ncomplex * (long)sizeof(sb7_complex_t) +
                   db->nbase * (long)sizeof(sb7_base_t) +
                   (db->index_mask + 1 + SB7_DATE_RANGE) * (long)sizeof(sb7_cslot_t);
  }
  rc = 0;
out:
  free(by_id);
  free(sorted);
  free(in_dates);
  return rc;
}
