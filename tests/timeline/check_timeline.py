"""Parses a timeline file with Python's JSON parser, checks its structure, and prints
one line per non-metadata event for the unit test to compare:

    <ph> <process name> <event name or -> [<args as sorted JSON>]

Exit status 1 with a message on stderr when the file is not a valid timeline.
--unterminated: the file was cut short (the process died), so it must lack only the
closing bracket, which chrome://tracing and Perfetto accept.
"""
import json
import sys


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    unterminated = "--unterminated" in args
    paths = [a for a in args if not a.startswith("--")]
    if len(paths) != 1:
        fail("usage: check_timeline.py [--unterminated] FILE")
    with open(paths[0], encoding="utf-8") as f:
        text = f.read()
    if unterminated:
        try:
            json.loads(text)
            fail("expected a file cut short, but it is complete JSON")
        except json.JSONDecodeError:
            pass
        text = text.rstrip() + "\n]"
    try:
        events = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"not valid JSON: {e}")
    if not isinstance(events, list):
        fail("the top level is not an array")

    names = {}
    open_phases = {}
    last_ts = -1.0
    lines = []
    for e in events:
        if not isinstance(e, dict) or "ph" not in e or "pid" not in e:
            fail(f"event without ph or pid: {e!r}")
        ph, pid = e["ph"], e["pid"]
        if ph == "M":
            if e.get("name") == "process_name":
                if pid in names:
                    fail(f"pid {pid} named twice")
                names[pid] = e["args"]["name"]
            continue
        if pid not in names:
            fail(f"pid {pid} used before its process_name")
        ts = e.get("ts")
        if not isinstance(ts, (int, float)):
            fail(f"event without a numeric ts: {e!r}")
        if ts < last_ts:
            fail(f"timestamps go backwards at {e!r}")
        last_ts = ts
        if ph == "B":
            open_phases[pid] = open_phases.get(pid, 0) + 1
        elif ph == "E":
            if open_phases.get(pid, 0) == 0:
                fail(f"E without an open B on pid {pid}")
            open_phases[pid] -= 1
        elif ph not in ("i", "C"):
            fail(f"unexpected phase {ph!r}")
        line = f"{ph} {names[pid]} {e.get('name', '-')}"
        if "args" in e:
            line += " " + json.dumps(e["args"], sort_keys=True, separators=(",", ":"))
        lines.append(line)
    if not unterminated:
        still_open = {names[p]: n for p, n in open_phases.items() if n}
        if still_open:
            fail(f"phases left open: {still_open}")
    sys.stdout.write("".join(l + "\n" for l in lines))


main()
