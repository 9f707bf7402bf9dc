#!/usr/bin/env python3
"""The MariaDB family's own measurements (tests/bench/mariadb.sh drives them),
beside PostgreSQL in the same run. Appends JSON lines to --results, as
bench.py does.

  ordered   one contended round whose jobs stamp start, end and CLOCK_TOKEN:
            no two jobs overlap, tokens rise in start order
  burst     N `clock run` started at once on distinct resources: exit codes
            (distinct first segments: resources of one hierarchy, bench.*,
            take turns on one row of the lock table on either server)
  capacity  for each command in turn, L parallel loops of it for S seconds
            (`clock run -- true` on distinct resources or on one, or a
            floor: a bare connection and query, GET_LOCK, `etcdctl lock`):
            runs/s and the server's CPU per run (of the server's process
            tree, from /proc: tree_cpu_ms)
  server_cpu  several commands run one after another, N times each, in
            interleaved blocks: the server's CPU per run of each (measured
            the same way), a new connection each run unless the command
            borrows one

Standard library only.
"""
import argparse
import collections
import glob
import json
import os
import shlex
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import emit, stamped_spans, summary  # noqa: E402  (tests/bench/bench.py, beside this file)

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def stat_fields(pid):
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        text = f.read()
    return text[text.rindex(")") + 2:].split()  # fields from 3 (state) on


def own_cpu_ms(pid, fields):
    """A process's own CPU: for one of a single thread (PostgreSQL's), the
    scheduler's nanosecond count (/proc/PID/schedstat); for one of several
    (MariaDB), utime + stime, which count the threads that have ended too.
    /proc's utime and stime are whole ticks (10 ms): summed over a dozen
    processes and read twice, they blurred a warm backend's 1 ms a run by
    about ±10 % over 200 runs."""
    if int(fields[17]) == 1:  # num_threads
        try:
            with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
                return int(f.read().split()[0]) / 1e6
        except (OSError, ValueError, IndexError):
            pass
    return (int(fields[11]) + int(fields[12])) * TICK_MS


def tree_cpu_ms(root):
    """CPU of root and every live descendant, plus the reaped children that
    root waited for (cutime/cstime): PostgreSQL's backends exit with their
    connection and are counted in the postmaster's cutime once reaped;
    MariaDB is one process of threads."""
    children = collections.defaultdict(list)
    for path in glob.glob("/proc/[0-9]*/stat"):
        try:
            pid = int(path.split("/")[2])
            children[int(stat_fields(pid)[1])].append(pid)
        except (OSError, ValueError):
            continue
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            f = stat_fields(pid)
        except OSError:
            continue
        total += own_cpu_ms(pid, f) + (int(f[13]) + int(f[14])) * TICK_MS  # + cutime cstime
        todo += children.get(pid, [])
    return total


def cmd_ordered(args):
    clock = shlex.split(args.clock)
    os.makedirs(args.dir, exist_ok=True)
    for old in glob.glob(os.path.join(args.dir, "*")):
        os.unlink(old)
    job = ['sh', '-c', '"$0" "$1/$CLOCK_TOKEN.start"; "$0" "$1/$CLOCK_TOKEN.end"',
           args.stamp, args.dir]
    worker = 'i=0; while [ "$i" -lt "$0" ]; do "$@" || exit 1; i=$((i + 1)); done'
    procs = [subprocess.Popen(["sh", "-c", worker, str(args.turns), *clock, "run", "-r",
                               args.resource, "--", *job], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(args.procs)]
    codes = [p.wait() for p in procs]
    spans = stamped_spans(args.dir)
    overlaps = sum(1 for a, b in zip(spans, spans[1:]) if b[0] < a[1])
    falling = sum(1 for a, b in zip(spans, spans[1:]) if b[2] <= a[2])
    emit(args.results, args.key, unit="", median=len(spans), jobs=len(spans),
         expected=args.procs * args.turns, overlaps=overlaps, tokens_not_rising=falling,
         failed_workers=sum(1 for c in codes if c))


def cmd_burst(args):
    clock = shlex.split(args.clock)
    start = time.perf_counter_ns()
    procs = [subprocess.Popen(clock + ["run", "-r", f"{args.prefix}-{i}", "-w", "10m", "--",
                                       "true"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for i in range(args.count)]
    spawned_ms = (time.perf_counter_ns() - start) / 1e6
    exits, errors = collections.Counter(), collections.Counter()
    for p in procs:
        err = p.stderr.read().decode(errors="replace").strip()
        exits[str(p.wait())] += 1
        if err:
            errors[err.splitlines()[-1][:160]] += 1
    wall = (time.perf_counter_ns() - start) / 1e6
    emit(args.results, args.key, unit="ms", median=wall, count=args.count,
         spawned_ms=spawned_ms, exits=dict(exits), errors=dict(errors.most_common(3)))


def cmd_capacity(args):
    """--cmd KEY COMMAND...: for each in turn, --loops shell loops run
    COMMAND (a shell command; $R is a resource name of its own for each
    run) for --seconds: one record per KEY, median = runs/s, with the
    server's CPU per run (--server-pid's tree)."""
    loop = ('i=0; end=$(($(date +%s) + $1)); while [ "$(date +%s)" -lt "$end" ]; do '
            'R="$0-$i"; eval "$2" >/dev/null || exit 1; i=$((i + 1)); done; echo "$i"')
    for key, command in args.cmd:
        cpu0 = tree_cpu_ms(args.server_pid)
        start = time.perf_counter_ns()
        loops = [subprocess.Popen(["sh", "-c", loop, f"{args.prefix}-{n}", str(args.seconds),
                                   command],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL) for n in range(args.loops)]
        outs = [p.communicate()[0] for p in loops]
        wall = (time.perf_counter_ns() - start) / 1e9
        cpu = tree_cpu_ms(args.server_pid) - cpu0
        if any(p.returncode for p in loops):
            sys.exit(f"bench: a capacity loop of {key} failed: {[p.returncode for p in loops]}")
        runs = sum(int(o) for o in outs)
        emit(args.results, key, unit="runs/s", median=runs / wall, runs=runs, seconds=wall,
             loops=args.loops, server_cpu_ms=cpu, server_cpu_ms_per_run=cpu / runs)


def cmd_server_cpu(args):
    """--cmd KEY COMMAND...: one record per KEY, median = server CPU ms per
    run over all its runs. Blocks of --runs/--blocks runs of each command in
    turn, so that a drift of the machine falls on every command alike."""
    commands = [(key, shlex.split(text)) for key, text in args.cmd]
    cpu = collections.Counter()
    runs = collections.Counter()
    per_block = max(1, args.runs // args.blocks)
    for _ in range(args.blocks):
        for key, argv in commands:
            before = tree_cpu_ms(args.server_pid)
            for _ in range(per_block):
                subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=True)
            cpu[key] += tree_cpu_ms(args.server_pid) - before
            runs[key] += per_block
    for key, _ in commands:
        emit(args.results, key, unit="ms", median=cpu[key] / runs[key], runs=runs[key],
             server_cpu_ms=cpu[key])


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, handler in (("ordered", cmd_ordered), ("burst", cmd_burst)):
        p = sub.add_parser(name)
        p.set_defaults(handler=handler)
        p.add_argument("--results", required=True)
        p.add_argument("--key", required=True)
        p.add_argument("--clock", required=True, help="clock and its global flags, one string")
    p = sub.add_parser("server_cpu")
    p.set_defaults(handler=cmd_server_cpu)
    p.add_argument("--results", required=True)
    p.add_argument("--server-pid", type=int, required=True)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--blocks", type=int, default=4)
    p.add_argument("--cmd", nargs=2, action="append", required=True, metavar=("KEY", "COMMAND"))
    p = sub.choices["ordered"]
    p.add_argument("--stamp", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--resource", default="bench.ordered")
    p.add_argument("--procs", type=int, default=8)
    p.add_argument("--turns", type=int, default=25)
    p = sub.choices["burst"]
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--prefix", default="bench-burst")
    p = sub.add_parser("capacity")
    p.set_defaults(handler=cmd_capacity)
    p.add_argument("--results", required=True)
    p.add_argument("--server-pid", type=int, required=True)
    p.add_argument("--loops", type=int, default=4)
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--prefix", default="bench-cap")
    p.add_argument("--cmd", nargs=2, action="append", required=True, metavar=("KEY", "COMMAND"))
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
