// A thin RAII layer over the SQLite C API: one connection, prepared statements
// with bound parameters, IMMEDIATE transactions, and the translation of SQLite
// result codes into clk::Error (74 for an unusable file, 69 for a lock that
// stays busy). Only sqlite_store.cpp uses it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace clk::store::sqlite {

class Statement;

class Database {
 public:
  // Opens (creating if needed) the file at `path`, in WAL mode with a busy
  // handler that gives up after `busy_timeout`.
  Database(std::string path, std::chrono::milliseconds busy_timeout);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return m_path; }
  void exec(const char* sql);  // for constant SQL without parameters only
  // A statement of `sql`, prepared once per connection: a later prepare of
  // the same text while it is not in use gets it back, reset, unbound.
  Statement prepare(const char* sql);
  std::int64_t changes() const;
  // PRAGMA data_version: changes whenever another connection commits.
  std::int64_t data_version();
  // Copies the WAL into the database file (a passive checkpoint: it waits
  // for nobody) when this connection's last commit left it long, so that the
  // next writer starts the WAL over and the next process rebuilds its index
  // from a few frames. For idle time (clock run's command running); a busy
  // or failing checkpoint changes nothing and leaves the WAL to the
  // automatic one. Never throws.
  void checkpoint_when_idle() noexcept;

  // Gives the page cache's unused pages back to the heap. Never throws.
  void release_memory() noexcept;

  // Throws the clk::Error that `rc` means, naming the file and `what`.
  [[noreturn]] void fail(int rc, std::string_view what) const;

  sqlite3* handle() { return m_db; }
  std::chrono::steady_clock::time_point busy_deadline() const { return m_busy_deadline; }
  std::chrono::milliseconds busy_timeout() const { return m_busy_timeout; }
  void arm_busy_deadline() { m_busy_deadline = std::chrono::steady_clock::now() + m_busy_timeout; }

 private:
  // Parsing is most of what a statement costs a short-lived clock, and a run
  // prepares some of them twice (the history insert, the clock, BEGIN and
  // COMMIT): each is parsed once per process.
  struct Cached {
    std::string sql;
    sqlite3_stmt* stmt;
    bool in_use;
  };

  static int after_commit(void* self, sqlite3* db, const char* name, int frames);

  std::string m_path;
  sqlite3* m_db = nullptr;
  int m_wal_frames = 0;  // in the WAL after this connection's last commit
  int m_commits = 0;     // write transactions this connection committed
  std::vector<std::unique_ptr<Cached>> m_cache;
  std::chrono::milliseconds m_busy_timeout;
  std::chrono::steady_clock::time_point m_busy_deadline{};
};

class Statement {
 public:
  // `in_use`: the cache's flag of a kept statement, which the destructor
  // resets and gives back instead of finalizing.
  Statement(Database& db, sqlite3_stmt* stmt, bool* in_use = nullptr)
      : m_db(&db), m_stmt(stmt), m_in_use(in_use) {}
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQL (?1, ?2, …).
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, std::optional<std::int64_t> value);
  // The text, or NULL for none (a name apart from bind(), which a
  // std::string argument would otherwise find ambiguous).
  Statement& bind_text_or_null(int index, const std::optional<std::string>& value);
  Statement& bind_null(int index);

  // Advances to the next row; false when done.
  bool step();
  // Runs a statement that returns no rows.
  void run();
  void reset();

  std::int64_t integer(int column) const;
  std::optional<std::int64_t> optional_integer(int column) const;
  std::string text(int column) const;
  bool is_null(int column) const;

 private:
  Database* m_db;
  sqlite3_stmt* m_stmt;
  bool* m_in_use;
  bool m_started = false;  // has returned a row since the last reset
};

// BEGIN IMMEDIATE … COMMIT; rolls back if destroyed before commit().
class WriteTransaction {
 public:
  explicit WriteTransaction(Database& db);
  ~WriteTransaction();
  void commit();

 private:
  Database& m_db;
  bool m_open = true;
};

// BEGIN (deferred, read-only use) … COMMIT.
class ReadTransaction {
 public:
  explicit ReadTransaction(Database& db);
  ~ReadTransaction();

 private:
  Database& m_db;
};

}  // namespace clk::store::sqlite
