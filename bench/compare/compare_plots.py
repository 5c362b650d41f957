"""The SVG plots of compare.py, drawn by hand (no plotting library needed): all-reduce busbw
against message size for every peer, and ringgrad's speed ratio to PyTorch for each training row."""
import math
import statistics

COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def svg(width, height, body):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
            f'font-size="12"><rect width="100%" height="100%" fill="white"/>{"".join(body)}</svg>\n')


def busbw_plot(results, sizes, caption):
    """Lines of median busbw (GB/s, linear) over log2 size, one per peer."""
    w, h, left, bottom, top = 760, 420, 60, 50, 40
    peers = list(results)
    top_bw = max(results[p][("all_reduce busbw", s)]["median"] for p in peers for s in sizes) * 1.1
    x = lambda s: left + (math.log2(s) - math.log2(sizes[0])) / (math.log2(sizes[-1]) - math.log2(sizes[0])) * (w - left - 200)
    y = lambda bw: h - bottom - bw / top_bw * (h - bottom - top)
    body = [f'<text x="{left}" y="20">{caption}</text>',
            f'<line x1="{left}" y1="{h - bottom}" x2="{w - 200}" y2="{h - bottom}" stroke="black"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
            f'<text x="{left}" y="{h - 10}">message size (bytes, log scale)</text>',
            f'<text x="5" y="{top - 8}">busbw (GB/s)</text>']
    for s in sizes:
        body.append(f'<text x="{x(s) - 12:.0f}" y="{h - bottom + 16}">{s if s < 1024 else str(s >> 10) + "K" if s < 1 << 20 else str(s >> 20) + "M"}</text>')
    for i in range(5):
        bw = top_bw * i / 4
        body.append(f'<text x="{left - 40}" y="{y(bw) + 4:.0f}">{bw:.1f}</text>')
    for n, p in enumerate(peers):
        c = COLOURS[n % len(COLOURS)]
        points = " ".join(f"{x(s):.1f},{y(results[p][('all_reduce busbw', s)]['median']):.1f}" for s in sizes)
        body.append(f'<polyline points="{points}" fill="none" stroke="{c}" stroke-width="2"/>')
        body.append(f'<text x="{w - 190}" y="{top + 18 * n}" fill="{c}">{p}</text>')
    return svg(w, h, body)


def ratio_plot(rows, caption):
    """Horizontal bars: ringgrad's speed over PyTorch's, the line at 1 meaning equal."""
    w, left, bar = 760, 330, 24
    h = 60 + bar * len(rows) * 1.5
    most = max(max(r for _, r in rows), 1.0) * 1.15
    x = lambda r: left + r / most * (w - left - 40)
    body = [f'<text x="10" y="20">{caption}</text>',
            f'<line x1="{x(1):.0f}" y1="30" x2="{x(1):.0f}" y2="{h - 10}" stroke="gray" stroke-dasharray="4"/>']
    for i, (label, r) in enumerate(rows):
        top = 40 + i * bar * 1.5
        body.append(f'<text x="10" y="{top + 16:.0f}">{label}</text>')
        body.append(f'<rect x="{left}" y="{top:.0f}" width="{x(r) - left:.0f}" height="{bar}" fill="{COLOURS[0]}"/>')
        body.append(f'<text x="{x(r) + 4:.0f}" y="{top + 16:.0f}">{r:.2f}x</text>')
    return svg(w, h, body)


def write(results, sizes, machine, out):
    """Writes the plots that the measured sections allow; returns their paths."""
    run_as = f", run as {machine['run_as']}" if "run_as" in machine else ""
    label = f"{machine['cpu']} ({machine['isa']}{run_as}), {machine['cores']} cores"
    written = []
    if "all_reduce" in results:
        path = f"{out}/compare_all_reduce.svg"
        open(path, "w").write(busbw_plot(results["all_reduce"], sizes, f"all_reduce busbw, 2 ranks, medians: {label}"))
        written.append(path)
    rows = []
    for section, higher in (("gpt", False), ("ddp", True), ("mlp", True)):
        for key in sorted(results.get(section, {}).get("ringgrad", {})):
            pairs = zip(results[section]["ringgrad"][key]["values"], results[section]["PyTorch"][key]["values"])
            ratios = [ours / theirs if higher else theirs / ours for ours, theirs in pairs]
            rows.append((f"{section}: {' '.join(map(str, key))}", statistics.median(ratios)))
    if rows:
        path = f"{out}/compare_training.svg"
        open(path, "w").write(ratio_plot(rows, f"ringgrad's speed / PyTorch's (above 1: ringgrad faster): {label}"))
        written.append(path)
    return written
