/* SPDX-License-Identifier: MIT */
/* schedstm integration tests: shared helpers. */
#ifndef SSTM_TEST_COMMON_INT_H
#define SSTM_TEST_COMMON_INT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/runner.h"

/* Parse "etl"/"ctl". */
static inline sstm_design_t int_parse_design(const char *s) {
  sstm_design_t d;
  if (sstm_design_parse(s, &d) != 0) {
    fprintf(stderr, "bad design \"%s\"\n", s);
    exit(2);
  }
  return d;
}

/* The tests' configuration: defaults, no environment but the policies'
 * knobs (sstm_test_env_knobs), the design and policy;
 * SSTM_TEST_READ_PAST=off|all (a ctest entry's environment) sets
 * cfg.read_past (default ro), so that every read path of argument (8) in
 * docs/design/core.md runs, and SSTM_TEST_RO_LOG=auto|on sets cfg.ro_log
 * (default off), so that declared read-only first attempts run with read
 * sets too. */
static inline void int_config(sstm_config_t *c, sstm_design_t design, const char *cm) {
  sstm_config_default(c);
  c->use_env = false;
  sstm_test_env_knobs(c); /* SCHEDSTM_NO_MEMBARRIER, SCHEDSTM_PRIO_ESCALATE, ... */
  c->design = design;
  if (cm) c->cm = cm;
  /* A value these do not know fails the run: an entry meant for another
   * mode must not quietly run the default one. */
  const char *rp = getenv("SSTM_TEST_READ_PAST");
  if (rp == NULL || *rp == '\0' || strcmp(rp, "ro") == 0)
    ; /* the library's default */
  else if (strcmp(rp, "off") == 0)
    c->read_past = SSTM_READ_PAST_OFF;
  else if (strcmp(rp, "all") == 0)
    c->read_past = SSTM_READ_PAST_ALL;
  else
    CHECK_MSG(false, "SSTM_TEST_READ_PAST=%s: ro (the default), off or all", rp);
  const char *rl = getenv("SSTM_TEST_RO_LOG");
  if (rl == NULL || *rl == '\0' || strcmp(rl, "off") == 0)
    ; /* the library's default */
  else if (strcmp(rl, "auto") == 0)
    c->ro_log = SSTM_RO_LOG_AUTO;
  else if (strcmp(rl, "on") == 0)
    c->ro_log = SSTM_RO_LOG_ON;
  else
    CHECK_MSG(false, "SSTM_TEST_RO_LOG=%s: off (the default), auto or on", rl);
}

static inline void int_init(sstm_design_t design, const char *cm) {
  sstm_config_t c;
  int_config(&c, design, cm);
  CHECK_OK(sstm_init(&c));
}

/* Seconds since an arbitrary start (for run lengths only: never asserted). */
static inline double int_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Split sstm_cm_list() into policy names ([a-z0-9+_-], see cm.h). The
 * list ends with descriptive text (", ext (and P+ext for any P above ...)"),
 * which is not a name: an entry that is not a name is skipped, and returned
 * in skipped[] (up to max_skipped, each cut to 64 characters) for the
 * caller to check; an entry that is a name must be one that sstm_cm_find
 * knows, and every name must fit in names[] (both checked). Returns the
 * count of names. */
static inline int int_policy_names(char names[][64], int max, char skipped[][64], int max_skipped,
                                   int *nskipped) {
  char buf[4096];
  int len_all = sstm_cm_list(buf, sizeof buf);
  CHECK_GT_I(len_all, 0);
  CHECK_LT_I(len_all, (long long)sizeof buf); /* not truncated */
  int n = 0;
  *nskipped = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ')
      tok++;
    size_t len = strlen(tok);
    while (len > 0 && tok[len - 1] == ' ')
      tok[--len] = 0;
    bool ok = len > 0 && len < 64;
    for (size_t i = 0; ok && i < len; i++)
      ok = (tok[i] >= 'a' && tok[i] <= 'z') || (tok[i] >= '0' && tok[i] <= '9') || tok[i] == '+' ||
           tok[i] == '_' || tok[i] == '-';
    if (!ok) {
      if (*nskipped < max_skipped) snprintf(skipped[*nskipped], 64, "%s", tok);
      (*nskipped)++;
      continue;
    }
    CHECK_MSG(sstm_cm_find(tok) != NULL,
              "sstm_cm_list names \"%s\", which sstm_cm_find does not know", tok);
    CHECK_MSG(n < max, "sstm_cm_list has more than %d policy names", max);
    snprintf(names[n], 64, "%s", tok);
    n++;
  }
  return n;
}

/* Option parsing: --name value pairs after the positional arguments. */
static inline long int_opt(int argc, char **argv, const char *name, long dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) {
      char *end;
      errno = 0;
      long v = strtol(argv[i + 1], &end, 0);
      CHECK_MSG(errno == 0 && end != argv[i + 1] && *end == '\0', "%s %s: not a number", name,
                argv[i + 1]);
      return v;
    }
  return dflt;
}

/* Operation count: --ops N exactly; --scaled-ops N is N x SSTM_TEST_SCALE
 * (at least lo), what ctest entries pass so that the sanitizer and
 * random-delay builds run fewer; dflt without either. */
static inline long int_opt_ops(int argc, char **argv, long dflt, long lo) {
  long n = int_opt(argc, argv, "--scaled-ops", -1);
  if (n >= 0) return (long)sstm_test_scaled((uint64_t)n, (uint64_t)lo);
  return int_opt(argc, argv, "--ops", dflt);
}

/* String option: the value after `name`, or dflt. */
static inline const char *int_opt_str(int argc, char **argv, const char *name, const char *dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return dflt;
}

/* Flag option: true if `name` is among the arguments. */
static inline bool int_flag(int argc, char **argv, const char *name) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return true;
  return false;
}

/* Append ".POLICY" to a run name when --policy is given. */
static inline void int_name_policy(char *name, size_t len, const char *policy) {
  if (policy) {
    size_t l = strlen(name);
    snprintf(name + l, len > l ? len - l : 0, ".%s", policy);
  }
}

#endif
