#!/usr/bin/env python3
"""Render simdattn benchmark results (Google Benchmark JSON) as tables and plots.

    tools/render.py results/*/bench.json                  Markdown on stdout
    tools/render.py --out comparison results/*/bench.json  + comparison.md,
                                                            .csv and .png
    tools/render.py --merge out.json part1.json part2.json  join the parts
                                                            of one run
    tools/render.py --peak-flag bench.json                  --sa_peak=... from
                                                            the probe rows
    tools/render.py --summary DIR bench.json bench-t2.json  DIR/summary.csv,
                                                            DIR/limit.png and
                                                            DIR/serving.md

One file per CPU (as `make compare` writes under results/<cpu>/) gives one
column group per CPU in the tables, which is how results are published.
Files from the same CPU and thread count are joined into one group.

Python 3 standard library only. The output depends on the JSON alone, so
re-rendering a results file reproduces the table `make compare` printed.
"""
import argparse
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

# What Google Benchmark appends to a name: per-benchmark settings, timing.
GB_SUFFIX = re.compile(r"(/(min_time|min_warmup_time|repeats|iterations|threads):[^/]*)*"
                       r"(/(process_time|real_time|manual_time))?$")
UNIT_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
UNIT_LABEL = {"ns": "ns", "us": "µs", "ms": "ms", "s": "s"}


# ----------------------------------------------------------------- loading

def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or "benchmarks" not in data:
        raise ValueError(f"{path}: not a Google Benchmark JSON report")
    return data


def base_name(entry):
    name = entry.get("run_name") or entry["name"]
    return GB_SUFFIX.sub("", name)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return None
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def rate(entry):
    """A probe entry's rate: GB/s or GFLOP/s (0 when it has neither)."""
    return entry.get("GBps", entry.get("GFLOPS", 0.0)) or 0.0


def pick_rows(benchmarks):
    """One record per benchmark: the median aggregate when there is one,
    else the median of its iteration runs. Keeps first-appearance order."""
    order, aggs, iters = [], {}, {}
    for e in benchmarks:
        name = base_name(e)
        if name not in aggs and name not in iters:
            order.append(name)
        if e.get("run_type") == "aggregate":
            got = aggs.setdefault(name, {})
            kind = e.get("aggregate_name")
            # a probe run twice (make compare reads memory again after the
            # attention rows): its best repetition is the better of both,
            # since noise only ever slows a probe down
            if kind == "max" and kind in got and rate(got[kind]) >= rate(e):
                continue
            got[kind] = e
        else:
            iters.setdefault(name, []).append(e)
    rows = []
    for name in order:
        if name in aggs and "median" in aggs[name]:
            e = dict(aggs[name]["median"])
            e["_aggs"] = aggs[name]
        elif name in iters:
            runs = iters[name]
            ok = [r for r in runs if not r.get("error_occurred")]
            if not ok:
                e = dict(runs[0])
            else:
                ok.sort(key=lambda r: r.get("cpu_time", 0.0))
                e = dict(ok[(len(ok) - 1) // 2])
                e["repetitions"] = len(ok)
        else:
            continue
        e["base"] = name
        rows.append(e)
    return rows


class Run:
    """The results of one CPU (and thread count): context and rows."""

    def __init__(self, ctx):
        self.ctx = dict(ctx)
        self.rows = {}   # base name -> entry
        self.order = []

    def add(self, entries):
        for e in entries:
            if e["base"] not in self.rows:
                self.order.append(e["base"])
            self.rows[e["base"]] = e

    @property
    def slug(self):
        return self.ctx.get("sa_cpu_slug") or self.ctx.get("host_name", "cpu")

    @property
    def threads(self):
        try:
            return int(self.ctx.get("sa_threads", "1"))
        except ValueError:
            return 1

    @property
    def label(self):
        t = self.threads
        return self.slug + (f" ({t} threads)" if t > 1 else "")

    def cpu_timed(self):
        return not self.ctx.get("sa_timing", "").startswith("wall")

    # -- derived values

    def set_info(self, name):
        about = self.ctx.get("sa_set_" + name, "")
        m = re.search(r"\[isa ([^,\]]+), exp ([^\]]+)\]$", about)
        return (m.group(1), m.group(2)) if m else (None, None)

    def mem_probes(self):
        """The memory probes: {(what, threads): (isa, size, GB/s, entry)} for
        peak/read/<isa>/<size>_t<n> and peak/triad/baseline/<size>_t<n>
        (older files: peak/mem/read_<size>, one thread). Best repetition."""
        out = {}
        for name, e in self.rows.items():
            if e.get("error_occurred"):
                continue
            e = e.get("_aggs", {}).get("max", e)
            p = name.split("/")
            m = re.fullmatch(r"(.+)_t(\d+)", p[3]) if len(p) == 4 else None
            if m and p[:2] in (["peak", "read"], ["peak", "triad"]) and "GBps" in e:
                out[(p[1], int(m.group(2)))] = (p[2], m.group(1), e["GBps"], e)
            elif len(p) == 3 and p[:2] == ["peak", "mem"] and "GBps" in e:
                out[("read", 1)] = ("", p[2].replace("read_", ""), e["GBps"], e)
        return out

    def peaks(self):
        """Probe results: the best repetition (the "max" aggregate) when there
        is one, since noise only ever slows a probe down; else the median.
        mem: (label, GB/s) of the read probe at the run's thread count, what
        decode rows are measured against."""
        fma = {}
        for name, e in self.rows.items():
            if e.get("error_occurred"):
                continue
            e = e.get("_aggs", {}).get("max", e)
            p = name.split("/")
            if len(p) == 3 and p[:2] == ["peak", "fma"] and "GFLOPS" in e:
                fma[p[2]] = e["GFLOPS"]
        probe = self.mem_probes().get(("read", self.threads))
        mem = (f"{probe[0]} {probe[1]}".strip(), probe[2]) if probe else None
        return fma, mem

    def time_of(self, e):
        return e.get("cpu_time" if self.cpu_timed() else "real_time")


def load_runs(paths):
    runs = []
    for path in paths:
        data = load(path)
        ctx = data.get("context", {})
        key = (ctx.get("sa_cpu_slug") or ctx.get("host_name"), ctx.get("sa_threads", "1"))
        for r in runs:
            if (r.slug, r.ctx.get("sa_threads", "1")) == key:
                break
        else:
            r = Run(ctx)
            runs.append(r)
        r.add(pick_rows(data["benchmarks"]))
    return runs


# ----------------------------------------------------------------- numbers

def sig(x, digits=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if x == 0:
        return "0"
    mag = int(math.floor(math.log10(abs(x))))
    decimals = max(0, digits - 1 - mag)
    return f"{x:.{decimals}f}"


def fmt_time(t, unit):
    return "—" if t is None else f"{sig(t)} {UNIT_LABEL.get(unit, unit)}"


def fmt_pct(p, suffix=""):
    return "—" if p is None else f"{p:.1f}%{suffix}"


def fmt_ratio(r):
    return "—" if r is None else f"{sig(r)}×"


def fmt_err(e):
    if e is None:
        return "—"
    if isinstance(e, float) and math.isnan(e):
        return "NaN"
    return "0" if e == 0 else f"{e:.1e}"


# ----------------------------------------------------------------- the model

# The baseline rows (attn/gemm/<name>/<shape>), in the tables' column order.
BASELINES = ("openblas", "onednn")

def analyse(run):
    """Returns a list of dicts, one per row, with every derived value."""
    fma, mem = run.peaks()
    threads = run.threads
    oracle = run.ctx.get("sa_oracle", "scalar")
    best = max(fma.values()) if fma else None
    out = []
    for name in run.order:
        e = run.rows[name]
        p = name.split("/")
        if p[0] == "peak":
            e = e.get("_aggs", {}).get("max", e)
        r = {"name": name, "kind": p[0], "run": run, "entry": e,
             "error": e.get("error_message") if e.get("error_occurred") else None,
             "time": run.time_of(e), "unit": e.get("time_unit", "ns"),
             "reps": e.get("repetitions", 1),
             "gflops": e.get("GFLOPS"), "gbps": e.get("GBps"),
             "items": e.get("items_per_second"),
             "err": e.get("max_abs_err"), "pct": None, "pct_bw": None,
             "vs_scalar": None, "vs_openblas": None, "vs_onednn": None,
             "label": e.get("label", "")}
        if p[0] == "peak":
            r.update(op=p[1], set=p[2], shape=p[3] if len(p) == 4 else "")
        elif p[0] == "kernel" and len(p) == 4:
            r.update(op=p[1], set=p[2], shape=p[3])
        elif p[0] == "attn" and len(p) == 4:
            r.update(op=p[1], set=p[2], shape=p[3])
        else:
            r.update(op="", set="", shape="")
        if r["kind"] in ("kernel", "attn") and r["gflops"] is not None and not r["error"]:
            isa = run.set_info(r["set"])[0]
            peak = fma.get(isa) if isa else (best if r["set"] in BASELINES else None)
            if peak:
                r["pct"] = 100.0 * r["gflops"] / (peak * threads)
            elif "pct_peak" in e:
                r["pct"] = e["pct_peak"]
            if r["gbps"] is not None:
                if mem:
                    r["pct_bw"] = 100.0 * r["gbps"] / mem[1]
                elif "pct_peak_bw" in e:
                    r["pct_bw"] = e["pct_peak_bw"]
        out.append(r)

    # Ratios: against the oracle with the same operation/algorithm (the
    # baselines: against the oracle's three_pass, the same three steps), and
    # against each baseline on the same shape. Speed ratios: > 1 is faster.
    index = {(r["kind"], r["op"], r["set"], r["shape"]): r for r in out}
    for r in out:
        if r["kind"] not in ("kernel", "attn") or r["error"]:
            continue
        speed = r["gflops"] if r["gflops"] is not None else r["items"]
        op = "three_pass" if r["set"] in BASELINES else r["op"]
        base = index.get((r["kind"], op, oracle, r["shape"]))
        if base and not base["error"]:
            bs = base["gflops"] if base["gflops"] is not None else base["items"]
            if speed and bs:
                r["vs_scalar"] = speed / bs
        if r["kind"] == "attn":
            for b in BASELINES:
                ob = index.get(("attn", "gemm", b, r["shape"]))
                if ob and not ob["error"] and ob["gflops"] and speed:
                    r["vs_" + b] = speed / ob["gflops"]
    return out


# ----------------------------------------------------------------- markdown

def header_lines(run):
    c = run.ctx
    fma, mem = run.peaks()
    lines = [f"**{c.get('sa_cpu_model', '?')}** (`{run.slug}`)", ""]
    lines.append(f"- SIMD features: {c.get('sa_cpu_features', '?')}")
    lines.append(f"- Compiler: {c.get('sa_compiler', '?')}; flags: {c.get('sa_cflags', '?')}")
    libs = [f"simdattn {c.get('sa_version_simdattn', '?')}",
            f"SLEEF {c.get('sa_version_sleef', '?')}",
            f"hwloc {c.get('sa_version_hwloc', '?')}",
            f"Google Benchmark {c.get('sa_version_gbench', '?')}"]
    lines.append("- Libraries: " + ", ".join(libs))
    lines.append(f"- OpenBLAS: {c.get('sa_openblas', 'not in this run')}")
    lines.append(f"- oneDNN: {c.get('sa_onednn', 'not in this run')}")
    ran = [b for b in BASELINES
           if any(n.startswith(f"attn/gemm/{b}/") for n in run.rows)]
    lines.append(f"- Baselines in this run: {', '.join(ran) or 'none'}")
    t = c.get("sa_threads", "?")
    asked = c.get("sa_threads_asked")
    tline = f"- Threads: {t}" + (f" (asked {asked})" if asked else "")
    tline += f", {c.get('sa_pinning', '?')}; timing: {c.get('sa_timing', '?')}"
    reps = [e.get("repetitions", 1) for n, e in run.rows.items()
            if not n.startswith("peak/")]
    if reps:
        most = max(set(reps), key=reps.count)
        tline += f"; median of {most} repetitions"
        few = sum(1 for x in reps if x < most)
        if few:
            tline += f" ({few} slow rows: {min(reps)})"
    lines.append(tline)
    pk = ", ".join(f"{isa} {sig(v)}" for isa, v in fma.items())
    pl = f"- Peaks measured in this run (one thread, best repetition): FMA {pk or '—'} GFLOP/s"
    lines.append(pl)
    probes = run.mem_probes()
    reads = sorted((t, v) for (w, t), v in probes.items() if w == "read")
    if reads:
        isa, size = reads[0][1][0], reads[0][1][1]
        ml = (f"- Read bandwidth ({isa + ' ' if isa else ''}read probe, {size}, "
              "best pass): " + ", ".join(
                  f"{t} thread{'s' if t > 1 else ''} {sig(v[2])} GB/s" for t, v in reads))
        pf = [v[3] for _, v in reads if "GBps_prefetch" in v[3]]
        if pf:
            ml += (" (without software prefetch / every line / each page's first"
                   " line / every line into L2 / four streams / every line and each"
                   " page's first line: " + ", ".join(
                       f"{sig(e['GBps_no_prefetch'])} / {sig(e['GBps_prefetch'])} / "
                       f"{sig(e.get('GBps_prefetch_pages', 0))} / "
                       f"{sig(e.get('GBps_prefetch_l2', 0))} / "
                       f"{sig(e.get('GBps_streams', 0))} / "
                       f"{sig(e.get('GBps_lines_pages', 0))}" for e in pf) + ")")
        ml += f"; decode rows' `bw` is of the {run.threads}-thread figure"
        triads = sorted((t, v) for (w, t), v in probes.items() if w == "triad")
        if triads:
            ml += "; triad (reference only): " + ", ".join(
                f"{sig(v[2])} GB/s ({t} thread{'s' if t > 1 else ''})" for t, v in triads)
        lines.append(ml)
    sets_line = (f"- Kernel sets run: {c.get('sa_sets_run', '?')}; "
                 f"skipped (CPU lacks them): {c.get('sa_sets_skipped', '?')}")
    if c.get("sa_sets_reference", "none") != "none":
        sets_line += (f"; accuracy references, not timed: "
                      f"{c['sa_sets_reference']} (see accuracy.md)")
    lines.append(sets_line)
    lines.append(f"- Suite: {c.get('sa_suite', '?')}; date {c.get('date', '?')}; "
                 f"host {c.get('host_name', '?')}, {c.get('num_cpus', '?')} CPUs")
    return lines


def table(head, align, rows):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" if a == "l" else "--:" for a in align) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return out


def merged_keys(models, kind):
    """(op, set, shape) keys of `kind` rows across runs, first-seen order."""
    keys, seen = [], set()
    for m in models:
        for r in m:
            if r["kind"] != kind:
                continue
            k = (r["op"], r["set"], r["shape"])
            if k not in seen:
                seen.add(k)
                keys.append(k)
    return keys


def attn_order(keys):
    shapes = []
    for k in keys:
        if k[2] not in shapes:
            shapes.append(k[2])
    return sorted(keys, key=lambda k: (shapes.index(k[2]), keys.index(k)))


def render_markdown(runs, models):
    multi = len(runs) > 1
    L = ["# simdattn benchmarks", ""]
    for i, run in enumerate(runs):
        lines = header_lines(run)
        if multi:
            lines[0] = f"[{i + 1}] " + lines[0]
        L += lines + [""]

    def cells(r, metrics):
        if r is None:
            return ["—"] * len(metrics)
        if r["error"]:
            return ["error: " + r["error"][:60]] + ["—"] * (len(metrics) - 1)
        out = []
        for m in metrics:
            if m == "time":
                out.append(fmt_time(r["time"], r["unit"]))
            elif m == "gflops":
                out.append(sig(r["gflops"]))
            elif m == "gbps":
                out.append(sig(r["gbps"]) if r["gbps"] is not None else "")
            elif m == "gflops_gbps":
                g = sig(r["gflops"])
                out.append(g + (f" ({sig(r['gbps'])} GB/s)" if r["gbps"] is not None else ""))
            elif m == "rate":
                if r["gflops"] is not None:
                    out.append(sig(r["gflops"]) + " GFLOP/s")
                elif r["items"] is not None:
                    out.append(sig(r["items"] * 1e-9) + " Gelem/s")
                else:
                    out.append("—")
            elif m == "pct":
                if r["pct_bw"] is not None:
                    out.append(fmt_pct(r["pct_bw"], " bw"))
                else:
                    out.append(fmt_pct(r["pct"]) if r["pct"] is not None else "—")
            elif m == "vs_scalar":
                out.append(fmt_ratio(r["vs_scalar"]))
            elif m == "vs_openblas":
                out.append(fmt_ratio(r["vs_openblas"]))
            elif m == "vs_onednn":
                out.append(fmt_ratio(r["vs_onednn"]))
            elif m == "err":
                out.append(fmt_err(r["err"]))
        return out

    def prefixed(names):
        if not multi:
            return names
        return [f"[{i + 1}] {n}" for i in range(len(runs)) for n in names]

    idx = [{(r["kind"], r["op"], r["set"], r["shape"]): r for r in m} for m in models]

    # Attention
    keys = attn_order(merged_keys(models, "attn"))
    if keys:
        if multi:  # narrower: one column group per CPU
            metrics = ["gflops_gbps", "pct", "vs_scalar", "vs_openblas", "vs_onednn",
                       "err"]
            names = ["GFLOP/s", "% peak", "× scalar", "× OpenBLAS", "× oneDNN",
                     "max abs err"]
        else:
            metrics = ["time", "gflops", "gbps", "pct", "vs_scalar", "vs_openblas",
                       "vs_onednn", "err"]
            names = ["time", "GFLOP/s", "GB/s", "% peak", "× scalar", "× OpenBLAS",
                     "× oneDNN", "max abs err"]
        L += ["## Attention (sa_attention, batch 1, per call)", ""]
        rows = []
        for (op, s, shape) in keys:
            row = [shape, f"{op} {s}"]
            for i in idx:
                row += cells(i.get(("attn", op, s, shape)), metrics)
            rows.append(row)
        L += table(["shape", "variant"] + prefixed(names),
                   ["l", "l"] + ["r"] * (len(names) * len(runs)), rows)
        L += ["",
              "GFLOP/s: 4·d·(visible query-key pairs)·heads per call, d = dim_qk = dim_v "
              "(causal: only the pairs the mask lets through, L·(L+1)/2 per head). "
              "GB/s (decode): bytes of K and V read per call. "
              "% peak: of this run's FMA probe for the row's ISA (baselines: the best "
              "probe), times the threads; `bw`: of the read probe at the run's "
              "thread count. "
              "× scalar: speed over the scalar set with the same algorithm "
              "(baselines: over scalar three_pass). × OpenBLAS: speed over the "
              "cblas_sgemm + softmax + cblas_sgemm baseline; × oneDNN: over "
              "oneDNN's matmul + softmax + matmul primitives. max abs err: against "
              "the scalar set's three_pass output on the same inputs (the big "
              "summary shapes: on the first KV head's query heads).", ""]

    # Micro-kernels
    keys = merged_keys(models, "kernel")
    if keys:
        metrics = (["rate", "pct", "vs_scalar"] if multi
                   else ["time", "rate", "pct", "vs_scalar"])
        names = (["rate", "% peak", "× scalar"] if multi
                 else ["time", "rate", "% peak", "× scalar"])
        L += ["## Micro-kernels (one tile of 64 query rows, in cache, per call)", ""]
        rows = []
        for (op, s, shape) in keys:
            row = [op, shape, s]
            for i in idx:
                row += cells(i.get(("kernel", op, s, shape)), metrics)
            rows.append(row)
        L += table(["kernel", "tile", "set"] + prefixed(names),
                   ["l", "l", "l"] + ["r"] * (len(names) * len(runs)), rows)
        L += ["",
              "score, wsum: 2·m·n·d flops per call; softmax, softmax_online(2): "
              "elements (m·n) per second.", ""]

    # Peaks
    keys = merged_keys(models, "peak")
    if keys:
        L += ["## Peak probes (same run, best repetition; FMA: one thread)", ""]
        rows = []
        for (op, s, shape) in keys:
            row = [f"peak/{op}/{s}" + (f"/{shape}" if shape else "")]
            for i in idx:
                r = i.get(("peak", op, s, shape))
                if r is None or r["error"]:
                    row.append("—")
                elif r["gbps"] is not None:
                    row.append(sig(r["gbps"]) + " GB/s" +
                               (" (reference only)" if op == "triad" else ""))
                else:
                    row.append(sig(r["gflops"]) + " GFLOP/s")
            rows.append(row)
        L += table(["probe"] + ([f"[{i + 1}] {run.label}" for i, run in enumerate(runs)]
                                if multi else ["value"]),
                   ["l"] + ["r"] * len(runs), rows)
        L += [""]
    return "\n".join(L).rstrip() + "\n"


# ----------------------------------------------------------------- CSV

CSV_FIELDS = ["cpu", "cpu_model", "threads", "kind", "op", "set", "shape", "name",
              "time", "time_unit", "repetitions", "gflops", "gbps",
              "items_per_second", "pct_peak", "pct_peak_bw", "speedup_vs_scalar",
              "speed_vs_openblas", "max_abs_err", "error", "speed_vs_onednn"]


def write_csv(path, runs, models):
    def num(x):
        return "" if x is None else repr(float(x))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CSV_FIELDS)
        for run, m in zip(runs, models):
            for r in m:
                w.writerow([run.slug, run.ctx.get("sa_cpu_model", ""), run.threads,
                            r["kind"], r["op"], r["set"], r["shape"], r["name"],
                            num(r["time"]), r["unit"], r["reps"], num(r["gflops"]),
                            num(r["gbps"]), num(r["items"]), num(r["pct"]),
                            num(r["pct_bw"]), num(r["vs_scalar"]),
                            num(r["vs_openblas"]), num(r["err"]), r["error"] or "",
                            num(r["vs_onednn"])])


# ----------------------------------------------------------------- plot

# (light, dark) per kernel set: three_pass light, fused dark.
PALETTE = [("#9e9e9e", "#424242"), ("#90caf9", "#1565c0"), ("#a5d6a7", "#2e7d32"),
           ("#ffcc80", "#e65100"), ("#ef9a9a", "#c62828"), ("#ce93d8", "#6a1b9a"),
           ("#80deea", "#00838f"), ("#fff59d", "#f9a825"), ("#bcaaa4", "#4e342e")]

def bar_styles(variants):
    """One colour per kernel set or baseline, darker for fused."""
    sets = []
    for v in variants:
        s = v.split(" ", 1)[-1]
        if s not in sets:
            sets.append(s)
    styles = []
    for v in variants:
        algo, s = (v.split(" ", 1) + [""])[:2]
        base = PALETTE[sets.index(s) % len(PALETTE)]
        colour = base[1] if algo == "fused" else base[0]
        styles.append(f"lc rgb '{colour}'")
    return styles


def gnuplot_bars(png, title, ylabel, groups, variants, val, yaxis):
    """Clustered bars, one cluster per group and one bar per variant;
    val[(group, variant)] -> number; yaxis: gnuplot lines for the y axis."""
    gp = shutil.which("gnuplot")
    if not gp:
        print("render: gnuplot not found (gnuplot-nox): no plot", file=sys.stderr)
        return False
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "plot.dat")
        with open(dat, "w", encoding="utf-8") as f:
            f.write("group\t" + "\t".join(f'"{v}"' for v in variants) + "\n")
            for g in groups:
                f.write(f'"{g}"\t' + "\t".join(
                    repr(val[(g, v)]) if (g, v) in val else "?" for v in variants) + "\n")
        plots = ", ".join(
            f"'{dat}' using {i + 2}:xtic(1) title columnheader({i + 2}) {st}"
            for i, st in enumerate(bar_styles(variants)))
        width = min(1800, max(1000, 14 * len(groups) * max(1, len(variants))))
        script = f"""
set terminal pngcairo size {width},700 font ",10" noenhanced
set output '{png}'
set title '{title}'
set datafile missing '?'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
{yaxis}
set ylabel '{ylabel}'
set grid ytics
set xtics rotate by 30 right scale 0
set key outside right top
plot {plots}
"""
        res = subprocess.run([gp], input=script, text=True, capture_output=True)
        if res.returncode != 0 or not os.path.exists(png):
            # pngcairo may be missing: retry with the libgd png terminal
            script = script.replace('pngcairo size', 'png size').replace(' font ",10"', '')
            res = subprocess.run([gp], input=script, text=True, capture_output=True)
        if res.returncode != 0:
            print("render: gnuplot failed:\n" + res.stderr, file=sys.stderr)
            return False
    return True


def write_plot(png, run, model):
    """Clustered bars: GFLOP/s of every attention variant per shape (log y)."""
    rows = [r for r in model if r["kind"] == "attn"]
    shapes, variants = [], []
    for r in rows:
        if r["shape"] not in shapes:
            shapes.append(r["shape"])
        v = f"{r['op']} {r['set']}"
        if v not in variants:
            variants.append(v)
    if not shapes:
        return False
    val = {(r["shape"], f"{r['op']} {r['set']}"): r["gflops"] for r in rows
           if not r["error"] and r["gflops"]}
    lo = min(val.values()) if val else 1.0
    ymin = 10 ** math.floor(math.log10(lo)) if lo > 0 else 0.1
    title = f"simdattn attention, {run.ctx.get('sa_cpu_model', run.slug)}, " \
            f"{run.threads} thread(s): GFLOP/s (log scale)"
    return gnuplot_bars(png, title, "GFLOP/s", shapes, variants, val,
                        f"set logscale y\nset yrange [{ymin}:*]")


# ----------------------------------------------------------------- summary

# summary.csv's columns, in order: a stable schema (README, "summary.csv").
SUMMARY_FIELDS = ("variant,algorithm,shape,batch,heads_q,heads_kv,len_q,len_kv,"
                  "dim,causal,threads,gflops,pct_peak,gbps,pct_bw,ratio_openblas,"
                  "ratio_onednn,max_abs_err").split(",")


def summary_rows(runs, models):
    """One dict per (variant, algorithm, shape, threads): the attention rows
    the bench labelled with a summary shape name, shapes in the order the
    runs first name them, then by threads."""
    out = []
    for run, m in zip(runs, models):
        for r in m:
            if r["kind"] != "attn" or not r["label"] or r["error"]:
                continue
            e = r["entry"]
            row = {"variant": r["set"], "algorithm": r["op"], "shape": r["label"],
                   "threads": run.threads, "gflops": r["gflops"],
                   "pct_peak": r["pct"], "gbps": r["gbps"], "pct_bw": r["pct_bw"],
                   "ratio_openblas": r["vs_openblas"],
                   "ratio_onednn": r["vs_onednn"], "max_abs_err": r["err"]}
            for k in ("batch", "heads_q", "heads_kv", "len_q", "len_kv", "dim",
                      "causal"):
                row[k] = int(e[k]) if k in e else None
            out.append(row)
    shapes = []
    for row in out:
        if row["shape"] not in shapes:
            shapes.append(row["shape"])
    return sorted(out, key=lambda row: (shapes.index(row["shape"]), row["threads"]))


def write_summary(path, rows):
    def cell(x):
        if x is None:
            return ""  # the column does not apply (gbps of a prefill row)
        if isinstance(x, float):
            return f"{x:.6g}"
        return str(x)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(SUMMARY_FIELDS)
        for row in rows:
            w.writerow([cell(row[k]) for k in SUMMARY_FIELDS])


def write_limit_plot(png, runs, rows):
    """The distance to the limit: per summary shape (and thread count), each
    variant's % of peak, or of read bandwidth for decode, on a linear axis
    whose 100 is the measured limit."""
    groups, variants, val = [], [], {}
    for row in rows:
        bw = row["pct_bw"] is not None
        g = row["shape"] + (f" {row['threads']}T" if row["threads"] > 1 else "") + \
            (" (bw)" if bw else "")
        v = f"{row['algorithm']} {row['variant']}"
        if g not in groups:
            groups.append(g)
        if v not in variants:
            variants.append(v)
        pct = row["pct_bw"] if bw else row["pct_peak"]
        if pct is not None:
            val[(g, v)] = pct
    if not groups:
        return False
    top = max([100.0] + list(val.values()))
    model = runs[0].ctx.get("sa_cpu_model", runs[0].slug)
    title = (f"simdattn, {model}: % of the measured limit (FMA peak; decode (bw): "
             "read bandwidth), 100 = the probe")
    return gnuplot_bars(png, title, "% of limit", groups, variants, val,
                        f"set yrange [0:{math.ceil(top / 10) * 10}]\n"
                        "set ytics 10\nset arrow from graph 0, first 100 to "
                        "graph 1, first 100 nohead lw 2 dt 2 lc rgb 'black'")


# ----------------------------------------------------------------- serving

# The serving checks make compare prints: each from a pair row of the
# one-thread pass (bench/bench_attention.c: two calls timed in turn, the
# medians of each side and their ratio), or, for padding, from two table
# rows (a margin of 2x, which the minute's noise does not move). The check,
# the pair's name (after pair/<set>/) or the two rows' shapes, the line, and
# whether a ratio at or under it (time) or at or over it (speedup) meets it;
# "read": the plain reads of the paged check above it (pair/plain-read/...,
# no set), what memory allows that check, with no line of its own.
READ_SET = "plain-read"
SERVING = [
    ("paged decode, 16-key pages shuffled, over contiguous",
     "decode_b8_mixed_Lk4096_d128_h32kv8_page16_over_decode_b8_mixed_Lk4096_d128_h32kv8",
     "time ≤ 1.10×", 1.10, "time"),
    ("plain read of those rows in avx512 decode's order, 16-key pages over contiguous",
     "decode_b8_mixed_Lk4096_d128_h32kv8_page16_over_decode_b8_mixed_Lk4096_d128_h32kv8",
     "what memory allows", None, "read"),
    ("paged decode, 256-key pages shuffled, over contiguous",
     "decode_b8_mixed_Lk4096_d128_h32kv8_page256_over_decode_b8_mixed_Lk4096_d128_h32kv8",
     "time ≤ 1.10×", 1.10, "time"),
    ("plain read of those rows in avx512 decode's order, 256-key pages over contiguous",
     "decode_b8_mixed_Lk4096_d128_h32kv8_page256_over_decode_b8_mixed_Lk4096_d128_h32kv8",
     "what memory allows", None, "read"),
    ("varlen prefill, 8 sequences, over separate calls",
     "prefill_8seq_L100-2000_d128_h4_varlen_over_prefill_8seq_L100-2000_d128_h4_separate",
     "time ≤ 1.10×", 1.10, "time"),
    ("split-KV MQA decode, Lk 32768, 1 thread over 2",
     "decode_Lk32768_d128_h32kv1_1t_over_2t", "speedup ≥ 1.8×", 1.8, "speedup"),
    ("varlen prefill over padding to the longest",
     ("prefill_8seq_L100-2000_d128_h4_varlen", "prefill_8seq_L100-2000_d128_h4_padded"),
     "time < 1×", 1.0, "below"),
]


def serving_markdown(runs, models):
    """The serving checks for every timed set of the one-thread run, from its
    pair rows (and, for padding, its table rows). Empty when the run has
    none of them (the quick suite's shapes have other names)."""
    one = [(run, m) for run, m in zip(runs, models) if run.threads == 1]
    if not one:
        return ""
    run, model = one[0]
    pairs, rows = {}, {}
    for r in model:
        if r["error"]:
            continue
        p = r["name"].split("/")
        if p[0] == "pair" and len(p) >= 3:
            pairs[(p[1], p[2])] = r["entry"]
        elif r["kind"] == "attn" and r["op"] == "fused":
            rows[(r["set"], r["shape"])] = r
    sets = []
    for s, _ in list(pairs) + list(rows):
        if (s not in sets and s not in BASELINES and s != READ_SET
                and s != run.ctx.get("sa_oracle", "scalar")):
            sets.append(s)
    out = []
    for what, key, line, limit, how in SERVING:
        if how == "read":
            e = pairs.get((READ_SET, key))
            if e and e.get("ms_b"):
                out.append([what, "(plain C)",
                            f"{sig(e['ratio'])}× ({sig(e['GBps_a'])} / "
                            f"{sig(e['GBps_b'])} GB/s)", line, "—"])
            continue
        for s in sets:
            if how == "below":
                a, b = rows.get((s, key[0])), rows.get((s, key[1]))
                if not a or not b or not b["time"]:
                    continue
                ratio, sides = a["time"] / b["time"], ""
            else:
                e = pairs.get((s, key))
                if not e or not e.get("ms_b"):
                    continue
                ratio = e["ratio"]
                sides = f" ({sig(e['ms_a'])} / {sig(e['ms_b'])} ms)"
            ok = (ratio >= limit if how == "speedup" else
                  ratio < limit if how == "below" else ratio <= limit)
            out.append([what, s, f"{sig(ratio)}×{sides}", line, "yes" if ok else "**no**"])
    if not out:
        return ""
    L = ["# simdattn serving layouts", "",
         f"{run.label}: fused, one-thread run. Pairs: both calls timed in turn, "
         "iteration by iteration, on the same copy of K and V (the split-KV pair "
         "on a 1- and a 2-thread context, wall time, the 2-thread context's workers "
         "kept awake through the other call, spin_us 50000), median of each side, "
         "then the median over the repetitions; padding: two rows of the table. "
         "Plain read: the K and V rows of the paged check above it, read by a plain "
         "loop in the order and with the prefetches of the avx512 decode kernel "
         "(pages: a sequence's KV heads in turns; K and V side by side) beside the "
         "contiguous cache's, no arithmetic: the ratio memory alone sets for that "
         "order on this machine.", ""]
    L += table(["check", "set", "measured", "target", "met"],
               ["l", "l", "r", "l", "l"], out)
    return "\n".join(L).rstrip() + "\n"


# ----------------------------------------------------------------- commands

def merge(out, paths):
    """Joins the JSON parts of one run: the first context, all benchmarks."""
    merged = None
    for p in paths:
        d = load(p)
        if merged is None:
            merged = {"context": d.get("context", {}), "benchmarks": []}
        elif d.get("context", {}).get("sa_cpu_slug") != merged["context"].get("sa_cpu_slug"):
            raise SystemExit(f"render: {p} is from another CPU; render them together "
                             "instead of merging")
        merged["benchmarks"] += d["benchmarks"]
    if merged is None:
        raise SystemExit("render: nothing to merge")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(merged, f, indent=1)
        f.write("\n")


def peak_flag(path):
    run = load_runs([path])[0]
    fma, mem = run.peaks()
    parts = [f"{isa}:{v:.6g}" for isa, v in fma.items()]
    if mem:
        parts.append(f"mem:{mem[1]:.6g}")
    return "--sa_peak=" + ",".join(parts) if parts else ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+", help="Google Benchmark JSON files")
    ap.add_argument("--out", help="write OUT.md, OUT.csv and OUT.png "
                    "(OUT-<cpu>.png per CPU when several)")
    ap.add_argument("--quiet", action="store_true", help="do not print the table")
    ap.add_argument("--merge", metavar="OUT_JSON",
                    help="join the given JSON parts of one run into OUT_JSON")
    ap.add_argument("--peak-flag", action="store_true",
                    help="print --sa_peak=... from the probe rows and exit")
    ap.add_argument("--summary", metavar="DIR",
                    help="write DIR/summary.csv and DIR/limit.png from the runs "
                    "given (one CPU, any thread counts) and exit")
    a = ap.parse_args(argv)

    if a.merge:
        merge(a.merge, a.json)
        return 0
    if a.peak_flag:
        print(peak_flag(a.json[0]))
        return 0

    runs = load_runs(a.json)
    models = [analyse(r) for r in runs]
    if a.summary:
        rows = summary_rows(runs, models)
        os.makedirs(a.summary, exist_ok=True)
        write_summary(os.path.join(a.summary, "summary.csv"), rows)
        ok = write_limit_plot(os.path.abspath(os.path.join(a.summary, "limit.png")),
                              runs, rows)
        serving = serving_markdown(runs, models)
        path = os.path.join(a.summary, "serving.md")
        if serving:
            with open(path, "w", encoding="utf-8") as f:
                f.write(serving)
            if not a.quiet:
                sys.stdout.write("\n" + serving)
        elif os.path.exists(path):
            os.remove(path)  # not this run's
        return 0 if ok and rows else 1
    md = render_markdown(runs, models)
    if not a.quiet:
        sys.stdout.write(md)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out + ".md", "w", encoding="utf-8") as f:
            f.write(md)
        write_csv(a.out + ".csv", runs, models)
        ok = True
        for run, m in zip(runs, models):
            png = a.out + ".png" if len(runs) == 1 else f"{a.out}-{run.slug}.png"
            ok &= write_plot(os.path.abspath(png), run, m)
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
