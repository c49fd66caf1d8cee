"""Runs hvd-bench with --json and checks the lines against the keys that scripts
read (docs/performance.md): present when measured, absent when not, ratios that
agree with the medians, and no wrong elements. No timing is asserted.

usage: check_bench_json.py KIND -- COMMAND...
KIND: baseline (workload/tensors with --baseline), plain (without), grouped
      (plain with --grouped), buckets (plain with --bucket-mb), latency, sweep, idle
"""
import json
import math
import os
import subprocess
import sys

STATS = ("median", "min", "max")


def fail(message):
    print("check_bench_json: " + message, file=sys.stderr)
    sys.exit(1)


def check_stats(line, key):
    value = line.get(key)
    if not isinstance(value, dict) or set(value) != set(STATS):
        fail("%s should be {median, min, max}: %r" % (key, value))
    for name in STATS:
        if not isinstance(value[name], (int, float)) or not value[name] > 0:
            fail("%s.%s should be a positive number: %r" % (key, name, value[name]))
    if not value["min"] <= value["median"] <= value["max"]:
        fail("%s: min <= median <= max does not hold: %r" % (key, value))


def check_ratio(line, key, reference):
    want = line[reference]["median"] / line["hvd_ms"]["median"]
    if not math.isclose(line[key], want, rel_tol=1e-3):
        fail("%s is %r, but %s.median / hvd_ms.median is %r" % (key, line[key], reference, want))


def check_step(line, baseline, latency):
    for key in ("mode", "op", "ranks", "nodes", "hierarchical", "contiguous", "grouped",
                "bucket_bytes", "tensors", "bytes", "hvd_ms", "wrong"):
        if key not in line:
            fail("key %s missing in %r" % (key, line))
    if not 1 <= line["nodes"] <= line["ranks"] or not isinstance(line["hierarchical"], bool):
        fail("nodes %r or hierarchical %r out of place in %r" % (line["nodes"], line["hierarchical"], line))
    if line["mode"] not in ("workload", "tensors") or line["op"] != "allreduce":
        fail("unexpected mode/op in %r" % line)
    if line["wrong"] != 0:
        fail("%d wrong elements" % line["wrong"])
    check_stats(line, "hvd_ms")
    # What libhvd's steps ran: every step negotiates and moves its tensors somehow.
    for key in ("rounds_per_step", "collectives_per_step", "speculative_per_step",
                "ring_per_step", "far_core_repetitions", "back_to_back_repetitions"):
        if not isinstance(line.get(key), (int, float)) or line[key] < 0:
            fail("%s should be a number >= 0: %r" % (key, line.get(key)))
    if line["rounds_per_step"] <= 0:
        fail("a libhvd step without a negotiation round: %r" % line)
    if line["ring_per_step"] > line["collectives_per_step"]:
        fail("more ring allreduces than collectives per step: %r" % line)
    if line["collectives_per_step"] + line["speculative_per_step"] <= 0:
        fail("a libhvd step with neither a collective nor an allreduce within its round: %r" % line)
    # The cores' distance: measured when rank 0 shares its node with another rank (the
    # tests' ranks all do), a round trip in ns, or -2 where the two ranks share a core.
    for key in ("core_round_trip_ns_start", "core_round_trip_ns_end"):
        value = line.get(key)
        if not isinstance(value, (int, float)) or not (value > 0 or value == -2):
            fail("%s should be a round trip in ns (> 0) or -2: %r" % (key, value))
    references = ("limit_ms", "limit_strategy", "per_tensor_ms", "vs_limit", "vs_per_tensor")
    for key in references:
        if (key in line) != baseline:
            fail("key %s should be %s" % (key, "present" if baseline else "absent"))
    if baseline:
        check_stats(line, "limit_ms")
        check_stats(line, "per_tensor_ms")
        if line["limit_strategy"] not in ("per-tensor", "packed", "packed-chunks-1MiB",
                                          "packed-chunks-4MiB", "packed-chunks-16MiB"):
            fail("unknown limit_strategy %r" % line["limit_strategy"])
        if line["limit_ms"]["median"] > line["per_tensor_ms"]["median"]:
            fail("the limit is slower than the per-tensor reference")
        check_ratio(line, "vs_limit", "limit_ms")
        check_ratio(line, "vs_per_tensor", "per_tensor_ms")
        check_stats(line, "hvd_back_to_back_ms")
        want = line["limit_ms"]["median"] / line["hvd_back_to_back_ms"]["median"]
        if not math.isclose(line["vs_limit_back_to_back"], want, rel_tol=1e-3):
            fail("vs_limit_back_to_back is %r, want %r" % (line["vs_limit_back_to_back"], want))
        check_stats(line, "limit_back_to_back_ms")
        want = line["limit_back_to_back_ms"]["median"] / line["hvd_back_to_back_ms"]["median"]
        if not math.isclose(line["vs_limit_both_back_to_back"], want, rel_tol=1e-3):
            fail("vs_limit_both_back_to_back is %r, want %r" % (line["vs_limit_both_back_to_back"], want))
    else:
        for key in ("hvd_back_to_back_ms", "limit_back_to_back_ms"):
            if key in line:
                fail("%s belongs to --baseline runs" % key)
    if latency:
        check_stats(line, "hvd_latency_us")
        if baseline:
            check_stats(line, "raw_latency_us")
    elif "hvd_latency_us" in line or "raw_latency_us" in line:
        fail("latency keys belong to the latency case only")


def check_sweep(lines):
    seen = set()
    for line in lines:
        for key in ("mode", "op", "ranks", "tensors", "bytes", "count", "in_place"):
            if key not in line:
                fail("key %s missing in %r" % (key, line))
        seen.add(line["op"])
        if "status" in line:
            if line["status"] not in ("unsupported", "invalid") or "hvd_ms" in line:
                fail("a refused case must carry no times: %r" % line)
            continue
        check_stats(line, "hvd_ms")
        if line.get("wrong") != 0:
            fail("wrong elements or no check in %r" % line)
        if "per_tensor_ms" in line:
            check_ratio(line, "vs_per_tensor", "per_tensor_ms")
    if not {"allreduce", "broadcast"} <= seen:
        fail("allreduce and broadcast rows expected, got %s" % sorted(seen))


def check_idle(line):
    for key in ("mode", "ranks", "seconds", "cpu_percent", "collectives",
                "negotiation_rounds", "traffic_bytes", "mpi_traffic"):
        if key not in line:
            fail("key %s missing in %r" % (key, line))
    if line["mode"] != "idle":
        fail("mode should be idle")


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        fail(__doc__)
    kind, command = sys.argv[1], sys.argv[3:]
    run = subprocess.run(command, stdout=subprocess.PIPE, check=False,
                         timeout=240 * max(int(os.environ.get("HVD_TEST_TIMEOUT_MULTIPLIER", "1") or "1"), 1))
    if run.returncode != 0:
        fail("hvd-bench exited with %d" % run.returncode)
    text = run.stdout.decode()
    try:
        lines = [json.loads(l) for l in text.splitlines() if l.strip()]
    except json.JSONDecodeError as error:
        fail("output is not one JSON object per line (%s):\n%s" % (error, text))
    if not lines:
        fail("no output")
    if kind == "sweep":
        check_sweep(lines)
    elif kind == "idle":
        if len(lines) != 1:
            fail("idle mode prints one line")
        check_idle(lines[0])
    else:
        if len(lines) != 1:
            fail("one line per measured case expected, got %d" % len(lines))
        check_step(lines[0], baseline=kind in ("baseline", "latency"), latency=kind == "latency")
        if lines[0]["grouped"] != (kind == "grouped"):
            fail("grouped should be %s: %r" % (kind == "grouped", lines[0]))
        if (lines[0]["bucket_bytes"] > 0) != (kind == "buckets"):
            fail("bucket_bytes should be %s: %r" % ("> 0" if kind == "buckets" else "0", lines[0]))
        if kind == "buckets" and not lines[0]["contiguous"]:
            fail("buckets are views of one flat buffer: contiguous should be true: %r" % lines[0])
    print("%d JSON line(s) checked" % len(lines))


main()
