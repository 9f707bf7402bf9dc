#!/usr/bin/env python3
"""One routine catalogue, two dialects: the server routines of
sql/postgres/functions (@schema@.NAME) and sql/mariadb/procedures
(clock_NAME) are the same lock model, so each routine exists in both, under
the same name, unless a line below says why it cannot; and none is longer
than MAX_LINES, so that each reads on a screen or two.

Names: PostgreSQL's x is MariaDB's clock_x. MariaDB's helpers carry a family
prefix after clock_ (acq_ for the acquire side, rec_ for the record-keeping
side): MariaDB has no schema to keep them apart from the entry points, and
tests/mariadb/test_procedures.sh tells them apart by it. So clock_acq_x and
clock_rec_x are x too, and clock_rec_x is record_x where PostgreSQL names
its record-writing helpers so.

A routine runs from its CREATE line to the last line of code before the next
statement of the file (comments and blank lines between them are left out).

Usage: test_routine_catalogue.py [SQL_DIR]   (default: the sql/ of this
checkout). Exit 0 when the catalogue holds, 1 with one line per problem.
"""

import pathlib
import re
import sys

MAX_LINES = 100

# The same routine under a name of its own in one dialect: (PostgreSQL name:
# (MariaDB name, why)). Empty: every twin goes by the naming rule above.
NAMED_APART = {}

# Routines of one dialect only, each with why the other has none.
ONLY_POSTGRES = {
    "usec": "MariaDB keeps instants as BIGINT microseconds already",
    "ancestors": "MariaDB finds related rows by clock_acq_related on the hierarchy's key range",
    "bound_caller_transaction": "MariaDB's procedures refuse a caller's open transaction inline",
    "check_bounds": "MariaDB bounds text by its parameter types and clock_rec_check_command",
    "notify_change": "MariaDB has no NOTIFY: waiters poll",
    "notify_lost": "MariaDB has no NOTIFY: a holder learns at its next renewal",
    "notify_heads": "MariaDB has no NOTIFY: waiters poll",
    "commit_durably": "synchronous_commit is PostgreSQL's",
    "record_expired": "MariaDB records expiries from the rows it deletes, in each deleter",
    "history_events": "MariaDB's history and history2 read history by their own statements",
    "fast_path_herd": "fast path 3 queues under a shared lock, which Galera would not see",
    "release_fast_path": "it saves notify_heads, which MariaDB (no NOTIFY) never runs",
    "waits_for": "MariaDB's functions cannot return a table: clock_acq_find_cycle_links has its query",
}
ONLY_MARIADB = {
    "clock_acq_related": "PostgreSQL compares ancestors() arrays and key ranges inline",
    "clock_acq_sorted": "PostgreSQL sorts with jsonb_agg(… ORDER BY) inline",
    "clock_acq_dequeue": "PostgreSQL deletes with resource = ANY (array) in one statement",
    "clock_rec_nth": "MariaDB passes lists as JSON arrays; PostgreSQL indexes text[]",
    "clock_rec_check_command": "PostgreSQL's check_bounds covers the command",
    "clock_rec_owner": "PostgreSQL's uuid type parses an owner id",
    "clock_rec_release_each": "PostgreSQL's release2 calls release, all in its caller's one "
                              "transaction; MariaDB's clock_release2 opens and commits its own "
                              "around this loop, and clock_release is clock_release2",
}

# Routines still longer than MAX_LINES: name -> (ceiling, why). A ratchet:
# each may only shrink, and goes once it fits.
STILL_LONG = {}

CREATE_PG = re.compile(r"CREATE OR REPLACE (?:FUNCTION|PROCEDURE) @schema@\.(\w+)\s*\(")
CREATE_MARIADB = re.compile(r"CREATE OR REPLACE (?:FUNCTION|PROCEDURE) (clock_\w+)\s*\(")
STATEMENT = re.compile(r"(CREATE|DO|DROP|ALTER|SELECT|INSERT|GRANT|DELIMITER)\b")


def routines(directory, create):
    """{name: (file, first line, length)} of the routines of a directory's files."""
    found = {}
    for path in sorted(pathlib.Path(directory).glob("*.sql")):
        lines = path.read_text().split("\n")
        starts = [i for i, line in enumerate(lines) if STATEMENT.match(line)]
        for k, first in enumerate(starts):
            match = create.match(lines[first])
            if not match:
                continue
            last = (starts[k + 1] if k + 1 < len(starts) else len(lines)) - 1
            while last > first and (not lines[last].strip()
                                    or lines[last].lstrip().startswith("--")):
                last -= 1
            found[match.group(1)] = (path.name, first + 1, last - first + 1)
    return found


def postgres_name(mariadb):
    """The PostgreSQL name a MariaDB routine goes by, as the module docstring says."""
    for pg, (name, _) in NAMED_APART.items():
        if name == mariadb:
            return pg
    return mariadb[len("clock_"):]


def candidates(mariadb):
    bare = postgres_name(mariadb)
    if bare != mariadb[len("clock_"):]:
        return [bare]
    for family in ("acq_", "rec_"):
        if bare.startswith(family):
            rest = bare[len(family):]
            return ["record_" + rest, rest] if family == "rec_" else [rest]
    return [bare]


def main():
    sql = pathlib.Path(sys.argv[1] if len(sys.argv) > 1
                       else pathlib.Path(__file__).resolve().parents[2] / "sql")
    pg = routines(sql / "postgres" / "functions", CREATE_PG)
    maria = routines(sql / "mariadb" / "procedures", CREATE_MARIADB)
    problems = []

    paired = set()
    for name in sorted(maria):
        if name in ONLY_MARIADB:
            if any(c in pg for c in candidates(name)):
                problems.append(f"{name} is listed as MariaDB's only, but PostgreSQL has it")
            continue
        match = next((c for c in candidates(name) if c in pg), None)
        if match is None:
            problems.append(f"MariaDB's {name} ({maria[name][0]}) has no PostgreSQL twin "
                            f"({' or '.join('@schema@.' + c for c in candidates(name))}): "
                            "add it, or say in ONLY_MARIADB why it cannot be")
        elif match in paired:
            problems.append(f"MariaDB's {name} and another routine both map to @schema@.{match}")
        else:
            paired.add(match)
    for name in sorted(pg):
        if name in paired:
            if name in ONLY_POSTGRES:
                problems.append(f"{name} is listed as PostgreSQL's only, but MariaDB has it")
            continue
        if name not in ONLY_POSTGRES:
            problems.append(f"PostgreSQL's @schema@.{name} ({pg[name][0]}) has no MariaDB twin "
                            f"(clock_{name}, clock_acq_{name} or clock_rec_{name}): add it, "
                            "or say in ONLY_POSTGRES why it cannot be")
    for listed in sorted(set(ONLY_POSTGRES) - set(pg)):
        problems.append(f"ONLY_POSTGRES lists {listed}, which PostgreSQL does not define")
    for listed in sorted(set(ONLY_MARIADB) - set(maria)):
        problems.append(f"ONLY_MARIADB lists {listed}, which MariaDB does not define")
    for pg_name, (maria_name, _) in sorted(NAMED_APART.items()):
        if pg_name not in pg or maria_name not in maria:
            problems.append(f"NAMED_APART pairs {pg_name} with {maria_name}: one is not defined")

    for dialect, found, shown in (("PostgreSQL", pg, "@schema@.{}"), ("MariaDB", maria, "{}")):
        for name, (file, line, length) in sorted(found.items()):
            ceiling, _ = STILL_LONG.get(name, (MAX_LINES, ""))
            if length > ceiling:
                problems.append(f"{dialect}'s {shown.format(name)} ({file}:{line}) is {length} "
                                f"lines long, more than {ceiling}: split it")

    longest = {d: max(f.items(), key=lambda kv: kv[1][2]) for d, f in
               (("PostgreSQL", pg), ("MariaDB", maria))}
    for dialect, (name, (file, _, length)) in longest.items():
        print(f"{dialect}: {len(pg if dialect == 'PostgreSQL' else maria)} routines, "
              f"the longest {name} ({file}) {length} lines")
    for problem in problems:
        print("FAIL: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
