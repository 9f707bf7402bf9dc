#!/usr/bin/env python3
"""Writes cmake/startup-order.ld, the linker script that puts the code of a
short `clock run` first in the executable (issue 18).

Every `clock` is a new process that runs ~2.5 M instructions once, spread over
SQLite, CLI11, spdlog, libstdc++ and clock itself: with the default layout
that code is scattered over the 3 MB of text, so a run starting with cold
caches (as it does between other programs) pays a cache and TLB miss for
nearly every function. The script gathers the sections that hold what a run
executes into one block, sorted by name so that a regenerated script differs
only where the profile does (within the block the order matters little: a
run touches most of it). SQLite's files (built by Debian without function
sections) move whole, and those a run touches only a little of (the
extension initialisers: FTS, R-tree, JSON) go to the end of the block.

  tests/bench/startup_order.py BUILD_DIR [OUT]

BUILD_DIR is a configured build whose objects have function sections (any
build with CLOCK_STATIC_RUNTIME, the default; not the sanitizer builds); its
`clock` is profiled with valgrind's callgrind over a few `clock run -- true`
and a `status` on a SQLite file of its own. Needs valgrind (Debian:
`apt-get install valgrind`). Regenerate after a change that moves a run's
hot path (see CONTRIBUTING.md); a stale entry matches nothing and costs
nothing. Standard library only.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SPARSE = 0.25  # a whole .text section of which a run executes less goes last


def profiled_functions(clock):
    """Function names (mangled) that the profiled commands execute."""
    if not shutil.which("valgrind"):
        sys.exit("startup_order: valgrind not found (Debian: apt-get install valgrind)")
    names = set()
    with tempfile.TemporaryDirectory() as work:
        database = f"sqlite:{work}/profile.db"
        commands = [["init"]] + [["run", "-r", "warm", "--", "true"]] * 3
        for argv in commands:
            subprocess.run([clock, "--database", database, *argv], check=True,
                           stdout=subprocess.DEVNULL)
        profiled = [["run", "-r", "profile", "--", "true"]] * 4 + [["status"]]
        for i, argv in enumerate(profiled):
            out = f"{work}/callgrind.{i}"
            done = subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no",
                                   f"--callgrind-out-file={out}", clock, "--database", database,
                                   *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if done.returncode not in (0, 1):  # status: 1 when nothing is held
                sys.exit(f"startup_order: clock {' '.join(argv)} exited {done.returncode}")
            ids = {}
            for line in open(out, encoding="utf-8", errors="replace"):
                match = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
                if not match:
                    continue
                kind, number, name = match.groups()
                if name:
                    ids[number] = name.split("'")[0]
                if kind == "fn" and number in ids:
                    names.add(ids[number])
    return names


def static_archives(build):
    """The archives linked into clock whose members can be ordered."""
    cache = open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8").read()
    archives = re.findall(r"^CLOCK_(?:SQLITE3|SODIUM)_STATIC:FILEPATH=(.+)$", cache, re.M)
    compiler = re.search(r"^CMAKE_CXX_COMPILER:(?:FILEPATH|STRING)=(.+)$", cache, re.M).group(1)
    libstdcxx = subprocess.run([compiler, "-print-file-name=libstdc++.a"], check=True,
                               capture_output=True, text=True).stdout.strip()
    return archives + ([libstdcxx] if os.path.isabs(libstdcxx) else [])


SYMBOL = re.compile(r"^[0-9a-f]{16} (.{7}) (\S+)\t([0-9a-f]{16})\s+(?:\.\w+\s+)?(\S+)$")


def sections_of_functions(inputs):
    """function name -> (input section pattern, the function's size), and the
    size of every whole-file .text section (what SPARSE is measured against)."""
    where, text_size = {}, {}
    for path in inputs:
        listing = subprocess.run(["objdump", "-t", path], check=True, capture_output=True,
                                 text=True).stdout
        member = None
        for line in listing.splitlines():
            header = re.match(r"^(\S+?):\s+file format", line)
            if header:
                member = header.group(1) if path.endswith(".a") else None
                continue
            match = SYMBOL.match(line)
            if not match or match.group(1)[6] != "F":
                continue
            section, size, name = match.group(2), int(match.group(3), 16), match.group(4)
            if section == ".text":
                base = os.path.basename(path)
                pattern = f"*{base}:{member}(.text)" if member else f"*{base}(.text)"
                text_size[pattern] = text_size.get(pattern, 0) + size
            elif section.startswith(".text.") and not section.startswith(
                    (".text.unlikely", ".text.startup", ".text.exit", ".text.hot")):
                pattern = f"*({section})"
            else:
                continue  # the default script already groups these
            where.setdefault(name, (pattern, size))
    return where, text_size


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: tests/bench/startup_order.py BUILD_DIR [OUT]")
    build = os.path.abspath(sys.argv[1])
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.join(repo, "cmake", "startup-order.ld")
    objects = [o for target in ("clock.dir", "clock_core.dir")
               for o in glob.glob(os.path.join(build, "CMakeFiles", target, "**", "*.o"),
                                  recursive=True)]
    if not objects:
        sys.exit(f"startup_order: no objects of clock under {build}: build it first")
    where, text_size = sections_of_functions(objects + static_archives(build))

    touched = {}  # input section pattern -> bytes of its functions a run executes
    for name in profiled_functions(os.path.join(build, "clock")):
        if name in where:  # not: the C library's, or inlined everywhere
            pattern, size = where[name]
            touched[pattern] = touched.get(pattern, 0) + size

    def sparse(pattern):
        return pattern in text_size and touched[pattern] < SPARSE * text_size[pattern]

    dense = sorted(p for p in touched if not sparse(p))
    last = sorted(p for p in touched if sparse(p))
    with open(out, "w", encoding="utf-8") as script:
        script.write("/* Generated by tests/bench/startup_order.py: the code a short `clock run`\n"
                     "   executes, first in the executable (see that script). Do not edit. */\n"
                     "SECTIONS\n{\n  .text.clock_startup :\n  {\n")
        script.writelines(f"    {pattern}\n" for pattern in dense + last)
        script.write("  }\n}\nINSERT BEFORE .text;\n")
    print(f"startup_order: {len(dense)} sections, then {len(last)} of which a run uses little"
          f" -> {out}")


if __name__ == "__main__":
    main()
