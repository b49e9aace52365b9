#include "node/heap.hpp"

#include <cstdlib>
#include <thread>
#include <vector>

namespace settee {

namespace {

// glibc's defaults (tunables glibc.malloc.tcache_count and tcache_max): other values only make this
// take more or fewer chunks than the cache holds, never wrong.
constexpr size_t cache_classes = 64;
constexpr size_t chunks_per_class = 7;

}  // namespace

void release_thread_cache() {
  std::vector<void*> taken;
  taken.reserve(cache_classes * chunks_per_class);  // one large block: not a cached size
  for (size_t c = 0; c < cache_classes; ++c) {
    // Class c holds chunks of 32 + 16c bytes: requests of 24 + 16c bytes fit them exactly.
    for (size_t i = 0; i < chunks_per_class; ++i) taken.push_back(std::malloc(24 + 16 * c));
  }
  // Freed here, they would go straight back into this thread's cache.
  std::thread([&taken] {
    for (void* p : taken) std::free(p);
  }).join();
}

}  // namespace settee
