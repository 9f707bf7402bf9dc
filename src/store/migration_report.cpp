#include "store/migration_report.hpp"

namespace clk::store {

MigrationReport migration_report(const std::optional<std::set<int>>& before,
                                 const std::set<int>& after, const std::vector<Migration>& known) {
  MigrationReport report;
  report.created = !before;
  for (const auto& migration : known) {
    if (!after.contains(migration.version))
      continue;
    if (!before || !before->contains(migration.version))
      report.applied.emplace_back(migration.name);
    report.latest = std::string(migration.name);
  }
  return report;
}

}  // namespace clk::store
