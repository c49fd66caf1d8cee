"""The table of tools/hvd-bench/vs_horovod.sh, from the JSON lines its runs wrote.

Input: one JSON object per line, as vs_horovod_driver.py prints them, each with the
"place" and "round" keys the script adds. Per place and case: the median over rounds
of each library's per-run medians, libhvd's speed-up (Horovod time / libhvd time),
the raw-MPI limit (the median of the limits measured in all runs of that case, in
the processes of both libraries, before the library started), each library as a
fraction of the limit measured in its own run (limit time / library time, median
over runs; 1 is the limit), and the speed-up once more from those ratios (libhvd's
over Horovod's), which cancels much of what the load does to one run and not to
another, and the speed-up a library running at the limit would show (Horovod's time
over the limit of its own run, median over runs): the ceiling of a speed-up in that
run for any library that is no faster than the raw-MPI call on the same bytes. Where
the runs measured the reference interleaved with the library's steps (the driver's
"vs_interleaved_limit": the median over steps of the neighbouring reference step's
time over the library step's), two more columns: libhvd against
that interleaved limit (median over runs), which cancels what the load does within a
run too, and how much slower the reference ran beside each library than before it
started (interleaved limit over limit, median over runs). No speed-up is derived
from the interleaved ratios: Horovod's background thread, cycling beside the
reference, slows it severalfold (measured on the lab), so Horovod's ratio would
flatter it.

  vs_horovod_table.py RESULTS.jsonl [--json OUT]   (--json: one summary line per row)
"""
import argparse
import json
import statistics
import sys

CASE_ORDER = ("resnet50", "bert_base", "many_small", "latency")


def case_label(row):
    n, nbytes = row["tensors"], row["bytes"]
    if row["case"] == "many_small":
        return f"{n} x {nbytes / n / 1024:g} KB"
    if row["case"] == "latency":
        return f"lone {nbytes / 1024:g} KB"
    return row["case"]


def fmt_time(ms, case):
    if ms is None:
        return "-"
    if case == "latency":
        return f"{ms * 1e3:.0f} us" if ms * 1e3 >= 10 else f"{ms * 1e3:.1f} us"
    return f"{ms:.3g} ms" if ms < 100 else f"{ms:.0f} ms"


def fmt_ratio(r):
    if r is None:
        return "-"
    return f"{r:.2g}" if r < 0.1 else (f"{r:.2f}" if r < 10 else f"{r:.1f}")


def summarize(rows):
    groups = {}
    for r in rows:
        key = (r.get("place", "?"), r["case"])
        g = groups.setdefault(key, {"horovod": [], "libhvd": [], "limit": [], "wrong": 0,
                                    "horovod_vs": [], "libhvd_vs": [],
                                    "horovod_il": [], "libhvd_il": [],
                                    "horovod_beside": [], "libhvd_beside": [],
                                    "ranks": r["ranks"], "tensors": r["tensors"],
                                    "bytes": r["bytes"], "strategies": set()})
        g[r["library"]].append(r["median_ms"])
        g["wrong"] += r.get("wrong", 0)
        if "limit_ms" in r:
            g["limit"].append(r["limit_ms"]["median"])
            g[r["library"] + "_vs"].append(r["limit_ms"]["median"] / r["median_ms"])
            g["strategies"].add(r["limit_strategy"])
        if "vs_interleaved_limit" in r:
            g[r["library"] + "_il"].append(r["vs_interleaved_limit"])
            if "limit_ms" in r:
                g[r["library"] + "_beside"].append(r["interleaved_limit_ms"]["median"]
                                                   / r["limit_ms"]["median"])
    out = []
    places = []
    for place, _ in groups:
        if place not in places:
            places.append(place)
    for place in places:
        for case in CASE_ORDER + tuple(sorted({c for p, c in groups if c not in CASE_ORDER})):
            g = groups.get((place, case))
            if g is None:
                continue
            med = {k: (statistics.median(g[k]) if g[k] else None)
                   for k in ("horovod", "libhvd", "limit")}
            row = {"place": place, "case": case, "ranks": g["ranks"],
                   "tensors": g["tensors"], "bytes": g["bytes"],
                   "horovod_ms": med["horovod"], "libhvd_ms": med["libhvd"],
                   "horovod_runs": len(g["horovod"]), "libhvd_runs": len(g["libhvd"]),
                   "wrong": g["wrong"]}
            if med["horovod"] and med["libhvd"]:
                row["speedup"] = med["horovod"] / med["libhvd"]
            if med["limit"]:
                row["limit_ms"] = med["limit"]
                row["limit_strategies"] = sorted(g["strategies"])
                for lib in ("horovod", "libhvd"):
                    if g[lib + "_vs"]:
                        row[f"{lib}_vs_limit"] = statistics.median(g[lib + "_vs"])
                if g["horovod_vs"]:
                    row["speedup_at_limit"] = statistics.median(1 / x for x in g["horovod_vs"])
                if g["horovod_vs"] and g["libhvd_vs"]:
                    row["speedup_per_run_limits"] = (row["libhvd_vs_limit"]
                                                     / row["horovod_vs_limit"])
            for lib in ("horovod", "libhvd"):
                if g[lib + "_il"]:
                    row[f"{lib}_vs_interleaved_limit"] = statistics.median(g[lib + "_il"])
                if g[lib + "_beside"]:
                    row[f"reference_beside_{lib}"] = statistics.median(g[lib + "_beside"])
            out.append(row)
    return out


def print_table(summary, file=sys.stdout):
    place = None
    # The interleaved columns only where some run measured them (--interleave).
    interleaved = any("libhvd_vs_interleaved_limit" in r or "reference_beside_horovod" in r
                      for r in summary)
    for row in summary:
        if row["place"] != place:
            place = row["place"]
            print(f"\n{place} (medians over "
                  f"{row['horovod_runs']} Horovod and {row['libhvd_runs']} libhvd runs)\n",
                  file=file)
            print("| case | Horovod | libhvd | libhvd speed-up | raw-MPI limit "
                  "| Horovod vs limit | libhvd vs limit | speed-up from the ratios "
                  "| speed-up at the limit |"
                  + (" libhvd vs interleaved limit "
                     "| reference beside Horovod, libhvd (x its time before) |"
                     if interleaved else ""), file=file)
            print("|---|---|---|---|---|---|---|---|---|" + ("---|---|" if interleaved else ""),
                  file=file)
        case = row["case"]
        speedup = row.get("speedup")
        limit = fmt_time(row.get("limit_ms"), case)
        if row.get("limit_strategies"):
            limit += " (" + ", ".join(row["limit_strategies"]) + ")"
        wrong = f" ({row['wrong']} wrong)" if row["wrong"] else ""
        print(f"| {case_label(row)}{wrong} | {fmt_time(row['horovod_ms'], case)} "
              f"| {fmt_time(row['libhvd_ms'], case)} "
              f"| {'-' if speedup is None else fmt_ratio(speedup) + ' x'} | {limit} "
              f"| {fmt_ratio(row.get('horovod_vs_limit'))} "
              f"| {fmt_ratio(row.get('libhvd_vs_limit'))} "
              f"| {fmt_ratio(row.get('speedup_per_run_limits'))}"
              f"{'' if row.get('speedup_per_run_limits') is None else ' x'} "
              f"| {fmt_ratio(row.get('speedup_at_limit'))}"
              f"{'' if row.get('speedup_at_limit') is None else ' x'} |"
              + (f" {fmt_ratio(row.get('libhvd_vs_interleaved_limit'))} "
                 f"| {fmt_ratio(row.get('reference_beside_horovod'))}, "
                 f"{fmt_ratio(row.get('reference_beside_libhvd'))} |" if interleaved else ""),
              file=file)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", help="JSON lines of the driver's runs")
    p.add_argument("--json", metavar="OUT", help="also write one summary line per row")
    args = p.parse_args(argv)
    with open(args.results) as f:
        rows = [json.loads(line) for line in f if line.strip().startswith("{")]
    rows = [r for r in rows if r.get("kind") != "summary"]
    summary = summarize(rows)
    if not summary:
        print(f"{args.results}: no results", file=sys.stderr)
        return 1
    print_table(summary)
    if args.json:
        with open(args.json, "a") as f:
            for row in summary:
                f.write(json.dumps(dict(row, kind="summary")) + "\n")
    return 1 if any(r["wrong"] for r in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
