#!/usr/bin/env python3
"""ctest `startup-layout`: the clock binary is linked with cmake/startup-order.ld
(issue 18), so the code that every short `clock run` executes sits in one
block at the start of the text, and code a run never executes does not.

  tests/helpers/check_startup_layout.py CLOCK_BINARY ORDERED

ORDERED is 1 when the build links with the script (CLOCK_STATIC_RUNTIME and a
linker that takes it); otherwise the layout is the linker's default and the
test reports itself skipped (exit 77). Uses binutils' readelf and nm.
"""
import re
import subprocess
import sys

# Executed by every `clock run` on SQLite: the VDBE, the WAL-index read (and
# rebuild) of a process that opens the file, clock's commit.
RUN_EVERY_TIME = [
    "sqlite3VdbeExec",
    "walIndexReadHdr",
    "clk::store::sqlite::WriteTransaction::commit()",
]
# Never executed by `run`: gc's store method.
NEVER_IN_A_RUN = [
    "clk::store::(anonymous namespace)::SqliteStore::gc(clk::store::GcOptions const&)",
]


def main():
    binary, ordered = sys.argv[1], sys.argv[2]
    if ordered != "1":
        print("skipped: this build links with the default layout (sanitizers, or a linker "
              "that refuses cmake/startup-order.ld)")
        return 77
    sections = subprocess.run(["readelf", "-S", "-W", binary], check=True, capture_output=True,
                              text=True).stdout
    block = re.search(r"\.text\.clock_startup\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)",
                      sections)
    if not block:
        print(f"FAIL: {binary} has no .text.clock_startup section: cmake/startup-order.ld "
              "was not applied")
        return 1
    start, size = int(block.group(1), 16), int(block.group(2), 16)
    symbols = {}
    listing = subprocess.run(["nm", "-C", "--defined-only", binary], check=True,
                             capture_output=True, text=True).stdout
    for line in listing.splitlines():
        address, kind, name = line.split(" ", 2)
        if kind in "tT":
            symbols.setdefault(name, int(address, 16))
    failures = []
    for name in RUN_EVERY_TIME + NEVER_IN_A_RUN:
        if name not in symbols:
            failures.append(f"{name} is not in the binary (renamed? update this test)")
            continue
        inside = start <= symbols[name] < start + size
        if inside != (name in RUN_EVERY_TIME):
            where = "inside" if inside else "outside"
            failures.append(f"{name} is {where} the start-up block")
    print(f"start-up block: {size} bytes at {start:#x}, {len(RUN_EVERY_TIME)} functions of a run"
          f" inside it, {len(NEVER_IN_A_RUN)} of gc outside")
    for failure in failures:
        print(f"FAIL: {failure}")
    if failures:
        print("regenerate cmake/startup-order.ld: tests/bench/startup_order.py BUILD_DIR")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
