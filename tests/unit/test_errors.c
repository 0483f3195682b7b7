/* SPDX-License-Identifier: MIT */
/* Unit tests: error strings, abort reason names, last-error messages. */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "../common/runner.h"

static const struct {
  int code;
  const char *name;
} CODES[] = {
    {SSTM_OK, "SSTM_OK"},         {SSTM_EINVAL, "SSTM_EINVAL"},
    {SSTM_ENOMEM, "SSTM_ENOMEM"}, {SSTM_EBUSY, "SSTM_EBUSY"},
    {SSTM_ESTATE, "SSTM_ESTATE"}, {SSTM_ENOTHREAD, "SSTM_ENOTHREAD"},
    {SSTM_ENOTX, "SSTM_ENOTX"},   {SSTM_ENOENT, "SSTM_ENOENT"},
    {SSTM_ELIMIT, "SSTM_ELIMIT"}, {SSTM_ECANCELED, "SSTM_ECANCELED"},
    {SSTM_EPERM, "SSTM_EPERM"},   {SSTM_EAGAIN, "SSTM_EAGAIN"},
};
#define NCODES (sizeof CODES / sizeof CODES[0])

TEST(strerror_names_every_code) {
  for (size_t i = 0; i < NCODES; i++) {
    const char *s = sstm_strerror(CODES[i].code);
    CHECK_NOT_NULL(s);
    /* "SSTM_EINVAL: ..." — the name, not a prefix of a longer name */
    CHECK_MSG(strncmp(s, CODES[i].name, strlen(CODES[i].name)) == 0 &&
                  (s[strlen(CODES[i].name)] == ':' || s[strlen(CODES[i].name)] == '\0'),
              "sstm_strerror(%d) = \"%s\", expected to start with %s", CODES[i].code, s,
              CODES[i].name);
    for (size_t j = 0; j < i; j++)
      CHECK_MSG(strcmp(s, sstm_strerror(CODES[j].code)) != 0,
                "codes %d and %d share the string \"%s\"", CODES[i].code, CODES[j].code, s);
  }
}

TEST(strerror_unknown_code) {
  const int bad[] = {1, 7, -12, -100, 12345, -2147483647 - 1};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *s = sstm_strerror(bad[i]);
    CHECK_NOT_NULL(s);
    CHECK_MSG(s[0] != '\0', "empty string for unknown code %d", bad[i]);
    for (size_t j = 0; j < NCODES; j++)
      CHECK_MSG(strcmp(s, sstm_strerror(CODES[j].code)) != 0, "unknown code %d described as %s",
                bad[i], s);
  }
}

TEST(abort_reason_names) {
  for (int r = 0; r < SSTM_ABORT_REASON_COUNT; r++) {
    const char *s = sstm_abort_reason_name((sstm_abort_reason_t)r);
    CHECK_NOT_NULL(s);
    CHECK_MSG(s[0] != '\0' && strcmp(s, "?") != 0, "reason %d has no name (\"%s\")", r, s);
    for (int q = 0; q < r; q++)
      CHECK_MSG(strcmp(s, sstm_abort_reason_name((sstm_abort_reason_t)q)) != 0,
                "reasons %d and %d share the name \"%s\"", q, r, s);
  }
  CHECK_EQ_STR(sstm_abort_reason_name(SSTM_ABORT_READ_LOCKED), "read-locked");
  CHECK_EQ_STR(sstm_abort_reason_name(SSTM_ABORT_REASON_COUNT), "?");
  CHECK_EQ_STR(sstm_abort_reason_name((sstm_abort_reason_t)-1), "?");
  CHECK_EQ_STR(sstm_abort_reason_name((sstm_abort_reason_t)1000), "?");
}

static void *other_thread_last_error(void *p) {
  const char **out = p;
  static char copy[256];
  const char *e = sstm_last_error();
  snprintf(copy, sizeof copy, "%s", e ? e : "(null)");
  *out = copy;
  return NULL;
}

TEST(last_error_is_per_thread) {
  CHECK_NOT_NULL(sstm_last_error());
  sstm_design_t d;
  CHECK_RC(sstm_design_parse("definitely-not-a-design", &d), SSTM_EINVAL);
  const char *mine = sstm_last_error();
  CHECK_NOT_NULL(mine);
  CHECK_MSG(mine[0] != '\0', "no message after a failed call");
  pthread_t th;
  const char *theirs = NULL;
  CHECK_EQ_I(pthread_create(&th, NULL, other_thread_last_error, &theirs), 0);
  CHECK_EQ_I(pthread_join(th, NULL), 0);
  CHECK_EQ_STR(theirs, ""); /* a fresh thread has no last error */
  CHECK_MSG(sstm_last_error()[0] != '\0', "own message lost after another thread read its own");
}

SSTM_TEST_MAIN()
