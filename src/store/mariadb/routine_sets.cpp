// See routine_sets.hpp.
#include "store/mariadb/routine_sets.hpp"

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

#include "store/mariadb/connection.hpp"

namespace clk::store::mariadb {

namespace {

// "1.2.3" (or "1.2.3-rc1") as {1, 2}; nullopt for anything else.
std::optional<std::pair<int, int>> major_minor(const std::string& release) {
  const auto dot = release.find('.');
  if (dot == std::string::npos || dot == 0)
    return std::nullopt;
  try {
    std::size_t used = 0;
    const int major = std::stoi(release.substr(0, dot), &used);
    if (used != dot)
      return std::nullopt;
    const int minor = std::stoi(release.substr(dot + 1));
    return std::pair{major, minor};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

struct RoutineSet {
  std::string suffix;
  std::string release;
};

// The sets no release that may still run needs: those of a release older
// than this one's previous (adjacent releases only run side by side).
std::vector<RoutineSet> retired(Connection& connection) {
  const auto current = major_minor(CLOCK_VERSION);
  const std::pair<int, int> oldest_running{current->first, std::max(current->second - 1, 0)};
  std::vector<RoutineSet> sets;
  for (const Row& row : connection
                            .prepare("read routine_sets",
                                     "SELECT suffix, release_name FROM routine_sets "
                                     "WHERE suffix <> '' ORDER BY suffix")
                            .query({})) {
    RoutineSet set{row.at(0).value_or(""), row.at(1).value_or("")};
    auto release = major_minor(set.release);
    if (release && *release < oldest_running)
      sets.push_back(std::move(set));
  }
  return sets;
}

// A routine name as information_schema gives it, fit to quote with
// backticks: clock's names are letters, digits and underscores only.
bool plain_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

void retire_sets(Connection& connection) {
  for (const auto& set : retired(connection)) {
    const auto routines =
        connection
            .prepare("list a retired set's routines",
                     "SELECT ROUTINE_TYPE, ROUTINE_NAME FROM information_schema.ROUTINES "
                     "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME LIKE 'clock%' "
                     "AND RIGHT(ROUTINE_NAME, CHAR_LENGTH(?)) = ?")
            .query({set.suffix, set.suffix});
    for (const Row& routine : routines) {
      const std::string type = routine.at(0).value_or("");
      const std::string name = routine.at(1).value_or("");
      if ((type != "PROCEDURE" && type != "FUNCTION") || !plain_name(name))
        continue;
      // DDL takes no parameters; the name was checked to be plain above.
      connection.execute("drop a retired routine", "DROP " + type + " IF EXISTS `" + name + "`");
    }
    connection.prepare("forget a retired set", "DELETE FROM routine_sets WHERE suffix = ?")
        .execute({set.suffix});
  }
}

std::optional<std::string> retired_sets_warning(Connection& connection) {
  std::string names;
  try {
    for (const auto& set : retired(connection))
      names += (names.empty() ? "" : ", ") + set.suffix + " (clock " + set.release + ")";
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (names.empty())
    return std::nullopt;
  return "the routines with the suffixes " + names +
         " are kept only for releases older than clock " CLOCK_VERSION
         "'s previous one, which no host may still run (docs/upgrades.md): run 'clock init' of "
         "clock " CLOCK_VERSION " as the database's owner to drop them";
}

}  // namespace clk::store::mariadb
