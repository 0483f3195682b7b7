/* SPDX-License-Identifier: MIT */
/* Communication-matrix files (the format is in mapping.h and
 * docs/design/mapping.md). The reader is strict: anything but the format
 * is an error that names the line and column, so that a matrix saved by one
 * run and edited by hand cannot map threads from a silently wrong matrix. */
#define _GNU_SOURCE
#include "mapping.h"
#include "topo_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <schedstm/common.h>
#include <stdlib.h>
#include <string.h>

#define CMAT_MAGIC "schedstm-comm-matrix"

int sstm__cmat_write(FILE *f, const uint64_t *m, unsigned n, char *err, size_t errlen) {
  if (!f || !m || n == 0 || n > SSTM_MAP_MAX_THREADS) {
    sstm__map_seterr(err, errlen, "matrix: %u threads (1..%u) or a NULL argument", n,
                     SSTM_MAP_MAX_THREADS);
    return SSTM_EINVAL;
  }
  fprintf(f, "# schedstm communication matrix: events between thread pairs\n");
  fprintf(f, "%s 1\nthreads %u\n", CMAT_MAGIC, n);
  for (unsigned i = 0; i < n; i++) {
    for (unsigned j = 0; j < n; j++)
      fprintf(f, "%s%" PRIu64, j ? " " : "", m[(size_t)i * n + j]);
    fputc('\n', f);
  }
  if (fflush(f) != 0 || ferror(f)) {
    sstm__map_seterr(err, errlen, "matrix: write error: %s", strerror(errno));
    return SSTM_EPERM;
  }
  return 0;
}

int sstm__cmat_save(const char *path, const uint64_t *m, unsigned n, char *err, size_t errlen) {
  if (!path || !m || n == 0 || n > SSTM_MAP_MAX_THREADS) {
    sstm__map_seterr(err, errlen, "matrix: %u threads (1..%u) or a NULL argument", n,
                     SSTM_MAP_MAX_THREADS);
    return SSTM_EINVAL; /* before the file is created or truncated */
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    sstm__map_seterr(err, errlen, "matrix: cannot create %s: %s", path, strerror(errno));
    return SSTM_EPERM;
  }
  int rc = sstm__cmat_write(f, m, n, err, errlen);
  if (fclose(f) != 0 && rc == 0) {
    sstm__map_seterr(err, errlen, "matrix: write error on %s: %s", path, strerror(errno));
    rc = SSTM_EPERM;
  }
  return rc;
}

typedef struct reader {
  const char *name;
  char *line;
  size_t len;
  size_t pos;
  unsigned lineno;
  char *err;
  size_t errlen;
} reader_t;

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

static void skip_blanks(reader_t *r) {
  while (r->pos < r->len && is_blank(r->line[r->pos]))
    r->pos++;
}

/* The next token: [*tok, *tok + *tlen); false at the end of the line. */
static bool next_token(reader_t *r, const char **tok, size_t *tlen) {
  skip_blanks(r);
  if (r->pos >= r->len) return false;
  size_t s = r->pos;
  while (r->pos < r->len && !is_blank(r->line[r->pos]))
    r->pos++;
  *tok = r->line + s;
  *tlen = r->pos - s;
  return true;
}

static unsigned col_of(const reader_t *r, const char *p) { return (unsigned)(p - r->line) + 1; }

static int fail_at(reader_t *r, unsigned col, const char *what) {
  sstm__map_seterr(r->err, r->errlen, "%s:%u:%u: %s", r->name, r->lineno, col, what);
  return SSTM_EINVAL;
}

/* Parse a decimal uint64 token (digits only). */
static bool parse_u64(const char *tok, size_t tlen, uint64_t *v) {
  if (tlen == 0) return false;
  uint64_t x = 0;
  for (size_t i = 0; i < tlen; i++) {
    if (tok[i] < '0' || tok[i] > '9') return false;
    unsigned d = (unsigned)(tok[i] - '0');
    if (x > (UINT64_MAX - d) / 10) return false;
    x = x * 10 + d;
  }
  *v = x;
  return true;
}

/* The longest line the reader takes, its '\n' excluded: a row of
 * SSTM_MAP_MAX_THREADS numbers of 20 digits is under a tenth of it. A file
 * without line ends (/dev/zero) is refused when it has read this much,
 * instead of growing a line until memory runs out. */
#define CMAT_MAX_LINE (1u << 20)

/* The next line of f into *buf (grown as needed, NUL-terminated, with its
 * '\n' if it has one): its length; -1 at the end of the file, -2 for a line
 * longer than CMAT_MAX_LINE, -3 for a read error or no memory (errno). */
static ssize_t read_line(FILE *f, char **buf, size_t *cap) {
  size_t len = 0;
  int c = EOF;
  flockfile(f);
  while ((c = getc_unlocked(f)) != EOF) {
    if (len + 2 > *cap) {
      size_t want = *cap ? *cap * 2 : 256;
      if (want > CMAT_MAX_LINE + 2) want = CMAT_MAX_LINE + 2;
      char *nb = realloc(*buf, want);
      if (nb == NULL) {
        funlockfile(f);
        errno = ENOMEM;
        return -3;
      }
      *buf = nb;
      *cap = want;
    }
    (*buf)[len++] = (char)c;
    if (c == '\n') break;
    if (len > CMAT_MAX_LINE) {
      funlockfile(f);
      return -2;
    }
  }
  bool failed = c == EOF && ferror(f);
  funlockfile(f);
  if (failed) return -3;
  if (len == 0) return -1;
  (*buf)[len] = '\0';
  return (ssize_t)len;
}

/* A line that is blank or a comment. */
static bool ignorable(reader_t *r) {
  r->pos = 0;
  skip_blanks(r);
  return r->pos >= r->len || r->line[r->pos] == '#';
}

int sstm__cmat_read(FILE *f, const char *name, uint64_t **mout, unsigned *nout, char *err,
                    size_t errlen) {
  if (!f || !mout || !nout) {
    sstm__map_seterr(err, errlen, "matrix: NULL argument");
    return SSTM_EINVAL;
  }
  reader_t r = {.name = name ? name : "<matrix>", .err = err, .errlen = errlen};
  char *buf = NULL;
  size_t cap = 0;
  uint64_t *m = NULL;
  unsigned n = 0, row = 0;
  enum { HEADER, COUNT, ROWS, DONE } state = HEADER;
  int rc = 0;
  char msg[160];
  for (;;) {
    errno = 0;
    ssize_t got = read_line(f, &buf, &cap);
    if (got == -1) break;
    if (got == -2) {
      sstm__map_seterr(err, errlen, "%s:%u: line longer than %u bytes", r.name, r.lineno + 1,
                       CMAT_MAX_LINE);
      rc = SSTM_EINVAL;
      goto out;
    }
    if (got < 0) {
      int e = errno;
      sstm__map_seterr(err, errlen, "%s: read error: %s", r.name, strerror(e));
      rc = e == ENOMEM ? SSTM_ENOMEM : SSTM_EPERM;
      goto out;
    }
    r.line = buf;
    r.len = (size_t)got;
    if (r.len > 0 && buf[r.len - 1] == '\n') r.len--;
    r.lineno++;
    if (ignorable(&r)) continue;
    const char *tok;
    size_t tlen;
    r.pos = 0;
    next_token(&r, &tok, &tlen);
    if (state == HEADER) {
      if (tlen != strlen(CMAT_MAGIC) || memcmp(tok, CMAT_MAGIC, tlen) != 0) {
        rc = fail_at(&r, col_of(&r, tok), "expected the header \"" CMAT_MAGIC " 1\"");
        goto out;
      }
      uint64_t v;
      if (!next_token(&r, &tok, &tlen)) {
        rc = fail_at(&r, (unsigned)r.len + 1, "expected the format version after the header");
        goto out;
      }
      if (!parse_u64(tok, tlen, &v) || v != 1) {
        snprintf(msg, sizeof msg, "unsupported format version \"%.*s\" (this reader knows 1)",
                 (int)(tlen > 20 ? 20 : tlen), tok);
        rc = fail_at(&r, col_of(&r, tok), msg);
        goto out;
      }
      if (next_token(&r, &tok, &tlen)) {
        rc = fail_at(&r, col_of(&r, tok), "unexpected text after the header");
        goto out;
      }
      state = COUNT;
    } else if (state == COUNT) {
      uint64_t v;
      if (tlen != 7 || memcmp(tok, "threads", 7) != 0) {
        rc = fail_at(&r, col_of(&r, tok), "expected \"threads N\"");
        goto out;
      }
      if (!next_token(&r, &tok, &tlen)) {
        rc = fail_at(&r, (unsigned)r.len + 1, "expected the thread count after \"threads\"");
        goto out;
      }
      if (!parse_u64(tok, tlen, &v) || v == 0 || v > SSTM_MAP_MAX_THREADS) {
        snprintf(msg, sizeof msg, "thread count must be a number from 1 to %u",
                 SSTM_MAP_MAX_THREADS);
        rc = fail_at(&r, col_of(&r, tok), msg);
        goto out;
      }
      if (next_token(&r, &tok, &tlen)) {
        rc = fail_at(&r, col_of(&r, tok), "unexpected text after the thread count");
        goto out;
      }
      n = (unsigned)v;
      m = malloc((size_t)n * n * sizeof *m);
      if (!m) {
        sstm__map_seterr(err, errlen, "%s: out of memory for %u x %u", r.name, n, n);
        rc = SSTM_ENOMEM;
        goto out;
      }
      state = ROWS;
    } else if (state == ROWS) {
      unsigned col = 0;
      r.pos = 0;
      while (next_token(&r, &tok, &tlen)) {
        uint64_t v;
        if (col == n) {
          snprintf(msg, sizeof msg, "row %u has more than %u numbers", row, n);
          rc = fail_at(&r, col_of(&r, tok), msg);
          goto out;
        }
        if (!parse_u64(tok, tlen, &v)) {
          bool digits = true;
          for (size_t i = 0; i < tlen; i++)
            digits = digits && tok[i] >= '0' && tok[i] <= '9';
          snprintf(msg, sizeof msg,
                   digits ? "number \"%.*s\" is larger than 2^64-1"
                          : "\"%.*s\" is not a non-negative decimal integer",
                   (int)(tlen > 24 ? 24 : tlen), tok);
          rc = fail_at(&r, col_of(&r, tok), msg);
          goto out;
        }
        if (col == row && v != 0) {
          snprintf(msg, sizeof msg, "diagonal cell (%u,%u) is %" PRIu64 ", must be 0", row, row, v);
          rc = fail_at(&r, col_of(&r, tok), msg);
          goto out;
        }
        if (col < row && v != m[(size_t)col * n + row]) {
          snprintf(msg, sizeof msg,
                   "cell (%u,%u) is %" PRIu64 " but (%u,%u) is %" PRIu64
                   ": the matrix must be symmetric",
                   row, col, v, col, row, m[(size_t)col * n + row]);
          rc = fail_at(&r, col_of(&r, tok), msg);
          goto out;
        }
        m[(size_t)row * n + col++] = v;
      }
      if (col < n) {
        snprintf(msg, sizeof msg, "row %u has %u numbers, expected %u", row, col, n);
        rc = fail_at(&r, (unsigned)r.len + 1, msg);
        goto out;
      }
      if (++row == n) state = DONE;
    } else {
      rc = fail_at(&r, col_of(&r, tok), "unexpected text after the last row of the matrix");
      goto out;
    }
  }
  if (state != DONE) {
    if (state == HEADER)
      snprintf(msg, sizeof msg, "empty file: expected the header \"" CMAT_MAGIC " 1\"");
    else if (state == COUNT)
      snprintf(msg, sizeof msg, "unexpected end of file: expected \"threads N\"");
    else
      snprintf(msg, sizeof msg, "unexpected end of file: %u of %u rows", row, n);
    sstm__map_seterr(err, errlen, "%s:%u: %s", r.name, r.lineno + 1, msg);
    rc = SSTM_EINVAL;
  }
out:
  free(buf);
  if (rc != 0) {
    free(m);
    return rc;
  }
  *mout = m;
  *nout = n;
  return 0;
}

int sstm__cmat_load(const char *path, uint64_t **m, unsigned *n, char *err, size_t errlen) {
  if (!path) {
    sstm__map_seterr(err, errlen, "matrix: NULL path");
    return SSTM_EINVAL;
  }
  FILE *f = fopen(path, "r");
  if (!f) {
    sstm__map_seterr(err, errlen, "matrix: cannot open %s: %s", path, strerror(errno));
    return SSTM_EPERM;
  }
  int rc = sstm__cmat_read(f, path, m, n, err, errlen);
  fclose(f);
  return rc;
}
