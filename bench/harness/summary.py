# SPDX-License-Identifier: MIT
"""Aggregation of benchmark result records and the markdown summary.

Records are dicts with at least: bench, structure, update, threads,
variant, rep, status, commits_per_s, abort_ratio. Standard library only.
"""

import random
import statistics


def _size_key(rec):
    """The size part of a workload: the intset's initial size and key range
    (ll1k and ll8k are different workloads), the bank's account count, the
    sb7 scale factor."""
    bench = rec.get("bench")
    if bench == "intset":
        initial, rng = rec.get("initial"), rec.get("range")
        if initial is None:
            return None
        return (initial, rng if rng not in (None, 0, 2 * initial) else None)
    if bench == "bank":
        return rec.get("accounts")
    return rec.get("scale")


def workload_key(rec):
    """(bench, structure, size, update) identifies one workload."""
    return (rec.get("bench"), rec.get("structure"), _size_key(rec), rec.get("update"))


SB7_MIX_LABELS = {"r": "read-dominated", "rw": "read-write", "w": "write-dominated"}


def _count(n):
    """1024 -> '1k', 16384 -> '16k', 1000 -> '1000' (the papers' names)."""
    return "%dk" % (n // 1024) if n >= 1024 and n % 1024 == 0 else str(n)


def workload_label(key):
    bench, structure, size, update = key
    if bench == "bank":
        accounts = "" if size is None else ", %s accounts" % _count(size)
        return "bank (%s%% transfers%s)" % (update, accounts)
    if bench == "sb7":  # structure "sb7" or "sb7-nolong", update the mix
        label = "%s %s" % (structure, SB7_MIX_LABELS.get(update, update))
        if size not in (None, 1):
            label += " x%s" % size
        return label.replace("sb7-nolong", "sb7 (no long trav.)")
    name = str(structure)
    if size is not None:
        initial, rng = size
        name += _count(initial) + ("" if rng is None else "/r%s" % _count(rng))
    return "%s %s%% upd" % (name, update)


def ok_records(records):
    return [r for r in records if r.get("status") == "ok"]


def ordered_unique(values):
    seen, out = set(), []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def median_of(records, field):
    """Median of a numeric field over records, None if no value."""
    return _median_fn(records, lambda r: r.get(field))


def group(records):
    """{(workload, threads, variant): [records]} of the successful runs."""
    groups = {}
    for r in ok_records(records):
        key = (workload_key(r), r["threads"], r["variant"])
        groups.setdefault(key, []).append(r)
    return groups


def paired_ratio(records, workload, threads, variant, baseline):
    """Median over repetitions of variant/baseline throughput, pairing the
    two runs of the same repetition (same run conditions). When the
    baseline did not run at this thread count (e.g. seq beyond 1 thread)
    its 1-thread runs are used: the ratio is then a speedup. A baseline
    that ran at this thread count and failed gives no ratio (not a
    speedup over its 1-thread runs). Returns (ratio or None,
    used_one_thread_baseline).

    Runs pair by repetition and seed, so that the records of two sweeps
    pooled together (rep 0 of each, seeds differing) pair within their
    own sweep; runs with the same key pair in the order of the records."""
    by_rep, base_threads = _baseline_runs(records, workload, threads, baseline)
    each = _paired(_by_rep(records, workload, threads, variant), by_rep)
    if not each:
        return None, False
    return statistics.median(each), base_threads != threads


def _baseline_runs(records, workload, threads, baseline):
    """(the baseline's runs by repetition, their thread count): its runs at
    `threads`, or its 1-thread runs when it did not run there at all."""
    by_rep = _by_rep(records, workload, threads, baseline)
    if not by_rep and threads != 1 and not _ran(records, workload, threads, baseline):
        return _by_rep(records, workload, 1, baseline), 1
    return by_rep, threads


def _paired(mine, base):
    """mine/base for every pair of runs (same key, in order)."""
    return [x / b for key, xs in mine.items() for x, b in zip(xs, base.get(key, ())) if b > 0]


def _median_paired(mine, base):
    """Median of mine/base over the runs that pair (same key, in order),
    None when none does."""
    ratios = _paired(mine, base)
    return statistics.median(ratios) if ratios else None


# The fewest pairs from which a paired ratio is given with an interval: a
# bootstrap of the median from fewer resamples a handful of values.
INTERVAL_MIN_PAIRS = 5
INTERVAL_RESAMPLES = 2000


def median_interval(ratios, level=0.95):
    """A bootstrap interval of the median of `ratios` (the per-repetition
    paired ratios): the median of each of INTERVAL_RESAMPLES resamples
    with replacement, and their (1-level)/2 and (1+level)/2 quantiles (the
    percentile method). None with fewer than INTERVAL_MIN_PAIRS ratios.
    The resampling is seeded, so one set of ratios always gives the same
    interval: a summary made twice from the same records is the same."""
    if len(ratios) < INTERVAL_MIN_PAIRS:
        return None
    xs = list(ratios)
    rng = random.Random(20261201)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs)))
                  for _ in range(INTERVAL_RESAMPLES))
    lo = meds[int((1 - level) / 2 * (INTERVAL_RESAMPLES - 1))]
    hi = meds[int(round((1 + level) / 2 * (INTERVAL_RESAMPLES - 1)))]
    return lo, hi


def paired_ratios(records, workload, threads, variant, baseline):
    """The per-repetition ratios behind paired_ratio (same pairing, same
    1-thread baseline rule), sorted; [] when none pairs."""
    by_rep = _baseline_runs(records, workload, threads, baseline)[0]
    return sorted(_paired(_by_rep(records, workload, threads, variant), by_rep))


def fmt_ratio(ratio, each):
    """'1.20x', and with enough pairs its interval: '1.20x (1.05-1.31)'."""
    if ratio is None:
        return "-"
    iv = median_interval(each)
    return "%.2fx" % ratio if iv is None else "%.2fx (%.2f-%.2f)" % (ratio, iv[0], iv[1])


# The fewest paired repetitions from which adaptive_vs_fixed calls a point
# within (or not within) 10 % of the best fixed policy when all of them
# agree: with fewer, every repetition on one side says little.
AGREE_MIN_REPS = 3


def scaling_base(groups, workload):
    """The thread count a workload's scaling is measured against: 2 when it
    ran there (the first point with concurrency, as the retention target
    counts: docs/benchmarks.md), else its smallest thread count; None with fewer than two."""
    threads = sorted({k[1] for k in groups if k[0] == workload})
    if len(threads) < 2:
        return None
    return 2 if 2 in threads and threads[-1] > 2 else threads[0]


def scaling_ratio(records, workload, threads, variant, base_threads):
    """Median over repetitions of the variant's throughput at `threads` over
    its own throughput at `base_threads` in the same repetition, or None.
    Pairing by repetition keeps slow phases of a shared machine out of the
    ratio: the ratio of medians would take the two from different runs."""
    return _median_paired(_by_rep(records, workload, threads, variant),
                          _by_rep(records, workload, base_threads, variant))


def _ran(records, workload, threads, variant):
    """True if variant has a record (successful or not) at this point."""
    return any(workload_key(r) == workload and r.get("threads") == threads
               and r.get("variant") == variant for r in records)


def _by_rep(records, workload, threads, variant):
    """{(rep, seed): [commits_per_s of the successful runs, in order]}. A
    run with a rate of 0 is kept: it is a ratio of 0, not a missing run."""
    out = {}
    for r in ok_records(records):
        if (workload_key(r) == workload and r["threads"] == threads
                and r["variant"] == variant and _is_rate(r.get("commits_per_s"))):
            out.setdefault((r["rep"], r.get("seed")), []).append(r["commits_per_s"])
    return out


def _is_rate(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def fmt_rate(x):
    if x is None:
        return "-"
    if x >= 1e6:
        return "%.2f M" % (x / 1e6)
    if x >= 1e3:
        return "%.1f k" % (x / 1e3)
    return "%.0f" % x


def fmt_pct(x):
    return "-" if x is None else "%.2f%%" % (100.0 * x)


def markdown(records, baseline=None, title="Benchmark summary"):
    """Markdown text: throughput medians and ratios vs baseline, then abort
    ratios, one row per (workload, threads)."""
    groups = group(records)
    variants = ordered_unique(r["variant"] for r in records)
    workloads = ordered_unique(workload_key(r) for r in records)
    lines = ["## %s" % title, ""]
    lines += provenance_lines(records)
    lines += _throughput_table(records, groups, workloads, variants, baseline)
    lines += [""]
    lines += _abort_table(groups, workloads, variants)
    lines += _scaling_table(records, groups, workloads, variants)
    lines += _policy_tables(groups, workloads, variants)
    lines += _adaptive_table(records, groups, workloads, variants)
    lines += _failure_lines(records)
    return "\n".join(lines) + "\n"


def provenance_lines(records):
    """Where the runs were made (the sweep's provenance fields), each value
    once; nothing for records without them (older sweeps)."""
    def values(field, fmt=str):
        return ", ".join(ordered_unique(fmt(r[field]) for r in records
                                        if r.get(field) is not None))

    parts = []
    if values("cpu_model"):
        parts.append("%s, %s CPUs" % (values("cpu_model"), values("cpus") or "?"))
    if values("kernel"):
        parts.append("Linux %s" % values("kernel"))
    if values("compiler"):
        parts.append("built with %s" % values("compiler"))
    if values("git_commit"):
        parts.append("commit %s" % values("git_commit", lambda c: c[:12]))
        if any(r.get("git_dirty") for r in records):
            parts[-1] += " (with uncommitted changes)"
    if not parts:
        return []
    return ["Measured on %s." % "; ".join(parts), ""]


def _rows(groups, workloads):
    for w in workloads:
        threads = sorted({k[1] for k in groups if k[0] == w})
        for t in threads:
            yield w, t


def _throughput_table(records, groups, workloads, variants, baseline):
    others = [v for v in variants if baseline and v != baseline]
    head = ["workload", "threads"] + ["%s (commits/s)" % v for v in variants]
    head += ["%s / %s" % (v, baseline) for v in others]
    lines = ["Median commits/s over repetitions; ratios are medians of per-repetition",
             "ratios (runs of one repetition are interleaved, so each ratio compares",
             "runs made under the same conditions); from %d pairs on, in parentheses, a"
             % INTERVAL_MIN_PAIRS,
             "95 %% bootstrap interval of that median (percentile method, %d resamples)."
             % INTERVAL_RESAMPLES]
    outside = [r for r in records if r.get("clock") == "outside"]
    if outside:
        lines += ["Rates are timed from outside the programs (--outside-clock %s): the" %
                  outside[0].get("outside_short_ms"),
                  "commits of each run less those of a short run of the same command, over",
                  "the difference of their wall times; the programs' own figures are in",
                  "results.jsonl as commits_per_s_inside."]
    lines += [""]
    lines += [_md_row(head), _md_row(["---"] * len(head))]
    footnote = False
    for w, t in _rows(groups, workloads):
        cells = [workload_label(w), str(t)]
        cells += [fmt_rate(median_of(groups.get((w, t, v), []), "commits_per_s"))
                  for v in variants]
        for v in others:
            ratio, vs_one = paired_ratio(records, w, t, v, baseline)
            footnote |= vs_one and ratio is not None
            text = fmt_ratio(ratio, paired_ratios(records, w, t, v, baseline))
            cells.append(text + (" *" if vs_one and ratio is not None else ""))
        lines.append(_md_row(cells))
    if footnote:
        lines += ["", "\\* baseline measured at 1 thread only: the ratio is a speedup over it."]
    return lines


def _abort_table(groups, workloads, variants):
    head = ["workload", "threads"] + variants
    lines = ["Median abort ratio (aborted attempts / all attempts; '-' = not reported",
             "by the back-end: libitm, TinySTM without TM_STATISTICS).", ""]
    lines += [_md_row(head), _md_row(["---"] * len(head))]
    for w, t in _rows(groups, workloads):
        cells = [workload_label(w), str(t)]
        cells += [fmt_pct(median_of(groups.get((w, t, v), []), "abort_ratio"))
                  for v in variants]
        lines.append(_md_row(cells))
    return lines


def _scaling_table(records, groups, workloads, variants):
    """Each variant's throughput as a share of its own at the workload's
    scaling base, and the highest share of each row."""
    rows = []
    for w in workloads:
        base = scaling_base(groups, w)
        if base is None:
            continue
        for t in sorted({k[1] for k in groups if k[0] == w and k[1] > base}):
            pairs = {v: _paired(_by_rep(records, w, t, v), _by_rep(records, w, base, v))
                     for v in variants}
            known = {v: statistics.median(x) for v, x in pairs.items() if x}
            if not known:
                continue
            top = max(known, key=known.get)

            def cell(v):
                text = fmt_share(known.get(v))
                iv = median_interval(pairs[v])
                return text if iv is None else "%s (%.0f-%.0f)" % (text, 100 * iv[0], 100 * iv[1])
            rows.append([workload_label(w), "%d / %d" % (t, base)]
                        + [cell(v) for v in variants]
                        + ["%s %s" % (top, fmt_share(known[top]))])
    if not rows:
        return []
    head = ["workload", "threads / base"] + variants + ["highest"]
    lines = ["", "Scaling: each variant's throughput as a share of its own at the base",
             "thread count (2, or the smallest measured), median of per-repetition ratios",
             "(from %d pairs on with the interval of that median, as above)." % INTERVAL_MIN_PAIRS,
             ""]
    lines += [_md_row(head), _md_row(["---"] * len(head))]
    lines += [_md_row(r) for r in rows]
    return lines


def fmt_share(x):
    return "-" if x is None else "%.0f %%" % (100.0 * x)


PRIO_STATS = ("prio_changes", "sub_prio_changes")


def _own_elapsed(rec):
    """The duration the program's own counters cover. With --outside-clock
    elapsed_s is the difference of two runs' wall times, while cm_wait_s
    and cm_stats are totals of the long run: they go with its own clock,
    kept as elapsed_s_inside."""
    inside = rec.get("elapsed_s_inside")
    return inside if inside else rec.get("elapsed_s")


def policy_wait_share(rec):
    """Thread-seconds per second the run spent in policy actions (waiting,
    yielding, backing off): cm_wait_s / elapsed_s, or None."""
    wait, elapsed = rec.get("cm_wait_s"), _own_elapsed(rec)
    if wait is None or not elapsed:
        return None
    return wait / elapsed


def prio_changes_per_s(rec):
    """OS priority changes per second (softser, os_prio and adaptive's
    os_prio count them), or None when the policy has no such counter."""
    stats, elapsed = rec.get("cm_stats") or {}, _own_elapsed(rec)
    for name in PRIO_STATS:
        if name in stats and elapsed:
            return stats[name] / elapsed
    return None


def _median_fn(records, fn):
    values = [x for x in map(fn, records) if x is not None]
    return statistics.median(values) if values else None


def _policy_tables(groups, workloads, variants):
    """Time in policy actions and priority changes, for the variants that
    report them (schedstm's)."""
    def reporting(fn):
        return [v for v in variants
                if any(fn(r) is not None for k, rs in groups.items() if k[2] == v for r in rs)]

    lines = []
    for fn, fmt, title in (
            (policy_wait_share, "%.2f", ["Median time in policy actions (waiting, yielding, backing off),",
                                 "in thread-seconds per second of the run."]),
            (prio_changes_per_s, "%.0f", ["Median OS priority changes per second (policies that change",
                                  "priorities)."])):
        cols = reporting(fn)
        if not cols:
            continue
        lines += [""] + title + [""]
        head = ["workload", "threads"] + cols
        lines += [_md_row(head), _md_row(["---"] * len(head))]
        for w, t in _rows(groups, workloads):
            cells = [workload_label(w), str(t)]
            for v in cols:
                x = _median_fn(groups.get((w, t, v), []), fn)
                cells.append("-" if x is None else fmt % x)
            lines.append(_md_row(cells))
    return lines


def adaptive_vs_fixed(records, groups, workload, threads, variants):
    """For each adaptive variant (label containing 'adaptive') at one point:
    (adaptive, best fixed policy, paired ratio adaptive/best, whether
    adaptive is the worst, the per-repetition ratios to the best, sorted).
    Worst is 'yes' when adaptive is below every fixed policy by the paired
    ratio (the measure of the other column; the medians could disagree
    with it when they come from different repetitions) and, where a ratio
    has an interval (median_interval), that interval lies below 1 too;
    'tied' when the ratios are all below 1 but some interval reaches 1:
    adaptive and that policy are not told apart; '' otherwise. The fixed policies
    are the other variants of the same back-end that report policy time
    (schedstm's); None when there are fewer than two."""
    def median(v):
        return median_of(groups.get((workload, threads, v), []), "commits_per_s")

    def has_policy(v):
        return any(policy_wait_share(r) is not None for r in groups.get((workload, threads, v), []))

    def engine(v):
        """(backend, design) of v's runs, when the records name them."""
        rs = groups.get((workload, threads, v), [])
        return (rs[0].get("backend"), rs[0].get("design")) if rs else (None, None)

    def same_engine(v, a):
        # The label prefix alone would take schedstm-inline-yield for a
        # fixed policy of schedstm-adaptive (prefix "schedstm-").
        if engine(a)[0] is not None:
            return engine(v) == engine(a)
        return v.startswith(a.split("-adaptive")[0] + "-")

    out = []
    for a in (v for v in variants if "adaptive" in v and median(v) is not None):
        fixed = [v for v in variants if v != a and "adaptive" not in v and has_policy(v)
                 and same_engine(v, a) and median(v) is not None]
        if len(fixed) < 2:
            continue
        best = max(fixed, key=median)
        # every fixed policy ran at this point (it has a median): these are
        # paired_ratio's pairs, without its 1-thread fallback
        pairs = {v: paired_ratios(records, workload, threads, a, v) for v in fixed}
        worst = ""
        if all(pairs[v] and statistics.median(pairs[v]) < 1.0 for v in fixed):
            ivs = [median_interval(pairs[v]) for v in fixed]
            worst = "yes" if all(iv is None or iv[1] < 1.0 for iv in ivs) else "tied"
        each = pairs[best]
        ratio = statistics.median(each) if each else None
        out.append((a, best, ratio, worst, each))
    return out


def agreement(each, line=0.9):
    """What the repetitions say about a paired ratio against `line`. From
    INTERVAL_MIN_PAIRS pairs on, its median's interval (median_interval)
    decides: 'yes' when it lies at or above the line, 'no' when below,
    'open' when it straddles it. With AGREE_MIN_REPS pairs up to that,
    every repetition must agree: 'yes' when every one is at or above the
    line, 'no' when every one is below, else 'open'; with fewer, 'open'. A
    median near the line from a few noisy repetitions decides nothing on
    its own; this column says whether the repetitions do. (Every
    repetition on one side puts the interval, whose ends are medians of
    resamples, on that side too: the interval decides more points, never
    the other way.)"""
    if len(each) < AGREE_MIN_REPS:
        return "open"
    iv = median_interval(each)
    if iv is not None:
        return "yes" if iv[0] >= line else "no" if iv[1] < line else "open"
    if all(x >= line for x in each):
        return "yes"
    if all(x < line for x in each):
        return "no"
    return "open"


def _adaptive_table(records, groups, workloads, variants):
    rows, within = [], 0
    said = {"yes": 0, "no": 0, "open": 0}
    for w, t in _rows(groups, workloads):
        for a, best, ratio, worst, each in adaptive_vs_fixed(records, groups, w, t, variants):
            agree = agreement(each)
            said[agree] += 1
            spread = "%.2fx-%.2fx" % (each[0], each[-1]) if each else "-"
            rows.append([workload_label(w), str(t), a, best, fmt_ratio(ratio, each), spread,
                         "%s (%d)" % (agree, len(each)), worst])
            within += ratio is not None and ratio >= 0.9  # not the rounded text: 0.896 is out
    if not rows:
        return []
    lines = ["", "Adaptive against the best fixed policy of each point (paired per-repetition",
             "ratio of throughputs, with its interval as above; 'worst': below every fixed",
             "policy, 'tied' where an interval reaches 1.00x). Within 10 %%: %d of %d."
             % (within, len(rows)),
             "Resolved (from %d pairs on, the interval at or above 0.90x, or below it; with"
             % INTERVAL_MIN_PAIRS,
             "%d-%d pairs, every repetition): within at %d, not within at %d; open at %d (the"
             % (AGREE_MIN_REPS, INTERVAL_MIN_PAIRS - 1, said["yes"], said["no"], said["open"]),
             "interval or the repetitions straddle 0.90x, or too few pair: the median alone",
             "decides nothing there).", ""]
    head = ["workload", "threads", "adaptive", "best fixed", "adaptive / best", "range",
            "resolved", "worst"]
    lines += [_md_row(head), _md_row(["---"] * len(head))]
    lines += [_md_row(r) for r in rows]
    return lines


def _failure_lines(records):
    failed = [r for r in records if r.get("status") != "ok"]
    if not failed:
        return []
    lines = ["", "### Failed runs (%d)" % len(failed), ""]
    for r in failed:
        lines.append("- %s %s n=%s rep %s: %s" % (  # reps counted from 1, as in the progress lines
            r.get("variant"), workload_label(workload_key(r)), r.get("threads"),
            r.get("rep"), r.get("error", "?")))
    return lines


def _md_row(cells):
    return "| " + " | ".join(cells) + " |"
