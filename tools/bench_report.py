#!/usr/bin/env python3
"""Writes the generated part of docs/performance.md from `bp bench --json`.

usage: tools/bench_report.py [--doc FILE] [--figures DIR] RUN.json[=LABEL] ...

Runs given the same LABEL (say one per --op) are merged into one machine's
tables; the machine and libraries are those of the first.

For each run (one machine, one `bp bench --json` file) it writes, between
the markers

    <!-- BEGIN GENERATED: tools/bench_report.py -->
    <!-- END GENERATED: tools/bench_report.py -->

of the document: the machine, each library anchor's version and kernel (or
why it was absent), and one table per device with our figure, the best
anchor and its ratio, and every other anchor's ratio; and it draws, under
the figures folder, a bar chart of the ratios to the best anchor and a
roofline of each compute-bound case against the machine's peak and
bandwidth (SVG, written reproducibly). Everything outside the markers is
left as it is, so hand-written sections survive every regeneration. With
no markers in the document, the block is appended at the end.

Needs Python 3 and matplotlib (Debian: python3-matplotlib, which
tools/deps.sh bench installs).
"""
import argparse
import json
import math
import os
import re
import sys

BEGIN = "<!-- BEGIN GENERATED: tools/bench_report.py -->"
END = "<!-- END GENERATED: tools/bench_report.py -->"


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "run"


def fmt(v, digits=1):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}"


def figure_of(r):
    """Our figure and its unit: GFLOP/s for compute, GB/s for memory."""
    if r.get("gflops") is not None:
        return r["gflops"], "GFLOP/s"
    return r.get("gbs"), "GB/s"


def ratio_text(a):
    if a.get("ms") is None:
        return None
    mark = "" if a.get("comparable", True) else " (not comparable)"
    return f"{a['name']} {rfmt(a['ratio'])}×{mark}" if a.get("ratio") else None


def rfmt(ratio):
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def case_label(r):
    return f"{r['op']} {r['shape']} {r['dtype']}"


def library_lines(run):
    out = ["| anchor | package | version | kernel it selected |", "|---|---|---|---|"]
    for lib in run.get("libraries", []):
        if lib.get("present"):
            kernel = lib.get("kernel", "")
            if lib.get("forced"):
                kernel += f"; {lib['forced']}"
            if not lib.get("comparable", True):
                kernel += " — **not comparable** (lesser than the CPU's)"
            out.append(f"| {lib['name']} | {lib['package']} | {lib.get('version', '')} | {kernel} |")
        else:
            out.append(f"| {lib['name']} | {lib['package']} | absent | {lib.get('why', '')} |")
    if run.get("torch"):
        out.append(f"| torch | python3-torch | PyTorch {run['torch']} | (its own dispatch) |")
    return out


def share_text(r):
    """bp bench's %gemm column: of the device's own f32 GEMM, or of its copy
    bandwidth for a matrix-vector product (runs before the column: blank)."""
    if r.get("pct_gemm") is None:
        return "–"
    return f"{r['pct_gemm']:.0f} %" + (" (copy bw)" if r.get("pct_gemm_of") == "bandwidth" else "")


def result_table(results):
    out = ["| op | shape | type | ours | % peak / bw | % of GEMM | best anchor | anchor | ratio | other anchors |",
           "|---|---|---|---:|---:|---:|---|---:|---:|---|"]
    for r in results:
        if not r.get("ran"):
            out.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {r.get('message', 'did not run')} | | | | | | |")
            continue
        fig, unit = figure_of(r)
        if r.get("pct_peak") is not None:
            pct = f"{r['pct_peak']:.0f} %"
        elif r.get("pct_bandwidth") is not None:
            level = "LLC" if r.get("bandwidth_level") == "llc" else "memory"
            pct = f"{r['pct_bandwidth']:.0f} % ({level})"
        else:
            pct = "–"
        share = share_text(r)
        best = r.get("best")
        best_a = next((a for a in r.get("anchors", []) if a["name"] == best), None)
        others = [ratio_text(a) for a in r.get("anchors", []) if a["name"] != best]
        absent = [a["name"] for a in r.get("anchors", []) if a.get("ms") is None and a.get("library")]
        other_text = ", ".join(t for t in others if t)
        if absent:
            other_text += (", " if other_text else "") + "absent: " + ", ".join(absent)
        if best_a:
            a_fig = f"{fmt(best_a['figure'])} {unit}"
            ratio = f"**{rfmt(best_a['ratio'])}×**"
        else:
            libs = [a for a in r.get("anchors", []) if a.get("library") and a.get("ms")]
            a_fig, ratio, best = "–", "–", "none comparable" if libs else "no library"
        out.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {fmt(fig)} {unit} | {pct} | {share} | "
                   f"{best} | {a_fig} | {ratio} | {other_text} |")
    return out


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
    ax.barh(range(len(values)), shown, color=colors)
    for i, v in enumerate(values):
        ax.text(shown[i], i, f" {rfmt(v)}", va="center", fontsize=6)
    ax.set_xlim(lo / 1.2 if min(values) < lo else None, max(values + [1]) * 2.5)
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
    m = run["machine"]
    peak, bw = m["peak_f32_gflops"], m["stream_gbs"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.6), gridspec_kw={"width_ratios": [3, 2]})
    xs = [2 ** (i / 4) for i in range(-12, 48)]
    ax.plot(xs, [min(peak, bw * x) for x in xs], color="black", label=f"f32 peak {peak:.0f} GFLOP/s, memory {bw:.1f} GB/s")
    ax.plot(xs, [min(peak / 2, bw * x) for x in xs], color="gray", linestyle="--", label="f64 peak")
    markers = {"gemm": "o", "attention": "^", "conv2d": "s"}
    for op, marker in markers.items():
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
    ax.yaxis.set_major_formatter(matplotlib_ticker().FormatStrFormatter("%g"))
    ax.xaxis.set_major_formatter(matplotlib_ticker().FormatStrFormatter("%g"))
    ax.set_xlabel("arithmetic intensity (flop / byte of least traffic)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"compute-bound ops, {title}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    mem = [r for r in results if r.get("ran") and r.get("gbs") and r.get("pct_bandwidth")]
    labels = [f"{r['op']} {r['shape']}" for r in mem]
    ours = [r["gbs"] for r in mem]
    roofs = [r["gbs"] * 100 / r["pct_bandwidth"] for r in mem]
    pos = range(len(mem))
    ax2.bar([p - 0.2 for p in pos], ours, width=0.4, label="ours")
    ax2.bar([p + 0.2 for p in pos], roofs, width=0.4, label="stream loop, same working set")
    ax2.axhline(bw, color="black", linewidth=0.8, label="memory bandwidth")
    ax2.set_xticks(list(pos))
    ax2.set_xticklabels(labels, fontsize=7, rotation=20)
    ax2.set_ylabel("GB/s")
    ax2.set_title("memory-bound ops", fontsize=9)
    ax2.legend(fontsize=7)
    fig.tight_layout()
    save(fig, path)


def matplotlib_ticker():
    import matplotlib.ticker
    return matplotlib.ticker


def save(fig, path):
    import matplotlib.pyplot as plt
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


def run_block(run, label, figures_dir, doc_dir):
    m = run["machine"]
    out = [f"### {label}", ""]
    out.append(f"{m['cores']} cores × {m['isa']} × {m['ghz']:.2f} GHz (measured) = "
               f"**{m['peak_f32_gflops']:.0f} GFLOP/s** f32 FMA peak; memory **{m['stream_gbs']:.1f} GB/s** "
               f"(read+write loop over buffers larger than the {m.get('llc_bytes', 0) / 2**20:.0f} MiB "
               "last-level cache).")
    out += ["", "Library anchors in this run:", ""] + library_lines(run) + [""]
    devices = []
    for r in run["results"]:
        if r["device"] not in devices:
            devices.append(r["device"])
    for dev in devices:
        results = [r for r in run["results"] if r["device"] == dev]
        base = slug(f"{label}-{dev}")
        ratios = os.path.join(figures_dir, f"ratios-{base}.svg")
        roof = os.path.join(figures_dir, f"roofline-{base}.svg")
        draw_ratios(results, ratios, f"{dev} on {label}: ratio to the best anchor")
        draw_roofline(run, results, roof, f"{dev} on {label}")
        lo = min(r.get("runs", 1) for r in results)
        hi = max(r.get("runs", 1) for r in results)
        runs = f"{lo}" if lo == hi else f"{lo}–{hi}"
        note = (f"Best of {runs} runs per case, each side on its own (our best time and each "
                "anchor's best time; ratios from those); the machine's figures are the first "
                "run's." if hi > 1 else "One run.")
        out += [f"#### Device `{dev}`", "", note, ""] + result_table(results) + [""]
        out.append(f"![ratios to the best anchor]({os.path.relpath(ratios, doc_dir)})")
        out.append("")
        out.append(f"![roofline]({os.path.relpath(roof, doc_dir)})")
        out.append("")
    return out


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


def merge_results(into, more):
    """Best of several runs, each side on its own: our best time and each
    anchor's best time, then the ratios again."""
    index = {case_key(r): r for r in into}
    for r in more:
        a = index.get(case_key(r))
        if a is None:
            r["runs"] = 1
            into.append(r)
            index[case_key(r)] = r
            continue
        a["runs"] = a.get("runs", 1) + 1
        if not r.get("ran"):
            continue
        if not a.get("ran") or r["ms"] < a["ms"]:
            for k in ("ran", "ms", "gflops", "gbs", "pct_peak", "pct_bandwidth", "bandwidth_level",
                      "pct_gemm", "pct_gemm_of"):
                a[k] = r.get(k)
        theirs = {x["name"]: x for x in r.get("anchors", [])}
        for x in a.setdefault("anchors", []):
            y = theirs.get(x["name"])
            if y and y.get("ms") and (not x.get("ms") or y["ms"] < x["ms"]):
                x["ms"], x["figure"] = y["ms"], y["figure"]
        rebest(a)


def splice(doc_text, block):
    text = "\n".join([BEGIN, ""] + block + [END])
    if BEGIN in doc_text and END in doc_text:
        head, rest = doc_text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        return head + text + tail
    return doc_text.rstrip("\n") + "\n\n" + text + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="bp bench --json output, optionally =LABEL")
    ap.add_argument("--doc", default="docs/performance.md")
    ap.add_argument("--figures", default="docs/perf")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "backplane"  # stable ids: small diffs
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text, not paths
    doc_dir = os.path.dirname(os.path.abspath(args.doc))
    runs = {}  # label -> run; runs of one label (e.g. one per --op) are merged
    for spec in args.runs:
        path, _, label = spec.partition("=")
        with open(path) as f:
            run = json.load(f)
        if not label:
            m = run["machine"]
            label = f"{m['cores']} cores, {m['isa']}"
        if label in runs:
            merge_results(runs[label]["results"], run["results"])
        else:
            for r in run["results"]:
                r["runs"] = 1
            runs[label] = run
    block = []
    for label, run in runs.items():
        block += run_block(run, label, os.path.abspath(args.figures), doc_dir)
    with open(args.doc) as f:
        doc = f.read()
    with open(args.doc, "w") as f:
        f.write(splice(doc, block))
    return 0


if __name__ == "__main__":
    sys.exit(main())
