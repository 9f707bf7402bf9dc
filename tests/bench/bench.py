#!/usr/bin/env python3
"""Timing primitives of the clock benchmarks (tests/bench/run.sh drives them).

Each subcommand runs real processes, measures them and appends one JSON
object per result to the results file (--results, JSON lines); `report`
turns that file into the table of medians and ratios. Commands are given as
one string each and split like a shell would (shlex), but run without a
shell, so every tool pays the same fork and exec and nothing more.

  latency   interleaved repeated runs of several commands: median, p10, p90
  contend   N processes x T turns of each command at once: total wall time
  handover  holder's child exits -> next waiter's child starts, p50 and p99
  stall     a loop of acquirers timed while another command (gc) runs
  rss       peak RSS (VmHWM) of a process while its child still runs
  record    store a number measured elsewhere (pgbench, query counts)
  report    print the table (markdown) from the results file

Standard library only.
"""
import argparse
import glob
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def now_ns():
    return time.monotonic_ns()  # CLOCK_MONOTONIC, as tests/bench/stamp.c


def percentile(samples, p):
    """Nearest-rank percentile: an observed value, never an interpolation."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def summary(samples):
    return {
        "n": len(samples),
        "median": statistics.median(samples),
        "p10": percentile(samples, 10),
        "p90": percentile(samples, 90),
        "p99": percentile(samples, 99),
        "min": min(samples),
        "max": max(samples),
    }


def emit(results, key, **fields):
    record = {"key": key, **fields}
    with open(results, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
    shown = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in fields.items()
             if k != "samples"}
    print(f"  {key}: {shown}", file=sys.stderr, flush=True)


def stamped_spans(directory):
    """The sections a contended round's jobs stamped (tests/bench/stamp.c):
    TOKEN.start and TOKEN.end in DIRECTORY, as (start_ns, end_ns, token),
    in start order (grant order)."""
    spans = []
    for path in glob.glob(os.path.join(directory, "*.start")):
        token = int(os.path.basename(path).split(".")[0])
        with open(path, encoding="ascii") as s, open(path[:-6] + ".end", encoding="ascii") as e:
            spans.append((int(s.read()), int(e.read()), token))
    return sorted(spans)


def run_checked(argv, what):
    """Runs argv with output discarded and returns its CPU time in ms (user +
    system, its reaped descendants included); fails loudly, with its stderr, on
    a non-zero exit."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            sys.exit(f"bench: {what} failed with exit {proc.returncode}: {shlex.join(argv)}\n"
                     + err.read().decode(errors="replace")[-2000:])
    return (usage.ru_utime + usage.ru_stime) * 1000


def timed_ms(argv, what):
    """(wall ms, CPU ms) of one run of argv."""
    start = time.perf_counter_ns()
    cpu = run_checked(argv, what)
    return (time.perf_counter_ns() - start) / 1e6, cpu


def pairs(values, flag):
    if len(values) % 2:
        sys.exit(f"bench: {flag} takes KEY CMDLINE pairs")
    return [(values[i], shlex.split(values[i + 1])) for i in range(0, len(values), 2)]


# --- latency -----------------------------------------------------------------------

def cmd_latency(args):
    commands = pairs(args.cmd, "--cmd")
    after = dict(pairs(args.after or [], "--after"))
    samples = {key: [] for key, _ in commands}
    cpu = {key: [] for key, _ in commands}
    for round_no in range(args.warmup + args.runs):
        # Round-robin, starting one further each round: drift in the machine
        # (another tenant, page cache, autovacuum) hits every command alike.
        shift = round_no % len(commands)
        for key, argv in commands[shift:] + commands[:shift]:
            if args.gap:
                time.sleep(args.gap)  # an isolated run, as cron's: nothing just before it
            ms, cpu_ms = timed_ms(argv, key)
            if key in after:
                run_checked(after[key], key + " (after)")
            if round_no >= args.warmup:
                samples[key].append(ms)
                cpu[key].append(cpu_ms)
    for key, _ in commands:
        emit(args.results, key, unit="ms", samples=samples[key],
             cpu_median=statistics.median(cpu[key]), **summary(samples[key]))


# --- contend -----------------------------------------------------------------------

WORKER = 'i=0; while [ "$i" -lt "$0" ]; do "$@" || exit 1; i=$((i + 1)); done'


def contend_once(argv, procs, turns):
    start = time.perf_counter_ns()
    workers = [subprocess.Popen(["sh", "-c", WORKER, str(turns), *argv],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for _ in range(procs)]
    codes = [w.wait() for w in workers]
    wall = (time.perf_counter_ns() - start) / 1e6
    if any(codes):
        sys.exit(f"bench: a contention worker failed (exit codes {codes}): {shlex.join(argv)}")
    return wall


def cmd_contend(args):
    commands = pairs(args.cmd, "--cmd")
    walls = {key: [] for key, _ in commands}
    for rep in range(args.reps):
        shift = rep % len(commands)
        for key, argv in commands[shift:] + commands[:shift]:
            walls[key].append(contend_once(argv, args.procs, args.turns))
    ops = args.procs * args.turns
    for key, _ in commands:
        s = summary(walls[key])
        emit(args.results, key, unit="ms", samples=walls[key], ops=ops,
             throughput=ops / (s["median"] / 1000), **s)


# --- handover ----------------------------------------------------------------------

def wait_for_file(path, timeout_s, proc):
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if proc.poll() is not None:
            sys.exit(f"bench: holder exited ({proc.returncode}) before it held the lock")
        if time.monotonic() > deadline:
            sys.exit(f"bench: {path} did not appear within {timeout_s}s")
        time.sleep(0.0005)


def read_ns(path):
    with open(path, encoding="ascii") as f:
        return int(f.read().strip())


def cmd_handover(args):
    clock = shlex.split(args.clock)
    held, released, started = (os.path.join(args.dir, name) for name in
                               ("held", "released", "started"))
    samples, too_early = [], 0
    for _ in range(args.samples):
        for path in (held, released, started):
            if os.path.exists(path):
                os.unlink(path)
        # The holder's child says it holds, keeps the lock --hold seconds, and
        # stamps as its very last act: the stamp is the start of the hand-over.
        holder = subprocess.Popen(
            clock + ["run", "-r", args.resource, "--", "sh", "-c",
                     f'touch "$0"; sleep {args.hold}; exec "$1" "$2"',
                     held, args.stamp, released],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_file(held, 30, holder)
        launched = now_ns()
        waiter = subprocess.Popen(clock + ["run", "-r", args.resource, "--", args.stamp, started],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        if holder.wait() != 0 or waiter.wait() != 0:
            sys.exit(f"bench: hand-over run failed: holder {holder.returncode}, "
                     f"waiter {waiter.returncode}")
        rel, start = read_ns(released), read_ns(started)
        # A waiter that was not yet queued when the lock was released would
        # measure an uncontended start instead: count those, keep them out.
        if rel - launched < args.min_blocked * 1e9:
            too_early += 1
            continue
        samples.append((start - rel) / 1e6)
    if len(samples) < args.samples // 2:
        sys.exit(f"bench: only {len(samples)} of {args.samples} hand-overs had a queued waiter")
    emit(args.results, args.key, unit="ms", samples=samples, discarded=too_early,
         **summary(samples))


# --- stall -------------------------------------------------------------------------

def cmd_stall(args):
    acquire, release, during = (shlex.split(c) for c in (args.acquire, args.release, args.during))
    spans = []  # (start_ns, end_ns) of each timed acquire
    stop = threading.Event()

    def acquirer():
        while not stop.is_set():
            start = now_ns()
            run_checked(acquire, "acquire")
            spans.append((start, now_ns()))
            run_checked(release, "release")

    thread = threading.Thread(target=acquirer, daemon=True)
    thread.start()
    time.sleep(args.baseline)
    g0 = now_ns()
    run_checked(during, "the command under test")
    g1 = now_ns()
    time.sleep(args.tail)
    stop.set()
    thread.join(timeout=120)
    before = [(e - s) / 1e6 for s, e in spans if e <= g0]
    overlapping = [(e - s) / 1e6 for s, e in spans if e > g0 and s < g1]
    if not before or not overlapping:
        sys.exit("bench: the acquirer loop got no samples before or during the command")
    base = statistics.median(before)
    worst = max(overlapping)
    emit(args.results, args.key, unit="ms", duration=(g1 - g0) / 1e6, baseline=base,
         worst=worst, stall=max(0.0, worst - base), acquires=len(overlapping))


# --- rss ---------------------------------------------------------------------------

def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def cmd_rss(args):
    for key, argv in pairs(args.cmd, "--cmd"):
        peaks = []
        for _ in range(args.reps):
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            time.sleep(args.at)
            if proc.poll() is not None:
                sys.exit(f"bench: {key} ended before its peak RSS could be read")
            peaks.append(vm_hwm_kib(proc.pid) / 1024)
            if proc.wait() != 0:
                sys.exit(f"bench: {key} failed with exit {proc.returncode}")
        emit(args.results, key, unit="MiB", samples=peaks, **summary(peaks))


def cmd_record(args):
    emit(args.results, args.key, unit=args.unit, median=args.value, **json.loads(args.extra))


# --- report ------------------------------------------------------------------------

def cmd_report(args):
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    from report import render  # tests/bench/report.py, beside this file
    results = {}
    with open(args.results, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            results[record["key"]] = record
    print(render(results, args.title, args.notes or []))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name, handler):
        p = sub.add_parser(name)
        p.add_argument("--results", required=True)
        p.set_defaults(handler=handler)
        return p

    p = command("latency", cmd_latency)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--gap", type=float, default=0,
                   help="seconds idle before each run (isolated runs, as cron's); none by default")
    p.add_argument("--cmd", nargs=2, action="extend", required=True, metavar=("KEY", "CMDLINE"))
    p.add_argument("--after", nargs=2, action="extend", metavar=("KEY", "CMDLINE"))

    p = command("contend", cmd_contend)
    p.add_argument("--procs", type=int, default=8)
    p.add_argument("--turns", type=int, default=25)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--cmd", nargs=2, action="extend", required=True, metavar=("KEY", "CMDLINE"))

    p = command("handover", cmd_handover)
    p.add_argument("--key", required=True)
    p.add_argument("--clock", required=True, help="clock and its global flags, one string")
    p.add_argument("--stamp", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--resource", default="bench.handover")
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--hold", type=float, default=0.2)
    p.add_argument("--min-blocked", type=float, default=0.1,
                   help="seconds a waiter must have had to queue before the release")

    p = command("stall", cmd_stall)
    p.add_argument("--key", required=True)
    p.add_argument("--acquire", required=True)
    p.add_argument("--release", required=True)
    p.add_argument("--during", required=True)
    p.add_argument("--baseline", type=float, default=2.0)
    p.add_argument("--tail", type=float, default=0.5)

    p = command("rss", cmd_rss)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--at", type=float, default=0.6, help="seconds after start to read VmHWM")
    p.add_argument("--cmd", nargs=2, action="extend", required=True, metavar=("KEY", "CMDLINE"))

    p = command("record", cmd_record)
    p.add_argument("key")
    p.add_argument("value", type=float)
    p.add_argument("--unit", default="")
    p.add_argument("--extra", default="{}", help="more fields, as a JSON object")

    p = command("report", cmd_report)
    p.add_argument("--title", default="clock benchmarks")
    p.add_argument("--notes", action="append")

    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
