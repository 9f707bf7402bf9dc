#!/usr/bin/env python3
"""Runs the command blocks of the user documentation, as a reader would.

    run_doc_blocks.py --clock build/clock [--server postgres|mariadb] [--also-as USER]
                      [--without-package | --package-config FILE] FILE.md [FILE.md...]

Run as root, the blocks run as written by root, with the package's
/etc/clock/clock.toml in place (comments only); with --also-as USER they then
run again as that unprivileged user, without the package (no
/etc/clock/clock.toml until a block writes one), so that a step that needs
root, sudo or an existing file shows. tests/package/test_deb.sh runs them
once more with the package installed: --clock names the installed binary,
--package-config the packaged /etc/clock/clock.toml, which the reader's
/etc/clock starts with.

A changed README is a changed test: the blocks are read from the files each
time. For each file, every fenced block is handled by its info string:

  ```sh (or bash, shell)  run with `bash -e` in the file's scratch folder: any
                          command that fails fails the block, unless an
                          `<!-- doc-test: expect-exit N -->` before the fence
                          says the block ends with N. Blocks of one file run
                          in order and share one shell state (exported
                          variables, the current folder), as in a terminal.
  ```crontab              each line is a crontab line (five time fields, then
                          the command): the command runs as cron would run
                          it (stdin /dev/null, stderr not a terminal) and must
                          exit 0 and write nothing on stderr, since cron mails
                          whatever a job writes there.
  anything else           not run (toml, ini, text, output shown to the reader).

`<!-- doc-test: skip -->` on the line before a fence (blank lines allowed in
between) leaves a block out: for what cannot run in a test (apt install,
systemctl). Keep that rare: a skipped block is an untested one.

Each block belongs to one server's run: a MariaDB block (one that names a
mariadb:// or mysql:// URL, ~/.my.cnf or runs the `mariadb` client, or any
block of a page marked `<!-- doc-test: server mariadb -->`) runs only with
--server mariadb, every other block only without it. So README.md, which
sets up both servers, is run by both.

The reader's world is replaced in five ways, and only these:
  - HOME is a new empty folder, the current folder another (holding `sql`, a
    link to the source tree's sql/, as a source checkout would), the XDG and
    CLOCK_ variables are unset, and the clock under test is first on PATH;
  - `/usr/local/bin/NAME` (a reader's own job in a crontab line) is a stub
    script that prints its name and exits 0, and `/etc/clock/` is a folder of
    the scratch folder: `clock` on PATH is a two-line wrapper that points
    CLOCK_CONFIG at its clock.toml when that exists, as clock itself reads
    /etc/clock/clock.toml (comments only at first, as the package installs
    it, or absent with --without-package);
  - the database server `db.example` is the throwaway PostgreSQL server of
    tests/helpers/with-postgres.sh (CLOCK_TEST_PG_URL), started with
    CLOCK_TEST_PG_AUTH=password: every login needs its password (scram-sha-256,
    no trust), as on a real server. The host name is removed from the text
    and PGHOST and PGPORT name that server, so
    `postgresql://clock_admin@db.example/clock` connects to it, and a password
    file's `db.example:5432:` becomes the server's socket folder and port; the
    databases and roles a file creates there are dropped before the next file
    starts;
  - the reader is a database administrator: the superuser postgres's
    password is in the reader's ~/.pgpass (mode 0600) from the start, as a
    DBA's would be; every other password comes from the documented steps;
  - with --server mariadb, `db.example` is instead the throwaway MariaDB of
    tests/helpers/with-mariadb.sh, started with CLOCK_TEST_MARIADB_AUTH=password:
    every login needs its password (native passwords) and the anonymous
    account ''@'localhost' of a fresh install is there, so a page that does
    not remove it fails. The host name is removed from the text, and
    $MARIADB_HOME/my.cnf (a file of the scratch folder, read as
    /etc/mysql/my.cnf is) names the server's socket and port in [client],
    so `mariadb` and `mariadb://clock_admin@db.example/clock` reach it as
    they would on the server itself. The reader is the server's
    administrator: root logs in through the socket (unix_socket, as on
    Debian), and root's password is in ~/.my.cnf's [mariadb-client] group
    (read by the `mariadb` client, never by clock) for a reader who is not
    the system's root. The databases, logins and roles a file creates are
    dropped before the next file starts, and the anonymous account restored;
  - `--jitter D` waits at most 1s (`--jitter 1s`): a fleet's crontab line
    spreads its hosts over minutes, a test does not wait for that.

Against a server that asks for passwords, `clock check` and `clock init` run
first without one, as by a reader who skipped the password step: each must
name the password file, the line (or group) to add and the login.

With --man PAGE, every exit code in a table of FILE whose first column is
headed "exit" must be an entry of the page's EXIT STATUS (the README lists
the common ones; the man page has them all).

A block that names db.example without a server is a failure under CI=true;
elsewhere it is skipped, and the run exits 77 (ctest's skip) if nothing failed.
So is a server that trusts every login.
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BLOCK_TIMEOUT = 120  # seconds; the slowest block waits a few seconds at most
SHELL_LANGS = {"sh", "bash", "shell"}
MARKER = re.compile(r"<!--\s*doc-test:\s*(.*?)\s*-->")
PAGE_SERVER = "server mariadb"  # the marker that makes a whole page MariaDB's
MARIADB_BLOCK = re.compile(r"mariadb://|mysql://|\.my\.cnf|^\s*mariadb\b", re.M)
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)")


class Block:
    def __init__(self, path, line, lang, text, directive):
        self.path, self.line, self.lang, self.text = path, line, lang, text
        self.directive = directive  # "", "skip", "expect-exit N"

    def where(self):
        return f"{self.path}:{self.line}"


def read_blocks(path):
    """The fenced blocks of a Markdown file, with the marker before each."""
    blocks, pending = [], ""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = MARKER.search(lines[i])
        if m and m.group(1) == PAGE_SERVER:
            i += 1
            continue
        if m:
            pending = m.group(1)
            i += 1
            continue
        fence = FENCE.match(lines[i])
        if fence:
            indent, marks, lang = fence.group(1), fence.group(2), fence.group(3).lower()
            body, start = [], i + 1
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marks):
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            blocks.append(Block(path, start, lang, "\n".join(body) + "\n", pending))
            pending = ""
            i += 1
            continue
        if lines[i].strip():
            pending = ""  # a marker applies to the very next block only
        i += 1
    return blocks


def block_server(path, block):
    """The server whose run a block belongs to: "mariadb" or "postgres"."""
    with open(path, encoding="utf-8") as f:
        whole_page = f"<!-- doc-test: {PAGE_SERVER} -->" in f.read()
    return "mariadb" if whole_page or MARIADB_BLOCK.search(block.text) else "postgres"


def expected_exit(directive, where):
    if not directive:
        return 0
    m = re.fullmatch(r"expect-exit\s+(\d+)", directive)
    if not m:
        raise SystemExit(f"{where}: unknown doc-test marker '{directive}'")
    return int(m.group(1))


def exit_codes_in_tables(path):
    """{code: line} of the first column of each table headed "| exit |"."""
    codes, in_table = {}, False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not line.lstrip().startswith("|"):
                in_table = False
            elif cells[0].lower() == "exit":
                in_table = True
            elif in_table:
                for code in re.findall(r"\d+", cells[0]):
                    codes[int(code)] = number
    return codes


def man_exit_codes(page):
    """The codes that the EXIT STATUS section of a man page lists."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    section = text.split(".SH EXIT STATUS", 1)[1].split("\n.SH ", 1)[0]
    codes = set()
    for entry in re.findall(r"^\.TP\n\.BR? (.*)$", section, re.M):
        codes.update(int(c) for c in re.findall(r"\b\d+\b", entry.split('"')[0] + " " +
                                                 " ".join(entry.split('"')[2::2])))
    return codes


def is_ci():
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def pg_server():
    """(host, port, user) of the throwaway server, or None. Under CI the
    server must ask for passwords (CLOCK_TEST_PG_AUTH=password): a server that
    trusts every login would let a missing password step pass."""
    url = os.environ.get("CLOCK_TEST_PG_URL", "")
    if not url:
        return None
    fields = dict(p.split("=", 1) for p in url.split() if "=" in p)
    return fields.get("host"), fields.get("port"), fields.get("user", "postgres")


def psql(pg, sql):
    """Runs SQL on the server's postgres database; returns its rows."""
    binary = os.path.join(os.environ.get("CLOCK_TEST_PG_BIN", ""), "psql")
    if not os.path.exists(binary):
        binary = "psql"
    out = subprocess.run([binary, "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", pg[0], "-p", pg[1],
                          "-U", pg[2], "-d", "postgres", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return set(out.split())


def server_objects(pg):
    """The databases and roles of the server, so that one file's set-up
    (CREATE DATABASE clock, CREATE ROLE clock_admin…) can be undone before the
    next file follows its own from the start."""
    return (psql(pg, "SELECT datname FROM pg_database"), psql(pg, "SELECT rolname FROM pg_roles"))


def drop_new_objects(pg, before):
    databases, roles = server_objects(pg)
    for db in sorted(databases - before[0]):
        psql(pg, f'DROP DATABASE "{db}" WITH (FORCE)')
    new_roles = sorted(roles - before[1])
    if new_roles:
        psql(pg, "DROP ROLE " + ", ".join(f'"{r}"' for r in new_roles))


class MariaServer:
    """The throwaway MariaDB of with-mariadb.sh: its socket, TCP port and
    root's option file (CLOCK_TEST_MARIADB_DEFAULTS, with password mode)."""

    def __init__(self):
        self.socket = os.environ["CLOCK_TEST_MARIADB_SOCKET"]
        self.port = os.environ["CLOCK_TEST_MARIADB_PORT"]
        self.defaults = os.environ.get("CLOCK_TEST_MARIADB_DEFAULTS")

    def root_password(self):
        with open(self.defaults) as f:
            return re.search(r"^password=(.*)$", f.read(), re.M).group(1)

    def sql(self, statement):
        """Runs a statement as root; returns its rows as tuples of fields."""
        login = ([f"--defaults-file={self.defaults}"] if self.defaults else ["-uroot"])
        out = subprocess.run(["mariadb", *login, f"--socket={self.socket}", "-N", "-B",
                              "-e", statement], check=True, capture_output=True,
                             text=True).stdout
        return {tuple(line.split("\t")) for line in out.split("\n") if line}


def mariadb_objects(server):
    return (server.sql("SELECT schema_name FROM information_schema.schemata"),
            server.sql("SELECT user, host, is_role FROM mysql.user"))


def mariadb_drop_new_objects(server, before):
    databases, accounts = mariadb_objects(server)
    for (db,) in sorted(databases - before[0]):
        server.sql(f"DROP DATABASE `{db}`")
    for user, host, is_role in sorted(accounts - before[1]):
        server.sql(f"DROP ROLE `{user}`" if is_role == "Y" else f"DROP USER `{user}`@`{host}`")
    # A page removes the anonymous accounts: the next one finds them again.
    for user, host, is_role in sorted(before[1] - accounts):
        if user == "":
            server.sql(f"CREATE USER ''@`{host}`")


class Scratch:
    """One file's world: HOME, the current folder, stubs, shell state."""

    def __init__(self, root, name, clock, source_dir, pg, package=True, maria=None,
                 package_config=None):
        self.dir = tempfile.mkdtemp(prefix=f"{name}.", dir=root)
        self.home = os.path.join(self.dir, "home")
        self.work = os.path.join(self.dir, "work")
        self.bin = os.path.join(self.dir, "usr-local-bin")
        self.etc = os.path.join(self.dir, "etc-clock")
        for d in (self.home, self.work, self.bin, self.etc):
            os.makedirs(d)
        os.symlink(os.path.join(source_dir, "sql"), os.path.join(self.work, "sql"))
        # A config file of comments only: the defaults, whatever this
        # machine's /etc/clock/clock.toml says (as the package installs it).
        # With --package-config, the installed package's own file instead.
        if package_config:
            shutil.copyfile(package_config, os.path.join(self.etc, "clock.toml"))
        elif package:
            with open(os.path.join(self.etc, "clock.toml"), "w") as f:
                f.write("# /etc/clock/clock.toml of the doc test: every key at its default\n")
        clock_dir = os.path.join(self.dir, "clock-bin")
        os.makedirs(clock_dir)
        config = shlex.quote(os.path.join(self.etc, "clock.toml"))
        with open(os.path.join(clock_dir, "clock"), "w") as f:
            f.write(f"#!/bin/sh\n[ -n \"${{CLOCK_CONFIG:-}}\" ] || [ ! -e {config} ] || "
                    f"export CLOCK_CONFIG={config}\nexec {shlex.quote(clock)} \"$@\"\n")
        os.chmod(os.path.join(clock_dir, "clock"), 0o755)
        self.state = os.path.join(self.dir, "state.sh")
        self.cwd = os.path.join(self.dir, "cwd")
        with open(self.cwd, "w") as f:
            f.write(self.work)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CLOCK_", "XDG_", "PG", "MYSQL", "MARIADB"))}
        env.update(HOME=self.home, PATH=f"{clock_dir}:{env.get('PATH', '/usr/bin:/bin')}",
                   LC_ALL="C.UTF-8")
        env.pop("TERM", None)
        if maria:
            # As /etc/mysql/my.cnf would on the server: where the server is.
            etc_mysql = os.path.join(self.dir, "etc-mysql")
            os.makedirs(etc_mysql)
            with open(os.path.join(etc_mysql, "my.cnf"), "w") as f:
                f.write(f"[client]\nsocket={maria.socket}\nport={maria.port}\n")
            env.update(MARIADB_HOME=etc_mysql)
            if maria.defaults:
                # The administrator's own login, for the mariadb client only.
                mycnf = os.path.join(self.home, ".my.cnf")
                with open(os.open(mycnf, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                    f.write(f"[mariadb-client]\nuser=root\npassword={maria.root_password()}\n")
        if pg:
            env.update(PGHOST=pg[0], PGPORT=pg[1])
            self.pg = pg
            passfile = os.environ.get("CLOCK_TEST_PG_PASSFILE")
            if passfile:
                with open(passfile) as f:
                    superuser_line = f.read().strip().split(":", 2)[2]
                pgpass = os.path.join(self.home, ".pgpass")
                with open(os.open(pgpass, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                    f.write(f"{pg[0]}:{pg[1]}:{superuser_line}\n")
        with open(self.state, "w") as f:
            for k, v in sorted(env.items()):
                f.write(f"export {k}={shlex.quote(v)}\n")
        self.env = env

    def localize(self, text):
        """The three replacements of the module comment."""
        for name in set(re.findall(r"/usr/local/bin/([A-Za-z0-9_.-]+)", text)):
            stub = os.path.join(self.bin, name)
            if not os.path.exists(stub):
                with open(stub, "w") as f:
                    f.write(f"#!/bin/sh\necho '{name} ran'\n")
                os.chmod(stub, 0o755)
        text = text.replace("/usr/local/bin/", self.bin + "/")
        text = text.replace("/etc/clock/", self.etc + "/")
        text = re.sub(r"--jitter[ =]\S+", "--jitter 1s", text)
        if getattr(self, "pg", None):
            text = text.replace("db.example:5432:", f"{self.pg[0]}:{self.pg[1]}:")
        return text.replace("db.example", "")


def missing_password_problems(clock, pg, root):
    """What is wrong with what `clock check` and `clock init` say to a reader
    who skipped the password step: each must name the password file, the line
    to add and the login (libpq's own words name none of them)."""
    home = tempfile.mkdtemp(prefix="no-pgpass.", dir=root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOCK_", "XDG_", "PG"))}
    env.update(HOME=home, PGHOST=pg[0], PGPORT=pg[1], LC_ALL="C.UTF-8")
    line = f"{pg[0]}:{pg[1]}:postgres:postgres:PASSWORD"
    problems = []
    for args, code in ((["check"], 78), (["init"], 78)):
        proc = subprocess.run([clock, "--database", "postgresql://postgres@/postgres", *args],
                              env=env, capture_output=True, text=True, timeout=60)
        said = proc.stdout + proc.stderr
        for wanted in ("no password supplied", "~/.pgpass", f"'{line}'", "login postgres"):
            if wanted not in said:
                problems.append(f"clock {args[0]} without a password does not say {wanted!r}:\n{said}")
        if proc.returncode != code:
            problems.append(f"clock {args[0]} without a password exits {proc.returncode}, not {code}")
    return problems


def mariadb_missing_password_problems(clock, maria, root):
    """The same for MariaDB: a login over TCP that sends no password (error
    1045, "using password: NO") must be told the option file, the group and
    the login."""
    home = tempfile.mkdtemp(prefix="no-my-cnf.", dir=root)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLOCK_", "XDG_", "PG", "MYSQL", "MARIADB"))}
    env.update(HOME=home, LC_ALL="C.UTF-8")
    problems = []
    for args, code in ((["check"], 78), (["init"], 78)):
        proc = subprocess.run([clock, "--database", f"mariadb://root@127.0.0.1:{maria.port}/mysql",
                               *args], env=env, capture_output=True, text=True, timeout=60)
        said = proc.stdout + proc.stderr
        for wanted in ("using password: NO", "~/.my.cnf", "[clock]", "password=", "login root"):
            if wanted not in said:
                problems.append(f"clock {args[0]} without a password does not say {wanted!r}:\n{said}")
        if proc.returncode != code:
            problems.append(f"clock {args[0]} without a password exits {proc.returncode}, not {code}")
    return problems


def run_shell(scratch, text, expect):
    """Runs TEXT with bash -e in the file's shell state; returns (ok, report)."""
    block_file = os.path.join(scratch.dir, "block.sh")
    with open(block_file, "w") as f:
        f.write(text)
    driver = (
        f"source {shlex.quote(scratch.state)}\n"
        f"cd \"$(cat {shlex.quote(scratch.cwd)})\"\n"
        # Whatever the block exports and where it cd's to carries to the next.
        f"trap 'export -p | grep -vE \"^declare -x (PWD|OLDPWD|SHLVL|_)=\" > {shlex.quote(scratch.state)};"
        f" pwd > {shlex.quote(scratch.cwd)}' EXIT\n"
        "set -e\n"
        f"source {shlex.quote(block_file)}\n")
    return run(["bash", "-c", driver], scratch.env, expect, check_stderr=False)


def run_cron_line(scratch, line):
    fields = line.split(None, 5)
    if len(fields) < 6:
        return False, f"not a crontab line (five time fields, then a command): {line}"
    return run(["/bin/sh", "-c", fields[5]], scratch.env, 0, check_stderr=True, cwd=scratch.home)


def run(argv, env, expect, check_stderr, cwd=None):
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=BLOCK_TIMEOUT)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    # What the block started in the background and left behind goes with it.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if timed_out:
        out, err = proc.communicate()
    seconds = time.monotonic() - start
    out, err = out.decode(errors="replace"), err.decode(errors="replace")
    problems = []
    if timed_out:
        problems.append(f"still running after {BLOCK_TIMEOUT}s")
    elif proc.returncode != expect:
        problems.append(f"exit {proc.returncode}, expected {expect}")
    if check_stderr and err:
        problems.append("wrote on stderr (cron would mail it)")
    report = f"exit {proc.returncode}, {seconds:.1f}s"
    if problems:
        report = "; ".join(problems) + f"\n--- stdout\n{out}--- stderr\n{err}---"
    return not problems, report


def run_as_user(args, pg):
    """The same files again as an unprivileged user, without the package:
    the superuser's password file copied to one that user owns."""
    import pwd
    user = pwd.getpwnam(args.also_as)
    env = {k: v for k, v in os.environ.items() if k != "PGPASSFILE"}
    passfile = os.environ.get("CLOCK_TEST_PG_PASSFILE")
    maria_copy = None
    if args.server == "mariadb" and os.environ.get("CLOCK_TEST_MARIADB_DEFAULTS"):
        fd, maria_copy = tempfile.mkstemp(prefix="doc-test-my-cnf.")
        with os.fdopen(fd, "w") as f, open(os.environ["CLOCK_TEST_MARIADB_DEFAULTS"]) as original:
            f.write(original.read())
        os.chown(maria_copy, user.pw_uid, user.pw_gid)
        env.update(CLOCK_TEST_MARIADB_DEFAULTS=maria_copy)
    if pg and passfile:
        fd, copy = tempfile.mkstemp(prefix="doc-test-pgpass.")
        with os.fdopen(fd, "w") as f, open(passfile) as original:
            f.write(original.read())
        os.chown(copy, user.pw_uid, user.pw_gid)
        env.update(CLOCK_TEST_PG_PASSFILE=copy, PGPASSFILE=copy)
    print(f"==> the same files as {args.also_as}, without the package")
    argv = ["runuser", "-u", args.also_as, "--", "env", *[f"{k}={v}" for k, v in env.items()],
            # Not sys.executable: it may live where the user cannot go (/root).
            "python3", os.path.abspath(__file__), "--clock", os.path.abspath(args.clock),
            "--server", args.server,
            "--without-package", *[os.path.abspath(f) for f in args.files]]
    try:
        return subprocess.run(argv, cwd="/").returncode
    finally:
        if pg and passfile:
            os.unlink(copy)
        if maria_copy:
            os.unlink(maria_copy)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clock", required=True, help="the clock binary under test")
    ap.add_argument("--man", help="check the files' exit-code tables against this man page")
    ap.add_argument("--also-as", metavar="USER",
                    help="as root: run the files again as USER, without the package")
    ap.add_argument("--server", choices=("postgres", "mariadb"), default="postgres",
                    help="the server that db.example names: the throwaway PostgreSQL "
                         "(with-postgres.sh) or MariaDB (with-mariadb.sh)")
    ap.add_argument("--without-package", action="store_true",
                    help="no /etc/clock/clock.toml until a block writes one")
    ap.add_argument("--package-config", metavar="FILE",
                    help="the installed package's /etc/clock/clock.toml, copied as the "
                         "reader's (with --clock naming the installed binary)")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    clock = os.path.abspath(args.clock)
    source_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    maria = None
    if args.server == "mariadb":
        pg = None
        if os.environ.get("CLOCK_TEST_MARIADB_SOCKET"):
            maria = MariaServer()
    else:
        pg = pg_server()
    server = pg or maria
    server_name = "MariaDB" if args.server == "mariadb" else "PostgreSQL"
    root = tempfile.mkdtemp(prefix="clock-doc-test.")
    failed, skipped, ran, marked = [], [], 0, 0
    if maria and not maria.defaults:
        why = "the MariaDB server lets root in without a password (run under CLOCK_TEST_MARIADB_AUTH=password)"
        if is_ci():
            failed.append("server")
            print(f"FAILED: {why}")
        else:
            print(f"warning: {why}: a missing password step would pass")
    elif maria:
        for problem in mariadb_missing_password_problems(clock, maria, root):
            failed.append("missing password")
            print(f"FAILED: {problem}")
    if pg and not os.environ.get("CLOCK_TEST_PG_PASSFILE"):
        why = "the PostgreSQL server trusts every login (run under CLOCK_TEST_PG_AUTH=password)"
        if is_ci():
            failed.append("server")
            print(f"FAILED: {why}")
        else:
            print(f"warning: {why}: a missing password step would pass")
    elif pg:
        for problem in missing_password_problems(os.path.abspath(args.clock), pg, root):
            failed.append("missing password")
            print(f"FAILED: {problem}")
    documented = man_exit_codes(args.man) if args.man else None
    for path in args.files:
        if documented is not None:
            for code, line in sorted(exit_codes_in_tables(path).items()):
                if code not in documented:
                    failed.append(f"{path}:{line}")
                    print(f"{path}:{line}: FAILED: exit {code} is not in the man page's EXIT STATUS")
        scratch = Scratch(root, os.path.basename(path), clock, source_dir, pg,
                          package=not args.without_package, maria=maria,
                          package_config=args.package_config)
        before = server_objects(pg) if pg else None
        maria_before = mariadb_objects(maria) if maria else None
        for block in read_blocks(path):
            if block.lang not in SHELL_LANGS and block.lang != "crontab":
                continue
            if block_server(path, block) != args.server:
                continue  # the other server's run has it
            if block.directive == "skip":
                print(f"{block.where()}: skipped (doc-test: skip)")
                marked += 1
                continue
            expect = expected_exit(block.directive, block.where())
            if "db.example" in block.text and not server:
                why = (f"no {server_name} server (" +
                       ("CLOCK_TEST_MARIADB_SOCKET" if maria is None and args.server == "mariadb"
                        else "CLOCK_TEST_PG_URL") + " unset)")
                if is_ci():
                    failed.append(block.where())
                    print(f"{block.where()}: FAILED: {why}; CI=true, so this is a failure")
                else:
                    skipped.append(block.where())
                    print(f"{block.where()}: skipped: {why}")
                continue
            text = scratch.localize(block.text)
            if block.lang == "crontab":
                lines = [l for l in text.split("\n")
                         if l.strip() and not l.lstrip().startswith("#")
                         and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", l)]
                results = [run_cron_line(scratch, l) for l in lines]
                ok = all(r[0] for r in results)
                report = "\n".join(r[1] for r in results if not r[0]) or f"{len(lines)} line(s) ok"
            else:
                ok, report = run_shell(scratch, text, expect)
            ran += 1
            if ok:
                print(f"{block.where()}: ok ({report})")
            else:
                failed.append(block.where())
                print(f"{block.where()}: FAILED: {report}\n--- the block\n{block.text}---")
        if before is not None:
            drop_new_objects(pg, before)
        if maria_before is not None:
            mariadb_drop_new_objects(maria, maria_before)
    if args.also_as and os.geteuid() == 0:
        code = run_as_user(args, pg)
        if code not in (0, 77):
            failed.append(f"as {args.also_as}")
    if failed:
        print(f"doc-test: {len(failed)} block(s) failed: {' '.join(failed)}; "
              f"scratch folders kept in {root}")
        return 1
    shutil.rmtree(root, ignore_errors=True)
    print(f"doc-test: {ran} block(s) ran and passed; {marked} marked doc-test: skip; "
          f"{len(skipped)} skipped for want of a server")
    return 77 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
