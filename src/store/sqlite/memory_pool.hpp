// SQLite's small allocations from free lists of this process, instead of one
// malloc and free each.
#pragma once

namespace clk::store::sqlite {

// Gives SQLite the pool as its allocator (SQLITE_CONFIG_MALLOC). Call before
// the library initializes; sanitizer builds (util/sanitizers.hpp) keep the C
// library's malloc, so that AddressSanitizer checks SQLite's memory too.
void use_memory_pool();

}  // namespace clk::store::sqlite
