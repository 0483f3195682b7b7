/* SPDX-License-Identifier: MIT */
/* bench/ds/sb7.h: an STMBench7-like object graph written once against
 * bench/tm/tm.h (our own code, modelled on the structure of STMBench7
 * [Guerraoui07]).
 *
 * The graph:
 *   - an assembly hierarchy: complex assemblies (a tree, fan-out 3) whose
 *     lowest level holds base assemblies; it never changes shape;
 *   - base assemblies, each using a bag of composite parts (links);
 *   - a design library of composite parts, indexed by id in a
 *     transactional hash map; a composite part owns a document and a small
 *     directed graph of atomic parts (every part has SB7_CONN outgoing
 *     connections, the first to the next part in a ring, so every part is
 *     reachable from the root part) and knows the base assemblies that use
 *     it (the same link objects, chained a second way);
 *   - a build-date index of atomic parts: one doubly linked list per date.
 *
 * Every operation (sb7_op_t) is ONE transaction. Some take data-dependent
 * paths (next atomic part chosen by comparing x values that other updates
 * swap, date-range queries over dates that other updates move), so a
 * retried transaction may follow a different path. Random choices are
 * drawn from a per-operation seed, so a retry replays the same choices and
 * differs only where the data differ.
 *
 * Thread rules: sb7_create, sb7_check and sb7_destroy run while no
 * operation runs; sb7_create runs transactions, so its thread must be
 * registered with the back-end (tm_thread_enter). sb7_run from any
 * registered thread, each with its own sb7_thread_t.
 */
#ifndef BENCH_SB7_H
#define BENCH_SB7_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SB7_CONN 3          /* outgoing connections per atomic part */
#define SB7_MAX_ATOMIC 4096 /* atomic parts per composite part, at most */
#define SB7_DATE_RANGE 1000 /* atomic build dates in [0, SB7_DATE_RANGE) */

typedef struct sb7_params {
  unsigned levels;             /* assembly levels, base level included (>= 2) */
  unsigned fanout;             /* children of a complex assembly above level 2 */
  unsigned base_fanout;        /* base assemblies under each level-2 assembly */
  unsigned comps_per_base;     /* initial composite parts used per base */
  unsigned max_comps_per_base; /* links per base assembly, at most */
  unsigned composites;         /* initial composite parts */
  unsigned id_range;           /* composite ids are in [1, id_range] */
  unsigned atomic_per_comp;    /* atomic parts per composite part */
  unsigned doc_words;          /* document text, in 8-character words */
  uint64_t seed;
} sb7_params_t;

/* Defaults for a scale factor (1 = the default size): scale multiplies the
 * composite parts and the base assemblies, so a long traversal and the
 * structure grow linearly with it. */
void sb7_params_default(sb7_params_t *p, unsigned scale);

typedef struct sb7 sb7_t;

/* Build the structure (hierarchy directly, composite parts and initial
 * links through transactions). NULL with a message in err on bad
 * parameters or allocation failure. */
sb7_t *sb7_create(const sb7_params_t *p, char *err, size_t errlen);

/* Free everything (no concurrent use). */
void sb7_destroy(sb7_t *db);

typedef enum sb7_category {
  SB7_CAT_LONG = 0,   /* long traversals */
  SB7_CAT_SHORT_TRAV, /* short traversals */
  SB7_CAT_SHORT_OP,   /* short operations */
  SB7_CAT_STRUCT,     /* structural modifications */
  SB7_NCATS
} sb7_category_t;

typedef enum sb7_op {
  /* long traversals */
  SB7_T1,
  SB7_T2,
  SB7_T3,
  SB7_T4,
  SB7_T5,
  SB7_T6,
  SB7_Q7,
  /* short traversals */
  SB7_ST1,
  SB7_ST2,
  SB7_ST3,
  SB7_ST6,
  SB7_ST7,
  SB7_ST8,
  /* short operations */
  SB7_OP1,
  SB7_OP2,
  SB7_OP3,
  SB7_OP4,
  SB7_OP9,
  SB7_OP10,
  SB7_OP11,
  SB7_OP12,
  /* structural modifications */
  SB7_SM1,
  SB7_SM2,
  SB7_SM3,
  SB7_SM4,
  SB7_NOPS
} sb7_op_t;

typedef struct sb7_op_info {
  const char *name;
  sb7_category_t cat;
  bool read_only;
  const char *what; /* one line */
} sb7_op_info_t;

extern const sb7_op_info_t sb7_op_info[SB7_NOPS];
extern const char *const sb7_category_name[SB7_NCATS];

/* Index of an operation name, or -1. */
int sb7_op_parse(const char *name);

/* What committed operations did, summed by the caller to check the final
 * structure (swaps and toggles of deleted parts are carried in del_*). */
typedef struct sb7_tally {
  uint64_t visited; /* atomic parts / documents visited */
  uint64_t swaps;   /* x/y swaps of atomic parts */
  uint64_t toggles; /* document case toggles */
  uint64_t moves;   /* atomic parts moved in the date index */
  uint64_t created, deleted, linked, unlinked;
  uint64_t del_swaps, del_toggles;
} sb7_tally_t;

typedef enum sb7_status {
  SB7_CANCELLED = -1, /* given up at the deadline (schedstm only) */
  SB7_FAILED = 0,     /* committed, precondition not met (id absent, ...) */
  SB7_OK = 1,         /* committed */
} sb7_status_t;

/* Per-thread context (private to its thread). */
typedef struct sb7_thread {
  sb7_t *db;
  uint64_t rng;            /* stream of per-operation seeds */
  const atomic_bool *stop; /* when set, a retrying operation gives up */
  uint64_t *visited;       /* DFS marks, one bit per atomic part */
  size_t visited_words;
  unsigned attempts; /* attempts of the last operation */
  uint64_t checksum; /* sum of the values read (keeps the reads of
                        the uninstrumented back-end alive) */
  sb7_tally_t res;   /* what the last attempt did */
  sb7_tally_t total; /* sum over committed operations */
} sb7_thread_t;

/* stop may be NULL (never give up). Returns 0, or -1 on allocation
 * failure. */
int sb7_thread_init(sb7_thread_t *t, sb7_t *db, uint64_t seed, uint64_t stream,
                    const atomic_bool *stop);
void sb7_thread_fini(sb7_thread_t *t);

/* Run one operation as one transaction; t->attempts tells how many
 * attempts it took, t->total accumulates what committed operations did. */
sb7_status_t sb7_run(sb7_thread_t *t, sb7_op_t op);

/* Shape of the structure as found by sb7_check. */
typedef struct sb7_shape {
  long complex_assemblies, base_assemblies;
  long composites, atomic_parts, links, documents;
  long bytes; /* approximate footprint of the object graph */
} sb7_shape_t;

/* Non-transactional invariant check after a run (no concurrent use):
 * hierarchy shape and parent pointers; every base assembly reachable once;
 * index ids unique and hashed right; every composite part in the index
 * once, its atomic graph closed and owned, its document consistent with
 * its version (a toggle is all-or-nothing); every link in exactly one base
 * list and one used-in list, only to live composite parts; every atomic
 * part of a live composite part exactly once in the date index, in its
 * date's list; x/y consistent with the part's swap count; and the
 * totals: composites = initial + created - deleted, links = initial +
 * linked - unlinked, swaps and toggles found = done - carried by deletes.
 * total may be NULL to skip the totals. Returns 0, or -1 with a message. */
int sb7_check(const sb7_t *db, const sb7_tally_t *total, sb7_shape_t *shape, char *err,
              size_t errlen);

/* Initial counts, for reports. */
void sb7_initial_shape(const sb7_t *db, sb7_shape_t *shape);

#endif /* BENCH_SB7_H */
