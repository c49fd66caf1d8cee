"""Draws hvdrun --scaling's figures: efficiency, and cost (or throughput when no price
was given), against the number of ranks.

    python3 hvdrun-scaling-plot.py REPORT.json OUT.png

REPORT.json is what hvdrun --scaling --json writes. Run by hvdrun --plot.
"""
import json
import os
import sys
import tempfile


def main(argv):
    if len(argv) != 3:
        print("usage: hvdrun-scaling-plot.py REPORT.json OUT.png", file=sys.stderr)
        return 2
    report_path, png_path = argv[1], argv[2]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        print(f"hvdrun: --plot: {sys.executable} cannot import matplotlib ({err}); install it "
              "(Debian: apt-get install python3-matplotlib; pip: pip install matplotlib) or "
              "set HVDRUN_PYTHON to an interpreter that has it. The table and --json are "
              "not affected.", file=sys.stderr)
        return 3
    with open(report_path, encoding="utf-8") as f:
        report = json.load(f)
    runs = report["runs"]
    ranks = [r["ranks"] for r in runs]

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(ranks, [100 * r["efficiency"] for r in runs], "o-", label="measured")
    if any(r.get("break_even_efficiency") is not None for r in runs):
        left.plot(ranks, [100 * r["break_even_efficiency"] for r in runs], "s--",
                  label="break-even")
    left.axhline(100, color="grey", linewidth=0.5)
    left.set_xlabel("ranks")
    left.set_ylabel("scaling efficiency (%)")
    left.set_ylim(bottom=0)
    left.legend()

    if all(r.get("cost") is not None for r in runs):
        right.plot(ranks, [r["cost"] for r in runs], "o-", label="cost")
        if all(r.get("total") is not None for r in runs):
            right.plot(ranks, [r["total"] for r in runs], "s--", label="cost + waiting")
        right.set_ylabel(f"cost of a {report['hours']:g} h job")
        right.legend()
        twin = right.twinx()
        twin.plot(ranks, [r["hours"] for r in runs], ":", color="grey")
        twin.set_ylabel("job hours (dotted)", color="grey")
        twin.set_ylim(bottom=0)
    else:
        right.plot(ranks, [r["throughput"] for r in runs], "o-")
        right.set_ylabel(report["throughput_unit"])
    right.set_xlabel("ranks")
    right.set_ylim(bottom=0)
    for ax in (left, right):
        ax.set_xticks(ranks)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    try:
        save_replacing(fig, png_path)
    except OSError as err:
        print(f"hvdrun: --plot: cannot write {png_path}: {err}", file=sys.stderr)
        return 1
    return 0


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
