#!/usr/bin/env python3
"""Every text that MariaDB's routines (sql/mariadb/procedures) hold names
its character set: each CHAR, VARCHAR or *TEXT parameter, DECLAREd
variable, function result and JSON_TABLE column says CHARACTER SET, and a
utf8mb4 one also COLLATE utf8mb4_bin.

Why: a routine's text without a character set takes its database's default
when CREATE runs, and `CREATE DATABASE clock;` on a latin1 server (10.11's
default) makes that latin1: a command with a ☃ then fails with error 1366,
and a JSON_TABLE column turns it into '?'. utf8mb4 alone is
utf8mb4_general_ci, which compares 'A' = 'a'; the tables, like PostgreSQL's
COLLATE "C", compare bytes (utf8mb4_bin). CHARACTER SET ascii stays where
only ASCII belongs (owner ids, hashes).

Usage: test_routine_charsets.py [SQL_DIR]   (default: the sql/ of this
checkout). Exit 0 when every declaration names its character set, 1 with one
line per declaration that does not.
"""

import pathlib
import re
import sys

TEXT_TYPE = re.compile(r"(?:N?CHAR|N?VARCHAR|TINYTEXT|TEXT|MEDIUMTEXT|LONGTEXT)\b"
                       r"(?:\s*\(\s*\d+\s*\))?", re.IGNORECASE)
CHARSET = re.compile(r"\bCHARACTER\s+SET\s+(\w+)", re.IGNORECASE)
COLLATE = re.compile(r"\bCOLLATE\s+(\w+)", re.IGNORECASE)
CREATE = re.compile(r"CREATE\s+OR\s+REPLACE\s+(FUNCTION|PROCEDURE)\s+(\w+)\s*\(", re.IGNORECASE)
RETURNS = re.compile(r"\bRETURNS\s+", re.IGNORECASE)
DECLARE = re.compile(r"\bDECLARE\s+(?!(?:CONTINUE|EXIT|UNDO)\s+HANDLER\b)", re.IGNORECASE)
COLUMNS = re.compile(r"\bCOLUMNS\s*\(", re.IGNORECASE)
# Where a declaration's type ends: its DEFAULT, a JSON_TABLE column's PATH,
# a function's characteristics.
TYPE_END = re.compile(r"\b(?:DEFAULT|PATH|DETERMINISTIC|NOT|NO|CONTAINS|READS|MODIFIES|SQL|"
                      r"COMMENT|LANGUAGE|RETURN|BEGIN|EXISTS)\b", re.IGNORECASE)


def blank_comments(text):
    """The text with its comments and quoted strings replaced by spaces
    (offsets and line numbers kept), so that neither is parsed as code."""
    return re.sub(r"--[^\n]*|'(?:[^'\\]|\\.|'')*'",
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def closing(text, opening):
    """The offset of the parenthesis that closes the one at `opening`."""
    depth = 0
    for i in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return len(text)


def top_level_split(text, start, end):
    """(offset, piece) of text[start:end] split on commas outside parentheses."""
    pieces, depth, first = [], 0, start
    for i in range(start, end):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if text[i] == "," and depth == 0:
            pieces.append((first, text[first:i]))
            first = i + 1
    pieces.append((first, text[first:end]))
    return pieces


def type_problem(declared):
    """Why a declaration's type text (after its name) falls short, or None."""
    declared = declared.strip()
    if not TEXT_TYPE.match(declared):
        return None
    stop = TYPE_END.search(declared, TEXT_TYPE.match(declared).end())
    shown = " ".join(declared[:stop.start() if stop else len(declared)].split())
    charset = CHARSET.search(shown)
    if not charset:
        return f"{shown} has no CHARACTER SET (it would take the database's default)"
    collate = COLLATE.search(shown)
    if charset.group(1).lower() == "utf8mb4" and (not collate
                                                  or collate.group(1).lower() != "utf8mb4_bin"):
        return f"{shown} is utf8mb4 without COLLATE utf8mb4_bin (it would compare 'A' = 'a')"
    return None


NAMED = re.compile(r"\s*(?:(?:IN|OUT|INOUT)\s+)?(\w+)\s+")


def declarations(text):
    """(routine, what, start, end) of each declaration of a file's code, its
    type text being text[start:end]: parameters, results, DECLAREd variables
    and JSON_TABLE columns."""
    creates = list(CREATE.finditer(text))
    for k, create in enumerate(creates):
        routine = create.group(2)
        body_end = creates[k + 1].start() if k + 1 < len(creates) else len(text)
        params_end = closing(text, create.end() - 1)
        for offset, piece in top_level_split(text, create.end(), params_end):
            named = NAMED.match(text, offset, offset + len(piece))
            if named:
                yield routine, f"parameter {named.group(1)}", named.end(), offset + len(piece)
        if create.group(1).upper() == "FUNCTION":
            returns = RETURNS.match(text, re.compile(r"\s*").match(text, params_end + 1).end())
            if returns:
                yield routine, "result", returns.end(), body_end
        for declare in DECLARE.finditer(text, params_end, body_end):
            statement_end = text.find(";", declare.end(), body_end)
            names = re.compile(r"(\w+(?:\s*,\s*\w+)*)\s+").match(text, declare.end(),
                                                                  statement_end)
            if names and not re.compile(r"(?:CONDITION|CURSOR)\b", re.IGNORECASE).match(
                    text, names.end()):
                yield routine, f"variable {names.group(1)}", names.end(), statement_end
        for columns in COLUMNS.finditer(text, params_end, body_end):
            end = closing(text, columns.end() - 1)
            for offset, piece in top_level_split(text, columns.end(), end):
                named = NAMED.match(text, offset, offset + len(piece))
                if named:
                    yield (routine, f"JSON_TABLE column {named.group(1)}", named.end(),
                           offset + len(piece))


def main():
    sql = pathlib.Path(sys.argv[1] if len(sys.argv) > 1
                       else pathlib.Path(__file__).resolve().parents[2] / "sql")
    problems, seen = [], 0
    for path in sorted((sql / "mariadb" / "procedures").glob("*.sql")):
        text = blank_comments(path.read_text())
        for routine, what, start, end in declarations(text):
            if not TEXT_TYPE.match(text, start, end):
                continue
            seen += 1
            problem = type_problem(text[start:end])
            if problem:
                line = text.count("\n", 0, start) + 1
                problems.append(f"{path.name}:{line}: {routine}: {what}: {problem}")
    print(f"MariaDB routines: {seen} text declarations")
    for problem in problems:
        print("FAIL: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
