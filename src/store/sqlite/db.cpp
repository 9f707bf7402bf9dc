// SQLite connection, statements, transactions and error translation.
#include "store/sqlite/db.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <sqlite3.h>

#include "error.hpp"
#include "util/random_seed.hpp"

namespace clk::store::sqlite {

namespace {

// SQLite's default busy handler sleeps up to 100 ms between tries, which
// serializes contending processes far more slowly than the lock is actually
// held (well under a millisecond). Retry sooner, with jitter, until the
// connection's deadline.
int busy_handler(void* context, int attempt) {
  auto* db = static_cast<Database*>(context);
  if (attempt == 0)
    db->arm_busy_deadline();
  if (std::chrono::steady_clock::now() >= db->busy_deadline())
    return 0;
  thread_local std::minstd_rand random{util::random_seed()};
  int ceiling_us = std::min(2000, 50 << std::min(attempt, 5));
  std::this_thread::sleep_for(std::chrono::microseconds(random() % ceiling_us + 20));
  return 1;
}

bool is_local_file_failure(int primary) {
  switch (primary) {
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_NOLFS:
      return true;
    default:
      return false;
  }
}

bool is_busy(int rc) {
  return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

// SQLite returns SQLITE_BUSY without calling the busy handler in a few
// places (switching a new file to WAL, WAL recovery, a read that would
// deadlock): retry those here until the same deadline.
template <typename Attempt>
int retry_while_busy(std::chrono::milliseconds timeout, Attempt attempt) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  thread_local std::minstd_rand random{util::random_seed()};
  int rc = attempt();
  for (int tries = 0; is_busy(rc) && std::chrono::steady_clock::now() < deadline; ++tries) {
    int ceiling_us = std::min(5000, 100 << std::min(tries, 6));
    std::this_thread::sleep_for(std::chrono::microseconds(random() % ceiling_us + 50));
    rc = attempt();
  }
  return rc;
}

// The first connection to open the database after the last one closed
// rebuilds the WAL index by reading every frame written since the last
// checkpoint: at SQLite's default mark (1000 pages, ~4 MiB) that recovery was
// about a tenth of an uncontended `clock run`. A run writes some 17 pages, so
// 200 keeps recovery short and checkpoints (two fsyncs) to one run in twelve;
// tests/bench measured 3.78 ms per run against 4.24 ms at 1000 and 3.95 ms
// at 50.
constexpr int k_wal_checkpoint_pages = 200;

// clock run checkpoints sooner, while its command runs and nobody waits on
// it (Database::checkpoint_when_idle), once the WAL holds this many pages:
// every third uncontended run or so, which leaves the mark above a backstop
// for other commands and for holders that queued. The first writer after a
// complete checkpoint starts the WAL over, so the next process rebuilds its
// index from a few frames, and the commit that wakes a waiter (the release)
// seldom reaches the mark above and checkpoints beside it. A checkpoint
// every run was slower than none: its fsyncs outlast a short command, and
// each WAL restart costs the release one more. docs/performance.md (issue
// 18) has the measurements.
constexpr int k_idle_checkpoint_pages = 60;

// SQLite creates a new database 0644 whatever the umask, so two users of one
// group cannot share it in a setgid folder, and anyone may read it and lock
// its -shm. Create it 0660 & ~umask: the group as the umask says, others
// never (a reader of the -shm can stall every writer); SQLite's unix VFS
// gives the -wal and -shm files the database file's mode (and owner, when
// root creates them), so they follow. The per-user default was created 0600
// before (file_trust.cpp). A file that exists, or a folder we cannot write,
// is left to sqlite3_open.
// Returns whether the file is empty (new): SQLite then creates the database
// in it with the page size set before its first write.
bool create_shareable(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0660);
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  struct stat existing {};
  return ::stat(path.c_str(), &existing) == 0 && existing.st_size == 0;
}

// The page size of a new database. Every process rebuilds the WAL index
// from the frames written since the last checkpoint, a checksum over each
// page, and a run writes some 19 pages and reads most of the file: with
// SQLite's default 4096 bytes that was a seventh of an uncontended `clock
// run`'s instructions. The tables hold small rows (a lease is about 230
// bytes), so 1024 fits several per page. docs/performance.md has
// the measurements; a database created before keeps its page size.
constexpr int k_new_page_size = 1024;

// The -wal or -shm file beside the database that this user cannot read and
// write (kept from another user's run: the WAL persists), if any.
std::optional<std::string> unusable_companion(const std::string& path) {
  for (const char* suffix : {"-wal", "-shm"}) {
    std::string companion = path + suffix;
    if (::access(companion.c_str(), F_OK) == 0 && ::access(companion.c_str(), R_OK | W_OK) != 0)
      return companion;
  }
  return std::nullopt;
}

// The pids of other processes that hold a POSIX lock on `file`, from
// /proc/locks (reading it takes no lock; opening the file would, and closing
// it would drop this process's own SQLite locks on it).
std::vector<std::string> lock_holders(const std::string& file) {
  struct stat info {};
  std::vector<std::string> pids;
  if (::stat(file.c_str(), &info) != 0)
    return pids;
  char inode[32];
  std::snprintf(inode, sizeof inode, ":%lu", static_cast<unsigned long>(info.st_ino));
  std::ifstream locks("/proc/locks");
  const std::string self = std::to_string(::getpid());
  for (std::string line; std::getline(locks, line);) {
    std::istringstream fields(line);
    std::string number, kind, advisory, access, pid, where;
    fields >> number >> kind;
    if (kind == "->")  // a waiter on the lock of the line before
      fields >> kind;
    fields >> advisory >> access >> pid >> where;
    if (kind != "POSIX" || pid == self || !where.ends_with(inode))
      continue;
    if (std::find(pids.begin(), pids.end(), pid) == pids.end())
      pids.push_back(pid);
  }
  return pids;
}

// SQLITE_PROTOCOL: SQLite retried for some 10 s to take the byte locks of the
// -shm file (the WAL index) that opening or writing needs, and another
// process kept them. Anyone who may read the -shm can do that; clock's own
// processes hold them for well under a millisecond.
[[noreturn]] void fail_shm_locked(const std::string& path) {
  const std::string shm = path + "-shm";
  std::string who = "another process";
  if (auto pids = lock_holders(shm); !pids.empty()) {
    who = pids.size() == 1 ? "process " : "processes ";
    for (std::size_t i = 0; i < pids.size(); ++i)
      who += (i ? ", " : "") + pids[i];
  }
  throw Error(ExitCode::local_database,
              "the SQLite database " + path + " is unusable: " + who + " kept a lock on " + shm +
                  " for 10s (SQLite: locking protocol); see who with 'fuser -v " + shm +
                  "', and let only the database's users read it (a private folder, or a group "
                  "folder 0770 for a shared one)");
}

// Debian's SQLite counts every allocation under a global mutex (for
// sqlite3_memory_used, which clock never reads), and, built without
// lookaside, allocates for every node of every statement it parses: the
// counting was a tenth of an uncontended `clock run`. Set before the first
// connection initializes the library; later calls are refused, harmlessly.
void configure_library_once() {
  static const bool configured = [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    // No bulk of 20 page slots set up front for each page cache (the file's,
    // and each temporary b-tree's, as an IN list builds): writing each slot's
    // header touched some 22 fresh pages of memory per cache, a page fault
    // each, for caches that hold a handful of pages. Pages come one by one.
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, nullptr, 0, 0);
    return true;
  }();
  (void)configured;
}

}  // namespace

Database::Database(std::string path, std::chrono::milliseconds busy_timeout)
    : m_path(std::move(path)), m_busy_timeout(busy_timeout) {
  configure_library_once();
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  const bool is_new = create_shareable(m_path);
  int rc = sqlite3_open_v2(m_path.c_str(), &m_db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string why = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
    sqlite3_close_v2(m_db);
    m_db = nullptr;
    throw Error(ExitCode::local_database, "cannot open the SQLite database " + m_path + ": " + why +
                                              " (check the path and its permissions)");
  }
  sqlite3_extended_result_codes(m_db, 1);
  sqlite3_busy_handler(m_db, busy_handler, this);
  // Each clock process is usually the last connection to close: by default it
  // would then checkpoint, fsync and delete the WAL every time, which is most
  // of an uncontended run's cost. Leave checkpoints to the automatic ones (by
  // whichever commit crosses the mark, see k_wal_checkpoint_pages) and keep
  // the WAL.
  sqlite3_db_config(m_db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  int persist_wal = 1;
  sqlite3_file_control(m_db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist_wal);
  // SQLite's automatic checkpoint at k_wal_checkpoint_pages, and the WAL's
  // length for checkpoint_when_idle (this hook replaces the automatic one).
  sqlite3_wal_hook(m_db, after_commit, this);
  try {
    // WAL lets readers (status) run beside a writer; NORMAL sync is durable
    // against a crash of clock, and a power loss also ends every holder here.
    if (is_new)
      exec(("PRAGMA page_size = " + std::to_string(k_new_page_size)).c_str());
    exec("PRAGMA journal_mode = WAL");
    exec("PRAGMA synchronous = NORMAL");
  } catch (...) {
    sqlite3_close_v2(m_db);  // the destructor does not run for a throwing constructor
    throw;
  }
}

Database::~Database() {
  for (auto& cached : m_cache)
    sqlite3_finalize(cached->stmt);
  sqlite3_close_v2(m_db);
}

void Database::exec(const char* sql) {
  int rc = retry_while_busy(m_busy_timeout,
                            [&] { return sqlite3_exec(m_db, sql, nullptr, nullptr, nullptr); });
  if (rc != SQLITE_OK)
    fail(rc, sql);
}

Statement Database::prepare(const char* sql) {
  Cached* free_copy = nullptr;
  bool known = false;
  for (auto& cached : m_cache) {
    if (cached->sql != sql)
      continue;
    known = true;
    if (!cached->in_use) {
      free_copy = cached.get();
      break;
    }
  }
  if (free_copy) {
    free_copy->in_use = true;
    return Statement(*this, free_copy->stmt, &free_copy->in_use);
  }
  sqlite3_stmt* stmt = nullptr;
  // The same text in use twice at once (a nested loop) gets a statement of
  // its own, finalized after use.
  unsigned flags = known ? 0 : SQLITE_PREPARE_PERSISTENT;
  int rc = sqlite3_prepare_v3(m_db, sql, -1, flags, &stmt, nullptr);
  if (rc != SQLITE_OK)
    fail(rc, "preparing a statement");
  if (known)
    return Statement(*this, stmt);
  m_cache.push_back(std::make_unique<Cached>(Cached{sql, stmt, true}));
  return Statement(*this, stmt, &m_cache.back()->in_use);
}

int Database::after_commit(void* self, sqlite3* db, const char* name, int frames) {
  auto* database = static_cast<Database*>(self);
  database->m_wal_frames = frames;
  ++database->m_commits;
  if (frames < k_wal_checkpoint_pages)
    return SQLITE_OK;
  // sqlite3_wal_autocheckpoint's passive checkpoint, which blocks no other
  // writer while it copies. What it copies counts only in this process's
  // WAL index, though: the next process to open the file alone rebuilds it
  // from the WAL, counting every frame as not yet copied, so a process that
  // commits once (clock acquire, clock release) copied the whole WAL again
  // at each commit past the mark, and the WAL never started over. Once all
  // is copied, truncating the WAL lasts, and takes the write lock only for
  // a moment; without the busy handler, anyone in the way leaves it to the
  // next commit past the mark (as any error).
  int log = 0;
  int copied = 0;
  int rc = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
  if (rc == SQLITE_OK && log == copied) {
    sqlite3_busy_handler(db, nullptr, nullptr);
    rc = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_TRUNCATE, &log, &copied);
    sqlite3_busy_handler(db, busy_handler, self);
  }
  if (rc == SQLITE_OK)
    database->m_wal_frames = log - copied;
  return SQLITE_OK;
}

void Database::release_memory() noexcept {
  if (m_db)
    sqlite3_db_release_memory(m_db);
}

void Database::checkpoint_when_idle() noexcept {
  // More than one commit (a grant after queueing): others want this lock,
  // and one may be queued behind this holder too, whose wait a checkpoint
  // that outlasts the command would lengthen.
  if (m_wal_frames < k_idle_checkpoint_pages || m_commits > 1)
    return;
  int log = 0;
  int copied = 0;
  // SQLITE_BUSY: another process checkpoints, or a reader keeps frames from
  // being copied; a full disk or a failed write leaves the WAL as it was.
  // Either way the automatic checkpoint remains.
  if (sqlite3_wal_checkpoint_v2(m_db, "main", SQLITE_CHECKPOINT_PASSIVE, &log, &copied) ==
      SQLITE_OK)
    m_wal_frames = log - copied;
}

std::int64_t Database::changes() const {
  return sqlite3_changes(m_db);
}

std::int64_t Database::data_version() {
  auto stmt = prepare("PRAGMA data_version");
  stmt.step();
  return stmt.integer(0);
}

void Database::fail(int rc, std::string_view what) const {
  int primary = rc & 0xff;
  std::string detail = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    throw Error(ExitCode::unavailable,
                "the SQLite database " + m_path + " stayed locked by another process for " +
                    std::to_string(m_busy_timeout.count() / 1000) + "s; try again");
  }
  if (primary == SQLITE_PROTOCOL)
    fail_shm_locked(m_path);
  if (is_local_file_failure(primary)) {
    // An I/O error says more with the system's reason ("File too large").
    int system_errno = m_db ? sqlite3_system_errno(m_db) : 0;
    if (primary == SQLITE_IOERR && system_errno != 0)
      detail += " (" + std::string(std::strerror(system_errno)) + ")";
    if (auto companion = unusable_companion(m_path); companion && primary != SQLITE_FULL) {
      // The database itself may be fine: name the file that is in the way.
      throw Error(ExitCode::local_database,
                  "the SQLite database " + m_path + " is unusable: " + *companion +
                      " is not readable and writable by this user (give it the database's "
                      "owner and mode: chown --reference=" +
                      m_path + " " + *companion + "; chmod --reference=" + m_path + " " +
                      *companion + "; do not delete it, it may hold committed data)");
    }
    std::string hint = primary == SQLITE_FULL       ? "free some disk space"
                       : primary == SQLITE_READONLY ? "make the file and its folder writable"
                       : primary == SQLITE_NOTADB   ? "point --database at a clock database"
                       : system_errno == EFBIG      ? "raise the file size limit, ulimit -f"
                                                    : "check the file, its folder and the disk";
    throw Error(ExitCode::local_database,
                "the SQLite database " + m_path + " is unusable: " + detail + " (" + hint + ")");
  }
  throw Error(ExitCode::internal,
              "SQLite failed while " + std::string(what) + " on " + m_path + ": " + detail);
}

Statement::~Statement() {
  if (!m_in_use) {
    sqlite3_finalize(m_stmt);
  } else if (m_stmt) {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
    *m_in_use = false;
  }
}

Statement::Statement(Statement&& other) noexcept
    : m_db(other.m_db), m_stmt(other.m_stmt), m_in_use(other.m_in_use), m_started(other.m_started) {
  other.m_stmt = nullptr;
}

Statement& Statement::bind(int index, std::int64_t value) {
  int rc = sqlite3_bind_int64(m_stmt, index, value);
  if (rc != SQLITE_OK)
    m_db->fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  int rc =
      sqlite3_bind_text64(m_stmt, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK)
    m_db->fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, std::optional<std::int64_t> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_text_or_null(int index, const std::optional<std::string>& value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  int rc = sqlite3_bind_null(m_stmt, index);
  if (rc != SQLITE_OK)
    m_db->fail(rc, "binding a parameter");
  return *this;
}

bool Statement::step() {
  // Only a statement that has produced no row yet may start over.
  int rc = m_started ? sqlite3_step(m_stmt) : retry_while_busy(m_db->busy_timeout(), [&] {
    int result = sqlite3_step(m_stmt);
    if (is_busy(result))
      sqlite3_reset(m_stmt);  // keeps the bindings
    return result;
  });
  m_started = rc == SQLITE_ROW;
  if (rc == SQLITE_ROW)
    return true;
  if (rc == SQLITE_DONE)
    return false;
  m_db->fail(rc, sqlite3_sql(m_stmt));
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  m_started = false;
  sqlite3_reset(m_stmt);
  sqlite3_clear_bindings(m_stmt);
}

std::int64_t Statement::integer(int column) const {
  return sqlite3_column_int64(m_stmt, column);
}

std::optional<std::int64_t> Statement::optional_integer(int column) const {
  if (sqlite3_column_type(m_stmt, column) == SQLITE_NULL)
    return std::nullopt;
  return integer(column);
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(m_stmt, column) == SQLITE_NULL;
}

std::string Statement::text(int column) const {
  auto* data = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, column));
  int size = sqlite3_column_bytes(m_stmt, column);
  return data ? std::string(data, static_cast<std::size_t>(size)) : std::string();
}

// BEGIN and COMMIT as kept statements: a run has two write transactions.
WriteTransaction::WriteTransaction(Database& db) : m_db(db) {
  m_db.prepare("BEGIN IMMEDIATE").run();
}

WriteTransaction::~WriteTransaction() {
  if (m_open)
    sqlite3_exec(m_db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void WriteTransaction::commit() {
  m_db.prepare("COMMIT").run();
  m_open = false;
}

ReadTransaction::ReadTransaction(Database& db) : m_db(db) {
  m_db.exec("BEGIN");
}

ReadTransaction::~ReadTransaction() {
  sqlite3_exec(m_db.handle(), "COMMIT", nullptr, nullptr, nullptr);
}

}  // namespace clk::store::sqlite
