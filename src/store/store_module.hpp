// What the loaders of the server stores' modules share (postgres_loader,
// mariadb_loader): a module found in clock's private folder (next to the
// binary in a build tree), dlopen'ed, and refused when it comes from
// another build. Each module stays loaded until the process exits: the
// Store it makes runs its code.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <vector>

namespace clk::store {

struct ModuleSpec {
  const char* file;          // "clock-postgres.so"
  const char* backend;       // "PostgreSQL", for the messages
  const char* abi_symbol;    // the module's CLOCK_STORE_ABI stamp
  const char* install_hint;  // how to get the module when it is missing
  const char* rebuild_hint;  // what to do when it is of another build
  // How to dlopen it (a module may need a start-up cost avoided); nullptr:
  // dlopen(RTLD_LAZY | RTLD_LOCAL).
  void* (*open)(const std::filesystem::path& file) = nullptr;
};

// The addresses of `symbols` in the module, in order. Throws
// clk::Error(config) when the module is missing (naming the paths tried),
// cannot be loaded, carries another ABI stamp or lacks one of them.
std::vector<void*> load_store_module(const ModuleSpec& spec,
                                     std::initializer_list<const char*> symbols);

}  // namespace clk::store
