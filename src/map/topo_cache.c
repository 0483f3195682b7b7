/* SPDX-License-Identifier: MIT */
/* The topology cache (mapping.h, "the topology cache"; docs/design/mapping.md):
 * the reduced tree of topology.c saved as text and read back without
 * hwloc, keyed by the running machine.
 *
 * File format, version 2 (every line ends with '\n'):
 *
 *   schedstm-topo-cache 2
 *   kernel <sysname> <release> <version> <machine>   \
 *   boot <boot_id>                                     |
 *   host <nodename>                                    | the key, compared
 *   online <the kernel's list of online CPUs>          | line by line
 *   cpus <the process's CPU set, as a list>            |
 *   hwloc <hwloc's API version, hex>                  /
 *   desc <sstm__topo_describe's text>
 *   levels <depth> <nodes at level 1> ... <nodes at level depth>
 *   pus <npus> <ncores>
 *   <os index> <core> <node at level 1> ... <node at level depth>   (npus lines)
 *   end
 *
 * The reader checks everything the mapper relies on: counts in range and
 * strictly growing down the levels (splitting levels), the last level the
 * PUs themselves, each PU's node numbers starting at 0 and growing by 0 or
 * 1 from one PU to the next (nodes cover contiguous PU ranges), a node
 * change at one level a change at every level below (each node has one
 * parent), cores numbered the same way, OS indices distinct and below
 * CPU_SETSIZE. */
#define _GNU_SOURCE
#include <sched.h>

#include "mapping.h"
#include "topo_internal.h"

#include <hwloc.h>

#include <errno.h>
#include <fcntl.h>
#include <schedstm/common.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define CACHE_MAGIC "schedstm-topo-cache"
/* 2: the tree is restricted to the process's affinity as well as to hwloc's
 * allowed set (topology.c); a version-1 file of a restricted CPU set may
 * hold the whole machine, so it is stale. */
#define CACHE_VERSION 2
#define KEY_LINES 6
/* Deeper than any hwloc tree (hwloc has about a dozen object types). */
#define CACHE_MAX_DEPTH 64u
/* A cache file of 65536 PUs at depth 64 is well under this. */
#define CACHE_MAX_BYTES (64u << 20)

/* ---- the key ---- */

/* The first line of a small file, without its '\n'; "?" if unreadable. */
static void first_line(const char *path, char *buf, size_t len) {
  snprintf(buf, len, "?");
  FILE *f = fopen(path, "re");
  if (f == NULL) return;
  if (fgets(buf, (int)len, f) == NULL) snprintf(buf, len, "?");
  fclose(f);
  buf[strcspn(buf, "\r\n")] = '\0';
  if (buf[0] == '\0') snprintf(buf, len, "?");
}

_Static_assert(CPU_SETSIZE <= 1024, "SSTM_TOPO_CPU_LIST_MAX: CPU numbers of at most 4 digits");

/* A CPU set as a list: "0-3,8,10-11". */
void sstm__topo_cpu_list(const cpu_set_t *s, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, s)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, s))
      e++;
    int w = e > c ? snprintf(buf + at, len - at, "%s%d-%d", at ? "," : "", c, e)
                  : snprintf(buf + at, len - at, "%s%d", at ? "," : "", c);
    if (w < 0 || (size_t)w >= len - at) {
      snprintf(buf, len, "?"); /* not with SSTM_TOPO_CPU_LIST_MAX bytes */
      return;
    }
    at += (size_t)w;
    c = e;
  }
  if (at == 0) snprintf(buf, len, "?");
}

/* Printable, single-line text: other bytes become '_'. */
static void sanitize(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e) *s = '_';
}

/* FNV-1a, 64 bits: the file name's hash of the CPU set. */
static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

void sstm__topo_key(sstm_topo_key_t *k) {
  cpu_set_t set;
  bool known = sched_getaffinity(0, sizeof set, &set) == 0;
  sstm__topo_key_of(k, known ? &set : NULL);
}

void sstm__topo_key_of(sstm_topo_key_t *k, const cpu_set_t *set) {
  struct utsname u;
  char kernel[4 * sizeof u.release + 8], boot[128], online[1024], cpus[SSTM_TOPO_CPU_LIST_MAX];
  if (uname(&u) == 0)
    snprintf(kernel, sizeof kernel, "%s %s %s %s", u.sysname, u.release, u.version, u.machine);
  else
    snprintf(kernel, sizeof kernel, "?");
  sanitize(kernel);
  first_line("/proc/sys/kernel/random/boot_id", boot, sizeof boot);
  sanitize(boot);
  first_line("/sys/devices/system/cpu/online", online, sizeof online);
  sanitize(online);
  if (set)
    sstm__topo_cpu_list(set, cpus, sizeof cpus);
  else
    snprintf(cpus, sizeof cpus, "?");
  char host[sizeof u.nodename];
  snprintf(host, sizeof host, "%s", uname(&u) == 0 && u.nodename[0] ? u.nodename : "?");
  sanitize(host);
  int w = snprintf(k->text, sizeof k->text,
                   "kernel %s\nboot %s\nhost %s\nonline %s\ncpus %s\nhwloc %x\n", kernel, boot,
                   host, online, cpus, hwloc_get_api_version());
  if (w < 0 || (size_t)w >= sizeof k->text) /* cannot happen: the parts are bounded */
    snprintf(k->text, sizeof k->text, "kernel ?\nboot ?\nhost ?\nonline ?\ncpus ?\nhwloc ?\n");
  /* The name: host (file-name safe, shortened) and the CPU set's hash. */
  char h[48];
  snprintf(h, sizeof h, "%.40s", host);
  for (char *p = h; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '-' || *p == '.'))
      *p = '_';
  snprintf(k->name, sizeof k->name, "topo-%s-%016llx.txt", h, (unsigned long long)fnv1a(cpus));
}

/* ---- writing ---- */

int sstm__topo_cache_write(FILE *f, const sstm_topo_key_t *k, const sstm_topo_t *t) {
  fprintf(f, "%s %d\n%sdesc %s\nlevels %u", CACHE_MAGIC, CACHE_VERSION, k->text, t->desc, t->depth);
  for (unsigned l = 1; l <= t->depth; l++)
    fprintf(f, " %u", t->count[l]);
  fprintf(f, "\npus %u %u\n", t->npus, t->ncores);
  for (unsigned p = 0; p < t->npus; p++) {
    fprintf(f, "%d %u", t->os_index[p], t->core_of[p]);
    for (unsigned l = 0; l < t->depth; l++)
      fprintf(f, " %u", (unsigned)t->path[(size_t)p * t->depth + l]);
    fputc('\n', f);
  }
  fputs("end\n", f);
  return ferror(f) ? SSTM_EPERM : 0;
}

/* ---- reading ---- */

typedef struct reader {
  const char *path;
  char *buf, *at, *end;
  unsigned line;
  char *err;
  size_t errlen;
} reader_t;

/* The next line, NUL-terminated in place; NULL at the end of the file. A
 * last line without '\n' is a truncated file. */
static char *next_line(reader_t *r) {
  if (r->at >= r->end) return NULL;
  char *nl = memchr(r->at, '\n', (size_t)(r->end - r->at));
  if (nl == NULL) return NULL;
  *nl = '\0';
  char *line = r->at;
  r->at = nl + 1;
  r->line++;
  return line;
}

static int bad(reader_t *r, const char *what) {
  sstm__map_seterr(r->err, r->errlen, "%s:%u: %s", r->path, r->line, what);
  return SSTM_EINVAL;
}

/* A decimal number <= max at *s (no sign), then a blank or the end. */
static bool number(char **s, unsigned long long max, unsigned long long *out) {
  char *p = *s;
  if (*p < '0' || *p > '9') return false;
  unsigned long long v = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned long long d = (unsigned long long)(*p - '0');
    if (v > max / 10 || (v == max / 10 && d > max % 10)) return false; /* v * 10 + d > max */
    v = v * 10 + d;
  }
  if (*p == ' ')
    p++;
  else if (*p != '\0')
    return false;
  *s = p;
  *out = v;
  return true;
}

/* The body after the key, into t (whose arrays it allocates). */
static int read_tree(reader_t *r, sstm_topo_t *t) {
  char *line = next_line(r);
  if (line == NULL || strncmp(line, "desc ", 5) != 0) return bad(r, "expected \"desc <text>\"");
  if (strlen(line + 5) >= sizeof t->desc) return bad(r, "the description is too long");
  snprintf(t->desc, sizeof t->desc, "%s", line + 5);
  for (char *c = t->desc; *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
      return bad(r, "the description has a control or non-ASCII byte");

  unsigned long long v;
  if ((line = next_line(r)) == NULL || strncmp(line, "levels ", 7) != 0)
    return bad(r, "expected \"levels <depth> <nodes per level>...\"");
  char *s = line + 7;
  if (!number(&s, CACHE_MAX_DEPTH, &v)) return bad(r, "the depth is not a number up to 64");
  t->depth = (unsigned)v;
  t->count = calloc(t->depth + 1, sizeof *t->count);
  t->first = calloc(t->depth + 1, sizeof *t->first);
  t->child = calloc(t->depth + 1, sizeof *t->child);
  if (!t->count || !t->first || !t->child) return SSTM_ENOMEM;
  t->count[0] = 1;
  for (unsigned l = 1; l <= t->depth; l++) {
    if (!number(&s, SSTM_TOPO_MAX_PUS, &v) || v <= t->count[l - 1])
      return bad(r, "a level's node count is not a number above the previous level's");
    t->count[l] = (unsigned)v;
  }
  if (*s != '\0') return bad(r, "more node counts than the depth");

  if ((line = next_line(r)) == NULL || strncmp(line, "pus ", 4) != 0)
    return bad(r, "expected \"pus <PUs> <cores>\"");
  s = line + 4;
  if (!number(&s, SSTM_TOPO_MAX_PUS, &v) || v == 0)
    return bad(r, "the PU count is not a number from 1 to 65536");
  t->npus = (unsigned)v;
  if (!number(&s, t->npus, &v) || v == 0 || *s != '\0')
    return bad(r, "the core count is not a number from 1 to the PU count");
  t->ncores = (unsigned)v;
  if (t->depth == 0 ? t->npus != 1 : t->count[t->depth] != t->npus)
    return bad(r, "the deepest level's node count is not the PU count");

  unsigned d = t->depth;
  t->path = calloc((size_t)t->npus * (d ? d : 1), sizeof *t->path);
  t->os_index = calloc(t->npus, sizeof *t->os_index);
  t->core_of = calloc(t->npus, sizeof *t->core_of);
  cpu_set_t seen;
  CPU_ZERO(&seen);
  if (!t->path || !t->os_index || !t->core_of) return SSTM_ENOMEM;
  for (unsigned p = 0; p < t->npus; p++) {
    if ((s = line = next_line(r)) == NULL) return bad(r, "the file ends before the last PU");
    if (!number(&s, CPU_SETSIZE - 1, &v))
      return bad(r, "an OS index is not a number below CPU_SETSIZE");
    if (CPU_ISSET((int)v, &seen)) return bad(r, "an OS index appears twice");
    CPU_SET((int)v, &seen);
    t->os_index[p] = (int)v;
    if (!number(&s, t->ncores - 1, &v)) return bad(r, "a core number is out of range");
    unsigned prev = p ? t->core_of[p - 1] : 0;
    if (p == 0 ? v != 0 : v != prev && v != prev + 1)
      return bad(r, "core numbers do not start at 0 and grow by 0 or 1");
    t->core_of[p] = (unsigned)v;
    bool changed_above = p == 0;
    for (unsigned l = 0; l < d; l++) {
      if (!number(&s, t->count[l + 1] - 1, &v)) return bad(r, "a node number is out of range");
      uint32_t *cell = &t->path[(size_t)p * d + l];
      *cell = (uint32_t)v;
      if (p == 0) {
        if (v != 0) return bad(r, "the first PU's node numbers are not 0");
        continue;
      }
      uint32_t before = cell[-(ptrdiff_t)d];
      if (v != before && v != (uint64_t)before + 1)
        return bad(r, "node numbers do not grow by 0 or 1 from one PU to the next");
      bool changed = v != before;
      if (changed_above && !changed) return bad(r, "a node spans two parents");
      changed_above = changed;
    }
    if (d > 0 && t->path[(size_t)p * d + d - 1] != p)
      return bad(r, "a PU's last node is not itself");
    if (*s != '\0') return bad(r, "more node numbers than the depth");
  }
  for (unsigned l = 0; l < d; l++)
    if (t->path[(size_t)(t->npus - 1) * d + l] != t->count[l + 1] - 1)
      return bad(r, "a level has fewer nodes than its count");
  if (t->core_of[t->npus - 1] != t->ncores - 1)
    return bad(r, "the cores are fewer than their count");
  if ((line = next_line(r)) == NULL || strcmp(line, "end") != 0) return bad(r, "expected \"end\"");
  if (r->at != r->end) return bad(r, "text after \"end\"");
  return sstm__topo_index(t);
}

int sstm__topo_cache_read(const char *path, const sstm_topo_key_t *k, sstm_topo_t **out, char *err,
                          size_t errlen) {
  *out = NULL;
  /* O_NONBLOCK: a FIFO at the path (no writer) would hold the open, and
   * sstm_init with it, until one comes; it is refused below instead. A
   * regular file's reads ignore the flag. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return SSTM_TOPO_CACHE_MISSING;
    sstm__map_seterr(err, errlen, "%s: %s", path, strerror(errno));
    return SSTM_EINVAL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)CACHE_MAX_BYTES) {
    sstm__map_seterr(err, errlen, "%s: not a regular file of at most %u bytes", path,
                     CACHE_MAX_BYTES);
    close(fd);
    return SSTM_EINVAL;
  }
  reader_t r = {.path = path, .err = err, .errlen = errlen};
  r.buf = malloc((size_t)st.st_size + 1);
  if (r.buf == NULL) {
    close(fd);
    return SSTM_ENOMEM;
  }
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t n = read(fd, r.buf + got, (size_t)st.st_size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  r.at = r.buf;
  r.end = r.buf + got;
  *r.end = '\0';
  int rc = 0;
  sstm_topo_t *t = NULL;
  char *line = next_line(&r);
  char want[32];
  snprintf(want, sizeof want, "%s %d", CACHE_MAGIC, CACHE_VERSION);
  if (line == NULL || strncmp(line, CACHE_MAGIC " ", sizeof CACHE_MAGIC) != 0) {
    char what[96];
    snprintf(what, sizeof what, "not a schedstm topology cache file (expected \"%s\")", want);
    rc = bad(&r, what);
    goto out;
  }
  if (strcmp(line, want) != 0) {
    sstm__map_seterr(err, errlen, "%s: format \"%s\", this library writes \"%s\"", path, line,
                     want);
    rc = SSTM_TOPO_CACHE_STALE;
    goto out;
  }
  /* The key, line by line: the first that differs says why it is stale. */
  const char *kl = k->text;
  for (unsigned i = 0; i < KEY_LINES; i++) {
    size_t klen = strcspn(kl, "\n");
    if ((line = next_line(&r)) == NULL) {
      rc = bad(&r, "the file ends inside the key");
      goto out;
    }
    if (strlen(line) != klen || memcmp(line, kl, klen) != 0) {
      size_t tag = strcspn(kl, " ");
      sstm__map_seterr(err, errlen, "%s: the %.*s differs", path, (int)tag, kl);
      rc = SSTM_TOPO_CACHE_STALE;
      goto out;
    }
    kl += klen + (kl[klen] == '\n');
  }
  if ((t = calloc(1, sizeof *t)) == NULL) {
    rc = SSTM_ENOMEM;
    goto out;
  }
  if ((rc = read_tree(&r, t)) == SSTM_ENOMEM) sstm__map_seterr(err, errlen, "out of memory");
out:
  free(r.buf);
  if (rc == 0)
    *out = t;
  else
    sstm__topo_free(t);
  return rc;
}

/* ---- through the cache ---- */

/* Save t as dir/k->name: a temporary file in dir, then a rename. */
static int cache_save(const char *dir, const sstm_topo_key_t *k, const sstm_topo_t *t, char *why,
                      size_t whylen) {
  char tmp[4096], final[4096];
  /* The directory and its missing parents (~/.cache may not exist yet). */
  if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) tmp[0] = '\0';
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    (void)mkdir(tmp, 0755); /* an existing one is fine; a real failure shows below */
    *p = '/';
  }
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    sstm__map_seterr(why, whylen, "%s: %s", dir, strerror(errno));
    return SSTM_EPERM;
  }
  int w1 = snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, k->name);
  int w2 = snprintf(final, sizeof final, "%s/%s", dir, k->name);
  if (w1 < 0 || (size_t)w1 >= sizeof tmp || w2 < 0 || (size_t)w2 >= sizeof final) {
    sstm__map_seterr(why, whylen, "%s: path too long", dir);
    return SSTM_EPERM;
  }
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    sstm__map_seterr(why, whylen, "%s: %s", dir, strerror(errno));
    return SSTM_EPERM;
  }
  FILE *f = fdopen(fd, "w");
  if (f == NULL) {
    close(fd);
    unlink(tmp);
    sstm__map_seterr(why, whylen, "%s: %s", tmp, strerror(errno));
    return SSTM_EPERM;
  }
  int rc = sstm__topo_cache_write(f, k, t);
  if (fclose(f) != 0) rc = SSTM_EPERM;
  if (rc == 0 && rename(tmp, final) != 0) rc = SSTM_EPERM;
  if (rc != 0) {
    sstm__map_seterr(why, whylen, "%s: %s", final, strerror(errno));
    unlink(tmp);
  }
  return rc;
}

int sstm__topo_cache_lookup(const char *dir, sstm_topo_t **out, char *note, size_t notelen) {
  *out = NULL;
  if (dir == NULL || dir[0] == '\0') {
    sstm__map_seterr(note, notelen, "no cache");
    return SSTM_TOPO_CACHE_MISSING;
  }
  sstm_topo_key_t k;
  sstm__topo_key(&k);
  char path[4096], why[512] = "";
  int w = snprintf(path, sizeof path, "%s/%s", dir, k.name);
  int rc = w > 0 && (size_t)w < sizeof path ? sstm__topo_cache_read(path, &k, out, why, sizeof why)
                                            : SSTM_TOPO_CACHE_MISSING;
  if (rc == 0)
    sstm__map_seterr(note, notelen, "cache");
  else if (rc == SSTM_TOPO_CACHE_MISSING)
    sstm__map_seterr(note, notelen, "no cache file");
  else
    sstm__map_seterr(note, notelen, "cache %s: %s",
                     rc == SSTM_TOPO_CACHE_STALE ? "stale" : "refused", why);
  return rc == 0 ? 0 : rc < 0 && rc != SSTM_EINVAL ? rc : SSTM_TOPO_CACHE_MISSING;
}

int sstm__topo_load_system_cached(const char *dir, sstm_topo_t **out, char *note, size_t notelen,
                                  char *err, size_t errlen) {
  char before[600];
  int rc = sstm__topo_cache_lookup(dir, out, before, sizeof before);
  if (rc == 0) {
    sstm__map_seterr(note, notelen, "cache");
    return 0;
  }
  if ((rc = sstm__topo_load_system(out, err, errlen)) != 0) return rc;
  if (dir == NULL || dir[0] == '\0') {
    sstm__map_seterr(note, notelen, "hwloc");
    return 0;
  }
  sstm_topo_key_t k;
  sstm__topo_key(&k);
  char saved[512] = "";
  bool missing = strcmp(before, "no cache file") == 0;
  if (cache_save(dir, &k, *out, saved, sizeof saved) == 0)
    sstm__map_seterr(note, notelen, "hwloc (%s%scached)", missing ? "" : before,
                     missing ? "" : "; ");
  else
    sstm__map_seterr(note, notelen, "hwloc (%s%snot cached: %s)", missing ? "" : before,
                     missing ? "" : "; ", saved);
  return 0;
}
