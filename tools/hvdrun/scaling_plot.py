"""Draws hvdrun --scaling's figures: efficiency, and cost (or throughput when no price
was given), against the number of ranks.

    python3 hvdrun-scaling-plot.py REPORT.json OUT.png [WHY]

REPORT.json is what hvdrun --scaling --json writes. Run by hvdrun --plot, which gives
as WHY the reason it chose this interpreter (the job's own, HVDRUN_PYTHON, python3 from
PATH), for the message when matplotlib is missing.
"""
import json
import os
import sys
import tempfile


def main(argv):
    if len(argv) not in (3, 4):
        print("usage: hvdrun-scaling-plot.py REPORT.json OUT.png [WHY]", file=sys.stderr)
        return 2
    report_path, png_path = argv[1], argv[2]
    which = sys.executable + (f" ({argv[3]})" if len(argv) == 4 else "")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        print(f"hvdrun: --plot: {which} cannot import matplotlib ({err}); install it "
              "(Debian: apt-get install python3-matplotlib; pip: pip install matplotlib) or "
              "set HVDRUN_PYTHON to an interpreter that has it. The table and --json are "
              "not affected.", file=sys.stderr)
        return 3
    with open(report_path, encoding="utf-8") as f:
        report = json.load(f)
    fig = draw(plt, report)
    try:
        save_replacing(fig, png_path)
    except OSError as err:
        print(f"hvdrun: --plot: cannot write {png_path}: {err}", file=sys.stderr)
        return 1
    return 0


def label_points(ax, xs, ys, text, where):
    """Writes each point's value beside it: above, below or right of the point, a
    different side for each series, so that close series stay readable."""
    offset, align = {"above": ((0, 7), "center"), "below": ((0, -13), "center"),
                     "right": ((7, -3), "left")}[where]
    for x, y in zip(xs, ys):
        ax.annotate(text(y), (x, y), textcoords="offset points", xytext=offset, ha=align,
                    fontsize=8)


def legend_below(ax, lines=None):
    """The legend under the axes, where it hides no point or label."""
    handles = lines if lines is not None else ax.get_lines()
    ax.legend(handles, [line.get_label() for line in handles], loc="upper center",
              bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8, frameon=False)


def draw(plt, report):
    runs = report["runs"]
    ranks = [r["ranks"] for r in runs]
    priced = all(r.get("cost") is not None for r in runs)

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5))
    title = f"hvdrun --scaling: {ranks[0]} to {ranks[-1]} ranks"
    if priced:
        title += (f", {report['hours']:g} h on {ranks[0]} at "
                  f"{report['price_per_hour']:g} per rank-hour")
    fig.suptitle(title)

    # Efficiency against the smallest size: 100% is ideal (weak) scaling.
    measured = [100 * r["efficiency"] for r in runs]
    break_even = [r.get("break_even_efficiency") for r in runs]
    has_break_even = any(b is not None for b in break_even[1:])
    # Without a value of waiting time, break-even is 100% at every size: the ideal line.
    break_even_is_ideal = has_break_even and all(
        b is None or abs(b - 1) < 1e-9 for b in break_even)
    ideal_label = "ideal scaling (100%)"
    if break_even_is_ideal:
        ideal_label += " = break-even (no --time-value)"
    left.axhline(100, color="grey", linestyle="-", linewidth=1, label=ideal_label)
    left.plot(ranks, measured, "o-", color="tab:blue", linewidth=2, label="measured", zorder=3)
    label_points(left, ranks, measured, lambda v: f"{v:.1f}%", "above")
    if has_break_even and not break_even_is_ideal:
        xs = [n for n, b in zip(ranks, break_even) if b is not None]
        ys = [100 * b for b in break_even if b is not None]
        left.plot(xs, ys, "s--", color="tab:red", label="break-even (cheaper above it)",
                  zorder=2)
        # The smallest size is its own break-even (100%), already labelled above.
        label_points(left, xs[1:], ys[1:], lambda v: f"{v:.1f}%", "below")
    left.set_title("scaling efficiency")
    left.set_xlabel("ranks")
    left.set_ylabel("efficiency (%)")
    top = max(measured + [100] + [100 * b for b in break_even if b is not None])
    left.set_ylim(0, top * 1.15)
    legend_below(left)

    if priced:
        costs = [r["cost"] for r in runs]
        lines = right.plot(ranks, costs, "o-", color="tab:green", label="cost")
        label_points(right, ranks, costs, lambda v: f"{v:.4g}", "above")
        if all(r.get("total") is not None for r in runs):
            totals = [r["total"] for r in runs]
            lines += right.plot(ranks, totals, "s--", color="tab:purple", label="cost + waiting")
            label_points(right, ranks, totals, lambda v: f"{v:.4g}", "above")
        right.set_title(f"cost of the {report['hours']:g} h job")
        right.set_ylabel("cost")
        top = max(costs + [r.get("total") or 0 for r in runs])
        right.set_ylim(0, top * 1.2)
        twin = right.twinx()
        hours = [r["hours"] for r in runs]
        lines += twin.plot(ranks, hours, ":", color="grey", marker=".", label="job hours (right axis)")
        label_points(twin, ranks, hours, lambda v: f"{v:.3g} h", "right")
        twin.set_ylabel("job hours", color="grey")
        twin.set_ylim(0, max(hours) * 1.2)
        # One legend for both axes, so that the dotted line has its entry.
        legend_below(right, lines)
    else:
        throughput = [r["throughput"] for r in runs]
        right.plot(ranks, throughput, "o-", color="tab:green", label="measured")
        ideal = [throughput[0] * n / ranks[0] for n in ranks]
        right.plot(ranks, ideal, "-", color="grey", linewidth=1, label="ideal scaling")
        label_points(right, ranks, throughput, lambda v: f"{v:.4g}", "below")
        right.set_title("throughput")
        right.set_ylabel(report["throughput_unit"])
        right.set_ylim(0, max(throughput + ideal) * 1.15)
        legend_below(right)
    right.set_xlabel("ranks")
    for ax in (left, right):
        ax.set_xticks(ranks)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def save_replacing(fig, png_path):
    """Writes the PNG to a new file beside png_path and renames it there once complete:
    a link another user planted at that name is replaced, never written through
    (libhvd's base/atomic_file.h does the same for its files)."""
    folder, name = os.path.split(os.path.abspath(png_path))
    fd, temp = tempfile.mkstemp(dir=folder, prefix="." + name[:200] + ".")
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=100)
        os.replace(temp, png_path)
    except BaseException:
        os.unlink(temp)
        raise


if __name__ == "__main__":
    sys.exit(main(sys.argv))
