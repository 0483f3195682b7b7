/* SPDX-License-Identifier: MIT */
/* bench/server/loadgen.c: sstm-loadgen, the open-loop load generator of
 * the request server (docs/protocol.md).
 *
 * Requests are sent on a schedule fixed in advance (Poisson or constant
 * inter-arrival times at the target rate), whatever the replies do: a slow
 * server does not slow the sender down, and each latency is measured from
 * the request's intended send time, not from when it actually left, so a
 * stall of the generator itself is charged to the latencies it delayed (no
 * coordinated omission). One thread drives every connection with epoll;
 * sends due at the same wake-up are batched per connection.
 *
 * Prints one JSON object on stdout: the configuration, counts, the achieved
 * rate, and latency (p50, p90, p99, p99.9, max, mean) per profile and per
 * priority from a log-linear histogram. Exit status: 0 every request got a
 * reply (errors included), 1 some got none (connection lost, drain timeout),
 * 2 bad command line, 3 cannot connect. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "hist.h"
#include "proto.h"
#include "tpcc.h"
#include "tpcc_wire.h"

#define MAX_CONNECTIONS 4096

typedef struct options {
  const char *host;
  long port, connections, duration_ms, drain_ms, null_spin_us, null_bytes;
  /* --classes: null requests of given lengths and priorities */
  unsigned nclasses;
  struct {
    uint32_t spin_us;
    uint8_t priority;
  } classes[PROTO_MAX_PRIORITY];
  double rate;
  uint64_t count, seed;
  uint64_t window; /* --window: at most this many requests outstanding, 0 = no bound */
  bool poisson;
  unsigned weight[PROTO_NPROFILES];
  unsigned priority[PROTO_NPROFILES]; /* 0: the server picks the profile's default */
  tpcc_scale_t scale;
  uint64_t db_seed;
} options_t;

typedef struct conn {
  int fd;
  bool open, want_out;
  uint8_t *out;
  size_t out_len, out_cap;
  uint8_t *in;
  size_t in_len;
} conn_t;

/* What the generator remembers of each request it sent, by id. */
typedef struct sent_rec {
  uint64_t intended_ns;
  uint8_t profile, priority, state; /* state: 0 outstanding, 1 answered */
} sent_rec_t;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *f) {
  fprintf(f, "usage: sstm-loadgen [options]\n"
             "  -H, --host ADDR        server address, loopback only (default 127.0.0.1)\n"
             "  -p, --port N           server port (required)\n"
             "  -r, --rate R           target requests per second (default 1000)\n"
             "  -a, --arrivals poisson|constant  inter-arrival times (default poisson)\n"
             "  -n, --count N          stop after N requests (default: no bound but -d)\n"
             "  -d, --duration-ms MS   stop sending after MS ms (default 1000)\n"
             "  -c, --connections N    connections, requests spread round-robin (default 8)\n"
             "  -m, --mix SPEC         profiles and weights, e.g. new-order=2,payment=1\n"
             "                         (names: null new-order payment order-status delivery\n"
             "                         stock-level; default: the five TPC-C profiles, equal)\n"
             "  -P, --priority NAME=P  send NAME's requests at priority P (1..64; default:\n"
             "                         0, the server's mapping); repeatable\n"
             "      --null-spin-us N   busy loop of a null request (default 0)\n"
             "      --null-bytes N     payload a null request carries and gets back (default 0)\n"
             "      --classes LIST     null requests only, in equal shares, of the given\n"
             "                         lengths and priorities: SPIN_US:PRIORITY,... (e.g.\n"
             "                         5000:1,650:2,350:3,10:4,5:5, [Silvestri17]'s Table I)\n"
             "  -w, --warehouses N     the server's TPC-C scale: warehouses (default 1),\n"
             "      --districts N      districts per warehouse (default 1),\n"
             "      --customers N      customers per district (default 3000),\n"
             "      --items N          items (default 100000),\n"
             "      --orders N         initial orders per district (default = customers)\n"
             "      --db-seed SEED     and database seed (default 1): inputs are drawn with\n"
             "                         the NURand constants of the server's database\n"
             "      --drain-ms MS      wait for replies after the last send (default 10000)\n"
             "      --window N         at most N requests outstanding (default 0: no bound):\n"
             "                         an arrival due while N are unanswered is deferred to\n"
             "                         the next reply, and the arrivals go on from there.\n"
             "                         Offered above the server's capacity, this keeps N in\n"
             "                         the server whatever its speed (a closed loop of N);\n"
             "                         the latencies then start at the deferred send, and\n"
             "                         \"deferred\" counts such sends\n"
             "  -s, --seed SEED        random seed (default 1)\n"
             "  -h, --help             this help\n"
             "Prints one JSON object on stdout. Exit status: 0 every request answered,\n"
             "1 some unanswered, 2 bad command line, 3 cannot connect.\n");
}

static void parse_mix(const char *spec, options_t *o) {
  memset(o->weight, 0, sizeof o->weight);
  char *copy = strdup(spec);
  if (!copy) bench_die(BENCH_EXIT_FAIL, "out of memory");
  unsigned total = 0;
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    long w = 1;
    if (eq) {
      *eq = '\0';
      w = bench_parse_long(eq + 1, "-m/--mix (weight)", 0, 1000000);
    }
    int p = proto_profile_by_name(tok);
    if (p < 0) bench_die(BENCH_EXIT_USAGE, "option -m/--mix: unknown profile '%s'", tok);
    o->weight[p] = (unsigned)w;
    total += (unsigned)w;
  }
  free(copy);
  if (total == 0) bench_die(BENCH_EXIT_USAGE, "option -m/--mix: every weight is 0");
}

static void parse_classes(const char *spec, options_t *o) {
  char *copy = strdup(spec);
  if (!copy) bench_die(BENCH_EXIT_FAIL, "out of memory");
  o->nclasses = 0;
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    if (!colon)
      bench_die(BENCH_EXIT_USAGE, "option --classes: expected SPIN_US:PRIORITY, got '%s'", tok);
    *colon = '\0';
    if (o->nclasses == PROTO_MAX_PRIORITY)
      bench_die(BENCH_EXIT_USAGE, "option --classes: more than %d classes", PROTO_MAX_PRIORITY);
    o->classes[o->nclasses].spin_us =
        (uint32_t)bench_parse_long(tok, "--classes (spin)", 0, (long)PROTO_NULL_MAX_SPIN_US);
    o->classes[o->nclasses].priority =
        (uint8_t)bench_parse_long(colon + 1, "--classes (priority)", 1, PROTO_MAX_PRIORITY);
    o->nclasses++;
  }
  free(copy);
  if (o->nclasses == 0) bench_die(BENCH_EXIT_USAGE, "option --classes: no class given");
  memset(o->weight, 0, sizeof o->weight);
  o->weight[PROTO_NULL] = 1;
}

static void parse_priority(const char *spec, options_t *o) {
  const char *eq = strchr(spec, '=');
  if (!eq) bench_die(BENCH_EXIT_USAGE, "option -P/--priority: expected NAME=P, got '%s'", spec);
  char name[32];
  size_t n = (size_t)(eq - spec);
  if (n >= sizeof name)
    bench_die(BENCH_EXIT_USAGE, "option -P/--priority: unknown profile in '%s'", spec);
  memcpy(name, spec, n);
  name[n] = '\0';
  int p = proto_profile_by_name(name);
  if (p < 0) bench_die(BENCH_EXIT_USAGE, "option -P/--priority: unknown profile '%s'", name);
  o->priority[p] = (unsigned)bench_parse_long(eq + 1, "-P/--priority", 1, PROTO_MAX_PRIORITY);
}

static double parse_rate(const char *s) {
  char *end;
  errno = 0;
  double r = strtod(s, &end);
  if (errno || end == s || *end || !(r > 0) || r > 1e7)
    bench_die(BENCH_EXIT_USAGE, "option -r/--rate: '%s' is not a rate in (0, 1e7]", s);
  return r;
}

static void parse_options(int argc, char **argv, options_t *o) {
  *o = (options_t){.host = "127.0.0.1",
                   .port = -1,
                   .connections = 8,
                   .duration_ms = 1000,
                   .drain_ms = 10000,
                   .rate = 1000,
                   .count = UINT64_MAX,
                   .seed = 1,
                   .poisson = true,
                   .db_seed = 1};
  tpcc_scale_default(&o->scale);
  o->scale.districts = 1;
  bool orders_set = false;
  for (int p = 1; p < PROTO_NPROFILES; p++)
    o->weight[p] = 1;
  enum {
    OPT_SPIN = 256,
    OPT_CLASSES,
    OPT_BYTES,
    OPT_DISTRICTS,
    OPT_CUSTOMERS,
    OPT_ITEMS,
    OPT_ORDERS,
    OPT_DBSEED,
    OPT_DRAIN,
    OPT_WINDOW
  };
  static const struct option longopts[] = {{"host", required_argument, NULL, 'H'},
                                           {"port", required_argument, NULL, 'p'},
                                           {"rate", required_argument, NULL, 'r'},
                                           {"arrivals", required_argument, NULL, 'a'},
                                           {"count", required_argument, NULL, 'n'},
                                           {"duration-ms", required_argument, NULL, 'd'},
                                           {"connections", required_argument, NULL, 'c'},
                                           {"mix", required_argument, NULL, 'm'},
                                           {"priority", required_argument, NULL, 'P'},
                                           {"null-spin-us", required_argument, NULL, OPT_SPIN},
                                           {"classes", required_argument, NULL, OPT_CLASSES},
                                           {"null-bytes", required_argument, NULL, OPT_BYTES},
                                           {"warehouses", required_argument, NULL, 'w'},
                                           {"districts", required_argument, NULL, OPT_DISTRICTS},
                                           {"customers", required_argument, NULL, OPT_CUSTOMERS},
                                           {"items", required_argument, NULL, OPT_ITEMS},
                                           {"orders", required_argument, NULL, OPT_ORDERS},
                                           {"db-seed", required_argument, NULL, OPT_DBSEED},
                                           {"drain-ms", required_argument, NULL, OPT_DRAIN},
                                           {"window", required_argument, NULL, OPT_WINDOW},
                                           {"seed", required_argument, NULL, 's'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "H:p:r:a:n:d:c:m:P:w:s:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'H': o->host = optarg; break;
    case 'p': o->port = bench_parse_long(optarg, "-p/--port", 1, 65535); break;
    case 'r': o->rate = parse_rate(optarg); break;
    case 'a':
      if (strcmp(optarg, "poisson") == 0)
        o->poisson = true;
      else if (strcmp(optarg, "constant") == 0)
        o->poisson = false;
      else
        bench_die(BENCH_EXIT_USAGE, "option -a/--arrivals: '%s' is not poisson or constant",
                  optarg);
      break;
    case 'n': o->count = (uint64_t)bench_parse_long(optarg, "-n/--count", 1, 1L << 40); break;
    case 'd': o->duration_ms = bench_parse_long(optarg, "-d/--duration-ms", 1, 86400000); break;
    case 'c':
      o->connections = bench_parse_long(optarg, "-c/--connections", 1, MAX_CONNECTIONS);
      break;
    case 'm': parse_mix(optarg, o); break;
    case 'P': parse_priority(optarg, o); break;
    case OPT_CLASSES: parse_classes(optarg, o); break;
    case OPT_WINDOW: o->window = (uint64_t)bench_parse_long(optarg, "--window", 0, 1L << 30); break;
    case OPT_SPIN:
      o->null_spin_us = bench_parse_long(optarg, "--null-spin-us", 0, (long)PROTO_NULL_MAX_SPIN_US);
      break;
    case OPT_BYTES:
      o->null_bytes = bench_parse_long(optarg, "--null-bytes", 0, PROTO_MAX_BODY - 16);
      break;
    case 'w':
      o->scale.warehouses = (uint32_t)bench_parse_long(optarg, "-w/--warehouses", 1, 1000);
      break;
    case OPT_DISTRICTS:
      o->scale.districts = (uint32_t)bench_parse_long(optarg, "--districts", 1, TPCC_MAX_DISTRICTS);
      break;
    case OPT_CUSTOMERS:
      o->scale.customers = (uint32_t)bench_parse_long(optarg, "--customers", 1, 3000);
      break;
    case OPT_ITEMS:
      o->scale.items = (uint32_t)bench_parse_long(optarg, "--items", 1, 100000);
      break;
    case OPT_ORDERS:
      o->scale.orders = (uint32_t)bench_parse_long(optarg, "--orders", 1, 3000);
      orders_set = true;
      break;
    case OPT_DBSEED:
      o->db_seed = (uint64_t)bench_parse_long(optarg, "--db-seed", 0, 1L << 62);
      break;
    case OPT_DRAIN: o->drain_ms = bench_parse_long(optarg, "--drain-ms", 0, 3600000); break;
    case 's': o->seed = (uint64_t)bench_parse_long(optarg, "-s/--seed", 0, (1L << 62)); break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(BENCH_EXIT_USAGE);
    }
  }
  if (optind < argc) {
    usage(stderr);
    bench_die(BENCH_EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
  }
  if (o->port < 0) {
    usage(stderr);
    bench_die(BENCH_EXIT_USAGE, "option -p/--port is required");
  }
  if (o->nclasses) { /* --classes overrides --mix */
    memset(o->weight, 0, sizeof o->weight);
    o->weight[PROTO_NULL] = 1;
  }
  if (!orders_set) o->scale.orders = o->scale.customers;
  char err[200];
  if (tpcc_scale_validate(&o->scale, err, sizeof err) != 0)
    bench_die(BENCH_EXIT_USAGE, "TPC-C scale: %s", err);
}

/* Resolves host and refuses anything but a loopback address: the
 * generator is a benchmark tool, not a way to load someone else's server. */
static void resolve_loopback(const options_t *o, struct sockaddr_storage *ss, socklen_t *sl) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
  char port[16];
  snprintf(port, sizeof port, "%ld", o->port);
  int rc = getaddrinfo(o->host, port, &hints, &res);
  if (rc != 0) bench_die(BENCH_EXIT_USAGE, "option -H/--host: '%s': %s", o->host, gai_strerror(rc));
  bool loop = false;
  if (res->ai_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)res->ai_addr;
    loop = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  } else if (res->ai_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)res->ai_addr;
    loop = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
  }
  if (!loop) {
    freeaddrinfo(res);
    bench_die(BENCH_EXIT_USAGE, "option -H/--host: '%s' is not a loopback address", o->host);
  }
  memcpy(ss, res->ai_addr, res->ai_addrlen);
  *sl = res->ai_addrlen;
  freeaddrinfo(res);
}

static void conn_reserve(conn_t *c, size_t more) {
  if (c->out_len + more <= c->out_cap) return;
  size_t cap = c->out_cap ? c->out_cap : 4096;
  while (cap < c->out_len + more)
    cap *= 2;
  uint8_t *p = realloc(c->out, cap);
  if (!p) bench_die(BENCH_EXIT_FAIL, "out of memory (send buffer of %zu bytes)", cap);
  c->out = p;
  c->out_cap = cap;
}

typedef struct state {
  const options_t *opt;
  int ep;
  conn_t *conns;
  sent_rec_t *recs;
  size_t recs_cap;
  uint64_t sent, answered, replies, errors, unexpected, lost;
  uint64_t error_by_code[256];
  uint64_t rolled_back;
  unsigned open_conns;
  hist_t by_profile[PROTO_NPROFILES];
  hist_t *by_priority[PROTO_MAX_PRIORITY + 1]; /* allocated on first use */
  hist_t all, lateness;
} state_t;

static void set_events(state_t *s, conn_t *c, unsigned idx) {
  struct epoll_event ev = {.events = EPOLLIN | (c->want_out ? EPOLLOUT : 0), .data.u32 = idx};
  if (epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev) != 0)
    bench_die(BENCH_EXIT_FAIL, "epoll_ctl: %s", strerror(errno));
}

static void conn_close(state_t *s, conn_t *c) {
  if (!c->open) return;
  epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->open = false;
  s->open_conns--;
}

/* Writes what the connection has buffered, as far as the socket takes it. */
static void conn_flush(state_t *s, conn_t *c, unsigned idx) {
  size_t off = 0;
  while (off < c->out_len) {
    ssize_t n = send(c->fd, c->out + off, c->out_len - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    fprintf(stderr, "sstm-loadgen: connection %u: send: %s\n", idx,
            n < 0 ? strerror(errno) : "closed");
    conn_close(s, c);
    return;
  }
  memmove(c->out, c->out + off, c->out_len - off);
  c->out_len -= off;
  bool want = c->out_len > 0;
  if (want != c->want_out) {
    c->want_out = want;
    set_events(s, c, idx);
  }
}

static hist_t *priority_hist(state_t *s, unsigned prio) {
  if (prio > PROTO_MAX_PRIORITY) prio = 0;
  if (!s->by_priority[prio]) {
    s->by_priority[prio] = malloc(sizeof(hist_t));
    if (!s->by_priority[prio]) bench_die(BENCH_EXIT_FAIL, "out of memory");
    hist_init(s->by_priority[prio]);
  }
  return s->by_priority[prio];
}

static void on_response(state_t *s, const uint8_t *frame, size_t len, uint64_t now) {
  proto_response_t r;
  if (proto_decode_response(frame, len, &r) != 0) {
    s->unexpected++;
    return;
  }
  if (r.kind == PROTO_ERROR) {
    s->errors++;
    s->error_by_code[r.error_code]++;
    if (s->errors <= 5)
      fprintf(stderr, "sstm-loadgen: request %llu: error %u (%s): %.*s\n", (unsigned long long)r.id,
              r.error_code, proto_error_name(r.error_code), (int)r.plen, (const char *)r.payload);
  }
  if (r.id >= s->sent || s->recs[r.id].state != 0) {
    s->unexpected++;
    return;
  }
  sent_rec_t *rec = &s->recs[r.id];
  rec->state = 1;
  s->answered++;
  if (r.kind != PROTO_REPLY) return;
  s->replies++;
  if (rec->profile != PROTO_NULL && r.plen >= 1 && r.payload[0] == PROTO_OUTCOME_ROLLED_BACK)
    s->rolled_back++;
  uint64_t lat = now > rec->intended_ns ? now - rec->intended_ns : 0;
  hist_record(&s->all, lat);
  hist_record(&s->by_profile[rec->profile], lat);
  /* By the priority the request was born with, as the server reports it
   * (the profile's default when the request said 0). */
  hist_record(priority_hist(s, r.priority), lat);
}

static void conn_read(state_t *s, conn_t *c, unsigned idx) {
  for (;;) {
    if (c->in_len == PROTO_MAX_FRAME) {
      fprintf(stderr, "sstm-loadgen: connection %u: unparseable reply stream\n", idx);
      conn_close(s, c);
      return;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, PROTO_MAX_FRAME - c->in_len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      if (n < 0) fprintf(stderr, "sstm-loadgen: connection %u: recv: %s\n", idx, strerror(errno));
      conn_close(s, c);
      return;
    }
    c->in_len += (size_t)n;
    uint64_t now = mono_ns();
    size_t off = 0, flen;
    for (;;) {
      proto_peek_t pk = proto_frame_peek(c->in + off, c->in_len - off, &flen);
      if (pk == PROTO_PEEK_MORE) break;
      if (pk == PROTO_PEEK_TOO_LARGE) {
        fprintf(stderr, "sstm-loadgen: connection %u: oversized reply\n", idx);
        conn_close(s, c);
        return;
      }
      on_response(s, c->in + off, flen, now);
      off += flen;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
  }
}

static unsigned pick_profile(const options_t *o, bench_rng_t *rng, unsigned total) {
  uint64_t x = bench_rng_below(rng, total);
  for (unsigned p = 0; p < PROTO_NPROFILES; p++) {
    if (x < o->weight[p]) return p;
    x -= o->weight[p];
  }
  return PROTO_NPROFILES - 1;
}

static void json_hist(bench_json_t *j, const char *key, const hist_t *h) {
  bench_json_obj_open(j, key);
  bench_json_u64(j, "count", h->count);
  bench_json_dbl(j, "mean_us", hist_mean(h) / 1e3);
  bench_json_dbl(j, "p50_us", (double)hist_quantile(h, 0.50) / 1e3);
  bench_json_dbl(j, "p90_us", (double)hist_quantile(h, 0.90) / 1e3);
  bench_json_dbl(j, "p99_us", (double)hist_quantile(h, 0.99) / 1e3);
  bench_json_dbl(j, "p999_us", (double)hist_quantile(h, 0.999) / 1e3);
  bench_json_dbl(j, "max_us", (double)h->max / 1e3);
  bench_json_obj_close(j);
}

int main(int argc, char **argv) {
  bench_set_prog(argv[0]);
  options_t o;
  parse_options(argc, argv, &o);
  signal(SIGPIPE, SIG_IGN);
  /* Sleep to the scheduled instant as closely as the kernel allows (the
   * default 50 us timer slack would bunch the sends). */
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

  struct sockaddr_storage ss;
  socklen_t sl;
  resolve_loopback(&o, &ss, &sl);

  static state_t s;
  s.opt = &o;
  hist_init(&s.all);
  hist_init(&s.lateness);
  for (int p = 0; p < PROTO_NPROFILES; p++)
    hist_init(&s.by_profile[p]);
  s.ep = epoll_create1(EPOLL_CLOEXEC);
  if (s.ep < 0) bench_die(BENCH_EXIT_FAIL, "epoll_create1: %s", strerror(errno));
  s.conns = calloc((size_t)o.connections, sizeof(conn_t));
  if (!s.conns) bench_die(BENCH_EXIT_FAIL, "out of memory");
  for (long i = 0; i < o.connections; i++) {
    conn_t *c = &s.conns[i];
    c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&ss, sl) != 0) {
      fprintf(stderr, "sstm-loadgen: error: connect to %s port %ld: %s\n", o.host, o.port,
              strerror(errno));
      return 3;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fcntl(c->fd, F_SETFL, O_NONBLOCK) != 0)
      bench_die(BENCH_EXIT_FAIL, "fcntl: %s", strerror(errno));
    c->in = malloc(PROTO_MAX_FRAME);
    if (!c->in) bench_die(BENCH_EXIT_FAIL, "out of memory");
    c->open = true;
    s.open_conns++;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(s.ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
      bench_die(BENCH_EXIT_FAIL, "epoll_ctl: %s", strerror(errno));
  }

  unsigned total_weight = 0;
  for (int p = 0; p < PROTO_NPROFILES; p++)
    total_weight += o.weight[p];
  bench_rng_t arrivals, mix;
  bench_rng_seed(&arrivals, o.seed, 1);
  bench_rng_seed(&mix, o.seed, 2);
  /* TPC-C inputs are drawn as the specification's terminals draw them,
   * with the server's scale and NURand constants (tpcc_gen_init: the same
   * scale and seed as the server's database, without its rows). */
  tpcc_gen_t gen;
  tpcc_rng_t trng;
  tpcc_rng_seed(&trng, o.seed, 3);
  {
    char err[200];
    if (tpcc_gen_init(&gen, &o.scale, o.db_seed, err, sizeof err) != 0)
      bench_die(BENCH_EXIT_USAGE, "TPC-C scale: %s", err);
  }
  const int64_t epoch = (int64_t)time(NULL);
  uint8_t *payload = calloc(1, (size_t)o.null_bytes + 1);
  uint8_t frame[PROTO_MAX_FRAME];
  if (!payload) bench_die(BENCH_EXIT_FAIL, "out of memory");

  const double mean_gap_ns = 1e9 / o.rate;
  const uint64_t start = mono_ns() + 1000000; /* 1 ms from now: every connection is up */
  const uint64_t stop_sending = start + (uint64_t)o.duration_ms * 1000000u;
  double next = (double)start;
  bool sending = true, window_full = false;
  uint64_t drain_deadline = 0, deferred = 0;
  struct epoll_event evs[64];
  while (s.open_conns > 0) {
    uint64_t now = mono_ns();
    if (sending) {
      unsigned rr = (unsigned)(s.sent % (uint64_t)o.connections);
      if (window_full && s.sent - s.answered < o.window) {
        /* A reply opened the window: the deferred arrival happens now, and
         * the next ones are drawn from here (a closed loop while the
         * server cannot keep up). */
        window_full = false;
        if ((uint64_t)next < now && (uint64_t)next < stop_sending) {
          next = (double)now;
          deferred++;
        }
      }
      while ((uint64_t)next <= now && s.sent < o.count && (uint64_t)next < stop_sending) {
        if (o.window && s.sent - s.answered >= o.window) {
          window_full = true;
          break;
        }
        if (s.sent == s.recs_cap) {
          size_t cap = s.recs_cap ? s.recs_cap * 2 : 65536;
          sent_rec_t *r = realloc(s.recs, cap * sizeof *r);
          if (!r) bench_die(BENCH_EXIT_FAIL, "out of memory (%zu request records)", cap);
          s.recs = r;
          s.recs_cap = cap;
        }
        unsigned prof = pick_profile(&o, &mix, total_weight);
        proto_request_t q = {
            .id = s.sent, .priority = (uint8_t)o.priority[prof], .profile = (uint8_t)prof};
        if (prof == PROTO_NULL && o.nclasses) {
          unsigned k = (unsigned)bench_rng_below(&mix, o.nclasses);
          q.priority = o.classes[k].priority;
          q.p.null = (proto_null_t){o.classes[k].spin_us, payload, (size_t)o.null_bytes};
        } else if (prof == PROTO_NULL)
          q.p.null = (proto_null_t){(uint32_t)o.null_spin_us, payload, (size_t)o.null_bytes};
        else {
          tpcc_input_t in;
          uint32_t w_id = 1 + (uint32_t)bench_rng_below(&mix, o.scale.warehouses);
          tpcc_gen_input(&gen, &trng, (tpcc_profile_t)(prof - 1), w_id,
                         epoch + (int64_t)((now - start) / 1000000000u), &in);
          tpcc_wire_from_input(&in, &q);
        }
        size_t len = proto_encode_request(&q, frame, sizeof frame);
        if (len == 0)
          bench_die(BENCH_EXIT_FAIL, "internal error: request %llu does not encode",
                    (unsigned long long)q.id);
        /* The next open connection, round-robin. */
        conn_t *c = NULL;
        for (long k = 0; k < o.connections; k++, rr = (rr + 1) % (unsigned)o.connections)
          if (s.conns[rr].open) {
            c = &s.conns[rr];
            break;
          }
        if (!c) break;
        conn_reserve(c, len);
        memcpy(c->out + c->out_len, frame, len);
        c->out_len += len;
        rr = (rr + 1) % (unsigned)o.connections;
        s.recs[s.sent] = (sent_rec_t){(uint64_t)next, (uint8_t)prof, (uint8_t)q.priority, 0};
        hist_record(&s.lateness, now - (uint64_t)next);
        s.sent++;
        double gap = mean_gap_ns;
        if (o.poisson) {
          /* Exponential inter-arrival: -ln(U) / rate with U in (0, 1]. */
          double u = ((double)(bench_rng_next(&arrivals) >> 11) + 1.0) * 0x1.0p-53;
          gap = -log(u) * mean_gap_ns;
        }
        next += gap;
      }
      for (long i = 0; i < o.connections; i++)
        if (s.conns[i].open && s.conns[i].out_len > 0 && !s.conns[i].want_out)
          conn_flush(&s, &s.conns[i], (unsigned)i);
      if (s.sent >= o.count || (uint64_t)next >= stop_sending || s.open_conns == 0) {
        sending = false;
        drain_deadline = mono_ns() + (uint64_t)o.drain_ms * 1000000u;
      }
    }
    if (!sending) {
      bool pending_out = false;
      for (long i = 0; i < o.connections; i++)
        pending_out |= s.conns[i].open && s.conns[i].out_len > 0;
      if ((s.answered == s.sent && !pending_out) || mono_ns() >= drain_deadline) break;
    }
    now = mono_ns();
    /* A full window waits for a reply (an event), not for a time. */
    uint64_t wake = !sending ? drain_deadline : window_full ? now + 100000000u : (uint64_t)next;
    uint64_t wait_ns = wake > now ? wake - now : 0;
    if (!sending && wait_ns > 100000000u) wait_ns = 100000000u;
    struct timespec ts = {(time_t)(wait_ns / 1000000000u), (long)(wait_ns % 1000000000u)};
    int n = epoll_pwait2(s.ep, evs, 64, &ts, NULL);
    if (n < 0 && errno != EINTR) bench_die(BENCH_EXIT_FAIL, "epoll_pwait2: %s", strerror(errno));
    for (int i = 0; i < n; i++) {
      unsigned idx = evs[i].data.u32;
      conn_t *c = &s.conns[idx];
      if (c->open && (evs[i].events & EPOLLOUT)) conn_flush(&s, c, idx);
      if (c->open && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) conn_read(&s, c, idx);
    }
  }
  uint64_t end = mono_ns();
  s.lost = s.sent - s.answered;

  bench_json_t j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "bench", "loadgen");
  bench_json_dbl(&j, "target_rate", o.rate);
  bench_json_str(&j, "arrivals", o.poisson ? "poisson" : "constant");
  bench_json_u64(&j, "connections", (uint64_t)o.connections);
  bench_json_u64(&j, "duration_ms", (uint64_t)o.duration_ms);
  bench_json_u64(&j, "seed", o.seed);
  bench_json_u64(&j, "window", o.window);
  bench_json_u64(&j, "deferred", deferred);
  bench_json_obj_open(&j, "mix");
  for (unsigned p = 0; p < PROTO_NPROFILES; p++)
    if (o.weight[p]) bench_json_u64(&j, proto_profile_name(p), o.weight[p]);
  bench_json_obj_close(&j);
  if (o.nclasses) {
    bench_json_arr_open(&j, "classes");
    for (unsigned k = 0; k < o.nclasses; k++) {
      bench_json_obj_open(&j, NULL);
      bench_json_u64(&j, "spin_us", o.classes[k].spin_us);
      bench_json_u64(&j, "priority", o.classes[k].priority);
      bench_json_obj_close(&j);
    }
    bench_json_arr_close(&j);
  }
  bench_json_u64(&j, "sent", s.sent);
  bench_json_u64(&j, "replies", s.replies);
  bench_json_u64(&j, "errors", s.errors);
  bench_json_u64(&j, "unanswered", s.lost);
  bench_json_u64(&j, "unexpected", s.unexpected);
  bench_json_u64(&j, "rolled_back", s.rolled_back);
  bench_json_obj_open(&j, "errors_by_code");
  for (unsigned e = 0; e < 256; e++)
    if (s.error_by_code[e]) bench_json_u64(&j, proto_error_name(e), s.error_by_code[e]);
  bench_json_obj_close(&j);
  double send_s =
      (double)((s.sent ? (uint64_t)s.recs[s.sent - 1].intended_ns : start) - start) / 1e9;
  bench_json_dbl(&j, "send_span_s", send_s);
  bench_json_dbl(&j, "achieved_rate", send_s > 0 ? (double)(s.sent - 1) / send_s : 0.0);
  bench_json_dbl(&j, "elapsed_s", (double)(end - start) / 1e9);
  bench_json_dbl(&j, "reply_rate", (double)s.replies / ((double)(end - start) / 1e9));
  json_hist(&j, "send_lateness", &s.lateness);
  json_hist(&j, "latency", &s.all);
  bench_json_obj_open(&j, "latency_by_profile");
  for (unsigned p = 0; p < PROTO_NPROFILES; p++)
    if (s.by_profile[p].count) json_hist(&j, proto_profile_name(p), &s.by_profile[p]);
  bench_json_obj_close(&j);
  bench_json_obj_open(&j, "latency_by_priority");
  for (unsigned p = 0; p <= PROTO_MAX_PRIORITY; p++)
    if (s.by_priority[p]) {
      char key[8];
      snprintf(key, sizeof key, "%u", p);
      json_hist(&j, key, s.by_priority[p]);
    }
  bench_json_obj_close(&j);
  bench_json_end(&j);
  if (fflush(stdout) != 0 || ferror(stdout))
    bench_die(BENCH_EXIT_FAIL, "cannot write the result: %s", strerror(errno));

  for (long i = 0; i < o.connections; i++) {
    conn_close(&s, &s.conns[i]);
    free(s.conns[i].out);
    free(s.conns[i].in);
  }
  for (unsigned p = 0; p <= PROTO_MAX_PRIORITY; p++)
    free(s.by_priority[p]);
  free(s.conns);
  free(s.recs);
  free(payload);
  close(s.ep);
  return s.lost ? 1 : 0;
}
