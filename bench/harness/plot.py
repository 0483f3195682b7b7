#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Figures from sweep results, in the style of the STM papers: for each
workload, throughput (commits/s) against the number of threads and, below
it, the abort rate against the number of threads; one line per variant
(back-end, design or policy), log-scaled thread axis. Lines are medians
over repetitions; the shaded band spans the fastest and slowest run. A
dotted line marks as many threads as the runs had CPUs (the sweep's "cpus"
field, read when it ran), and a caption under the figure says what the
lines, the band and that CPU count are (--caption adds to it).

Usage: plot.py results.jsonl [-o figure.png] [--abort-metric abort_ratio|aborts_per_s]
               [--title TEXT] [--caption TEXT]
Needs matplotlib (scripts/install-deps.sh --demo, or
pip install -r bench/requirements.txt). Lines of results.jsonl that are not
result records (not a JSON object, no variant or thread count) are skipped
with a warning.
"""

import argparse
import json
import math
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summary  # noqa: E402

# matplotlib, imported by need_matplotlib() when a figure is drawn: the
# module (and sweep.py, which imports it) loads without it.
plt = None
FuncFormatter = None

INSTALL_HINT = ("matplotlib is not installed: run scripts/install-deps.sh --demo "
                "(or pip install -r bench/requirements.txt)")

MAX_COLUMNS = 4
MARKERS = "osD^v<>pPX*h"


def need_matplotlib():
    """Import matplotlib (Agg back-end) on first use; ImportError with the
    way to install it when it is missing."""
    global plt, FuncFormatter
    if plt is None:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as pyplot
            from matplotlib.ticker import FuncFormatter as formatter
        except ImportError as e:
            raise ImportError("%s (%s)" % (INSTALL_HINT, e)) from e
        plt, FuncFormatter = pyplot, formatter


def valid_record(rec):
    """Why rec is not a result record the figure can use, or None."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    if not isinstance(rec.get("variant"), str):
        return "no variant name"
    threads = rec.get("threads")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        return "no thread count"
    return None


def load(path):
    """Records of a results.jsonl file; lines that are not records are
    skipped with a warning on stderr."""
    records = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                why = "not JSON"
            else:
                why = valid_record(rec)
            if why is None:
                records.append(rec)
            else:
                sys.stderr.write("plot: warning: %s line %d skipped: %s\n" % (path, number, why))
    return records


def series(records, workload, variant, field):
    """Sorted (threads, median, low, high) of field for one variant."""
    by_threads = {}
    for r in summary.ok_records(records):
        if summary.workload_key(r) == workload and r["variant"] == variant \
                and _is_number(r.get(field)):
            by_threads.setdefault(r["threads"], []).append(r[field])
    out = []
    for t in sorted(by_threads):
        values = by_threads[t]
        out.append((t, summary.statistics.median(values), min(values), max(values)))
    return out


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _rate_formatter():
    def fmt(x, _pos):
        if x >= 1e6:
            return "%gM" % (x / 1e6)
        if x >= 1e3:
            return "%gk" % (x / 1e3)
        return "%g" % x
    return FuncFormatter(fmt)


def _draw(ax, records, workload, variants, field, styles, reference_lines=False):
    """One line per variant; returns True if anything was drawn. With
    reference_lines, a variant measured at 1 thread only (sequential) is
    also drawn as a dashed horizontal reference."""
    drawn = False
    for v in variants:
        pts = series(records, workload, v, field)
        if not pts:
            continue
        xs = [p[0] for p in pts]
        color, marker = styles[v]
        if reference_lines and xs == [1]:
            ax.axhline(pts[0][1], color=color, linestyle="--", linewidth=1, alpha=0.7)
        ax.plot(xs, [p[1] for p in pts], marker=marker, color=color, label=v,
                linewidth=1.6, markersize=5)
        if len(pts) > 1:
            ax.fill_between(xs, [p[2] for p in pts], [p[3] for p in pts],
                            color=color, alpha=0.15, linewidth=0)
        drawn = True
    return drawn


def _style_threads_axis(ax, threads):
    ax.set_xscale("log", base=2)
    ax.set_xticks(threads)
    ax.set_xticklabels([str(t) for t in threads])
    ax.minorticks_off()
    if len(threads) == 1:
        ax.set_xlim(threads[0] / 1.5, threads[0] * 1.5)
    ax.grid(True, which="major", alpha=0.3)


def _styles(variants):
    # tab10 while it lasts; beyond ten lines, tab20 keeps every colour distinct
    n = 10 if len(variants) <= 10 else 20
    cmap = plt.get_cmap("tab10" if n == 10 else "tab20")
    return {v: (cmap(i % n), MARKERS[i % len(MARKERS)]) for i, v in enumerate(variants)}


def _labels(variants):
    """Legend names: when the figure has several variants of one schedstm
    back-end (policies, designs), the shared back-end prefix is dropped."""
    ours = [v for v in variants if v.startswith("schedstm")]
    for prefix in ("schedstm-inline-", "schedstm-itm-", "schedstm-"):
        if len(ours) > 1 and all(v.startswith(prefix) for v in ours):
            return {v: v[len(prefix):] if v.startswith(prefix) else v for v in variants}
    return {v: v for v in variants}


def run_cpus(records):
    """The CPU count the runs had (their "cpus" field, recorded by the sweep
    when it ran), or None when the records do not say or disagree."""
    counts = {r.get("cpus") for r in records}
    if len(counts) == 1:
        (n,) = counts
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return n
    return None


def caption_text(records, extra=None, relative=False):
    """The figure's caption: what a line, a band and the dotted line are,
    how many repetitions each point had and on how many CPUs they ran."""
    ok = summary.ok_records(records)
    runs = {}
    for r in ok:
        key = (summary.workload_key(r), r["threads"], r["variant"])
        runs[key] = runs.get(key, 0) + 1
    low, high = min(runs.values()), max(runs.values())
    reps = "%d" % low if low == high else "%d to %d" % (low, high)
    text = ("Each line is a variant's median over the %s runs of each point; the shaded "
            "band spans its slowest and fastest run (min-max over the repetitions). "
            "Threads on a log scale." % reps)
    if relative:
        text += (" The middle panel divides each run by the same variant's run at its "
                 "fewest threads in the same repetition (100 %: the throughput holds).")
    cpus = run_cpus(ok)
    models = summary.ordered_unique(r.get("cpu_model") for r in ok if r.get("cpu_model"))
    if cpus is not None:
        text += " The runs had %d CPU%s%s" % (cpus, "" if cpus == 1 else "s",
                                              " (%s)" % models[0] if len(models) == 1 else "")
        if any(r["threads"] > cpus for r in ok):
            text += ("; the dotted line marks %d threads, and to its right threads "
                     "outnumber CPUs (oversubscribed)" % cpus)
        text += "."
    else:
        text += " The CPU count of the runs was not recorded."
    if extra:
        text += " " + extra
    return text


def relative_series(records, workload, variant):
    """Sorted (threads, median, low, high) of the variant's throughput as a
    share of its own at its fewest threads, each ratio taken within one
    repetition (the runs of a repetition are made under the same machine
    conditions); low and high are the smallest and largest of those
    ratios. Empty when the variant ran at one thread count only."""
    counts = sorted({r["threads"] for r in summary.ok_records(records)
                     if summary.workload_key(r) == workload and r["variant"] == variant})
    if len(counts) < 2:
        return []
    base = summary._by_rep(records, workload, counts[0], variant)
    out = []
    for t in counts:
        mine = summary._by_rep(records, workload, t, variant)
        ratios = [x / b for key, xs in mine.items() for x, b in zip(xs, base.get(key, ()))
                  if b > 0]
        if ratios:
            out.append((t, summary.statistics.median(ratios), min(ratios), max(ratios)))
    return out


def plot_records(records, out_path, abort_metric="abort_ratio", title=None, caption=None,
                 relative=False, rate_field="commits_per_s", rate_label="commits/s"):
    """Draw the figure for records into out_path (PNG, PDF, SVG by name),
    with its caption (caption_text; `caption` is added to it). With
    relative, a panel between throughput and aborts shows each variant's
    throughput as a share of its own at its fewest threads
    (relative_series). rate_field and rate_label name the throughput
    panel's field and axis (default commits/s). ValueError when no run
    succeeded, ImportError without matplotlib."""
    need_matplotlib()
    records = [r for r in records if valid_record(r) is None]
    workloads = summary.ordered_unique(summary.workload_key(r) for r in summary.ok_records(records))
    if not workloads:
        raise ValueError("no successful runs to plot")
    variants = summary.ordered_unique(r["variant"] for r in summary.ok_records(records))
    threads = sorted({r["threads"] for r in summary.ok_records(records)})
    styles = _styles(variants)
    ncols = min(MAX_COLUMNS, len(workloads))
    blocks = math.ceil(len(workloads) / ncols)
    width = max(3.6 * ncols, 6.4)
    rows = 3 if relative else 2
    fig, axes = plt.subplots(rows * blocks, ncols, figsize=(width, 2.7 * rows * blocks),
                             squeeze=False, sharex=True)
    cpus = run_cpus(summary.ok_records(records))
    for i, w in enumerate(workloads):
        column = [axes[rows * (i // ncols) + k][i % ncols] for k in range(rows)]
        _panel_throughput(column[0], records, w, variants, styles, threads, rate_field,
                          rate_label)
        if relative:
            _panel_relative(column[1], records, w, variants, styles, threads)
        _panel_aborts(column[-1], records, w, variants, styles, threads, abort_metric)
        for ax in column:
            _mark_cpus(ax, cpus, threads)
    for j in range(len(workloads), blocks * ncols):
        for k in range(rows):
            axes[rows * (j // ncols) + k][j % ncols].set_visible(False)
    labels = _labels(variants)
    handles = [plt.Line2D([], [], color=styles[v][0], marker=styles[v][1], label=labels[v])
               for v in variants]
    if cpus is not None and threads[0] <= cpus < threads[-1]:
        handles.append(plt.Line2D([], [], color="0.35", linestyle=":",
                                  label="threads = CPUs (%d)" % cpus))
    fig.tight_layout()
    # Below the panels, so that it never covers their titles; the tight
    # bounding box of savefig takes it in, and the caption under it.
    # One row when it fits, else two even rows.
    ncol = len(handles) if len(handles) <= 5 else math.ceil(len(handles) / 2)
    legend = fig.legend(handles=handles, loc="upper center", ncol=ncol,
                        frameon=False, bbox_to_anchor=(0.5, 0.0))
    renderer = fig.canvas.get_renderer()
    box = legend.get_window_extent(renderer).transformed(fig.transFigure.inverted())
    size = 8.5
    fig.text(0.5, box.y0 - 0.01, textwrap.fill(caption_text(records, caption, relative),
                                               int(width * 72 / (size * 0.52))),
             ha="center", va="top", fontsize=size, color="0.15")
    if title:
        fig.suptitle(title, y=1.02)
    fig.savefig(out_path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return out_path


def _mark_cpus(ax, cpus, threads):
    """A dotted line at as many threads as CPUs, and a light shade over the
    oversubscribed side, when the thread axis crosses that count."""
    if cpus is None or not threads[0] <= cpus < threads[-1]:
        return
    ax.axvline(cpus, color="0.35", linestyle=":", linewidth=1.2)
    ax.axvspan(cpus, threads[-1] * 1.5, color="0.5", alpha=0.07, linewidth=0)
    ax.set_xlim(threads[0] / 1.25, threads[-1] * 1.25)


def _panel_relative(ax, records, workload, variants, styles, threads):
    base = None
    for v in variants:
        pts = relative_series(records, workload, v)
        if not pts:
            continue
        base = pts[0][0] if base is None else min(base, pts[0][0])
        xs = [p[0] for p in pts]
        color, marker = styles[v]
        ax.plot(xs, [p[1] for p in pts], marker=marker, color=color, linewidth=1.6,
                markersize=5)
        ax.fill_between(xs, [p[2] for p in pts], [p[3] for p in pts], color=color,
                        alpha=0.15, linewidth=0)
    ax.axhline(1.0, color="0.35", linewidth=0.8)
    ax.set_ylabel("share of own %s-thread\nthroughput" % (base if base else "first"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _p: "%g%%" % (100 * x)))
    ax.set_ylim(bottom=0)
    _style_threads_axis(ax, threads)


def _panel_throughput(ax, records, workload, variants, styles, threads,
                      field="commits_per_s", label="commits/s"):
    _draw(ax, records, workload, variants, field, styles, reference_lines=True)
    ax.set_title(summary.workload_label(workload), fontsize=10)
    ax.set_ylabel(label)
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(_rate_formatter())
    _style_threads_axis(ax, threads)


def _panel_aborts(ax, records, workload, variants, styles, threads, metric):
    drawn = _draw(ax, records, workload, variants, metric, styles)
    if metric == "abort_ratio":
        ax.set_ylabel("aborted attempts")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _p: "%g%%" % (100 * x)))
    else:
        ax.set_ylabel("aborts/s")
        ax.yaxis.set_major_formatter(_rate_formatter())
    if not drawn:
        ax.text(0.5, 0.5, "no abort counts", ha="center", va="center",
                transform=ax.transAxes, alpha=0.6)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("threads")
    _style_threads_axis(ax, threads)


def plot_file(jsonl_path, out_dir, abort_metric="abort_ratio"):
    """Plot a results.jsonl into out_dir/throughput.png; returns the paths."""
    records = load(jsonl_path)
    out = os.path.join(out_dir, "throughput.png")
    return [plot_records(records, out, abort_metric)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", help="results.jsonl written by sweep.py")
    p.add_argument("-o", "--output", default=None,
                   help="figure file (default: throughput.png beside the results)")
    p.add_argument("--abort-metric", choices=("abort_ratio", "aborts_per_s"),
                   default="abort_ratio")
    p.add_argument("--title", default=None)
    p.add_argument("--caption", default=None,
                   help="text added to the caption (e.g. what the variants are)")
    p.add_argument("--relative", action="store_true",
                   help="add a panel: each variant's throughput as a share of its own at "
                        "its fewest threads (paired per repetition)")
    args = p.parse_args(argv)
    out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.results)),
                                      "throughput.png")
    try:
        plot_records(load(args.results), out, args.abort_metric, args.title, args.caption,
                     args.relative)
    except (ImportError, OSError, ValueError) as e:
        sys.stderr.write("plot: error: %s\n" % e)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
