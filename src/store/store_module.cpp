// See store_module.hpp.
#include "store/store_module.hpp"

#include <cstring>
#include <dlfcn.h>
#include <string>

#include "error.hpp"
#include "util/private_files.hpp"

namespace clk::store {

std::vector<void*> load_store_module(const ModuleSpec& spec,
                                     std::initializer_list<const char*> symbols) {
  auto found = util::find_private_file(spec.file);
  if (!found.path) {
    throw Error(ExitCode::config, std::string(spec.backend) + " support is not installed: no " +
                                      spec.file + " in " + found.tried + " (" + spec.install_hint +
                                      ")");
  }
  const auto& file = *found.path;
  void* handle = spec.open ? spec.open(file) : dlopen(file.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!handle) {
    throw Error(ExitCode::config, "cannot load the " + std::string(spec.backend) + " module " +
                                      file.string() + ": " + dlerror());
  }
  const Error mismatch(ExitCode::config, "the " + std::string(spec.backend) + " module " +
                                             file.string() + " does not match this clock binary; " +
                                             spec.rebuild_hint);
  const auto* abi = static_cast<const char*>(dlsym(handle, spec.abi_symbol));
  if (!abi || std::strcmp(abi, CLOCK_STORE_ABI) != 0)
    throw mismatch;
  std::vector<void*> addresses;
  for (const char* symbol : symbols) {
    void* address = dlsym(handle, symbol);
    if (!address)
      throw mismatch;
    addresses.push_back(address);
  }
  return addresses;
}

}  // namespace clk::store
