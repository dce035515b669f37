#!/usr/bin/env python3
"""Writes the generated parts of docs/performance.md from `bp bench --json`.

usage: tools/bench_report.py [--doc FILE] [--check]

The document names, in each generated region's opening marker, what the
region is and which JSON files back it (paths relative to the document,
shell globs allowed):

    <!-- BEGIN GENERATED: tools/bench_report.py KIND [key=value ...] FILE ... -->
    <!-- END GENERATED: tools/bench_report.py -->

Every run of the script rewrites every region from its files, so a new
measurement is taken in by replacing (or adding) a JSON file under
docs/perf/ and running the script again. The kinds:

  machine   the machine (peak, bandwidth) and each library anchor's
            version and selected kernel, from the first file
  summary   per op family and type: ratio to the best anchor (or, for
            attention, to our unfused chain), the target, met or missed;
            `model` files add the end-to-end targets
  bench     one table of the cases of `ops=OP[,OP]` (runs of the same case
            merged: each side's best time over the files, ratios from those)
  attention the fused attention cases: f32 against our unfused chain and
            PyTorch, and the bf16 kernel against the f32 one
  model     the `bp bench --op model --json` table
  charts    `name=NAME`: a bar chart of the ratios to the best anchor and a
            roofline (docs/perf/ratios-NAME.svg, roofline-NAME.svg)

Everything outside the markers is left as it is. --check rewrites nothing:
it exits 1 when a region's text differs from what its files give, a chart
it names is missing, or a JSON file beside the charts backs no region (it
draws nothing, so it needs no matplotlib).

Needs Python 3; drawing needs matplotlib (Debian: python3-matplotlib, which
tools/deps.sh bench installs).
"""
import argparse
import glob
import json
import math
import os
import re
import shlex
import sys

BEGIN = "<!-- BEGIN GENERATED: tools/bench_report.py"
END = "<!-- END GENERATED: tools/bench_report.py -->"
REGION = re.compile(re.escape(BEGIN) + r" (?P<spec>[^\n]*?) -->\n(?P<body>.*?)" + re.escape(END), re.S)

# issue 22's targets, per (op, dtype): the least ratio to the best anchor
TARGETS = {("gemm", "f32"): 1.0, ("gemm", "f64"): 1.0, ("gemm", "bf16"): 1.0, ("gemm", "f16"): 1.0,
           ("conv2d", "f32"): 1.0, ("conv2d", "bf16"): 1.0}
ATT_UNFUSED_TARGET = 1.5  # fused at least this much faster than our unfused chain
ATT_BF16_TARGET = 3.0  # the bf16 kernel (AMX tiles where the CPU has them) at least this much faster than f32


def fmt(v, digits=1):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}"


def rfmt(ratio):
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def span(values, suffix="×", form=None):
    """least–most of the values, as one figure when they round alike"""
    form = form or rfmt
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    lo, hi = form(min(values)), form(max(values))
    return f"{lo}{suffix}" if lo == hi else f"{lo}–{hi}{suffix}"


def figure_of(r):
    """Our figure and its unit: GFLOP/s for compute, GB/s for memory."""
    if r.get("gflops") is not None:
        return r["gflops"], "GFLOP/s"
    return r.get("gbs"), "GB/s"


def anchor(r, name):
    return next((a for a in r.get("anchors", []) if a["name"] == name), None)


def ratio_text(a):
    if a.get("ms") is None or not a.get("ratio"):
        return None
    mark = "" if a.get("comparable", True) else " (not comparable)"
    return f"{a['name']} {rfmt(a['ratio'])}×{mark}"


# --- loading and merging runs ---------------------------------------------

def case_key(r):
    return (r["device"], r["op"], r["shape"], r["dtype"])


def rebest(r):
    """Ratios from the times, and the best: the fastest comparable library."""
    best = None
    for a in r["anchors"]:
        if a.get("ms") and r.get("ms"):
            a["ratio"] = a["ms"] / r["ms"]
        if a.get("library") and a.get("comparable", True) and a.get("ms"):
            if best is None or a["ms"] < best["ms"]:
                best = a
    r["best"] = best["name"] if best else None
    if best:
        r.update(anchor=best["name"], anchor_ms=best["ms"], anchor_figure=best["figure"],
                 ratio=best["ratio"], comparable=True)


def merge_case(a, r):
    """Best of several runs, each side on its own: our best time and each
    anchor's best time, then the ratios again."""
    a["runs"] += 1
    if not r.get("ran"):
        return
    if not a.get("ran") or r["ms"] < a["ms"]:
        for k in ("ran", "ms", "gflops", "gbs", "pct_peak", "pct_bandwidth", "bandwidth_level",
                  "pct_gemm", "pct_gemm_of"):
            a[k] = r.get(k)
    theirs = {x["name"]: x for x in r.get("anchors", [])}
    mine = a.setdefault("anchors", [])
    for x in mine:
        y = theirs.get(x["name"])
        if y and y.get("ms") and (not x.get("ms") or y["ms"] < x["ms"]):
            x["ms"], x["figure"] = y["ms"], y["figure"]
    names = {x["name"] for x in mine}
    mine += [dict(y) for y in r.get("anchors", []) if y["name"] not in names]
    rebest(a)


class Runs:
    """The runs of one region: the first run's machine and libraries, and
    every case merged over the files."""

    def __init__(self, paths):
        self.paths = paths
        self.first = None
        self.results = []
        index = {}
        for path in paths:
            with open(path) as f:
                run = json.load(f)
            if self.first is None:
                self.first = run
            for r in run.get("results", []):
                k = case_key(r) if "op" in r else None
                if k in index:
                    merge_case(index[k], r)
                else:
                    r["runs"] = 1
                    self.results.append(r)
                    if k:
                        index[k] = r

    def cases(self, ops=None):
        return [r for r in self.results if ops is None or r.get("op") in ops]


# --- the regions ------------------------------------------------------------

def library_lines(run):
    out = ["| anchor | package | version | kernel it selected |", "|---|---|---|---|"]
    for lib in run.get("libraries", []):
        if lib.get("present"):
            kernel = lib.get("kernel", "")
            if lib.get("forced"):
                kernel += f"; {lib['forced']}"
            if not lib.get("comparable", True):
                kernel += " — **not comparable** (not at the CPU's level)"
            out.append(f"| {lib['name']} | {lib['package']} | {lib.get('version', '')} | {kernel} |")
        else:
            out.append(f"| {lib['name']} | {lib['package']} | absent | {lib.get('why', '')} |")
    if run.get("torch"):
        out.append(f"| torch | python3-torch | PyTorch {run['torch']} | (its own dispatch) |")
    return out


def region_machine(runs, opts):
    m = runs.first["machine"]
    out = [f"{m['cores']} cores × {m['isa']} × {m['ghz']:.2f} GHz (measured) = "
           f"**{m['peak_f32_gflops']:.0f} GFLOP/s** f32 FMA peak; memory {m['stream_gbs']:.1f} GB/s "
           f"(read+write loop over buffers larger than the {m.get('llc_bytes', 0) / 2**20:.0f} MiB "
           "last-level cache, in the first run, under its load).", ""]
    if m.get("isa_cap"):
        out += [f"Every side held to **{m['isa_cap']}** (`bp bench --isa {m['isa_cap']}`): our "
                "CPU device opened with that `isa_max`, the anchors under their own ceilings.", ""]
    out += ["Library anchors:", ""]
    return out + library_lines(runs.first)


def ms_text(r):
    return f"{r['ms']:.2f}" if r.get("ran") else "–"


def pct_text(r):
    if r.get("pct_peak") is not None:
        return f"{r['pct_peak']:.0f} %"
    if r.get("pct_bandwidth") is not None:
        level = "LLC" if r.get("bandwidth_level") == "llc" else "memory"
        return f"{r['pct_bandwidth']:.0f} % ({level})"
    return "–"


def share_text(r):
    """bp bench's %gemm column: of the device's own f32 GEMM, or of its copy
    bandwidth for a matrix-vector product."""
    if r.get("pct_gemm") is None:
        return "–"
    return f"{r['pct_gemm']:.0f} %" + (" (copy bw)" if r.get("pct_gemm_of") == "bandwidth" else "")


def runs_note(results):
    lo = min(r["runs"] for r in results)
    hi = max(r["runs"] for r in results)
    n = f"{lo}" if lo == hi else f"{lo}–{hi}"
    if hi == 1:
        return "One run."
    return (f"Best of {n} runs per case, each side on its own (our best time and each anchor's "
            "best time; the ratios from those).")


def drop_empty_columns(rows):
    """Leaves out a column that has no figure in any row (e.g. % of GEMM on
    the CPU)."""
    head, rule, *body = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
    keep = [i for i in range(len(head)) if not body or any(row[i] not in ("–", "") for row in body)]
    join = (lambda cells: "| " + " | ".join(cells) + " |")
    return ([join([head[i] for i in keep]), "|" + "|".join(rule[i] for i in keep) + "|"]
            + [join([row[i] for i in keep]) for row in body])


def region_bench(runs, opts):
    ops = opts["ops"].split(",") if "ops" in opts else None
    results = runs.cases(ops)
    rows = ["| op | shape | type | ours | % peak / bw | % of GEMM | best anchor | anchor | ratio | other anchors |",
            "|---|---|---|---:|---:|---:|---|---:|---:|---|"]
    for r in results:
        if not r.get("ran"):
            rows.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {r.get('message', 'did not run')} "
                        "| – | – | – | – | – | – |")
            continue
        fig, unit = figure_of(r)
        best = r.get("best")
        best_a = anchor(r, best) if best else None
        others = [ratio_text(a) for a in r.get("anchors", []) if a["name"] != best]
        absent = [a["name"] for a in r.get("anchors", []) if a.get("ms") is None and a.get("library")]
        other = ", ".join(t for t in others if t)
        if absent:
            other += (", " if other else "") + "absent: " + ", ".join(absent)
        if best_a:
            a_fig, ratio = f"{fmt(best_a['figure'])} {unit}", f"**{rfmt(best_a['ratio'])}×**"
        else:
            libs = [a for a in r.get("anchors", []) if a.get("library") and a.get("ms")]
            a_fig, ratio, best = "–", "–", "none comparable" if libs else "no library"
        rows.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {fmt(fig)} {unit} | {pct_text(r)} | "
                    f"{share_text(r)} | {best} | {a_fig} | {ratio} | {other or '–'} |")
    return [runs_note(results), ""] + drop_empty_columns(rows)


def attention_pairs(results):
    """(f32 case, bf16 case of the same shape or None), in the suite's order."""
    bf16 = {r["shape"]: r for r in results if r["op"] == "attention" and r["dtype"] == "bf16"}
    return [(r, bf16.get(r["shape"])) for r in results
            if r["op"] == "attention" and r["dtype"] == "f32"]


def region_attention(runs, opts):
    """One row per shape: the causal case, then the unmasked one."""
    results = runs.cases(["attention"])
    pairs = attention_pairs(results)
    base = []
    for r, _ in pairs:
        b = r["shape"].replace(" causal", "")
        if b not in base:
            base.append(b)
    by = {r["shape"]: (r, b) for r, b in pairs}

    def both(b, cell):
        return " / ".join(cell(*by[s]) if s in by else "–" for s in (b + " causal", b))

    def ratio_of(name):
        return (lambda r, b: f"{rfmt(anchor(r, name)['ratio'])}×"
                if anchor(r, name) and anchor(r, name).get("ms") else "–")

    def bf16_ms(r, b):
        return f"{b['ms']:.2f}" if b and b.get("ran") else "–"

    def speedup(r, b):
        return f"{rfmt(r['ms'] / b['ms'])}×" if b and b.get("ran") and r.get("ran") else "–"

    rows = ["| shape | f32 fused ms | GFLOP/s | % peak | unfused / fused | PyTorch / fused | "
            "bf16 fused ms | f32 / bf16 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for b in base:
        rows.append(f"| {b} | {both(b, lambda r, x: ms_text(r))} | "
                    f"{both(b, lambda r, x: fmt(r.get('gflops')))} | "
                    f"{both(b, lambda r, x: pct_text(r))} | {bold(both(b, ratio_of('unfused')))} | "
                    f"{both(b, ratio_of('torch'))} | {both(b, bf16_ms)} | {both(b, speedup)} |")
    return [runs_note(results) + " Each cell: the causal case / the unmasked one.", ""] + rows


def bold(text):
    return "not run" if text == "– / –" else f"**{text}**"


def met(value, target):
    return "met" if value >= target else "**missed**"


def summary_bench_rows(results):
    rows = []
    groups = {}
    for r in results:
        if r.get("ran") and r["op"] != "attention":
            groups.setdefault((r["op"], r["dtype"]), []).append(r)
    for (op, dtype), rs in groups.items():
        ratios = [r["ratio"] for r in rs if r.get("best") and r.get("ratio")]
        worst = min(rs, key=lambda r: r.get("ratio") or math.inf)
        names = sorted({r["best"] for r in rs if r.get("best")})
        target = TARGETS.get((op, dtype))
        verdict = met(min(ratios), target) if ratios and target else "–"
        tgt = f"≥ {target:.1f}× at every case" if target else "–"
        worst_text = f"{worst['shape']} ({rfmt(worst['ratio'])}× {worst['best']})" if ratios else "–"
        rows.append(f"| {op} | {dtype} | {len(rs)} | {', '.join(names) or 'no library'} | "
                    f"{span(ratios)} | {worst_text} | {tgt} | {verdict} |")
    pairs = attention_pairs(results)
    unf = [anchor(r, "unfused")["ratio"] for r, _ in pairs
           if r.get("ran") and anchor(r, "unfused") and anchor(r, "unfused").get("ms")]
    if unf:
        rows.append(f"| attention (fused) | f32 | {len(unf)} | our unfused GEMM + softmax + GEMM | "
                    f"{span(unf)} | – | ≥ {ATT_UNFUSED_TARGET}× at every shape | "
                    f"{met(min(unf), ATT_UNFUSED_TARGET)} |")
    sp = [r["ms"] / b["ms"] for r, b in pairs if b and b.get("ran") and r.get("ran")]
    if sp:
        rows.append(f"| attention (fused) | bf16 | {len(sp)} | our f32 fused kernel | {span(sp)} | – | "
                    f"≥ {ATT_BF16_TARGET:.0f}× at every shape | {met(min(sp), ATT_BF16_TARGET)} |")
    return rows


def summary_model_rows(run):
    rows = []
    res = [r for r in run["results"] if r.get("ran")]
    for dtype, target in (("f32", 1.5), ("bf16", 1.0)):
        t = [r["torch_ratio"] for r in res if r["dtype"] == dtype and r.get("torch_ratio")]
        if t:
            rows.append(f"| model end to end | {dtype} | {len(t)} | PyTorch {run.get('torch', '')} {dtype} | "
                        f"{span(t)} | – | ≥ {target:.1f}× | {met(min(t), target)} |")
    for phase in ("prefill", "decode"):
        v = [r["bf16_vs_f32"] for r in res if r["phase"] == phase and r.get("bf16_vs_f32")]
        if v:
            rows.append(f"| model {phase}, bf16 over our f32 | bf16 | {len(v)} | our f32 | {span(v)} | – | "
                        f"≥ 1.5× | {met(min(v), 1.5)} (met in {sum(x >= 1.5 for x in v)} of {len(v)}) |")
    d = [r["pct_stream"] for r in res if r["phase"] == "decode" and r.get("pct_stream")]
    if d:
        rows.append(f"| model decode, weights read | f32, bf16 | {len(d)} | streaming loop "
                    f"({run.get('stream_gbs', 0):.1f} GB/s) | {span(d, ' %', '{:.0f}'.format)} | – | ≥ 70 % | "
                    f"{met(min(d), 70)} (met in {sum(x >= 70 for x in d)} of {len(d)}) |")
    return rows


def region_summary(runs, opts):
    rows = ["| op | type | cases | against | ratio (least–most) | furthest behind | target | |",
            "|---|---|---:|---|---|---|---|---|"]
    rows += summary_bench_rows([r for r in runs.results if "op" in r])
    for path in runs.paths:
        with open(path) as f:
            run = json.load(f)
        if run.get("bench") == "model":
            rows += summary_model_rows(run)
    return rows


def region_model(runs, opts):
    """One row per model, size and depth: prefill and decode side by side,
    each as f32 / bf16."""
    run = runs.first
    rows = [f"Streaming loop {run.get('stream_gbs', 0):.1f} GB/s; PyTorch {run.get('torch', '')} with "
            f"{run.get('torch_threads', '?')} threads. Each cell f32 / bf16; ratios PyTorch / ours and "
            "our f32 / our bf16.", "",
            "| model | size | layers | prefill ms | prefill GFLOP/s | × PyTorch | f32 / bf16 | "
            "decode ms | decode weights, % of stream | × PyTorch | f32 / bf16 |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    cells = {}
    for r in run["results"]:
        if r.get("ran"):
            cells[(r["model"], r["size"], r["layers"], r["phase"], r["dtype"])] = r
    keys = []
    for r in run["results"]:
        k = (r["model"], r["size"], r["layers"])
        if k not in keys:
            keys.append(k)

    def pair(k, phase, field, form):
        vals = []
        for dt in ("f32", "bf16"):
            r = cells.get(k + (phase, dt))
            vals.append(form(r[field]) if r and r.get(field) is not None else "–")
        return " / ".join(vals)

    for k in keys:
        layers = "1 (block)" if k[2] == 1 else str(k[2])
        bf = (lambda ph: fmt((cells.get(k + (ph, "bf16")) or {}).get("bf16_vs_f32"), 2) + "×")
        rows.append(f"| {k[0]} | {k[1]} | {layers} | {pair(k, 'prefill', 'ms', lambda v: f'{v:.3f}')} | "
                    f"{pair(k, 'prefill', 'gflops', lambda v: f'{v:.0f}')} | "
                    f"{pair(k, 'prefill', 'torch_ratio', lambda v: f'{v:.2f}')} | {bf('prefill')} | "
                    f"{pair(k, 'decode', 'ms', lambda v: f'{v:.3f}')} | "
                    f"{pair(k, 'decode', 'pct_stream', lambda v: f'{v:.0f} %')} | "
                    f"{pair(k, 'decode', 'torch_ratio', lambda v: f'{v:.2f}')} | {bf('decode')} |")
    return rows


def region_charts(runs, opts, ctx):
    name = opts.get("name", "run")
    ratios = os.path.join(ctx["figures"], f"ratios-{name}.svg")
    roof = os.path.join(ctx["figures"], f"roofline-{name}.svg")
    label = opts.get("label", name)
    results = [r for r in runs.results if "op" in r]
    if ctx["draw"]:
        draw_ratios(results, ratios, f"{label}: ratio to the best anchor")
        draw_roofline(runs.first, results, roof, label)
    else:
        for path in (ratios, roof):
            if not os.path.exists(path):
                ctx["problems"].append(f"chart {path} missing")
    rel = (lambda p: os.path.relpath(p, ctx["doc_dir"]))
    return [f"![ratios to the best anchor]({rel(ratios)})", "", f"![roofline]({rel(roof)})"]


# --- charts -----------------------------------------------------------------

def case_label(r):
    return f"{r['op']} {r['shape']} {r['dtype']}"


def draw_ratios(results, path, title):
    import matplotlib.pyplot as plt
    rows = [r for r in results if r.get("ran") and r.get("best")]
    rows = [(case_label(r) + f" vs {r['best']}", r["ratio"]) for r in rows if r.get("ratio")]
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rows) + 1.4))
    names = [n for n, _ in rows][::-1]
    values = [v for _, v in rows][::-1]
    colors = ["#3a7d44" if v >= 1 else "#b5452f" for v in values]
    # a ratio far below the rest (an op with no fast path) would squash
    # every other bar: clip the axis at 1/64 and write the value
    lo = 1 / 64
    shown = [max(v, lo) for v in values]
    # bars grow from parity (1), left for a loss and right for a win: on a
    # log axis a bar from 0 has no start
    ax.barh(range(len(values)), [v - 1 for v in shown], left=1, color=colors)
    for i, v in enumerate(values):
        ax.text(max(shown[i], 1), i, f" {rfmt(v)}", va="center", fontsize=6)
    ax.set_xlim(min(shown + [1]) / 1.5, max(values + [1]) * 2.5)
    ax.set_yticks(range(len(values)))
    ax.set_yticklabels(names, fontsize=7)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("anchor time / our time (above 1: backplane faster)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    save(fig, path)


def draw_roofline(run, results, path, title):
    import matplotlib.pyplot as plt
    import matplotlib.ticker as ticker
    m = run["machine"]
    peak, bw = m["peak_f32_gflops"], m["stream_gbs"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.6), gridspec_kw={"width_ratios": [3, 2]})
    xs = [2 ** (i / 4) for i in range(-12, 48)]
    ax.plot(xs, [min(peak, bw * x) for x in xs], color="black", label=f"f32 peak {peak:.0f} GFLOP/s, memory {bw:.1f} GB/s")
    ax.plot(xs, [min(peak / 2, bw * x) for x in xs], color="gray", linestyle="--", label="f64 peak")
    for op, marker in {"gemm": "o", "attention": "^", "conv2d": "s"}.items():
        pts = [(r["intensity"], r["gflops"]) for r in results
               if r.get("ran") and r["op"] == op and r.get("intensity") and r.get("gflops")]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, label=op, zorder=3)
        best = [(r["intensity"], r["anchor_figure"]) for r in results
                if r.get("ran") and r["op"] == op and r.get("intensity") and r.get("best")
                and r.get("anchor_figure")]
        if best:
            ax.scatter([p[0] for p in best], [p[1] for p in best], marker=marker, facecolors="none",
                       edgecolors="gray", label=f"{op}: best anchor", zorder=2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.set_xlabel("arithmetic intensity (flop / byte of least traffic)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"compute-bound ops, {title}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    mem = [r for r in results if r.get("ran") and r.get("gbs") and r.get("pct_bandwidth")]
    pos = range(len(mem))
    ax2.bar([p - 0.2 for p in pos], [r["gbs"] for r in mem], width=0.4, label="ours")
    ax2.bar([p + 0.2 for p in pos], [r["gbs"] * 100 / r["pct_bandwidth"] for r in mem], width=0.4,
            label="stream loop, same working set")
    ax2.axhline(bw, color="black", linewidth=0.8, label="memory bandwidth")
    ax2.set_xticks(list(pos))
    ax2.set_xticklabels([f"{r['op']} {r['shape']}" for r in mem], fontsize=7, rotation=20)
    ax2.set_ylabel("GB/s")
    ax2.set_title("memory-bound ops", fontsize=9)
    ax2.legend(fontsize=7)
    fig.tight_layout()
    save(fig, path)


def save(fig, path):
    import matplotlib.pyplot as plt
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


# --- the document -----------------------------------------------------------

KINDS = {"machine": region_machine, "summary": region_summary, "bench": region_bench,
         "attention": region_attention, "model": region_model}


def parse_spec(spec, doc_dir):
    words = shlex.split(spec)
    if not words:
        raise SystemExit("bench_report.py: a generated region names no kind")
    kind, opts, paths = words[0], {}, []
    for w in words[1:]:
        if "=" in w and not w.endswith(".json") and "/" not in w.split("=", 1)[0]:
            k, v = w.split("=", 1)
            opts[k] = v
        else:
            found = sorted(glob.glob(os.path.join(doc_dir, w)))
            if not found:
                raise SystemExit(f"bench_report.py: {w}: no such file (region {kind})")
            paths += found
    if kind != "charts" and kind not in KINDS:
        raise SystemExit(f"bench_report.py: unknown region kind {kind}")
    return kind, opts, paths


def render(doc, ctx):
    def one(m):
        kind, opts, paths = parse_spec(m.group("spec"), ctx["doc_dir"])
        ctx["used"].update(os.path.abspath(p) for p in paths)
        runs = Runs(paths)
        body = region_charts(runs, opts, ctx) if kind == "charts" else KINDS[kind](runs, opts)
        return f"{BEGIN} {m.group('spec')} -->\n\n" + "\n".join(body) + "\n\n" + END
    return REGION.sub(one, doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--doc", default=os.path.join(os.path.dirname(__file__), "..", "docs", "performance.md"))
    ap.add_argument("--figures", help="where the charts go (default: perf/ beside the document)")
    ap.add_argument("--check", action="store_true", help="only check that the document is up to date")
    args = ap.parse_args()
    doc_dir = os.path.dirname(os.path.abspath(args.doc))
    ctx = {"doc_dir": doc_dir, "figures": os.path.abspath(args.figures or os.path.join(doc_dir, "perf")),
           "draw": not args.check, "problems": [], "used": set()}
    if ctx["draw"]:
        try:
            import matplotlib
        except ImportError:
            print("bench_report.py: drawing the charts needs matplotlib (Debian: python3-matplotlib, "
                  "for /usr/bin/python3); --check needs none", file=sys.stderr)
            return 1
        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "backplane"  # stable ids: small diffs
        matplotlib.rcParams["svg.fonttype"] = "none"  # text as text, not paths
    with open(args.doc) as f:
        doc = f.read()
    if not REGION.search(doc):
        print(f"bench_report.py: {args.doc} has no generated region", file=sys.stderr)
        return 1
    new = render(doc, ctx)
    for path in sorted(glob.glob(os.path.join(ctx["figures"], "*.json"))):
        if os.path.abspath(path) not in ctx["used"]:
            ctx["problems"].append(f"{path}: no generated region names it (delete it, or name it)")
    if args.check:
        if new != doc:
            ctx["problems"].append(f"{args.doc}: a generated region differs from its JSON files "
                                   "(run tools/bench_report.py)")
        for p in ctx["problems"]:
            print(f"bench_report.py: {p}", file=sys.stderr)
        return 1 if ctx["problems"] else 0
    with open(args.doc, "w") as f:
        f.write(new)
    for p in ctx["problems"]:
        print(f"bench_report.py: warning: {p}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
