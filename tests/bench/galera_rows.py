#!/usr/bin/env python3
"""The Galera family's measurements (tests/bench/galera.sh drives them): one
node of a three-node cluster against all three, the same clock binary, the
same run. Appends JSON lines to --results, as bench.py does.

Both take --clock once per node to use (clock and its --database flag, one
string each); loop k runs on the k-th of them, round-robin, so one --clock
puts every loop on one node and three bind the loops to nodes 1, 2, 3, 1, ...
Both read each --socket's wsrep_local_cert_failures and wsrep_local_bf_aborts
before and after (SHOW GLOBAL STATUS) and record the deltas summed over the
nodes: the conflicts certification found, and the transactions it aborted.

  contend   L loops x T sections on one resource; each section's job stamps
            its start and end (tests/bench/stamp.c) into files named by its
            CLOCK_TOKEN: throughput, hand-over (one section's end stamp to
            the next one's start stamp, in grant order: the release, the
            wake-up and the next child's start under contention), overlaps,
            tokens rising in grant order, and the exit code of every
            `clock run` (a loop goes on after a failure and counts it)
  capacity  L loops of `clock run -- true` on distinct resources (distinct
            first segments: no shared slot row) for S seconds: runs/s, each
            run's wall time (p50, p99, the slowest: a loop finishes the run
            it is in at the deadline), exit codes, and the CPU of the nodes'
            processes per run

Standard library only.
"""
import argparse
import collections
import glob
import os
import shlex
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import emit, stamped_spans, summary  # noqa: E402  (tests/bench/bench.py, beside this file)
from mariadb_rows import tree_cpu_ms  # noqa: E402

# A run of `clock run -- true` this slow is recorded with its last stderr lines.
SLOW_MS = 2000

COUNTERS = ("wsrep_local_cert_failures", "wsrep_local_bf_aborts")

# A loop of `clock run`: $0 turns, the clock command line in "$@"; prints the
# exit code of each run, one a line, and goes on after a failure.
LOOP = 'i=0; while [ "$i" -lt "$0" ]; do "$@"; echo "$?"; i=$((i + 1)); done'

# The job of a section: stamps start and end into DIR/TOKEN.start and .end.
JOB = '"$0" "$1/$CLOCK_TOKEN.start"; "$0" "$1/$CLOCK_TOKEN.end"'

def wsrep_counters(sockets):
    """{counter: sum over the nodes} now."""
    where = ", ".join(f"'{name}'" for name in COUNTERS)
    totals = dict.fromkeys(COUNTERS, 0)
    for socket in sockets:
        out = subprocess.run(["mariadb", f"--socket={socket}", "-uroot", "-N", "-B", "-e",
                              f"SHOW GLOBAL STATUS WHERE Variable_name IN ({where})"],
                             check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            name, value = line.split("\t")
            totals[name] += int(value)
    return totals


def deltas(before, after):
    return {name: after[name] - before[name] for name in COUNTERS}


def loop_clocks(args):
    return [shlex.split(args.clock[n % len(args.clock)]) for n in range(args.loops)]


def last_errors(paths, ignore):
    """The three commonest last lines of the loops' stderr, less the lines
    that contain IGNORE (clock's Galera warning, which the lead replaces)."""
    errors = collections.Counter()
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line and not (ignore and ignore in line):
                    errors[line[:160]] += 1
    return dict(errors.most_common(3))


def cmd_contend(args):
    os.makedirs(args.dir, exist_ok=True)
    for old in glob.glob(os.path.join(args.dir, "*")):
        os.unlink(old)
    before = wsrep_counters(args.socket)
    start = time.perf_counter_ns()
    loops, err_paths = [], []
    for n, clock in enumerate(loop_clocks(args)):
        err_paths.append(os.path.join(args.dir, f"loop{n}.err"))
        with open(err_paths[-1], "wb") as err:
            loops.append(subprocess.Popen(
                ["sh", "-c", LOOP, str(args.turns), *clock, "run", "-r", args.resource, "--",
                 "sh", "-c", JOB, args.stamp, args.dir],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err))
    outs = [p.communicate()[0].decode() for p in loops]
    wall = (time.perf_counter_ns() - start) / 1e9
    counters = deltas(before, wsrep_counters(args.socket))
    exits = collections.Counter(line for out in outs for line in out.split())
    spans = stamped_spans(args.dir)
    # Grant order is start order; a section that starts before every
    # earlier one has ended overlaps (the latest end so far, not only the
    # previous section's, so one long section cannot hide two overlaps).
    overlaps, falling, gaps = 0, 0, []
    latest_end = spans[0][1] if spans else 0
    for prev, cur in zip(spans, spans[1:]):
        latest_end = max(latest_end, prev[1])
        if cur[0] < latest_end:
            overlaps += 1
        else:
            gaps.append((cur[0] - prev[1]) / 1e6)
        if cur[2] <= prev[2]:
            falling += 1
    # Recorded whatever ran: a round where clock failed is a row that says so.
    hand = summary(gaps) if gaps else {"median": None, "p90": None, "max": None, "n": 0}
    # Hand-overs of a second or more: the stalls that a median hides.
    stalls = [ms for ms in gaps if ms >= 1000]
    emit(args.results, args.key, unit="sections/s", median=len(spans) / wall, seconds=wall,
         loops=args.loops, nodes=len(args.clock), sections=len(spans),
         expected=args.loops * args.turns, overlaps=overlaps, tokens_not_rising=falling,
         exits=dict(exits), errors=last_errors(err_paths, args.ignore),
         handover_p50=hand["median"], handover_p90=hand["p90"], handover_max=hand["max"],
         handover_n=hand["n"], stalls=len(stalls), stalled_ms=sum(stalls), **counters)


def capacity_loop(clock, prefix, deadline, times, exits, errors, slow):
    """`clock run -- true` on a new resource each time (PREFIX-I) until
    the deadline: each run's wall time, exit code and last stderr line, and
    what a run slower than SLOW_MS said."""
    i = 0
    while time.monotonic() < deadline:
        start = time.perf_counter_ns()
        proc = subprocess.run([*clock, "run", "-r", f"{prefix}-{i}", "--", "true"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, check=False)
        times.append((time.perf_counter_ns() - start) / 1e6)
        exits.append(str(proc.returncode))
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        if proc.returncode:
            errors.append(lines[-1:])
        if times[-1] >= SLOW_MS:
            slow.append((round(times[-1]), prefix, i, lines[-3:]))
        i += 1


def cmd_capacity(args):
    before = wsrep_counters(args.socket)
    cpu0 = sum(tree_cpu_ms(pid) for pid in args.server_pid)
    start = time.perf_counter_ns()
    deadline = time.monotonic() + args.seconds
    # Threads, not shell loops: each run is timed (a run that stalls shows
    # as the slowest, not only as a lower rate), and no shell forks between.
    times, exits = [[] for _ in range(args.loops)], [[] for _ in range(args.loops)]
    errors, slow = [], []
    loops = [threading.Thread(target=capacity_loop, args=(clock, f"{args.prefix}{n}", deadline,
                                                          times[n], exits[n], errors, slow))
             for n, clock in enumerate(loop_clocks(args))]
    for loop in loops:
        loop.start()
    for loop in loops:
        loop.join()
    wall = (time.perf_counter_ns() - start) / 1e9
    cpu = sum(tree_cpu_ms(pid) for pid in args.server_pid) - cpu0
    counters = deltas(before, wsrep_counters(args.socket))
    codes = collections.Counter(code for loop in exits for code in loop)
    runs = codes.get("0", 0)
    each = summary([ms for loop in times for ms in loop])
    emit(args.results, args.key, unit="runs/s", median=runs / wall, runs=runs, seconds=wall,
         loops=args.loops, nodes=len(args.clock), exits=dict(codes),
         errors=dict(collections.Counter(e[0][:160] for e in errors if e).most_common(3)),
         run_p50=each["median"], run_p99=each["p99"], run_max=each["max"],
         slow_runs=sorted(slow, reverse=True)[:5], cluster_cpu_ms=cpu,
         cluster_cpu_ms_per_run=cpu / max(runs, 1), **counters)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, handler in (("contend", cmd_contend), ("capacity", cmd_capacity)):
        p = sub.add_parser(name)
        p.set_defaults(handler=handler)
        p.add_argument("--results", required=True)
        p.add_argument("--key", required=True)
        p.add_argument("--clock", action="append", required=True,
                       help="clock and its --database flag, one string; once per node to use")
        p.add_argument("--socket", action="append", required=True,
                       help="every node's unix socket, for the wsrep counters")
        p.add_argument("--loops", type=int, required=True)
    p = sub.choices["contend"]
    p.add_argument("--turns", type=int, required=True)
    p.add_argument("--stamp", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--resource", default="bench.galera")
    p.add_argument("--ignore", default="", help="stderr lines containing this are not errors")
    p = sub.choices["capacity"]
    p.add_argument("--server-pid", type=int, action="append", required=True)
    p.add_argument("--seconds", type=int, required=True)
    p.add_argument("--prefix", required=True)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
