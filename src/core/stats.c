/* SPDX-License-Identifier: MIT */
/* Statistics: per-descriptor counters, aggregation, dump. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

static const char *const reason_names[SSTM_ABORT_REASON_COUNT] = {
    [SSTM_ABORT_READ_LOCKED] = "read-locked",
    [SSTM_ABORT_WRITE_LOCKED] = "write-locked",
    [SSTM_ABORT_COMMIT_LOCKED] = "commit-locked",
    [SSTM_ABORT_VALIDATE_READ] = "validate-read",
    [SSTM_ABORT_VALIDATE_WRITE] = "validate-write",
    [SSTM_ABORT_VALIDATE_COMMIT] = "validate-commit",
    [SSTM_ABORT_KILLED] = "killed",
    [SSTM_ABORT_RO_WRITE] = "ro-write",
    [SSTM_ABORT_RO_EXTEND] = "ro-extend",
    [SSTM_ABORT_IRREVOCABLE] = "irrevocable",
    [SSTM_ABORT_USER_RETRY] = "user-retry",
    [SSTM_ABORT_USER_CANCEL] = "user-cancel",
};

SSTM_API const char *sstm_abort_reason_name(sstm_abort_reason_t r) {
  return ((unsigned)r < SSTM_ABORT_REASON_COUNT) ? reason_names[r] : "?";
}

/* The policies' actions (cm.h) by the names the statistics and the state
 * table show. */
SSTM_API const char *sstm_cm_act_name(sstm_cm_act_t a) {
  static const char *const names[SSTM_ACT_COUNT] = {"run",     "spin",    "block", "yield",
                                                    "backoff", "lowered", "kill"};
  return (unsigned)a < SSTM_ACT_COUNT ? names[a] : "?";
}

/* dst += src, max fields as maxima. Readers of src may race with its owner:
 * relaxed loads. */
void sstm__counters_fold(sstm_counters_t *dst, const sstm_counters_t *src) {
  const uint64_t *s = (const uint64_t *)src;
  uint64_t *d = (uint64_t *)dst;
  size_t n = sizeof *src / sizeof(uint64_t);
  size_t max_retries = offsetof(sstm_counters_t, max_retries) / sizeof(uint64_t);
  size_t reads_max = offsetof(sstm_counters_t, reads_max) / sizeof(uint64_t);
  size_t writes_max = offsetof(sstm_counters_t, writes_max) / sizeof(uint64_t);
  for (size_t i = 0; i < n; i++) {
    uint64_t v = sstm__ctr_get(&s[i]);
    if (i == max_retries || i == reads_max || i == writes_max)
      sstm__ctr_max(&d[i], v);
    else
      sstm__ctr_add(&d[i], v);
  }
}

static void to_public(const sstm_counters_t *c, sstm_stats_t *out) {
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  out->commits_ro = c->commits_ro;
  out->commits_update = c->commits_update;
  out->commits_irrevocable = c->commits_irrevocable;
  for (int i = 0; i < SSTM_ABORT_REASON_COUNT; i++) {
    out->aborts[i] = c->aborts[i];
    out->aborts_total += c->aborts[i];
  }
  out->retries = c->retries;
  out->max_retries = c->max_retries;
  out->cm_waits = c->cm_waits;
  out->cm_kills = c->cm_kills;
  out->locks_stolen = c->locks_stolen;
  out->extensions = c->extensions;
  out->reads_past = c->reads_past;
  out->ro_logged = c->ro_logged;
  out->cm_wait_ns = c->cm_wait_ns;
  for (int i = 0; i < SSTM_CM_NSTATS; i++)
    out->cm_stats[i] = c->cm_stats[i];
  for (int i = 0; i < 8; i++)
    out->cm_actions[i] = c->cm_actions[i];
  out->reads_total = c->reads_total;
  out->writes_total = c->writes_total;
  out->reads_max = c->reads_max;
  out->writes_max = c->writes_max;
  for (int i = 0; i < SSTM_MAX_TAGS; i++) {
    out->tags[i].commits = c->tag_commits[i];
    out->tags[i].aborts = c->tag_aborts[i];
  }
}

/* Sizes of sstm_stats_t a caller may pass: from the first layout with a
 * size field (0.2's, this one) up. Fields are only ever appended; when one
 * is, STATS_SIZE_MIN stays the size of 0.2's layout (offsetof the first
 * appended field). A larger caller's struct gets zeros after ours. */
#define STATS_SIZE_MIN sizeof(sstm_stats_t)

static int check_stats_size(const char *who, size_t size) {
  if (size >= STATS_SIZE_MIN) return 0;
  sstm__set_error("%s: the sstm_stats_t's size is %zu bytes; this library (%s) fills %zu or "
                  "more: pass sizeof(sstm_stats_t) (sstm_stats_get() and sstm_stats_aggregate() "
                  "do) from a program built against the <schedstm/stats.h> of this library or "
                  "an older one",
                  who, size, SSTM_VERSION_STRING, (size_t)STATS_SIZE_MIN);
  return SSTM_EINVAL;
}

/* The first `size` bytes of the caller's struct from the library's full one
 * (checked: size >= STATS_SIZE_MIN), zeros after it; size records what was
 * filled. */
static void stats_export(const sstm_stats_t *full, sstm_stats_t *out, size_t size) {
  size_t n = size < sizeof *full ? size : sizeof *full;
  memcpy(out, full, n);
  memset((char *)out + n, 0, size - n);
  out->size = n;
}

static void desc_stats(const sstm_desc_t *d, sstm_stats_t *out) {
  sstm_counters_t c = {0};
  sstm__counters_fold(&c, &d->ctr);
  to_public(&c, out);
  out->slot = d->slot;
  out->tid = atomic_load_explicit(&((sstm_desc_t *)d)->tid, memory_order_relaxed);
}

SSTM_API int sstm_stats_get_sized(const sstm_desc_t *d, sstm_stats_t *out, size_t size) {
  if (d == NULL || out == NULL) {
    sstm__set_error("sstm_stats_get: %s is NULL", d == NULL ? "the descriptor" : "out");
    return SSTM_EINVAL;
  }
  int rc = check_stats_size("sstm_stats_get", size);
  if (rc != 0) return rc;
  sstm_stats_t full;
  desc_stats(d, &full);
  stats_export(&full, out, size);
  return 0;
}

/* Take reg_lock if the library is still initialised (checked again under
 * the lock: sstm_shutdown clears the flag there, then frees the registry
 * without it). False, with nothing held, otherwise. */
static bool registry_lock_live(const char *who) {
  if (atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) {
    pthread_mutex_lock(&sstm__g.reg_lock);
    if (atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) return true;
    pthread_mutex_unlock(&sstm__g.reg_lock);
  }
  sstm__set_error("%s: the library is not initialised", who);
  return false;
}

/* The process totals; `who` names the public call in the error. resets
 * (NULL: not wanted): the sstm_stats_reset calls before them, read under
 * the same lock. */
static int aggregate(sstm_stats_t *out, const char *who, uint64_t *resets) {
  sstm_counters_t c = {0};
  if (!registry_lock_live(who)) return SSTM_ESTATE;
  if (resets) *resets = sstm__g.stats_resets;
  sstm__counters_fold(&c, &sstm__g.retired_ctr);
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *d = sstm__desc_at(i);
    if (d && d->in_use) sstm__counters_fold(&c, &d->ctr);
  }
  pthread_mutex_unlock(&sstm__g.reg_lock);
  to_public(&c, out);
  return 0;
}

SSTM_API int sstm_stats_aggregate_sized(sstm_stats_t *out, size_t size) {
  if (out == NULL) {
    sstm__set_error("sstm_stats_aggregate: out is NULL");
    return SSTM_EINVAL;
  }
  int rc = check_stats_size("sstm_stats_aggregate", size);
  if (rc != 0) return rc;
  sstm_stats_t full;
  if ((rc = aggregate(&full, "sstm_stats_aggregate", NULL)) != 0) return rc;
  stats_export(&full, out, size);
  return 0;
}

int sstm__stats_window(uint64_t *commits, uint64_t *aborts, uint64_t *resets) {
  sstm_stats_t s;
  int rc = aggregate(&s, "sstm_stats_aggregate", resets);
  if (rc != 0) return rc;
  *commits = s.commits_ro + s.commits_update;
  *aborts = s.aborts_total;
  return 0;
}

SSTM_API int sstm_stats_foreach(void (*fn)(const sstm_stats_t *, void *), void *arg) {
  if (fn == NULL) {
    sstm__set_error("sstm_stats_foreach: fn is NULL");
    return SSTM_EINVAL;
  }
  /* The counters are copied under the registry lock and fn runs after it
   * is released, so that fn may call any function of the library (the
   * statistics, sstm_thread_init, ...) without deadlocking on the lock. */
  if (!registry_lock_live("sstm_stats_foreach")) return SSTM_ESTATE;
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
  sstm_stats_t *snap = hw ? malloc(hw * sizeof *snap) : NULL;
  if (hw && snap == NULL) {
    pthread_mutex_unlock(&sstm__g.reg_lock);
    sstm__set_error("sstm_stats_foreach: out of memory for %u descriptors", hw);
    return SSTM_ENOMEM;
  }
  int n = 0;
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *d = sstm__desc_at(i);
    if (d == NULL || !d->in_use) continue;
    desc_stats(d, &snap[n++]);
  }
  pthread_mutex_unlock(&sstm__g.reg_lock);
  for (int i = 0; i < n; i++)
    fn(&snap[i], arg);
  free(snap);
  return n;
}

SSTM_API int sstm_stats_reset(void) {
  if (!registry_lock_live("sstm_stats_reset")) return SSTM_ESTATE;
  sstm__g.stats_resets++;
  memset(&sstm__g.retired_ctr, 0, sizeof sstm__g.retired_ctr);
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *d = sstm__desc_at(i);
    if (d == NULL) continue;
    uint64_t *w = (uint64_t *)&d->ctr;
    for (size_t j = 0; j < sizeof d->ctr / sizeof(uint64_t); j++)
      __atomic_store_n(&w[j], 0, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&sstm__g.reg_lock);
  return 0;
}

static void dump_line(FILE *out, const char *who, const sstm_stats_t *s) {
  uint64_t commits = s->commits_ro + s->commits_update;
  double ratio = commits ? (double)s->aborts_total / (double)commits : 0.0;
  fprintf(out,
          "%-14s commits=%llu (ro=%llu update=%llu irrevocable=%llu) aborts=%llu "
          "(%.3f/commit) max_retries=%llu waits=%llu kills=%llu stolen=%llu ext=%llu past=%llu "
          "ro_logged=%llu\n",
          who, (unsigned long long)commits, (unsigned long long)s->commits_ro,
          (unsigned long long)s->commits_update, (unsigned long long)s->commits_irrevocable,
          (unsigned long long)s->aborts_total, ratio, (unsigned long long)s->max_retries,
          (unsigned long long)s->cm_waits, (unsigned long long)s->cm_kills,
          (unsigned long long)s->locks_stolen, (unsigned long long)s->extensions,
          (unsigned long long)s->reads_past, (unsigned long long)s->ro_logged);
  if (s->aborts_total) {
    fprintf(out, "%-14s   aborts:", "");
    for (int i = 0; i < SSTM_ABORT_REASON_COUNT; i++)
      if (s->aborts[i])
        fprintf(out, " %s=%llu", sstm_abort_reason_name((sstm_abort_reason_t)i),
                (unsigned long long)s->aborts[i]);
    fputc('\n', out);
  }
  if (s->reads_max || s->writes_max)
    fprintf(out, "%-14s   sets: reads avg=%.1f max=%llu, writes avg=%.1f max=%llu\n", "",
            commits ? (double)s->reads_total / (double)commits : 0.0,
            (unsigned long long)s->reads_max,
            commits ? (double)s->writes_total / (double)commits : 0.0,
            (unsigned long long)s->writes_max);
  /* Transaction profiles (sstm_attr_t.tag; detailed statistics). */
  bool tags = false;
  for (int i = 0; i < SSTM_MAX_TAGS; i++) {
    const sstm_tag_stats_t *t = &s->tags[i];
    if (t->commits == 0 && t->aborts == 0) continue;
    if (!tags) fprintf(out, "%-14s   tags:", "");
    tags = true;
    fprintf(out, " %d: commits=%llu aborts=%llu (%.3f/commit)", i, (unsigned long long)t->commits,
            (unsigned long long)t->aborts,
            t->commits ? (double)t->aborts / (double)t->commits : 0.0);
  }
  if (tags) fputc('\n', out);
  /* The policy: its named counters, what it did, the time it took. */
  const sstm_cm_ops_t *cm = sstm__g.cm;
  bool any = s->cm_wait_ns != 0;
  for (int i = 0; i < SSTM_CM_NSTATS; i++)
    any |= s->cm_stats[i] != 0;
  for (int i = 1; i < SSTM_ACT_COUNT; i++)
    any |= s->cm_actions[i] != 0;
  if (!any) return;
  fprintf(out, "%-14s   %s:", "", cm ? cm->name : "policy");
  for (int i = 0; i < SSTM_CM_NSTATS; i++)
    if (s->cm_stats[i])
      fprintf(out, " %s=%llu", cm && cm->stat_names[i] ? cm->stat_names[i] : "counter",
              (unsigned long long)s->cm_stats[i]);
  for (int i = 1; i < SSTM_ACT_COUNT; i++) /* SSTM_ACT_NONE is "back to running" */
    if (s->cm_actions[i])
      fprintf(out, " %s=%llu", sstm_cm_act_name((sstm_cm_act_t)i),
              (unsigned long long)s->cm_actions[i]);
  fprintf(out, " time=%.3fms\n", (double)s->cm_wait_ns / 1e6);
}

static void dump_one(const sstm_stats_t *s, void *arg) {
  char who[32];
  snprintf(who, sizeof who, "slot %u tid %d", s->slot, s->tid);
  dump_line(arg, who, s);
}

SSTM_API int sstm_stats_dump(FILE *out) {
  if (out == NULL) {
    sstm__set_error("sstm_stats_dump: out is NULL");
    return SSTM_EINVAL;
  }
  sstm_stats_t total;
  int rc = aggregate(&total, "sstm_stats_dump", NULL);
  if (rc != 0) return rc;
  /* A write error is the dump's only when the stream had none before. */
  const bool had_error = ferror(out) != 0;
  sstm_stats_foreach(dump_one, out);
  dump_line(out, "total", &total);
  /* What the policy says of itself now (sstm_describe's cm-info): the
   * lever in use, adaptive's current choice and the reason for it. */
  const sstm_cm_ops_t *cm = sstm__g.cm;
  if (cm && cm->describe) {
    char info[512];
    int n = cm->describe(info, sizeof info);
    if (n > 0)
      fprintf(out, "%-14s %s: %s%s\n", "policy", cm->name, info,
              (size_t)n >= sizeof info ? "..." : "");
  }
  /* The statistics must not be lost without a word (a full disk, a
   * stream not open for writing): the bytes are flushed, and a failure
   * of this dump is reported. */
  if (fflush(out) != 0 || (!had_error && ferror(out))) {
    sstm__set_error("sstm_stats_dump: write error: %s", strerror(errno));
    return SSTM_EPERM;
  }
  return 0;
}
