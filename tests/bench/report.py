"""The table of tests/bench: which results are compared with which, and the
targets of the issue. One row per comparison; a row whose results are missing
(a part that was skipped or failed) says so instead of breaking the table.

Verdicts: "ok" (target met), "MISS" (target missed), "info" (no target: a
reference point that helps read the others).
"""


def fmt_ms(ms):
    if ms >= 10_000:
        return f"{ms / 1000:.1f} s"
    if ms >= 100:
        return f"{ms:.0f} ms"
    return f"{ms:.1f} ms"


def fmt(value, unit):
    if unit == "ms":
        return fmt_ms(value)
    if unit == "MiB":
        return f"{value:.2f} MiB"
    if unit == "q/s":
        return f"{value:.1f} q/s"
    if unit == "ops/s":
        return f"{value:.1f} ops/s"
    return f"{value:g} {unit}".strip()


class Table:
    def __init__(self, results):
        self.results = results
        self.rows = []
        self.misses = 0

    def get(self, key, field="median"):
        record = self.results.get(key)
        return None if record is None else record.get(field)

    def row(self, number, what, mine, peer=None, ratio=None, target=None, ok=None):
        """mine/peer: text; ratio: float or None; ok: True/False, or None for info."""
        if ok is None:
            verdict = "info"
        elif ok:
            verdict = "ok"
        else:
            verdict = "**MISS**"
            self.misses += 1
        self.rows.append((number, what, mine, peer or "", "" if ratio is None else f"{ratio:.2f}×",
                          target or "", verdict))

    def missing(self, number, what, keys):
        absent = [k for k in keys if k not in self.results]
        self.rows.append((number, what, "not measured: " + ", ".join(absent), "", "", "", "—"))

    def compare(self, number, what, key, peer_key, peer_name, limit=None, field="median",
                unit="ms", higher_is_better=False, target_text=None, with_cpu=True):
        """A row comparing key with peer_key on field; limit bounds the ratio.
        Where the CPU time is known it follows in brackets: on a busy machine
        the wall time grows with every wait for a core, the CPU time does not."""
        mine, theirs = self.get(key, field), self.get(peer_key, field)
        if mine is None or theirs is None:
            return self.missing(number, what, [key, peer_key])
        cpu_mine, cpu_theirs = self.get(key, "cpu_median"), self.get(peer_key, "cpu_median")
        ratio = mine / theirs
        ok = None
        if limit is not None:
            ok = ratio >= limit if higher_is_better else ratio <= limit
        target = target_text or (None if limit is None else
                                 (f"≥ {limit:g}×" if higher_is_better else f"≤ {limit:g}×"))
        mine_text, theirs_text = fmt(mine, unit), f"{peer_name} {fmt(theirs, unit)}"
        if with_cpu and cpu_mine is not None and cpu_theirs is not None:
            mine_text += f" (CPU {fmt_ms(cpu_mine)})"
            theirs_text += f" (CPU {fmt_ms(cpu_theirs)})"
        self.row(number, what, mine_text, theirs_text, ratio, target, ok)

    def absolute(self, number, what, key, field="median", unit="ms", limit=None, shown=None,
                 extra=""):
        value = self.get(key, field)
        if value is None:
            return self.missing(number, what, [key])
        ok = None if limit is None else value < limit
        target = None if limit is None else f"< {fmt(limit, unit)}"
        self.row(number, what, (shown or fmt(value, unit)) + extra, None, None, target, ok)

    def render(self):
        head = ("#", "measurement", "clock", "peer / reference", "ratio", "target", "result")
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        for row in self.rows:
            lines.append("| " + " | ".join(str(c) for c in row) + " |")
        return "\n".join(lines)


def uncontended(t):
    # A guard rail, not a race: a `clock run` wraps jobs of seconds to hours.
    # The CPU time (user + system of the process and the children it reaped)
    # has a row of its own: on a busy machine the wall time grows with every
    # wait for a core, the CPU time does not.
    t.compare("1", "uncontended `X -- true`: `clock run` SQLite vs `flock`, wall time",
              "m1.sqlite", "m1.flock", "flock", 2.0, target_text="≤ 2× flock wall time")
    t.compare("1", "… the same runs' CPU time (user + sys)",
              "m1.sqlite", "m1.flock", "flock", field="cpu_median", with_cpu=False)
    t.compare("1", "… PostgreSQL (unix socket) vs `etcdctl lock`",
              "m1.pg", "m1.etcd", "etcdctl", 0.6)
    t.compare("1", "… PostgreSQL vs one bare connection + one query (`pgbench -C`)",
              "m1.pg", "m1.pgbench", "pgbench -C", 1.3)
    t.compare("1", "… PostgreSQL vs `psql` advisory lock + `\\! true` + unlock",
              "m1.pg", "m1.psql", "psql")
    t.compare("1", "… PostgreSQL through pgbouncer vs `etcdctl lock`",
              "m1.pgbouncer", "m1.etcd", "etcdctl", 0.25)
    t.compare("1", "… process floor: `clock --version` vs `flock`",
              "m1.version", "m1.flock", "flock")
    t.compare("1", "… isolated runs (0.2 s idle before each), SQLite as root vs `flock`",
              "m1i.sqlite", "m1i.flock", "flock", 2.0, target_text="≤ 2× flock wall time")
    job_cgroup(t)


def job_cgroup(t):
    # What the job's own cgroup adds to an isolated run: root's clock makes
    # one, nobody's cannot; each is measured against flock run by the same
    # user, so that what setpriv and the user's start cost cancels out.
    keys = ["m1i.sqlite", "m1i.flock", "m1i.nobody.sqlite", "m1i.nobody.flock"]
    if any(t.get(key) is None for key in keys):
        return t.missing("1", "… the job's own cgroup, isolated runs (root only)", keys)
    root = t.get("m1i.sqlite") - t.get("m1i.flock")
    nobody = t.get("m1i.nobody.sqlite") - t.get("m1i.nobody.flock")
    cost = root - nobody
    t.row("1", "… the job's own cgroup: (clock − flock) as root, less the same as nobody",
          f"{fmt_ms(cost)}", f"root +{fmt_ms(root)}, nobody +{fmt_ms(nobody)} over flock", None,
          "≤ 1 ms", cost <= 1.0)


def contended(t):
    for key, name, peer_key, peer, limit in (
            ("m2.pg", "PostgreSQL", "m2.etcd", "etcdctl", 2.0),
            ("m2.pgbouncer", "PostgreSQL via pgbouncer", "m2.etcd", "etcdctl", None),
            ("m2.sqlite", "SQLite", "m2.flock", "flock", None),
            ("m2.sqlite", "SQLite", "m2.etcd", "etcdctl", None)):
        mine, theirs = t.get(key, "throughput"), t.get(peer_key, "throughput")
        if mine is None or theirs is None:
            t.missing("2", f"contended 8×25 throughput, {name} vs {peer}", [key, peer_key])
            continue
        wall, peer_wall = t.get(key), t.get(peer_key)
        t.row("2", f"contended 8×25, empty section: throughput, {name} vs `{peer}`",
              f"{mine:.0f} ops/s ({fmt_ms(wall)})", f"{peer} {theirs:.0f} ops/s ({fmt_ms(peer_wall)})",
              mine / theirs, None if limit is None else f"≥ {limit:g}×",
              None if limit is None else mine / theirs >= limit)


def handover(t):
    for key, name, limit in (("m3.pg", "PostgreSQL", 5.0), ("m3.sqlite", "SQLite", 20.0),
                             ("m3.pgbouncer", "PostgreSQL via pgbouncer", None)):
        p50, p99, n = t.get(key, "median"), t.get(key, "p99"), t.get(key, "n")
        if p50 is None:
            t.missing("3", f"hand-over, {name}", [key])
            continue
        t.row("3", f"hand-over release → next child start, {name}: p50 (p99) of {n}",
              f"{fmt_ms(p50)} ({fmt_ms(p99)})", None, None,
              None if limit is None else f"p50 ≤ {limit:g} ms",
              None if limit is None else p50 <= limit)


def scale(t):
    for backend, name in (("sqlite", "SQLite"), ("pg", "PostgreSQL")):
        t.compare("4", f"`acquire` with 1,000,000 vs 1,000 unrelated held leases, {name}",
                  f"m4.{backend}.acquire_1m", f"m4.{backend}.acquire_1k", "1,000:", 1.2)
        t.absolute("4", f"`status` with 100,000 held leases, {name}",
                   f"m4.{backend}.status_100k", limit=1000.0)
        left = t.get(f"m4.{backend}.gc_left")
        duration = t.get(f"m4.{backend}.gc", "duration")
        if duration is None or left is None:
            t.missing("4", f"`gc` of 1,000,000 expired leases, {name}",
                      [f"m4.{backend}.gc", f"m4.{backend}.gc_left"])
        else:
            t.row("4", f"`gc` of 1,000,000 expired leases, {name}: time (expired left after it)",
                  f"{fmt_ms(duration)} ({left:,.0f} left)", None, None, "0 left", left == 0)
        stall, worst, base = (t.get(f"m4.{backend}.gc", f) for f in ("stall", "worst", "baseline"))
        if stall is not None:
            # A gc that stopped early did not do the work whose stall is asked about.
            judged = left == 0
            t.row("4", f"… longest stall of a concurrent `acquire` during that `gc`, {name}",
                  fmt_ms(stall) + ("" if judged else " (not judged: gc stopped early)"),
                  f"slowest {fmt_ms(worst)} vs usual {fmt_ms(base)}", None,
                  "≤ 100 ms", (stall <= 100.0) if judged else None)


def waiting(t):
    qps, xps = t.get("m5.pg", "median"), t.get("m5.pg", "xact_per_s")
    n, secs = t.get("m5.pg", "waiters"), t.get("m5.pg", "seconds")
    if qps is None:
        return t.missing("5", "cost of 200 blocked waiters on PostgreSQL", ["m5.pg"])
    alive, gave_up = t.get("m5.pg", "running_after"), t.get("m5.pg", "gave_up")
    text = f"{qps:.1f} q/s"
    if alive is not None and alive < n:
        text += f"; only {alive:.0f} of {n:.0f} still waiting ({gave_up})"
    t.row("5", f"{n:.0f} blocked waiters on PostgreSQL for {secs:.0f} s: statements/s they cause",
          text, f"xact_commit: {xps:.1f} tx/s", None, "< 50 q/s, all waiting",
          qps < 50 and (alive is None or alive >= n))


def memory(t):
    for key, name in (("m6.sqlite", "SQLite"), ("m6.pg", "PostgreSQL"),
                      ("m6.pgbouncer", "PostgreSQL via pgbouncer")):
        t.absolute("6", f"peak RSS of `clock run` while its child runs, {name}", key,
                   unit="MiB", limit=12.0)
    for key, name in (("m6.flock", "`flock`"), ("m6.etcd", "`etcdctl lock`")):
        t.absolute("6", f"peak RSS of {name} while its child runs (reference)", key, unit="MiB")


def borrowed(t):
    """Measurement 8 (tests/bench/borrow.sh): connections borrowed, not held."""
    def exits_text(key):
        exits = t.get(key, "exits") or {}
        return ", ".join(f"{v} × {k}" for k, v in exits.items())

    def all_zero(key):
        exits, n = t.get(key, "exits") or {}, t.get(key, "count")
        return exits.get("0") == n

    for key, via in (("m8.burst.pg", "direct, role limited to 90 connections"),
                     ("m8.burst.pgbouncer", "through pgbouncer")):
        n = t.get(key, "count")
        if n is None:
            t.missing("8", f"burst on distinct resources, {via}", [key])
            continue
        peak = t.get(key, "peak_backends")
        text = f"{exits_text(key)} in {fmt_ms(t.get(key))}"
        ok = all_zero(key)
        if key.endswith(".pg"):
            text += f"; peak {peak} backends"
            ok = ok and peak <= 90
        t.row("8", f"{n} `clock run` at once on distinct resources, {via}", text, None, None,
              f"{n} × 0" + (", ≤ 90 backends" if key.endswith(".pg") else ""), ok)
    for key, via, p50 in (("m8.queue.pg", "direct", 15.0), ("m8.queue.pgbouncer", "through pgbouncer", None)):
        n = t.get(key, "count")
        if n is None:
            t.missing("8", f"waiters on one resource, {via}", [key])
            continue
        handover = t.get(key, "handover_p50")
        text = (f"{exits_text(key)} in {fmt_ms(t.get(key))}; ran {t.get(key, 'ran')}, "
                f"overlaps {t.get(key, 'overlaps')}; hand-over p50 {fmt_ms(handover)}, "
                f"p90 {fmt_ms(t.get(key, 'handover_p90'))}")
        ok = all_zero(key) and t.get(key, "overlaps") == 0
        target = f"{n} × 0, no overlap"
        if key.endswith(".pg"):
            text += f"; peak {t.get(key, 'peak_backends')} backends"
            arriving, queued = t.get(key, "peak_backends_arriving"), t.get(key, "peak_backends_queued")
            if arriving is not None and queued is not None:
                text += f" ({arriving} while they arrive, {queued} once all are queued)"
            ok = ok and t.get(key, "peak_backends") <= 10 and handover <= p50
            target += ", ≤ 10 backends, p50 ≤ 15 ms"
        else:
            ok = ok and t.get(key) <= 60_000
            target += ", within 60 s"
        t.row("8", f"{n} waiters on one resource, empty job, {via}", text, None, None, target, ok)
    key = "m8.wait200.pgbouncer"
    if t.get(key) is None:
        t.missing("8", "200 waiters through pgbouncer", [key])
    else:
        xps = t.get(key, "xact_per_s")
        t.row("8", "200 waiters through pgbouncer: server tx/s while they wait; hand-over p50 (p90)",
              f"{xps} tx/s; {fmt_ms(t.get(key))} ({fmt_ms(t.get(key, 'p90'))})", None, None,
              "≤ 50 tx/s, p50 ≤ 50 ms", xps <= 50 and t.get(key) <= 50)
    key = "m8.sleepers.pg"
    if t.get(key) is None:
        t.missing("8", "sleeping jobs hold no backend", [key])
    else:
        t.row("8", f"{t.get(key, 'jobs')} jobs `sleep 20`: client backends between heartbeats",
              f"{t.get(key)}", None, None, "0", t.get(key) == 0 and t.get(key, "failed") == 0)


def serve(t):
    t.absolute("9", "`clock serve`: a page load (`/` and its JSON) with 10,000 held resources and 1,000,000 history rows "
               "(SQLite), a request that reads the database", "serve.page.cold", limit=1000)
    t.absolute("9", "… a request answered from the refresh period's snapshot", "serve.page.warm")
    reads = t.get("serve.reads_for_20_pages")
    if reads is None:
        t.missing("9", "… database reads for 20 pages at once", ["serve.reads_for_20_pages"])
    else:
        t.row("9", "… database reads for 20 pages opened at once", f"{reads:g}", None, None,
              "≤ 1", reads <= 1)
    t.absolute("9", "peak RSS of `clock serve` after those", "serve.rss", unit="MiB",
               limit=30.01)
    t.absolute("9", "… its RSS between refreshes", "serve.rss.idle", unit="MiB")


def mariadb(t):
    """Measurement 10 (tests/bench/mariadb.sh): MariaDB beside PostgreSQL,
    the same binary, the same run."""
    t.compare("10", "MariaDB: uncontended `clock run -- true` vs PostgreSQL",
              "m10.1.mariadb", "m10.1.pg", "PostgreSQL", 1.0)
    mine, theirs = t.get("m10.2.mariadb", "throughput"), t.get("m10.2.pg", "throughput")
    if mine is None or theirs is None:
        t.missing("10", "MariaDB: contended 8×25 throughput", ["m10.2.mariadb", "m10.2.pg"])
    else:
        t.row("10", "MariaDB: contended 8×25, empty section: throughput vs PostgreSQL",
              f"{mine:.0f} ops/s ({fmt_ms(t.get('m10.2.mariadb'))})",
              f"PostgreSQL {theirs:.0f} ops/s ({fmt_ms(t.get('m10.2.pg'))})",
              mine / theirs, "≥ 1×", mine / theirs >= 1.0)
    for key, name in (("m10.2.mariadb.order", "MariaDB"), ("m10.2.pg.order", "PostgreSQL")):
        jobs = t.get(key, "jobs")
        if jobs is None:
            t.missing("10", f"… 8×25 ordered round, {name}", [key])
            continue
        over, falling, want = (t.get(key, f) for f in ("overlaps", "tokens_not_rising", "expected"))
        failed = t.get(key, "failed_workers")
        t.row("10", f"… one 8×25 round whose jobs stamp start, end, CLOCK_TOKEN, {name}",
              f"{jobs} jobs, {over} overlaps, {falling} tokens not rising, {failed} failed workers",
              None, None, f"{want} jobs, 0, 0", jobs == want and over == 0 and falling == 0
              and failed == 0)
    for key, name, limit in (("m10.3.mariadb", "MariaDB", 25.0), ("m10.3.pg", "PostgreSQL", None)):
        p50, p99, n = t.get(key, "median"), t.get(key, "p99"), t.get(key, "n")
        if p50 is None:
            t.missing("10", f"hand-over, {name}", [key])
            continue
        t.row("10", f"hand-over release → next child start, {name}: p50 (p99) of {n}",
              f"{fmt_ms(p50)} ({fmt_ms(p99)})", None, None,
              None if limit is None else f"p50 ≤ {limit:g} ms",
              None if limit is None else p50 <= limit)
    key = "m10.4.mariadb"
    n = t.get(key, "count")
    if n is None:
        t.missing("10", "MariaDB: burst on distinct resources", [key])
    else:
        exits = t.get(key, "exits") or {}
        text = ", ".join(f"{v} × {k}" for k, v in exits.items()) + f" in {fmt_ms(t.get(key))}"
        peak = t.get("m10.4.mariadb.server")
        if peak is not None:
            text += (f"; peak {peak:.0f} connections, "
                     f"{t.get('m10.4.mariadb.server', 'refused_connections')} refused (1040)")
        t.row("10", f"MariaDB: {n} `clock run` at once on distinct resources, max_connections 151",
              text, None, None, f"{n} × 0", exits.get("0") == n)
    key = "m10.5.mariadb"
    q = t.get(key)
    if q is None:
        t.missing("10", "MariaDB: 200 waiters", [key])
    else:
        n, alive = t.get(key, "waiters"), t.get(key, "running_after")
        text = (f"{q:.1f} statements/s (Questions; CALLs {t.get(key, 'calls_per_s')}/s, "
                f"in-procedure included {t.get(key, 'queries_per_s')}/s)")
        if alive is not None and alive < n:
            text += f"; only {alive:.0f} of {n:.0f} still waiting"
        arrival = t.get(key, "arrival") or {}
        if t.get(key, "queued_ms") is not None:
            text += (f"; all {t.get(key, 'queued'):.0f} queued {fmt_ms(t.get(key, 'queued_ms'))} after "
                     f"the start, {arrival.get('Connection_errors_max_connections', '?')} connections "
                     f"refused, {arrival.get('Innodb_row_lock_waits', '?')} row-lock waits "
                     f"(mean {arrival.get('Innodb_row_lock_time_avg', '?')} ms) meanwhile")
        later = t.get(key, "later_q_per_s")
        if later is not None:
            text = (f"a minute on {later:.1f} statements/s (in-procedure included "
                    f"{t.get(key, 'later_queries_per_s')}/s); right after the arrival {text}")
        steady = later if later is not None else q
        t.row("10", f"MariaDB: {n:.0f} waiters on one resource for {t.get(key, 'seconds'):.0f} s: "
              "client statements/s at the server",
              text, f"holder alone {t.get(key, 'holder_alone_q_per_s')}/s", None,
              "≤ 50/s a minute on, all waiting", steady <= 50 and (alive is None or alive >= n))
        queued_ms = t.get(key, "queued_ms")
        if queued_ms is not None:
            t.row("10", f"MariaDB: {n:.0f} waiters started at once: until all are in the queue",
                  fmt_ms(queued_ms), None, None, "< 10 s", queued_ms < 10_000)
    server_capacity(t)
    # 10.7: the server's CPU per sequential run beside each server's floor.
    for server, floor, limit in (("pg", "a new connection + `SELECT 1` (psql)", 1.5),
                                 ("mariadb", "`mariadb` GET_LOCK + RELEASE_LOCK", 3.0)):
        key, peer = f"m10.7.{server}.clock", f"m10.7.{server}.floor"
        mine, theirs = t.get(key), t.get(peer)
        name = "PostgreSQL" if server == "pg" else "MariaDB"
        if mine is None or theirs is None:
            t.missing("10", f"server CPU per run, {name}", [key, peer])
            continue
        ratio = mine / theirs if theirs > 0 else float("inf")
        t.row("10", f"server CPU per `clock run -- true`, {name} (a new connection each, "
              f"{t.get(key, 'runs')} runs)", f"{mine:.2f} ms", f"{floor}: {theirs:.2f} ms", ratio,
              f"≤ {limit:g}×", ratio <= limit)
    pgb = t.get("m10.7.pgbouncer.clock")
    if pgb is None:
        t.missing("10", "server CPU per run through pgbouncer", ["m10.7.pgbouncer.clock"])
    else:
        t.row("10", "server CPU per `clock run -- true` through pgbouncer (warm backends)",
              f"{pgb:.2f} ms", None, None, "≤ 1 ms", pgb <= 1.0)


def server_capacity(t):
    """10.6: what one server core sustains, `clock run -- true` on distinct
    resources and on one, from the same loops as the floors beside it: runs/s
    of the loops, the server's CPU per run, and 1000 / that: runs/s per
    server core. Info rows: the targets are 10.7's."""
    def measured(key):
        rate, cpu = t.get(key), t.get(key, "server_cpu_ms_per_run")
        if rate is None or not cpu:
            return None
        return f"{rate:.0f} runs/s, {cpu:.2f} ms server CPU/run ({1000 / cpu:.0f}/s per core)"

    # A floor: its name, and its keys on distinct resources and on one.
    connection = ("new connection + `SELECT 1`", "m10.6.pg.floor", "m10.6.pg.floor")
    etcd = ("`etcdctl lock`", "m10.6.etcd.floor", "m10.6.etcd.floor.one")
    servers = (("mariadb", "MariaDB",
                ("GET_LOCK + RELEASE_LOCK", "m10.6.mariadb.floor", "m10.6.mariadb.floor.one")),
               ("pg", "PostgreSQL", connection),
               ("pgbouncer", "PostgreSQL via pgbouncer", connection))
    for server, name, floor in servers:
        for one, where in ((False, "distinct resources"), (True, "one resource")):
            key = f"m10.6.{server}" + (".one" if one else "")
            mine = measured(key)
            if mine is None:
                t.missing("10", f"capacity, {name}, {where}", [key])
                continue
            peers = []
            for label, distinct_key, one_key in (floor, etcd):
                text = measured(one_key if one else distinct_key)
                if text is not None:
                    peers.append(f"{label}: {text}")
            t.row("10", f"capacity, {name}: `clock run -- true` from "
                  f"{t.get(key, 'loops')} loops on {where}", mine,
                  "; ".join(peers) or None, None, None, None)


def galera(t):
    """Measurement 11 (tests/bench/galera.sh): one node of a three-node Galera
    cluster vs all three, the same binary, the same run. No target for the
    rates (the number is what is asked); the invariant is a target."""
    why = t.get("m11.missing", "reason")
    if why is not None:
        t.rows.append(("11", "Galera: one node vs three", f"not measured: {why}", "", "", "", "—"))
        return

    def ms(value):  # None: no two sections ran one after the other
        return "—" if value is None else fmt_ms(value)

    def conflicts(key):
        return (f"{t.get(key, 'wsrep_local_cert_failures')} cert failures, "
                f"{t.get(key, 'wsrep_local_bf_aborts')} BF aborts")

    one, three = "m11.1.one", "m11.1.three"
    if t.get(one) is None or t.get(three) is None:
        t.missing("11", "Galera: contended throughput, three nodes vs one", [one, three])
    else:
        def contended(key):
            return (f"{t.get(key):.1f} sections/s in {t.get(key, 'seconds'):.1f} s; hand-over "
                    f"{ms(t.get(key, 'handover_p50'))} ({ms(t.get(key, 'handover_p90'))}), "
                    f"{t.get(key, 'stalls')} of 1 s or more, "
                    f"{ms(t.get(key, 'stalled_ms') or 0)} in all, longest {ms(t.get(key, 'handover_max'))}")
        loops, turns = t.get(three, "loops"), t.get(three, "expected") // t.get(three, "loops")
        cluster = ""
        if t.get("m11.cluster") is not None:
            cluster = (f" (MariaDB {t.get('m11.cluster', 'mariadb')}, wsrep provider "
                       f"{t.get('m11.cluster', 'galera')}, innodb_lock_wait_timeout "
                       f"{t.get('m11.cluster', 'innodb_lock_wait_timeout')} s)")
        t.row("11", f"Galera{cluster}: contended {loops}×{turns} on one resource, loops round-robin "
              "on 3 nodes vs all on node 1: throughput; hand-over p50 (p90), the stalls",
              contended(three), "one node " + contended(one), t.get(three) / t.get(one), None, None)
    for key, name in ((one, "node 1 only"), (three, "nodes 1, 2, 3")):
        sections = t.get(key, "sections")
        if sections is None:
            t.missing("11", f"… the invariant, {name}", [key])
            continue
        over, falling, want = (t.get(key, f) for f in ("overlaps", "tokens_not_rising", "expected"))
        exits = t.get(key, "exits") or {}
        t.row("11", f"… its sections stamp start, end, CLOCK_TOKEN, {name}: sections, overlaps, "
              "tokens not rising in grant order; `clock run` exits; conflicts summed over the nodes",
              f"{sections}, {over}, {falling}; " + ", ".join(f"{v} × {k}" for k, v in exits.items())
              + f"; {conflicts(key)}", None, None, f"{want}, 0, 0; {want} × 0",
              sections == want and over == 0 and falling == 0 and exits.get("0") == want)
    one, three = "m11.2.one", "m11.2.three"
    if t.get(one) is None or t.get(three) is None:
        t.missing("11", "Galera: uncontended runs/s, three nodes vs one", [one, three])
        return

    def capacity(key):
        exits = t.get(key, "exits") or {}
        failed = sum(v for k, v in exits.items() if k != "0")
        return (f"{t.get(key):.1f} runs/s, one run p50 {ms(t.get(key, 'run_p50'))}, p99 "
                f"{ms(t.get(key, 'run_p99'))}, slowest {ms(t.get(key, 'run_max'))}"
                + (f", {failed} failed ({exits})" if failed else "")
                + f"; {t.get(key, 'cluster_cpu_ms_per_run'):.1f} ms cluster CPU/run; {conflicts(key)}")
    t.row("11", f"Galera: uncontended `clock run -- true` from {t.get(three, 'loops')} loops on "
          "distinct resources, round-robin on 3 nodes vs all on node 1 (every grant writes the "
          "cluster's one tokens row)", capacity(three), "one node " + capacity(one),
          t.get(three) / t.get(one), None, None)


def render(results, title, notes):
    t = Table(results)
    for part in (uncontended, contended, handover, scale, waiting, memory, borrowed, serve, mariadb,
                 galera):
        part(t)
    out = [f"## {title}", ""]
    out += [f"- {note}" for note in notes]
    # A row not measured (a part left out, or one that failed) meets no target.
    unmeasured = sum(1 for row in t.rows if row[-1] == "—")
    summary = f"{t.misses} target(s) missed." if t.misses else "Every measured target met."
    if unmeasured:
        summary += f" {unmeasured} row(s) not measured."
    out += ["", t.render(), "", summary]
    return "\n".join(out)
