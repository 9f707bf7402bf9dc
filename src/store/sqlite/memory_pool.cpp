// SQLite parses every statement into a tree of small nodes and builds its
// schema from many more, each a malloc and a free: Debian builds SQLite
// without lookaside (SQLITE_OMIT_LOOKASIDE), the per-connection pool that
// normally serves them. In a new process most of them reach the slow paths
// of the C library's malloc (nothing freed yet to reuse) and of free (more
// chunks of one size than its per-thread cache keeps): about 160 and 110
// instructions a call, 1,500 calls per `clock run`. This pool does what
// lookaside does: chunks carved from 64 KiB blocks and, once freed, kept on
// a list per size for the next allocation of that size. Larger requests go
// to malloc. Memory stays with the pool for the life of the process, which
// reuses it; a long `clock run` allocates no more than its busiest moment.
#include "store/sqlite/memory_pool.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <sqlite3.h>

#include "util/sanitizers.hpp"

namespace clk::store::sqlite {

namespace {

// Each chunk starts with its size, which SQLite asks for (xSize); the memory
// SQLite gets follows it, 8-byte aligned as SQLite requires.
using Header = std::uint64_t;
constexpr std::size_t k_granule = 16;
constexpr std::size_t k_largest_pooled = 1024;
constexpr std::size_t k_classes = k_largest_pooled / k_granule;
constexpr std::size_t k_block_bytes = 64 * 1024;

struct FreeChunk {
  FreeChunk* next;
};

// SQLite allocates from the heartbeat thread too, seldom at the same moment
// as the main thread: a lock of one atomic exchange, where a mutex cost more
// than the allocation it guards.
class SpinLock {
 public:
  void lock() {
    while (m_held.test_and_set(std::memory_order_acquire))
      std::this_thread::yield();
  }
  void unlock() { m_held.clear(std::memory_order_release); }

 private:
  std::atomic_flag m_held;
};

struct Pool {
  SpinLock lock;
  std::array<FreeChunk*, k_classes> free_lists{};
  char* unused = nullptr;  // the rest of the current block
  char* unused_end = nullptr;
};

Pool& pool() {
  static Pool* const instance = new Pool;  // never destroyed: SQLite may free at exit
  return *instance;
}

std::size_t rounded(std::size_t bytes) {
  return bytes <= k_largest_pooled ? (bytes + k_granule - 1) / k_granule * k_granule
                                   : (bytes + 7) / 8 * 8;
}

Header* header_of(void* memory) {
  return static_cast<Header*>(memory) - 1;
}

void* pooled_malloc(int requested) {
  std::size_t bytes = rounded(requested > 0 ? static_cast<std::size_t>(requested) : 1);
  Header* header = nullptr;
  if (bytes > k_largest_pooled) {
    header = static_cast<Header*>(std::malloc(sizeof(Header) + bytes));
    if (!header)
      return nullptr;
  } else {
    Pool& p = pool();
    std::lock_guard guard(p.lock);
    FreeChunk*& list = p.free_lists[bytes / k_granule - 1];
    if (list) {
      void* memory = list;
      list = list->next;
      return memory;  // its header still holds its size
    }
    std::size_t chunk = sizeof(Header) + bytes;
    if (static_cast<std::size_t>(p.unused_end - p.unused) < chunk) {
      auto* block = static_cast<char*>(std::malloc(k_block_bytes));
      if (!block)
        return nullptr;
      p.unused = block;  // the old block's remainder is left unused
      p.unused_end = block + k_block_bytes;
    }
    header = reinterpret_cast<Header*>(p.unused);
    p.unused += chunk;
  }
  *header = bytes;
  return header + 1;
}

void pooled_free(void* memory) {
  if (!memory)
    return;
  Header* header = header_of(memory);
  std::size_t bytes = *header;
  if (bytes > k_largest_pooled) {
    std::free(header);
    return;
  }
  Pool& p = pool();
  std::lock_guard guard(p.lock);
  FreeChunk*& list = p.free_lists[bytes / k_granule - 1];
  auto* chunk = static_cast<FreeChunk*>(memory);
  chunk->next = list;
  list = chunk;
}

int pooled_size(void* memory) {
  return memory ? static_cast<int>(*header_of(memory)) : 0;
}

void* pooled_realloc(void* memory, int requested) {
  if (!memory)
    return pooled_malloc(requested);
  std::size_t old_bytes = *header_of(memory);
  std::size_t new_bytes = rounded(requested > 0 ? static_cast<std::size_t>(requested) : 1);
  if (new_bytes == old_bytes || (new_bytes < old_bytes && old_bytes <= k_largest_pooled))
    return memory;  // (a pooled chunk that shrinks keeps its size)
  if (old_bytes > k_largest_pooled && new_bytes > k_largest_pooled) {
    auto* header =
        static_cast<Header*>(std::realloc(header_of(memory), sizeof(Header) + new_bytes));
    if (!header)
      return nullptr;
    *header = new_bytes;
    return header + 1;
  }
  void* moved = pooled_malloc(requested);
  if (!moved)
    return nullptr;
  std::memcpy(moved, memory, std::min(old_bytes, new_bytes));
  pooled_free(memory);
  return moved;
}

int pooled_roundup(int requested) {
  return static_cast<int>(rounded(requested > 0 ? static_cast<std::size_t>(requested) : 1));
}

int pooled_init(void*) {
  return SQLITE_OK;
}

void pooled_shutdown(void*) {}

}  // namespace

void use_memory_pool() {
  static const sqlite3_mem_methods methods = {
      pooled_malloc,  pooled_free, pooled_realloc,  pooled_size,
      pooled_roundup, pooled_init, pooled_shutdown, nullptr,
  };
  // Sanitizer builds leave SQLite on malloc, where each allocation is checked
  // on its own.
  if constexpr (!CLOCK_SANITIZED)
    sqlite3_config(SQLITE_CONFIG_MALLOC, &methods);
}

}  // namespace clk::store::sqlite
