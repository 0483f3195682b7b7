/* SPDX-License-Identifier: MIT */
/* Configuration (typed struct, strict environment overrides), library
 * initialisation and shutdown, and the description of the effective
 * configuration. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include <schedstm/exec.h>

#include "core/engine.h"
#include "iface/libc_services.h"
#include "iface/map_runtime.h"

/* The two mutexes live as long as the process (never re-initialised by a
 * later sstm_init): a thread may be blocked on reg_lock while the library
 * is shut down and started again. */
sstm_global_t sstm__g = {.reg_lock = PTHREAD_MUTEX_INITIALIZER,
                         .orphan_lock = PTHREAD_MUTEX_INITIALIZER};
static char cm_name_buf[64];
/* The topology cache's default directory (sstm_config_t::map_topo_cache). */
static char topo_cache_buf[4096];

/* A block reused from the cache is never handed to free(), so ASan could
 * not report a use of it after its release: off by default there. */
#if defined(__SANITIZE_ADDRESS__)
#define ALLOC_CACHE_DEFAULT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALLOC_CACHE_DEFAULT 0
#endif
#endif
#ifndef ALLOC_CACHE_DEFAULT
#define ALLOC_CACHE_DEFAULT SSTM_ALLOC_CACHE_DEFAULT
#endif

/* Sizes of sstm_config_t this library accepts from a caller: that of each
 * layout since the first with a size field (0.2's), and no other. Fields
 * are only ever appended, and a field appended later must mean the former
 * behaviour when it takes its default: a caller built against an older
 * header has the prefix, the rest keeps the defaults. (One exception:
 * itm_privatization defaults to true, the safe behaviour, which only makes
 * the gcc -fgnu-tm ABI's update commits wait; see config.h.) When fields are
 * appended, the size of the layout before them (offsetof the first
 * appended field) joins config_sizes. */
static const size_t config_sizes[] = {
    offsetof(sstm_config_t, map),            /* 0.2: up to no_membarrier */
    offsetof(sstm_config_t, map_topo_cache), /* + thread mapping (map ... map_topology) */
    offsetof(sstm_config_t, stats_at_exit),  /* + map_topo_cache, map_log */
    sizeof(sstm_config_t), /* + stats_at_exit, and itm_privatization in its padding */
};
#define CONFIG_SIZE_MIN config_sizes[0]
#define CONFIG_SIZE_MAX sizeof(sstm_config_t)

static void config_defaults(sstm_config_t *cfg) {
  *cfg = (sstm_config_t){
      .size = sizeof(sstm_config_t),
      .design = SSTM_DESIGN_ETL,
      .cm = "adaptive",
      .lock_bits = 20,
      .stripe_shift = 5,
      .max_threads = 1024,
      .stats = SSTM_STATS_BASIC,
      .backoff_min_ns = 256,
      .backoff_max_ns = 1000000,
      .wait_max = 64,
      .sample_period = 0,
      .read_past = SSTM_READ_PAST_RO,
      .ro_log = SSTM_RO_LOG_OFF,
      .alloc_cache = ALLOC_CACHE_DEFAULT,
      .use_env = true,
      .softser_lever = SSTM_SOFTSER_LEVER_AUTO,
      .ext_mode = SSTM_EXT_FACILITY_AUTO,
      .ext_slice_us = SSTM_EXT_SLICE_US_DEFAULT,
      .prio_escalate = SSTM_PRIO_ESCALATE_DEFAULT,
      .no_membarrier = false,
      .map = SSTM_MAP_STRATEGY_NONE,
      .map_si = SSTM_MAP_SI_DEFAULT,
      .map_mi = SSTM_MAP_MI_DEFAULT,
      .map_da_threshold = SSTM_MAP_DA_THRESHOLD_DEFAULT,
      .map_table_bits = SSTM_MAP_TABLE_BITS_DEFAULT,
      .map_gain_pct = SSTM_MAP_GAIN_DEFAULT,
      .map_file = NULL,
      .map_dump = NULL,
      .map_topology = NULL,
      .map_topo_cache = NULL,
      .map_log = NULL,
      .stats_at_exit = false,
      .itm_privatization = true,
  };
}

/* A caller's size of sstm_config_t, one of config_sizes; `who` names the
 * public call in the error. */
static int check_config_size(const char *who, size_t size) {
  for (size_t i = 0; i < sizeof config_sizes / sizeof config_sizes[0]; i++)
    if (size == config_sizes[i]) return 0;
  sstm__set_error("%s: the sstm_config_t's size is %zu bytes; this library (%s) takes the size of "
                  "one of its layouts, from %zu to %zu: "
                  "fill the struct with sstm_config_default() before setting fields, and build "
                  "the program against the <schedstm/config.h> of this library or an older one",
                  who, size, SSTM_VERSION_STRING, (size_t)CONFIG_SIZE_MIN, (size_t)CONFIG_SIZE_MAX);
  return SSTM_EINVAL;
}

SSTM_API int sstm_config_default_sized(sstm_config_t *cfg, size_t size) {
  if (cfg == NULL) {
    sstm__set_error("sstm_config_default_sized: cfg is NULL");
    return SSTM_EINVAL;
  }
  int rc = check_config_size("sstm_config_default_sized", size);
  if (rc != 0) return rc;
  sstm_config_t d;
  config_defaults(&d);
  d.size = size;
  memcpy(cfg, &d, size);
  return 0;
}

/* The caller's configuration of user->size bytes (checked) as this
 * library's: the fields an older caller lacks keep their defaults. */
static int config_import(const char *who, const sstm_config_t *user, sstm_config_t *out) {
  int rc = check_config_size(who, user->size);
  if (rc != 0) return rc;
  config_defaults(out);
  memcpy(out, user, user->size);
  out->size = sizeof *out;
  return 0;
}

static const char *const design_names[] = {"etl", "ctl"};

SSTM_API const char *sstm_design_name(sstm_design_t d) {
  return (unsigned)d < 2 ? design_names[d] : "?";
}

SSTM_API int sstm_design_parse(const char *s, sstm_design_t *out) {
  for (unsigned i = 0; s && i < 2; i++) {
    if (strcmp(s, design_names[i]) == 0) {
      if (out) *out = (sstm_design_t)i;
      return 0;
    }
  }
  sstm__set_error("unknown design '%.*s%s'; valid designs: etl, ctl", SSTM_QUOTE(s ? s : "(null)"));
  return SSTM_EINVAL;
}

/* Strict unsigned parse: plain decimal digits only (no sign, space or
 * prefix: strtoull alone would take " +5", " -0" and wrap "-1"), no
 * overflow, within [lo, hi]. */
static int parse_u64(const char *var, const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  uint64_t v = 0;
  if (*s == '\0') goto bad;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') goto bad;
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) goto bad;
    v = v * 10 + d;
  }
  if (v < lo || v > hi) goto bad;
  *out = v;
  return 0;
bad:
  sstm__set_error("%s='%.*s%s': expected a decimal integer in [%" PRIu64 ", %" PRIu64 "]", var,
                  SSTM_QUOTE(s), lo, hi);
  return SSTM_EINVAL;
}

/* One of n names, exactly: *out is its index. The error lists them all. */
static int parse_name(const char *var, const char *s, const char *const *names, int n, int *out) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = i;
      return 0;
    }
  char list[128] = "";
  for (int i = 0; i < n; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
  sstm__set_error("%s='%.*s%s': valid values: %s", var, SSTM_QUOTE(s), list);
  return SSTM_EINVAL;
}

/* Names of the enumerated settings, in the order of their values. */
static const char *const stats_names[] = {"basic", "detailed"};
static const char *const read_past_names[] = {"off", "ro", "all"};
static const char *const ro_log_names[] = {"off", "auto", "on"};
static const char *const lever_names[] = {"auto", "none", "nice", "idle", "batch", "slice"};
static const char *const ext_mode_names[] = {"auto", "none", "slice"};
static const char *const map_names[] = {"none", "compact", "scatter", "round-robin",
                                        "file", "stmap",   "detect"};
_Static_assert(SSTM_STATS_BASIC == 0 && SSTM_STATS_DETAILED == 1, "stats_names");
_Static_assert(SSTM_READ_PAST_OFF == 0 && SSTM_READ_PAST_RO == 1 && SSTM_READ_PAST_ALL == 2,
               "read_past_names");
_Static_assert(SSTM_RO_LOG_OFF == 0 && SSTM_RO_LOG_AUTO == 1 && SSTM_RO_LOG_ON == 2,
               "ro_log_names");
/* The policies map these onto the OS layer's (os/sched.h): after AUTO,
 * the levers in sstm_lever_t's order; the facilities as sstm_ext_force_t. */
_Static_assert(SSTM_SOFTSER_LEVER_NONE - 1 == (int)SSTM_LEVER_NONE &&
                   SSTM_SOFTSER_LEVER_NICE - 1 == (int)SSTM_LEVER_NICE &&
                   SSTM_SOFTSER_LEVER_IDLE - 1 == (int)SSTM_LEVER_IDLE &&
                   SSTM_SOFTSER_LEVER_BATCH - 1 == (int)SSTM_LEVER_BATCH &&
                   SSTM_SOFTSER_LEVER_SLICE - 1 == (int)SSTM_LEVER_SLICE,
               "lever_names");
_Static_assert(SSTM_EXT_FACILITY_AUTO == (int)SSTM_EXT_FORCE_AUTO &&
                   SSTM_EXT_FACILITY_NONE == (int)SSTM_EXT_FORCE_NONE &&
                   SSTM_EXT_FACILITY_SLICE == (int)SSTM_EXT_FORCE_SLICE,
               "ext_mode_names");
_Static_assert(SSTM_MAP_STRATEGY_NONE == 0 && SSTM_MAP_STRATEGY_COMPACT == 1 &&
                   SSTM_MAP_STRATEGY_SCATTER == 2 && SSTM_MAP_STRATEGY_ROUND_ROBIN == 3 &&
                   SSTM_MAP_STRATEGY_FILE == 4 && SSTM_MAP_STRATEGY_STMAP == 5 &&
                   SSTM_MAP_STRATEGY_DETECT == 6,
               "map_names");

SSTM_API const char *sstm_map_strategy_name(sstm_map_strategy_t s) {
  return (unsigned)s <= SSTM_MAP_STRATEGY_DETECT ? map_names[s] : "?";
}

#define PARSE_NAME(var, s, names, field)                                                           \
  do {                                                                                             \
    int i_;                                                                                        \
    if (parse_name(var, s, names, (int)(sizeof names / sizeof names[0]), &i_)) return SSTM_EINVAL; \
    field = i_;                                                                                    \
  } while (0)

SSTM_API int sstm_map_strategy_parse(const char *s, sstm_map_strategy_t *out) {
  int i;
  if (parse_name("strategy", s ? s : "(null)", map_names,
                 (int)(sizeof map_names / sizeof map_names[0]), &i) != 0)
    return SSTM_EINVAL;
  if (out) *out = (sstm_map_strategy_t)i;
  return 0;
}

/* A switch: exactly "0" or "1". */
static int parse_01(const char *var, const char *s, bool *out) {
  if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0) {
    sstm__set_error("%s='%.*s%s': valid values: 0, 1", var, SSTM_QUOTE(s));
    return SSTM_EINVAL;
  }
  *out = s[0] == '1';
  return 0;
}

static int check_config(const sstm_config_t *c) {
  if ((unsigned)c->design > SSTM_DESIGN_CTL)
    return sstm__set_error("design %d: valid designs: etl, ctl", (int)c->design), SSTM_EINVAL;
  if (c->lock_bits < 10 || c->lock_bits > 28)
    return sstm__set_error("lock_bits %u: must be in [10, 28]", c->lock_bits), SSTM_EINVAL;
  if (c->stripe_shift < 3 || c->stripe_shift > 12)
    return sstm__set_error("stripe_shift %u: must be in [3, 12]", c->stripe_shift), SSTM_EINVAL;
  if (c->max_threads < 1 || c->max_threads > SSTM_MAX_SLOTS)
    return sstm__set_error("max_threads %u: must be in [1, %u]", c->max_threads, SSTM_MAX_SLOTS),
           SSTM_EINVAL;
  if ((unsigned)c->stats > SSTM_STATS_DETAILED)
    return sstm__set_error("stats %d: valid levels: basic, detailed", (int)c->stats), SSTM_EINVAL;
  if (c->backoff_min_ns == 0 || c->backoff_min_ns > c->backoff_max_ns ||
      c->backoff_max_ns > 1000000000ull)
    return sstm__set_error(
               "backoff_min_ns %llu, backoff_max_ns %llu (after SCHEDSTM_BACKOFF_MIN_NS "
               "and SCHEDSTM_BACKOFF_MAX_NS, if set): need 0 < min <= max <= "
               "1000000000; the default max is 1000000",
               (unsigned long long)c->backoff_min_ns, (unsigned long long)c->backoff_max_ns),
           SSTM_EINVAL;
  if ((unsigned)c->read_past > SSTM_READ_PAST_ALL)
    return sstm__set_error("read_past %d: valid values: SSTM_READ_PAST_OFF, _RO, _ALL",
                           (int)c->read_past),
           SSTM_EINVAL;
  if ((unsigned)c->ro_log > SSTM_RO_LOG_ON)
    return sstm__set_error("ro_log %d: valid values: SSTM_RO_LOG_OFF, _AUTO, _ON", (int)c->ro_log),
           SSTM_EINVAL;
  if (c->alloc_cache > SSTM_ALLOC_CACHE_MAX)
    return sstm__set_error("alloc_cache %zu: must be in [0, %zu] bytes", c->alloc_cache,
                           SSTM_ALLOC_CACHE_MAX),
           SSTM_EINVAL;
  if (c->wait_max > 1000000)
    return sstm__set_error("wait_max %u: must be in [0, 1000000]", c->wait_max), SSTM_EINVAL;
  if (c->sample_period > 0 && c->sample_fn == NULL)
    return sstm__set_error("sample_period > 0 requires sample_fn"), SSTM_EINVAL;
  if ((unsigned)c->softser_lever > SSTM_SOFTSER_LEVER_SLICE)
    return sstm__set_error("softser_lever %d: valid values: SSTM_SOFTSER_LEVER_AUTO, _NONE, "
                           "_NICE, _IDLE, _BATCH, _SLICE",
                           (int)c->softser_lever),
           SSTM_EINVAL;
  if ((unsigned)c->ext_mode > SSTM_EXT_FACILITY_SLICE)
    return sstm__set_error("ext_mode %d: valid values: SSTM_EXT_FACILITY_AUTO, _NONE, _SLICE",
                           (int)c->ext_mode),
           SSTM_EINVAL;
  if (c->ext_slice_us < SSTM_EXT_SLICE_US_MIN || c->ext_slice_us > SSTM_EXT_SLICE_US_MAX)
    return sstm__set_error("ext_slice_us %u: must be in [%u, %u]", c->ext_slice_us,
                           SSTM_EXT_SLICE_US_MIN, SSTM_EXT_SLICE_US_MAX),
           SSTM_EINVAL;
  if (c->prio_escalate > SSTM_PRIO_ESCALATE_MAX)
    return sstm__set_error("prio_escalate %u: must be in [0, %u]", c->prio_escalate,
                           SSTM_PRIO_ESCALATE_MAX),
           SSTM_EINVAL;
  if ((unsigned)c->map > SSTM_MAP_STRATEGY_DETECT)
    return sstm__set_error("map %d: valid values: SSTM_MAP_STRATEGY_NONE, _COMPACT, _SCATTER, "
                           "_ROUND_ROBIN, _FILE, _STMAP, _DETECT",
                           (int)c->map),
           SSTM_EINVAL;
  if (c->map_si > SSTM_MAP_SI_MAX)
    return sstm__set_error("map_si %u: must be in [0, %u]", c->map_si, SSTM_MAP_SI_MAX),
           SSTM_EINVAL;
  if (c->map_mi < 1 || c->map_mi > SSTM_MAP_MI_MAX)
    return sstm__set_error("map_mi %llu: must be in [1, %llu]", (unsigned long long)c->map_mi,
                           (unsigned long long)SSTM_MAP_MI_MAX),
           SSTM_EINVAL;
  if (c->map_da_threshold > SSTM_MAP_DA_THRESHOLD_MAX)
    return sstm__set_error("map_da_threshold %u: must be in [0, %u]", c->map_da_threshold,
                           SSTM_MAP_DA_THRESHOLD_MAX),
           SSTM_EINVAL;
  if (c->map_table_bits < SSTM_MAP_TABLE_BITS_MIN || c->map_table_bits > SSTM_MAP_TABLE_BITS_MAX)
    return sstm__set_error("map_table_bits %u: must be in [%u, %u]", c->map_table_bits,
                           SSTM_MAP_TABLE_BITS_MIN, SSTM_MAP_TABLE_BITS_MAX),
           SSTM_EINVAL;
  if (c->map_gain_pct > 100)
    return sstm__set_error("map_gain_pct %u: must be in [0, 100]", c->map_gain_pct), SSTM_EINVAL;
  if (c->map_topo_cache && c->map_topo_cache[0] != '\0' && c->map_topo_cache[0] != '/')
    return sstm__set_error("map_topo_cache '%.200s': an absolute directory path, \"\" for no "
                           "cache or NULL for the default",
                           c->map_topo_cache),
           SSTM_EINVAL;
  if (c->map == SSTM_MAP_STRATEGY_FILE && (c->map_file == NULL || c->map_file[0] == '\0'))
    return sstm__set_error("map strategy file: map_file (SCHEDSTM_MAP_FILE) names no matrix file"),
           SSTM_EINVAL;
  if ((c->map == SSTM_MAP_STRATEGY_STMAP || c->map == SSTM_MAP_STRATEGY_DETECT) &&
      c->sample_period > 0)
    return sstm__set_error("map strategy %s samples through the sampling hook, which "
                           "sample_period/sample_fn already use: turn one off",
                           map_names[c->map]),
           SSTM_EINVAL;
  if (c->cm == NULL || c->cm[0] == '\0')
    return sstm__set_error("cm: a contention manager name is required"), SSTM_EINVAL;
  return 0;
}

SSTM_API int sstm_config_from_env(sstm_config_t *cfg) {
  if (cfg == NULL) {
    sstm__set_error("sstm_config_from_env: cfg is NULL");
    return SSTM_EINVAL;
  }
  sstm_config_t c;
  int rc = config_import("sstm_config_from_env", cfg, &c);
  if (rc != 0) return rc;
  const char *s;
  uint64_t v;
  if ((s = getenv("SCHEDSTM_DESIGN")) && sstm_design_parse(s, &c.design) != 0) {
    sstm__set_error("SCHEDSTM_DESIGN='%.*s%s': valid values: etl, ctl", SSTM_QUOTE(s));
    return SSTM_EINVAL;
  }
  if ((s = getenv("SCHEDSTM_CM"))) {
    const sstm_cm_ops_t *o;
    int rc = strlen(s) < sizeof cm_name_buf ? sstm__cm_select(s, &o) : SSTM_ENOENT;
    if (rc == SSTM_EINVAL) { /* known, but not usable: "P+ext" that ext refused */
      char why[400];
      snprintf(why, sizeof why, "%s", sstm_last_error());
      sstm__set_error("SCHEDSTM_CM='%.*s%s': %s", SSTM_QUOTE(s), why);
      return SSTM_EINVAL;
    }
    if (rc != 0) {
      char list[512];
      sstm__cm_list(list, sizeof list);
      sstm__set_error("SCHEDSTM_CM='%.*s%s': unknown contention manager; valid values: %s",
                      SSTM_QUOTE(s), list);
      return SSTM_EINVAL;
    }
    c.cm = s;
  }
  if ((s = getenv("SCHEDSTM_LOCK_BITS"))) {
    if (parse_u64("SCHEDSTM_LOCK_BITS", s, 10, 28, &v)) return SSTM_EINVAL;
    c.lock_bits = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_STRIPE_SHIFT"))) {
    if (parse_u64("SCHEDSTM_STRIPE_SHIFT", s, 3, 12, &v)) return SSTM_EINVAL;
    c.stripe_shift = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_MAX_THREADS"))) {
    if (parse_u64("SCHEDSTM_MAX_THREADS", s, 1, SSTM_MAX_SLOTS, &v)) return SSTM_EINVAL;
    c.max_threads = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_STATS"))) PARSE_NAME("SCHEDSTM_STATS", s, stats_names, c.stats);
  if ((s = getenv("SCHEDSTM_BACKOFF_MIN_NS"))) {
    if (parse_u64("SCHEDSTM_BACKOFF_MIN_NS", s, 1, 1000000000ull, &v)) return SSTM_EINVAL;
    c.backoff_min_ns = v;
  }
  if ((s = getenv("SCHEDSTM_BACKOFF_MAX_NS"))) {
    if (parse_u64("SCHEDSTM_BACKOFF_MAX_NS", s, 1, 1000000000ull, &v)) return SSTM_EINVAL;
    c.backoff_max_ns = v;
  }
  if ((s = getenv("SCHEDSTM_READ_PAST")))
    PARSE_NAME("SCHEDSTM_READ_PAST", s, read_past_names, c.read_past);
  if ((s = getenv("SCHEDSTM_STATE_TABLE")) && parse_01("SCHEDSTM_STATE_TABLE", s, &c.state_table))
    return SSTM_EINVAL;
  if ((s = getenv("SCHEDSTM_RO_LOG"))) PARSE_NAME("SCHEDSTM_RO_LOG", s, ro_log_names, c.ro_log);
  if ((s = getenv("SCHEDSTM_ALLOC_CACHE"))) {
    if (parse_u64("SCHEDSTM_ALLOC_CACHE", s, 0, SSTM_ALLOC_CACHE_MAX, &v)) return SSTM_EINVAL;
    c.alloc_cache = (size_t)v;
  }
  if ((s = getenv("SCHEDSTM_WAIT_MAX"))) {
    if (parse_u64("SCHEDSTM_WAIT_MAX", s, 0, 1000000, &v)) return SSTM_EINVAL;
    c.wait_max = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_NO_MEMBARRIER")) &&
      parse_01("SCHEDSTM_NO_MEMBARRIER", s, &c.no_membarrier))
    return SSTM_EINVAL;
  if ((s = getenv("SCHEDSTM_STATS_AT_EXIT")) &&
      parse_01("SCHEDSTM_STATS_AT_EXIT", s, &c.stats_at_exit))
    return SSTM_EINVAL;
  if ((s = getenv("SCHEDSTM_ITM_PRIVATIZATION")) &&
      parse_01("SCHEDSTM_ITM_PRIVATIZATION", s, &c.itm_privatization))
    return SSTM_EINVAL;
  /* The policies' knobs. */
  if ((s = getenv("SCHEDSTM_SOFTSER_LEVER")))
    PARSE_NAME("SCHEDSTM_SOFTSER_LEVER", s, lever_names, c.softser_lever);
  if ((s = getenv("SCHEDSTM_EXT_MODE")))
    PARSE_NAME("SCHEDSTM_EXT_MODE", s, ext_mode_names, c.ext_mode);
  if ((s = getenv("SCHEDSTM_EXT_SLICE_US"))) {
    if (parse_u64("SCHEDSTM_EXT_SLICE_US", s, SSTM_EXT_SLICE_US_MIN, SSTM_EXT_SLICE_US_MAX, &v))
      return SSTM_EINVAL;
    c.ext_slice_us = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_PRIO_ESCALATE"))) {
    if (parse_u64("SCHEDSTM_PRIO_ESCALATE", s, 0, SSTM_PRIO_ESCALATE_MAX, &v)) return SSTM_EINVAL;
    c.prio_escalate = (unsigned)v;
  }
  /* Thread mapping (schedstm/map.h). */
  if ((s = getenv("SCHEDSTM_MAP_STRATEGY")))
    PARSE_NAME("SCHEDSTM_MAP_STRATEGY", s, map_names, c.map);
  if ((s = getenv("SCHEDSTM_MAP_SI"))) {
    if (parse_u64("SCHEDSTM_MAP_SI", s, 0, SSTM_MAP_SI_MAX, &v)) return SSTM_EINVAL;
    c.map_si = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_MAP_MI"))) {
    if (parse_u64("SCHEDSTM_MAP_MI", s, 1, SSTM_MAP_MI_MAX, &v)) return SSTM_EINVAL;
    c.map_mi = v;
  }
  if ((s = getenv("SCHEDSTM_MAP_DA_THRESHOLD"))) {
    if (parse_u64("SCHEDSTM_MAP_DA_THRESHOLD", s, 0, SSTM_MAP_DA_THRESHOLD_MAX, &v))
      return SSTM_EINVAL;
    c.map_da_threshold = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_MAP_TABLE_BITS"))) {
    if (parse_u64("SCHEDSTM_MAP_TABLE_BITS", s, SSTM_MAP_TABLE_BITS_MIN, SSTM_MAP_TABLE_BITS_MAX,
                  &v))
      return SSTM_EINVAL;
    c.map_table_bits = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_MAP_GAIN"))) {
    if (parse_u64("SCHEDSTM_MAP_GAIN", s, 0, 100, &v)) return SSTM_EINVAL;
    c.map_gain_pct = (unsigned)v;
  }
  /* Strings: non-empty, used as given (the environment outlives sstm_init). */
  if ((s = getenv("SCHEDSTM_MAP_FILE"))) {
    if (*s == '\0')
      return sstm__set_error("SCHEDSTM_MAP_FILE is empty: name a matrix file"), SSTM_EINVAL;
    c.map_file = s;
  }
  if ((s = getenv("SCHEDSTM_MAP_DUMP"))) {
    if (*s == '\0') return sstm__set_error("SCHEDSTM_MAP_DUMP is empty: name a file"), SSTM_EINVAL;
    c.map_dump = s;
  }
  if ((s = getenv("SCHEDSTM_MAP_TOPOLOGY"))) {
    if (*s == '\0')
      return sstm__set_error("SCHEDSTM_MAP_TOPOLOGY is empty: give an hwloc synthetic "
                             "description or an XML file"),
             SSTM_EINVAL;
    c.map_topology = s;
  }
  if ((s = getenv("SCHEDSTM_MAP_TOPO_CACHE"))) {
    if (*s == '\0')
      return sstm__set_error("SCHEDSTM_MAP_TOPO_CACHE is empty: name a directory, or off"),
             SSTM_EINVAL;
    /* Absolute only (as $XDG_CACHE_HOME): a relative value is more likely a
     * mistyped "off" (OFF, 0, none) than a cache wanted in whatever
     * directory the program runs from, where it would be created. */
    if (strcmp(s, "off") != 0 && s[0] != '/')
      return sstm__set_error("SCHEDSTM_MAP_TOPO_CACHE='%.200s': an absolute directory path, or off "
                             "for no cache",
                             s),
             SSTM_EINVAL;
    c.map_topo_cache = strcmp(s, "off") == 0 ? "" : s;
  }
  if ((s = getenv("SCHEDSTM_MAP_LOG"))) {
    if (*s == '\0') return sstm__set_error("SCHEDSTM_MAP_LOG is empty: name a file"), SSTM_EINVAL;
    c.map_log = s;
  }
  c.size = cfg->size; /* the caller's own prefix, its size unchanged */
  memcpy(cfg, &c, c.size);
  return 0;
}

/* The executor's variables (schedstm/exec.h): read here, like every
 * SCHEDSTM_* variable, and applied by src/exec at sstm_exec_create. */
static const char *const exec_preempt_names[] = {"none", "signal", "poll", "check-only"};
static const char *const exec_paused_names[] = {"takeover", "handover", "inherit"};

SSTM_API int sstm_exec_config_from_env(sstm_exec_config_t *cfg) {
  if (cfg == NULL || cfg->size != sizeof(sstm_exec_config_t)) {
    sstm__set_error("sstm_exec_config_from_env: %s",
                    cfg ? "unknown size of sstm_exec_config_t (fill it with "
                          "sstm_exec_config_default)"
                        : "cfg is NULL");
    return SSTM_EINVAL;
  }
  sstm_exec_config_t c = *cfg;
  const char *s;
  uint64_t v;
  if ((s = getenv("SCHEDSTM_EXEC_WORKERS"))) {
    if (parse_u64("SCHEDSTM_EXEC_WORKERS", s, 0, SSTM_EXEC_MAX_WORKERS, &v)) return SSTM_EINVAL;
    c.workers = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_EXEC_CONTEXTS"))) {
    if (parse_u64("SCHEDSTM_EXEC_CONTEXTS", s, 1, SSTM_EXEC_MAX_CONTEXTS, &v)) return SSTM_EINVAL;
    c.contexts = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_EXEC_STACK_KB"))) {
    if (parse_u64("SCHEDSTM_EXEC_STACK_KB", s, 16, 65536, &v)) return SSTM_EINVAL;
    c.stack_kb = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_EXEC_LEVELS"))) {
    if (parse_u64("SCHEDSTM_EXEC_LEVELS", s, 1, SSTM_EXEC_MAX_LEVELS, &v)) return SSTM_EINVAL;
    c.levels = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_EXEC_POLL_FALLBACK_US"))) {
    if (parse_u64("SCHEDSTM_EXEC_POLL_FALLBACK_US", s, 1, 1000000, &v)) return SSTM_EINVAL;
    c.poll_fallback_us = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_EXEC_TICK_US"))) {
    if (parse_u64("SCHEDSTM_EXEC_TICK_US", s, 0, 1000000, &v)) return SSTM_EINVAL;
    c.tick_us = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_EXEC_CMAX"))) {
    if (parse_u64("SCHEDSTM_EXEC_CMAX", s, 0, 1000000, &v)) return SSTM_EINVAL;
    c.c_max = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_EXEC_RESERVE_PCT"))) {
    if (parse_u64("SCHEDSTM_EXEC_RESERVE_PCT", s, 0, SSTM_EXEC_RESERVE_PCT_MAX, &v))
      return SSTM_EINVAL;
    c.reserve_pct = (unsigned)v;
  }
  if ((s = getenv("SCHEDSTM_EXEC_HOLDER_LEVEL"))) {
    if (parse_u64("SCHEDSTM_EXEC_HOLDER_LEVEL", s, 0, SSTM_EXEC_MAX_LEVELS - 1, &v))
      return SSTM_EINVAL;
    c.holder_level = (unsigned)v;
  }
  if (c.tick_us != 0 && c.tick_us < 10) {
    sstm__set_error("SCHEDSTM_EXEC_TICK_US='%u': 0 (off) or 10..1000000", c.tick_us);
    return SSTM_EINVAL;
  }
  if ((s = getenv("SCHEDSTM_EXEC_PREEMPT")))
    PARSE_NAME("SCHEDSTM_EXEC_PREEMPT", s, exec_preempt_names, c.preempt);
  if ((s = getenv("SCHEDSTM_EXEC_PAUSED_CONFLICT")))
    PARSE_NAME("SCHEDSTM_EXEC_PAUSED_CONFLICT", s, exec_paused_names, c.paused_conflict);
  if ((s = getenv("SCHEDSTM_EXEC_LAZY")) && parse_01("SCHEDSTM_EXEC_LAZY", s, &c.lazy_promotion))
    return SSTM_EINVAL;
  if ((s = getenv("SCHEDSTM_EXEC_WAITER_FIRST")) &&
      parse_01("SCHEDSTM_EXEC_WAITER_FIRST", s, &c.waiter_first))
    return SSTM_EINVAL;
  *cfg = c;
  return 0;
}

/* The lock table: anonymous zero pages, mapped without reserving swap
 * (MAP_NORESERVE). A zero word is an unlocked stripe at version 0, so the
 * table needs no initialising store, and a page costs memory only once a
 * stripe on it is used: 2^28 words (2 GiB) cost nothing at sstm_init,
 * where writing them all took more than a minute. NULL (error message set)
 * if the mapping fails. */
static _Atomic uint64_t *locks_map(size_t nlocks) {
  size_t bytes = nlocks * sizeof(_Atomic uint64_t);
  void *m =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    sstm__set_error("sstm_init: cannot map the lock table (%zu lock words, %zu bytes): %s", nlocks,
                    bytes, strerror(errno));
    return NULL;
  }
  /* Transparent huge pages where the kernel offers them on advice: a
   * stripe's lock word is hashed from the data address, so a transaction
   * touches the table at random, and with 4 KiB pages nearly every first
   * access to a stripe adds a TLB miss to the data's own. Advice only:
   * a kernel without THP (EINVAL) leaves the table as it was. */
  (void)madvise(m, bytes, MADV_HUGEPAGE);
  /* Page-aligned, hence cache-line aligned; zero words are what
   * atomic_init(0) would leave (lock-free 64-bit atomics). */
  return m;
}

static void locks_unmap(_Atomic uint64_t *locks, size_t nlocks) {
  if (locks != NULL) munmap((void *)locks, nlocks * sizeof *locks);
}

/* cfg.stats_at_exit: at the process's exit, the statistics of a library
 * still initialised then (a program that shut it down printed or read
 * them itself). One handler per process, whatever the number of inits. */
static void stats_at_exit_print(void) {
  if (!atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) return;
  if (!sstm__g.cfg.stats_at_exit) return; /* a later init without it */
  (void)sstm_stats_dump(stderr);
}

static void stats_at_exit_arm(void) {
  static _Atomic bool armed;
  /* relaxed: only the first init registers; atexit orders nothing else. */
  if (!atomic_exchange_explicit(&armed, true, memory_order_relaxed)) atexit(stats_at_exit_print);
}

/* The configuration's strings (map_file, map_dump, map_topology,
 * map_topo_cache, map_log), copied by sstm_init() into one block of the
 * library's, so that sstm_config_get() hands back these and never the
 * caller's, which may be gone by then (a buffer on the stack of the code
 * that called sstm_init). Replaced at the next sstm_init(), freed by
 * sstm_shutdown(); a failed sstm_init() leaves it to the next one. */
static char *cfg_strings;

static int own_strings(sstm_config_t *cfg) {
  const char **f[] = {&cfg->map_file, &cfg->map_dump, &cfg->map_topology, &cfg->map_topo_cache,
                      &cfg->map_log};
  size_t n = 0;
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (*f[i]) n += strlen(*f[i]) + 1;
  free(cfg_strings);
  cfg_strings = NULL;
  if (n == 0) return 0;
  char *b = malloc(n);
  if (b == NULL) {
    sstm__set_error("sstm_init: out of memory");
    return SSTM_ENOMEM;
  }
  cfg_strings = b;
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (*f[i]) {
      size_t len = strlen(*f[i]) + 1;
      memcpy(b, *f[i], len);
      *f[i] = b;
      b += len;
    }
  return 0;
}

SSTM_API int sstm_init(const sstm_config_t *user) {
  if (atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) {
    sstm__set_error("sstm_init: already initialised");
    return SSTM_ESTATE;
  }
  sstm_config_t cfg;
  int rc;
  if (user == NULL)
    config_defaults(&cfg);
  else if ((rc = config_import("sstm_init", user, &cfg)) != 0)
    return rc;
  if (cfg.use_env && (rc = sstm_config_from_env(&cfg)) != 0) return rc;
  if ((rc = check_config(&cfg)) != 0) return rc;
  const sstm_cm_ops_t *cm;
  if ((rc = sstm__cm_select(cfg.cm, &cm)) != 0) return rc;
  snprintf(cm_name_buf, sizeof cm_name_buf, "%s", cm->name);
  cfg.cm = cm_name_buf;
  if (cfg.map != SSTM_MAP_STRATEGY_NONE && cfg.map_topo_cache == NULL) {
    /* The default cache directory: the XDG base directory rule. Not a
     * knob (use_env does not apply): where the user's caches live. */
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int w = -1;
    if (xdg && xdg[0] == '/')
      w = snprintf(topo_cache_buf, sizeof topo_cache_buf, "%s/schedstm", xdg);
    else if (home && home[0] == '/')
      w = snprintf(topo_cache_buf, sizeof topo_cache_buf, "%s/.cache/schedstm", home);
    cfg.map_topo_cache = w > 0 && (size_t)w < sizeof topo_cache_buf ? topo_cache_buf : "";
  }
  if ((rc = own_strings(&cfg)) != 0) return rc;

  size_t nlocks = (size_t)1 << cfg.lock_bits;
  _Atomic uint64_t *locks = locks_map(nlocks);
  if (locks == NULL) return SSTM_ENOMEM;
  sstm__g.locks = locks;
  sstm__g.lock_mask = nlocks - 1;
  sstm__g.stripe_shift = cfg.stripe_shift;
  sstm__g.cfg = cfg;
  sstm__g.cm = cm; /* before cm->init, which may ask for it (sstm__cm_selected) */
  sstm__g.orphans = NULL;
  memset(&sstm__g.retired_ctr, 0, sizeof sstm__g.retired_ctr);
  sstm__g.stats_resets = 0;
  atomic_store_explicit(&sstm__g.clock, 0, memory_order_relaxed);
  atomic_store_explicit(&sstm__g.irrev_owner, 0, memory_order_relaxed);
  sstm__g.membarrier = sstm__membarrier_init(cfg.no_membarrier);
  if ((rc = sstm__registry_init(cfg.max_threads)) != 0) {
    locks_unmap(locks, nlocks);
    return rc;
  }
  sstm__set_error("%s", "");
  if (cm->init && (rc = cm->init(&cfg)) != 0) {
    sstm__registry_fini();
    locks_unmap(locks, nlocks);
    char why[400];
    snprintf(why, sizeof why, "%s", sstm_last_error());
    sstm__set_error("sstm_init: contention manager '%s' failed to initialise (%s): %s", cm->name,
                    sstm_strerror(rc), why[0] ? why : "no detail");
    return rc;
  }
  if (cfg.state_table && (rc = sstm__stt_init()) != 0) {
    if (cm->fini) cm->fini();
    sstm__registry_fini();
    locks_unmap(locks, nlocks);
    return rc;
  }
  /* Thread mapping last: its hooks and sampling hook go in once the rest
   * stands, before any thread can register (initialized is still false). */
  sstm_sample_fn map_fn;
  unsigned map_period;
  if ((rc = sstm__map_runtime.init(&cfg, &map_fn, &map_period)) != 0) {
    sstm__stt_fini();
    if (cm->fini) cm->fini();
    sstm__registry_fini();
    locks_unmap(locks, nlocks);
    return rc;
  }
  if (map_period > 0) {
    cfg.sample_period = map_period;
    cfg.sample_fn = map_fn;
    cfg.sample_arg = NULL;
    sstm__g.cfg = cfg;
  }
  /* relaxed: published by the release below. */
  atomic_store_explicit(&sstm__g.closing, false, memory_order_relaxed);
  /* release: threads that see initialized (acquire) see the tables. */
  atomic_store_explicit(&sstm__g.initialized, true, memory_order_release);
  if (cfg.state_table) {
    char line[1024]; /* the whole line: the table leaves out its cm-info part */
    sstm_describe(line, sizeof line);
    sstm__stt_describe(line);
  }
  if (cfg.stats_at_exit) stats_at_exit_arm();
  return 0;
}

SSTM_API bool sstm_initialized(void) {
  return atomic_load_explicit(&sstm__g.initialized, memory_order_acquire);
}

/* (src/iface/libc_services.h) The layers' hook before a shutdown; NULL:
 * none registered. */
_Atomic(sstm_shutdown_fn) sstm__shutdown_hook;

/* The layers above the engine write out what they hold for the program,
 * if the shutdown is going to proceed (the same check as below; a thread
 * that registers in between makes it fail after all, and the hook's work
 * was only early). acquire: pairs with the registration's release store. */
static void shutdown_above(void) {
  sstm_shutdown_fn fn = atomic_load_explicit(&sstm__shutdown_hook, memory_order_acquire);
  if (fn == NULL) return;
  pthread_mutex_lock(&sstm__g.reg_lock);
  const char *busy = sstm__registry_busy(sstm__cur);
  pthread_mutex_unlock(&sstm__g.reg_lock);
  if (!busy) fn();
}

SSTM_API int sstm_shutdown(void) {
  if (!atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) {
    sstm__set_error("sstm_shutdown: not initialised");
    return SSTM_ESTATE;
  }
  shutdown_above();
  /* The check and `closing` are one step under reg_lock: a thread
   * registering concurrently either took its slot first (we are busy) or
   * is refused (desc_acquire checks `closing` under the same lock), never
   * given a slot in a registry being torn down. The caller then leaves
   * with the library still initialised (its exit hooks may read the
   * statistics); `initialized` ends under the lock too, so that the
   * statistics calls, which check it there, never walk the registry
   * freed below. relaxed: reg_lock orders both flags. */
  pthread_mutex_lock(&sstm__g.reg_lock);
  const char *busy = sstm__registry_busy(sstm__cur);
  if (!busy) atomic_store_explicit(&sstm__g.closing, true, memory_order_relaxed);
  pthread_mutex_unlock(&sstm__g.reg_lock);
  if (busy) {
    sstm__set_error("sstm_shutdown: %s", busy);
    return SSTM_EBUSY;
  }
  if (sstm__cur) sstm_thread_exit();
  pthread_mutex_lock(&sstm__g.reg_lock);
  atomic_store_explicit(&sstm__g.initialized, false, memory_order_release);
  pthread_mutex_unlock(&sstm__g.reg_lock);
  sstm__map_runtime.fini();
  if (sstm__g.cm->fini) sstm__g.cm->fini();
  sstm__reclaim_fini();
  sstm__stt_fini();
  sstm__registry_fini();
  sstm__hooks_clear();
  locks_unmap(sstm__g.locks, sstm__g.lock_mask + 1);
  sstm__g.locks = NULL;
  free(cfg_strings);
  cfg_strings = NULL;
  return 0;
}

SSTM_API int sstm_config_get_sized(sstm_config_t *out, size_t size) {
  if (out == NULL) {
    sstm__set_error("sstm_config_get: out is NULL");
    return SSTM_EINVAL;
  }
  if (size < CONFIG_SIZE_MIN) return check_config_size("sstm_config_get", size);
  if (!atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) {
    sstm__set_error("sstm_config_get: not initialised");
    return SSTM_ESTATE;
  }
  /* A newer caller's fields that this library does not know read 0. */
  size_t n = size < sizeof sstm__g.cfg ? size : sizeof sstm__g.cfg;
  memcpy(out, &sstm__g.cfg, n);
  memset((char *)out + n, 0, size - n);
  out->size = n;
  return 0;
}

/* Append " cm-info=..." from the policy's describe hook, written straight
 * into buf whatever its length (snprintf-style: returns the length it
 * needs). */
static int describe_cm(char *buf, size_t len) {
  if (sstm__g.cm->describe == NULL) return 0;
  static const char tag[] = " cm-info=";
  size_t used = buf ? strnlen(buf, len) : 0;
  int a = (int)sizeof tag - 1;
  if (buf != NULL && len > used) snprintf(buf + used, len - used, "%s", tag);
  size_t at = used + (size_t)a;
  bool room = buf != NULL && at < len;
  int b = sstm__g.cm->describe(room ? buf + at : NULL, room ? len - at : 0);
  return a + (b > 0 ? b : 0);
}

SSTM_API int sstm_describe(char *buf, size_t len) {
  if (buf == NULL) len = 0; /* a size query, whatever len says */
  if (!atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) {
    if (buf && len) buf[0] = '\0';
    sstm__set_error("sstm_describe: not initialised");
    return SSTM_ESTATE;
  }
  const sstm_config_t *c = &sstm__g.cfg;
  struct utsname u;
  if (uname(&u) != 0) snprintf(u.release, sizeof u.release, "?");
#if defined(SSTM_CKPT_USES_LIBC)
  const char *ckpt = "libc-setjmp";
#else
  const char *ckpt = "asm-x86_64";
#endif
  int n = snprintf(buf, len,
                   "schedstm %s design=%s cm=%s locks=2^%u stripe=%uB max_threads=%u stats=%s "
                   "sample=%u wait_max=%u read_past=%s ro_log=%s alloc_cache=%zu ckpt=%s "
                   "clock=vdso-monotonic "
                   "begin-fence=%s kernel=%s%s%s",
                   SSTM_VERSION_STRING, sstm_design_name(c->design), c->cm, c->lock_bits,
                   1u << c->stripe_shift, c->max_threads, stats_names[c->stats], c->sample_period,
                   c->wait_max, read_past_names[c->read_past], ro_log_names[c->ro_log],
                   c->alloc_cache, ckpt, sstm__g.membarrier ? "membarrier" : "fence", u.release,
                   sstm__debug ? " debug" : "", sstm__random_delay ? " random-delay" : "");
  /* In this order: each part appends after the text before it. */
  n += sstm__map_runtime.describe(buf, len);
  return n + describe_cm(buf, len);
}
