#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of sstm-server against its protocol (docs/protocol.md).

  server_fuzz.py fuzz  SERVER [SEED]   malformed, random, truncated and oversized frames, slow
                                       clients, disconnects mid-request
  server_fuzz.py drain SERVER          SIGTERM while requests run: every accepted one is
                                       answered, exit status 0
  server_fuzz.py tpcc  SERVER LOADGEN [--expect-preemptions]
                                       a TPC-C mixed run through the server with preemption
                                       on, then the consistency check (--check); one worker,
                                       and null requests that spin 1 ms at priority 1 among
                                       the TPC-C ones, so that higher priorities arrive while
                                       the worker is busy and preempt it (with the option:
                                       the run must have preempted some transaction)
  server_fuzz.py tpcc-demand SERVER LOADGEN [--expect-preemptions]
                                       the same with the profiles spinning a twentieth of
                                       [Silvestri17]'s Table I demands (--demand 0.05),
                                       C_max 1 and --paused-conflict handover
  server_fuzz.py tpcc-params SERVER
                                       TPC-C requests against a small database, each with one
                                       parameter at a bound the database's scale sets (ids 0,
                                       one past the last, 2^32-1, the unused item id off the
                                       last line): the ones in range are run and answered, each
                                       out of range gets PROTO_E_PARAMS, and the database
                                       checks out after the drain
  server_fuzz.py window LOADGEN
                                       sstm-loadgen --window against a stand-in server that
                                       answers only when told: never more than the window's
                                       requests outstanding, deferred sends counted, every
                                       request answered

Each starts its own server on a free loopback port. What is checked, always: the server does
not crash and exits 0 after SIGTERM; every request frame that arrived whole got exactly one
answer (reply or error) on a connection the client kept open; the error codes are the ones the
protocol gives for each malformation; and no accepted request is lost: the server's final
statistics say accepted == completed == committed (the null requests count their commits
inside their transactions), and accepted equals the number of valid requests the client
sent, including those whose client hung up before the reply. Exit status 0 pass, 1 fail.
"""

import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import time

VERSION, REQUEST, REPLY, ERROR = 1, 1, 2, 3
E_FRAME, E_VERSION, E_KIND, E_PROFILE, E_PRIORITY, E_PARAMS, E_TOO_LARGE, E_SHUTDOWN = range(1, 9)
E_UNSUPPORTED = 10
MAX_BODY = 65536
TIMEOUT = float(os.environ.get("SSTM_TEST_WATCHDOG", "60")) * 0.8


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def frame(body):
    return struct.pack(">I", len(body)) + body


def header(rid, profile, priority=0, version=VERSION, kind=REQUEST):
    return struct.pack(">BBBBQ", version, kind, priority, profile, rid)


def null_req(rid, spin_us=0, data=b"", priority=0):
    return frame(header(rid, 0, priority) + struct.pack(">I", spin_us) + data)


def payment_params(w=1, d=1, c=1):
    return struct.pack(">IBIBBIHI", w, d, w, d, 0, c, 0, 1000)


class Server:
    def __init__(self, binary, args):
        self.proc = subprocess.Popen([binary, "--port", "0"] + args, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.proc.kill()
            fail("server did not start: %r %s" % (line, self.proc.stderr.read()))
        self.port = int(line.rsplit(":", 1)[1])

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def stop(self):
        """SIGTERM; returns the final statistics (checks exit status 0)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("server did not exit after SIGTERM")
        if self.proc.returncode != 0:
            fail("server exit status %d: %s" % (self.proc.returncode, err[-2000:]))
        return json.loads(out.strip().splitlines()[-1])


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_answer(s):
    """One frame from the server as (kind, priority, profile, id, payload, code), or None at
    end of stream."""
    head = recv_exact(s, 4)
    if head is None:
        return None
    (length,) = struct.unpack(">I", head)
    if length < 12 or length > MAX_BODY:
        fail("server sent a frame of length %d" % length)
    body = recv_exact(s, length)
    if body is None:
        fail("server's frame truncated")
    version, kind, prio, profile, rid = struct.unpack(">BBBBQ", body[:12])
    if version != VERSION or kind not in (REPLY, ERROR):
        fail("server sent version %d kind %d" % (version, kind))
    payload, code = body[12:], None
    if kind == ERROR:
        if not payload:
            fail("error frame without a code")
        code, payload = payload[0], payload[1:]
    return kind, prio, profile, rid, payload, code


def expect_error(s, code, what):
    a = read_answer(s)
    if a is None:
        fail("%s: connection closed, expected error %d" % (what, code))
    if a[0] != ERROR or a[5] != code:
        fail("%s: expected error %d, got kind %d code %s (%r)" % (what, code, a[0], a[5], a[4]))
    return a


def expect_reply(s, rid, data, what):
    a = read_answer(s)
    if a is None:
        fail("%s: connection closed, expected a reply" % what)
    if a[0] != REPLY or a[3] != rid or a[4] != data:
        fail("%s: expected reply %d, got %r" % (what, rid, a[:5]))


def fuzz(server_bin, seed):
    rng = random.Random(seed)
    print("seed", seed)
    srv = Server(server_bin, ["--no-tpcc", "--levels", "5", "--contexts", "64"])
    accepted = 0  # valid requests sent whole

    # Each malformation alone, on one connection that stays usable.
    s = srv.connect()
    cases = [
        (frame(b"\x01\x01"), E_FRAME, "body shorter than the header"),
        (frame(header(1, 0, version=2) + b"\0\0\0\0"), E_VERSION, "version 2"),
        (frame(header(2, 0, kind=REPLY) + b"\0\0\0\0"), E_KIND, "kind reply"),
        (frame(header(3, 6) + b"\0\0\0\0"), E_PROFILE, "profile 6"),
        (frame(header(4, 0, priority=6) + b"\0\0\0\0"), E_PRIORITY, "priority 6 of 5"),
        (frame(header(5, 0, priority=65) + b"\0\0\0\0"), E_PRIORITY, "priority 65"),
        (frame(header(6, 0) + b"\0\0"), E_PARAMS, "null truncated"),
        (frame(header(7, 0) + struct.pack(">I", 2000000)), E_PARAMS, "spin above the bound"),
        (frame(header(8, 2) + payment_params()[:-3]), E_PARAMS, "payment truncated"),
        (frame(header(9, 2) + payment_params()), E_UNSUPPORTED, "payment without TPC-C"),
        (frame(header(10, 1) + struct.pack(">IBIB", 1, 1, 1, 4)), E_PARAMS, "ol_cnt 4"),
        (frame(header(11, 4) + struct.pack(">IBB", 1, 1, 0)), E_PARAMS, "delivery trailing"),
        (frame(header(12, 5) + struct.pack(">IBB", 1, 1, 9)), E_PARAMS, "threshold 9"),
    ]
    for data, code, what in cases:
        s.sendall(data)
        a = expect_error(s, code, what)
        if code not in (E_FRAME,) and a[3] != struct.unpack(">Q", data[8:16])[0]:
            fail("%s: error names id %d" % (what, a[3]))
    s.sendall(null_req(100, 0, b"still here"))
    expect_reply(s, 100, b"still here", "valid request after the errors")
    accepted += 1

    # Oversized: error 7, then the server closes.
    s.sendall(struct.pack(">I", 0xFFFFFFFF) + b"x" * 100)
    expect_error(s, E_TOO_LARGE, "length 2^32-1")
    s.settimeout(TIMEOUT)
    try:
        rest = s.recv(1)
    except ConnectionResetError:
        rest = b""
    if rest != b"":
        fail("connection not closed after error 7")
    s.close()
    s = srv.connect()
    s.sendall(struct.pack(">I", MAX_BODY + 1))
    expect_error(s, E_TOO_LARGE, "length 65537")
    s.close()
    # The largest frame is fine.
    s = srv.connect()
    big = bytes(rng.getrandbits(8) for _ in range(MAX_BODY - 16))
    s.sendall(null_req(101, 0, big))
    expect_reply(s, 101, big, "largest frame")
    accepted += 1

    # A slow client: one byte at a time.
    data = null_req(102, 0, b"slow") + null_req(103, 0, b"slower")
    for b in data:
        s.sendall(bytes([b]))
        time.sleep(0.002)
    answers = {read_answer(s)[3], read_answer(s)[3]}
    if answers != {102, 103}:
        fail("slow client: answers %r" % answers)
    accepted += 2
    s.close()

    # Random frames: mutations of valid ones and random bytes, pipelined on several
    # connections; each whole frame gets exactly one answer.
    conns = [srv.connect() for _ in range(4)]
    sent = [0] * len(conns)
    for i in range(3000):
        k = rng.randrange(len(conns))
        kind = rng.random()
        if kind < 0.3:
            body = header(1000 + i, 0, rng.randrange(0, 6)) + struct.pack(">I", rng.randrange(50))
            body += bytes(rng.getrandbits(8) for _ in range(rng.randrange(16)))
        elif kind < 0.7:
            body = bytearray(header(1000 + i, rng.randrange(8), rng.randrange(8))
                             + payment_params())
            for _ in range(rng.randrange(1, 4)):
                body[rng.randrange(len(body))] = rng.getrandbits(8)
            body = bytes(body[:rng.randrange(len(body) + 1)])
        else:
            body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(40)))
        conns[k].sendall(frame(body))
        sent[k] += 1
    for k, c in enumerate(conns):
        for _ in range(sent[k]):
            a = read_answer(c)
            if a is None:
                fail("random frames: connection %d closed early" % k)
            if a[0] == REPLY:
                accepted += 1
            elif a[5] not in (E_FRAME, E_VERSION, E_KIND, E_PROFILE, E_PRIORITY, E_PARAMS,
                              E_UNSUPPORTED):
                fail("random frames: unexpected error code %d" % a[5])
        c.close()

    # Disconnects: whole requests (that run 2 ms each), then a partial frame, then close
    # before any reply: the whole ones are accepted and run; nothing hangs.
    for i in range(20):
        c = srv.connect()
        n = rng.randrange(1, 6)
        c.sendall(b"".join(null_req(5000 + i * 10 + j, 2000) for j in range(n))
                  + null_req(9999, 0, b"cut")[:rng.randrange(1, 20)])
        accepted += n
        c.close()
    # A client that connects and leaves at once, and one that leaves mid-header.
    srv.connect().close()
    c = srv.connect()
    c.sendall(b"\x00\x00")
    c.close()

    time.sleep(0.3)
    st = srv.stop()
    check_counts(st, accepted)
    print("ok: %d requests accepted, %d errors, %d replies dropped" %
          (st["accepted"], sum(st["errors"].values()), st["replies_dropped"]))


def check_counts(st, accepted):
    if st["accepted"] != accepted:
        fail("server accepted %d requests, the client sent %d valid ones" % (st["accepted"],
                                                                             accepted))
    if st["completed"] != st["accepted"]:
        fail("accepted %d, completed %d" % (st["accepted"], st["completed"]))
    if st["null_commits"] != st["accepted_by_profile"]["null"]:
        fail("null requests: %d accepted, %d committed" % (st["accepted_by_profile"]["null"],
                                                          st["null_commits"]))
    if st["replied"] + st["replies_dropped"] + st["failed"] != st["completed"]:
        fail("replied %d + dropped %d + failed %d != completed %d" % (
            st["replied"], st["replies_dropped"], st["failed"], st["completed"]))
    if st["failed"]:
        fail("%d requests failed" % st["failed"])


def drain(server_bin):
    srv = Server(server_bin, ["--no-tpcc", "--contexts", "16", "--workers", "2"])
    conns = [srv.connect() for _ in range(4)]
    n = 0
    for k, c in enumerate(conns):
        # 4 x 30 requests of 3 ms: about 180 ms of work on two workers, more than
        # the 16 contexts hold, so some wait for admission when SIGTERM comes.
        c.sendall(b"".join(null_req(k * 1000 + j, 3000, b"d") for j in range(30)))
        n += 30
    time.sleep(0.05)
    srv.proc.send_signal(signal.SIGTERM)
    replies = errors = 0
    for c in conns:
        while True:
            a = read_answer(c)
            if a is None:
                break
            if a[0] == REPLY:
                replies += 1
            elif a[5] == E_SHUTDOWN:
                errors += 1
            else:
                fail("drain: unexpected error %d" % a[5])
    try:
        out, err = srv.proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        fail("drain: the server did not exit")
    if srv.proc.returncode != 0:
        fail("drain: exit status %d: %s" % (srv.proc.returncode, err))
    st = json.loads(out.strip().splitlines()[-1])
    if replies + errors != n:
        fail("drain: %d requests, %d replies and %d shutdown errors" % (n, replies, errors))
    if st["accepted"] != replies:
        fail("drain: %d accepted but %d replies" % (st["accepted"], replies))
    check_counts(st, replies)
    if replies == 0:
        fail("drain: nothing was accepted before SIGTERM")
    print("ok: %d answered, %d refused while draining" % (replies, errors))


SMALL = ["--warehouses", "2", "--districts", "3", "--customers", "60", "--items", "200",
         "--orders", "60"]


def tpcc_params(server_bin):
    """The scale's ranges (SMALL: 2 warehouses, 3 districts, 60 customers and 60
    last names in use, 200 items) through the server: the codec checks only what
    the protocol fixes, the database's ranges are the server's to check."""
    srv = Server(server_bin, SMALL + ["--check", "--workers", "2"])
    top = 2**32 - 1

    def new_order(w=1, d=1, c=1, lines=None):
        lines = lines or [(i, 1, 1) for i in range(1, 6)]
        return 1, struct.pack(">IBIB", w, d, c, len(lines)) + b"".join(
            struct.pack(">IIB", *ln) for ln in lines)

    def payment(w=1, d=1, cw=1, cd=1, by_name=0, c=1, last=0, amount=1000):
        return 2, struct.pack(">IBIBBIHI", w, d, cw, cd, by_name, c, last, amount)

    def order_status(w=1, d=1, by_name=0, c=1, last=0):
        return 3, struct.pack(">IBBIH", w, d, by_name, c, last)

    def delivery(w=1, carrier=1):
        return 4, struct.pack(">IB", w, carrier)

    def stock_level(w=1, d=1, threshold=15):
        return 5, struct.pack(">IBB", w, d, threshold)

    line = [(1, 1, 1)] * 4
    cases = [  # (what, (profile, params), accepted)
        ("new-order", new_order(), True),
        ("new-order, the last ids", new_order(2, 3, 60, line + [(200, 2, 10)]), True),
        ("new-order, the unused item on the last line", new_order(1, 1, 1, line + [(201, 1, 1)]),
         True),
        ("new-order w_id 0", new_order(w=0), False),
        ("new-order w_id 3", new_order(w=3), False),
        ("new-order w_id 2^32-1", new_order(w=top), False),
        ("new-order d_id 0", new_order(d=0), False),
        ("new-order d_id 4", new_order(d=4), False),
        ("new-order c_id 0", new_order(c=0), False),
        ("new-order c_id 61", new_order(c=61), False),
        ("new-order i_id 0", new_order(lines=[(0, 1, 1)] + line), False),
        ("new-order the unused item off the last line", new_order(lines=[(201, 1, 1)] + line),
         False),
        ("new-order i_id 202", new_order(lines=line + [(202, 1, 1)]), False),
        ("new-order i_id 2^32-1", new_order(lines=line + [(top, 1, 1)]), False),
        ("new-order supply_w_id 3", new_order(lines=line + [(1, 3, 1)]), False),
        ("payment", payment(), True),
        ("payment by name, the last name in use", payment(by_name=1, last=59), True),
        ("payment w_id 3", payment(w=3), False),
        ("payment d_id 4", payment(d=4), False),
        ("payment c_w_id 0", payment(cw=0), False),
        ("payment c_d_id 4", payment(cd=4), False),
        ("payment c_id 61", payment(c=61), False),
        ("payment by name, c_last 60", payment(by_name=1, last=60), False),
        ("order-status", order_status(2, 3, 0, 60), True),
        ("order-status w_id 0", order_status(w=0), False),
        ("order-status d_id 0", order_status(d=0), False),
        ("order-status c_id 2^32-1", order_status(c=top), False),
        ("order-status by name, c_last 999", order_status(by_name=1, last=999), False),
        ("delivery", delivery(2, 10), True),
        ("delivery w_id 3", delivery(w=3), False),
        ("stock-level", stock_level(2, 3, 20), True),
        ("stock-level d_id 4", stock_level(d=4), False),
        ("stock-level w_id 2^32-1", stock_level(w=top), False),
    ]
    try:  # a failure ends the server too, not only this script
        s = srv.connect()
        s.sendall(b"".join(frame(header(rid, prof) + params)
                           for rid, (_, (prof, params), _) in enumerate(cases, 1)))
        got = {}
        while len(got) < len(cases):
            a = read_answer(s)
            if a is None:
                fail("tpcc-params: connection closed after %d answers" % len(got))
            if a[3] in got or not 1 <= a[3] <= len(cases):
                fail("tpcc-params: an answer for id %d" % a[3])
            got[a[3]] = a
        for rid, (what, _, ok) in enumerate(cases, 1):
            a = got[rid]
            if ok and a[0] != REPLY:
                fail("%s: expected a reply, got error %s (%r)" % (what, a[5], a[4]))
            if not ok and (a[0] != ERROR or a[5] != E_PARAMS):
                fail("%s: expected error %d, got kind %d code %s" % (what, E_PARAMS, a[0], a[5]))
        s.close()
    except BaseException:
        srv.proc.kill()
        srv.proc.wait()
        raise
    st = srv.stop()  # --check: exit status 1 if the database is not consistent
    check_counts(st, sum(1 for c in cases if c[2]))
    print("ok: %d requests run, %d refused" % (st["accepted"], st["errors"].get("params", -1)))


def tpcc(server_bin, loadgen_bin, expect_preemptions, demand=False):
    """demand: the TPC-C profiles spin a twentieth of [Silvestri17]'s Table I
    demands inside their transactions (--demand), C_max 1 and hand-over of paused
    conflicts: the database must still check out, and the server says what it ran."""
    extra = ["--c-max", "4"]
    if demand:
        extra = ["--c-max", "1", "--demand", "0.05", "--paused-conflict", "handover",
                 "--vclock"]
    srv = Server(server_bin, SMALL + ["--check", "--preempt", "signal", "--contexts", "64",
                                      "--workers", "1"] + extra)
    lg = subprocess.run([loadgen_bin, "--port", str(srv.port), "--rate", "1500", "--duration-ms",
                         "1500", "--connections", "8", "--null-spin-us", "1000",
                         # replies are waited for as long as the test may run, not the
                         # default 10 s: on a loaded host the executor may get a few
                         # per cent of a CPU, and the answers come, late
                         "--drain-ms", str(int(TIMEOUT * 900)), "--mix",
                         "null=1,new-order=1,payment=1,order-status=1,delivery=1,stock-level=1"]
                        + SMALL, capture_output=True, text=True, timeout=TIMEOUT)
    st = srv.stop()
    if lg.returncode != 0:
        fail("loadgen exit status %d: %s" % (lg.returncode, lg.stderr[-2000:]))
    r = json.loads(lg.stdout.strip().splitlines()[-1])
    if r["errors"] or r["unanswered"] or r["unexpected"]:
        fail("loadgen: %r" % {k: r[k] for k in ("errors", "unanswered", "unexpected",
                                                  "errors_by_code")})
    for p in ("new-order", "payment", "order-status", "delivery", "stock-level"):
        if r["latency_by_profile"].get(p, {}).get("count", 0) == 0:
            fail("no %s request answered" % p)
    if st["check_violations"] != 0:
        fail("TPC-C consistency: %s" % st["check"])
    if st["accepted"] != r["sent"] or st["completed"] != st["accepted"]:
        fail("sent %d, accepted %d, completed %d" % (r["sent"], st["accepted"], st["completed"]))
    if demand and (st.get("demand") != 0.05 or st.get("paused_conflict") != "handover"
                   or "paused-conflict=handover" not in st.get("exec", "")):
        fail("the server ran demand %r, paused_conflict %r (%s)" % (
            st.get("demand"), st.get("paused_conflict"), st.get("exec")))
    if not 0 <= st["exec_occupancy_mean"] <= 1 or not 0 <= st["exec_busy90_share"] <= 1 \
            or st["parked_mean"] < 0 or st["parked_max"] < st["parked_mean"]:
        fail("pool occupancy out of range: %r" % {k: st[k] for k in (
            "exec_occupancy_mean", "exec_busy90_share", "parked_mean", "parked_max")})
    if demand:
        # The executor's clock from the submission cannot exceed the same clock from
        # the arrival (the submission comes later), and the workers ran.
        if not st.get("workers_cpu_s", 0) > 0:
            fail("--vclock: no workers' CPU time: %r" % st.get("workers_cpu_s"))
        for lv in st["levels_stats"]:
            if lv["completed"] and not (0 <= lv["vexec_turnaround_us_mean"]
                                        <= lv["vturnaround_us_mean"] * (1 + 1e-9)):
                fail("priority %d: vexec %r > vturnaround %r" % (
                    lv["priority"], lv["vexec_turnaround_us_mean"], lv["vturnaround_us_mean"]))
    preempted = sum(lv["preemptions"] for lv in st["levels_stats"])
    if expect_preemptions and preempted == 0:
        fail("no transaction was preempted (%s)" % st.get("exec"))
    print("ok: %d requests (%d rolled back), %d preemptions, check: %s; %s" % (
        st["accepted"], st["rolled_back"], preempted, st["check"], st.get("exec")))


def window(loadgen_bin):
    """sstm-loadgen --window 6 against a stand-in server (this script) that answers only when
    told: offered 100 000 requests/s, exactly 6 arrive and no 7th while none is answered;
    two answers let exactly two more through; then every request is answered and the load
    generator ends with all 20 answered and its deferred sends counted. An order of events,
    not a time: the waits for a request that must not come can only miss a bug, never fail
    a correct load generator."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(8)
    port = lst.getsockname()[1]
    lg = subprocess.Popen([loadgen_bin, "--port", str(port), "--rate", "100000", "--count", "20",
                           "--duration-ms", "600000", "--connections", "2", "--window", "6",
                           "--mix", "null=1", "--drain-ms", str(int(TIMEOUT * 900))],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    conns, bufs, got = [], {}, []  # got: (connection, id) in arrival order
    lst.settimeout(TIMEOUT)
    for _ in range(2):
        c, _a = lst.accept()
        conns.append(c)
        bufs[c] = b""

    def pump(timeout):
        """Read what arrives within timeout seconds; returns when something did or at the
        timeout."""
        r, _w, _x = select.select(conns, [], [], timeout)
        for c in r:
            data = c.recv(65536)
            if not data:
                conns.remove(c)
                continue
            bufs[c] += data
            while len(bufs[c]) >= 4:
                (n,) = struct.unpack(">I", bufs[c][:4])
                if len(bufs[c]) < 4 + n:
                    break
                body, bufs[c] = bufs[c][4:4 + n], bufs[c][4 + n:]
                got.append((c, struct.unpack(">Q", body[4:12])[0]))

    def until(n):
        deadline = time.monotonic() + TIMEOUT
        while len(got) < n:
            if time.monotonic() > deadline:
                lg.kill()
                fail("window: %d requests arrived, %d expected" % (len(got), n))
            pump(0.05)

    def hold(n):
        """No request beyond the n-th may come while n are unanswered."""
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pump(0.05)
        if len(got) != n:
            lg.kill()
            fail("window 6: %d requests outstanding at once" % len(got))

    def answer(k):
        c, rid = got[k]
        c.sendall(frame(struct.pack(">BBBBQ", VERSION, REPLY, 1, 0, rid)))

    until(6)
    hold(6)
    answer(0)
    answer(1)
    until(8)
    hold(8)
    done = 2
    deadline = time.monotonic() + TIMEOUT
    while lg.poll() is None and time.monotonic() < deadline:
        while done < len(got):
            answer(done)
            done += 1
        if len(got) - done > 6:
            lg.kill()
            fail("window 6: %d requests outstanding at once" % (len(got) - done))
        pump(0.05)
    try:
        out, err = lg.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        lg.kill()
        fail("window: the load generator did not end")
    if lg.returncode != 0:
        fail("window: loadgen exit status %d: %s" % (lg.returncode, err[-2000:]))
    r = json.loads(out.strip().splitlines()[-1])
    if (r["window"], r["sent"], r["replies"], len(got)) != (6, 20, 20, 20) or r["unanswered"]:
        fail("window: %r, %d requests seen" % ({k: r[k] for k in (
            "window", "sent", "replies", "unanswered")}, len(got)))
    if r["deferred"] < 1:
        fail("window: no send counted as deferred: %r" % r)
    print("ok: 20 requests, never more than 6 outstanding, %d deferred sends" % r["deferred"])


def main(argv):
    if len(argv) >= 3 and argv[1] == "fuzz":
        fuzz(argv[2], int(argv[3]) if len(argv) > 3 else random.randrange(1 << 30))
    elif len(argv) == 3 and argv[1] == "drain":
        drain(argv[2])
    elif len(argv) == 3 and argv[1] == "tpcc-params":
        tpcc_params(argv[2])
    elif len(argv) == 3 and argv[1] == "window":
        window(argv[2])
    elif len(argv) in (4, 5) and argv[1] in ("tpcc", "tpcc-demand"):
        if len(argv) == 5 and argv[4] != "--expect-preemptions":
            print(__doc__, file=sys.stderr)
            return 2
        tpcc(argv[2], argv[3], len(argv) == 5, argv[1] == "tpcc-demand")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
