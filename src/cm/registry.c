/* SPDX-License-Identifier: MIT */
/* The catalogue of contention-management policies: the public sstm_cm_register,
 * sstm_cm_find and sstm_cm_list, and the selection by name that sstm_init
 * makes through the catalogue table (iface/cm_catalog.h). The built-in
 * policies register themselves on first use; "P+ext" is built by the ext
 * modifier (cm/ext.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/common.h"
#include "iface/cm_catalog.h"
#include "iface/cm_services.h"

#define MAX_POLICIES SSTM_CM_MAX_POLICIES

extern const sstm_cm_ops_t sstm__cm_suicide, sstm__cm_backoff, sstm__cm_yield, sstm__cm_ser_spin,
    sstm__cm_ser_yield, sstm__cm_ser_block, sstm__cm_ser_kill, sstm__cm_softser, sstm__cm_os_prio,
    sstm__cm_timestamp, sstm__cm_adaptive, sstm__cm_admit, sstm__cm_admit_slice;

static const sstm_cm_ops_t *table[MAX_POLICIES];
static unsigned ntable;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;

static void add_builtins(void) {
  static const sstm_cm_ops_t *const builtins[] = {
      &sstm__cm_suicide,    &sstm__cm_backoff,   &sstm__cm_yield,    &sstm__cm_ser_spin,
      &sstm__cm_ser_yield,  &sstm__cm_ser_block, &sstm__cm_ser_kill, &sstm__cm_softser,
      &sstm__cm_os_prio,    &sstm__cm_timestamp, &sstm__cm_adaptive, &sstm__cm_admit,
      &sstm__cm_admit_slice};
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    table[ntable++] = builtins[i];
}

static bool name_ok(const char *n) {
  if (n == NULL || n[0] == '\0' || strlen(n) > SSTM_CM_NAME_MAX) return false;
  for (const char *p = n; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' ||
          *p == '_'))
      return false;
  return true;
}

/* A registered name, or "P+ext" for a registered P ("ext" = "suicide+ext"):
 * the ext modifier wraps any policy (cm/ext.c), once per P (the composite
 * is then shared by every lookup; a name whose P is not registered builds
 * nothing). *refused: P is registered but ext refused to wrap it (the
 * reason is in sstm_last_error()). */
static const sstm_cm_ops_t *find_locked(const char *name, bool *refused) {
  const sstm_cm_ops_t *base = NULL, *o = NULL;
  *refused = false;
  for (unsigned i = 0; i < ntable; i++)
    if (strcmp(table[i]->name, name) == 0) return table[i];
  size_t n = strlen(name);
  if (strcmp(name, "ext") == 0) {
    base = &sstm__cm_suicide;
  } else if (n > 4 && strcmp(name + n - 4, "+ext") == 0) {
    for (unsigned i = 0; i < ntable && base == NULL; i++)
      if (strlen(table[i]->name) == n - 4 && strncmp(table[i]->name, name, n - 4) == 0)
        base = table[i];
  }
  if (base && (o = sstm__cm_ext_compose(base)) == NULL) *refused = true;
  return o;
}

/* The message for a name that find_locked() did not find (who: the
 * caller, or NULL). */
static void set_not_found(const char *who, const char *name, bool refused) {
  if (refused) return; /* sstm__cm_ext_compose() said why */
  char list[2048];
  sstm_cm_list(list, sizeof list);
  sstm__set_error("%s%sunknown contention manager '%.*s%s'; valid values: %s", who ? who : "",
                  who ? ": " : "", SSTM_QUOTE(name), list);
}

SSTM_API int sstm_cm_register(const sstm_cm_ops_t *ops) {
  pthread_once(&builtins_once, add_builtins);
  if (ops == NULL) {
    sstm__set_error("sstm_cm_register: ops is NULL");
    return SSTM_EINVAL;
  }
  if (ops->on_conflict == NULL || !name_ok(ops->name)) {
    sstm__set_error("sstm_cm_register: need a name of [a-z0-9+_-] (1..%d chars) and on_conflict",
                    SSTM_CM_NAME_MAX);
    return SSTM_EINVAL;
  }
  /* The ext modifier's names: a policy registered as "P+ext" would shadow
   * the composite of P (find_locked() tries the table first), and "ext"
   * the alias of "suicide+ext". */
  size_t nlen = strlen(ops->name);
  if (strcmp(ops->name, "ext") == 0 || (nlen >= 4 && strcmp(ops->name + nlen - 4, "+ext") == 0)) {
    sstm__set_error("sstm_cm_register: '%s': the names \"ext\" and \"P+ext\" are reserved for "
                    "the ext modifier (it wraps any registered P)",
                    ops->name);
    return SSTM_EINVAL;
  }
  /* Bounded so that the descriptor's allocation (and ext's rounding of it
   * in "P+ext") can neither overflow nor ask for absurd sizes. */
  if (ops->state_size > SSTM_CM_STATE_MAX) {
    sstm__set_error("sstm_cm_register: policy '%s': state_size %zu is larger than "
                    "SSTM_CM_STATE_MAX (%zu bytes)",
                    ops->name, ops->state_size, (size_t)SSTM_CM_STATE_MAX);
    return SSTM_EINVAL;
  }
  /* Every slot: a NULL one is a counter not used, and the dump, the state
   * table and +ext read the slots after it too. */
  for (int i = 0; i < SSTM_CM_NSTATS; i++) {
    if (ops->stat_names[i] == NULL) continue;
    size_t n = strlen(ops->stat_names[i]);
    if (n == 0 || n > SSTM_CM_STAT_NAME_MAX) {
      sstm__set_error("sstm_cm_register: policy '%s': counter name %d must have 1..%d characters "
                      "(it has %zu)",
                      ops->name, i, SSTM_CM_STAT_NAME_MAX, n);
      return SSTM_EINVAL;
    }
  }
  int rc = 0;
  bool refused;
  pthread_mutex_lock(&table_lock);
  if (find_locked(ops->name, &refused)) {
    sstm__set_error("sstm_cm_register: a policy named '%s' is already registered", ops->name);
    rc = SSTM_EBUSY;
  } else if (ntable == MAX_POLICIES) {
    sstm__set_error("sstm_cm_register: table full (%d policies)", MAX_POLICIES);
    rc = SSTM_ELIMIT;
  } else {
    table[ntable++] = ops;
  }
  pthread_mutex_unlock(&table_lock);
  return rc;
}

SSTM_API const sstm_cm_ops_t *sstm_cm_find(const char *name) {
  pthread_once(&builtins_once, add_builtins);
  if (name == NULL) {
    sstm__set_error("sstm_cm_find: name is NULL");
    return NULL;
  }
  bool refused;
  pthread_mutex_lock(&table_lock);
  const sstm_cm_ops_t *o = find_locked(name, &refused);
  pthread_mutex_unlock(&table_lock);
  if (o == NULL) set_not_found("sstm_cm_find", name, refused);
  return o;
}

SSTM_API int sstm_cm_list(char *buf, size_t len) {
  pthread_once(&builtins_once, add_builtins);
  if (buf == NULL) len = 0; /* a size query, whatever len says */
  size_t used = 0;
  if (buf && len) buf[0] = '\0';
  pthread_mutex_lock(&table_lock);
  for (unsigned i = 0; i < ntable; i++) {
    int n = snprintf(buf ? buf + (used < len ? used : len) : NULL, used < len ? len - used : 0,
                     "%s%s", i ? ", " : "", table[i]->name);
    used += (size_t)n;
  }
  int n =
      snprintf(buf ? buf + (used < len ? used : len) : NULL, used < len ? len - used : 0,
               ", ext (and P+ext for any P above with at most %d counters)", SSTM_CM_NSTATS - 1);
  used += (size_t)n;
  pthread_mutex_unlock(&table_lock);
  return (int)used;
}

/* sstm_init's selection (iface/cm_catalog.h). */
static int select_by_name(const char *name, const sstm_cm_ops_t **out) {
  pthread_once(&builtins_once, add_builtins);
  const sstm_cm_ops_t *o = NULL;
  bool refused = false;
  if (name) {
    pthread_mutex_lock(&table_lock);
    o = find_locked(name, &refused);
    pthread_mutex_unlock(&table_lock);
  }
  if (o == NULL) {
    if (refused) return SSTM_EINVAL; /* a known policy that +ext cannot wrap */
    set_not_found(NULL, name ? name : "(null)", false);
    return SSTM_ENOENT;
  }
  *out = o;
  return 0;
}

const sstm_cm_catalog_t sstm__cm_catalog = {.select = select_by_name, .list = sstm_cm_list};
