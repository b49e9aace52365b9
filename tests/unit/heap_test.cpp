// Giving a thread's malloc cache back (node/heap.hpp).
#include <doctest/doctest.h>
#include <malloc.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "node/heap.hpp"

using namespace settee;

namespace {

// A sanitizer replaces glibc's allocator (mallinfo2 then reports nothing).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif

}  // namespace

TEST_CASE("release_thread_cache hands the chunks a thread's malloc cache holds back to the arena" *
          doctest::skip(sanitized)) {
  std::thread([] {
    // Seven freed chunks in each size class (24 to 1,032 bytes): glibc keeps them in this thread's
    // cache, where they count as in use.
    std::vector<void*> chunks;
    size_t bytes = 0;
    for (size_t s = 24; s <= 1032; s += 16) {
      for (int i = 0; i < 7; ++i) chunks.push_back(std::malloc(s));
      bytes += 7 * s;
    }
    for (void* p : chunks) std::free(p);
    const size_t in_use = mallinfo2().uordblks;
    release_thread_cache();
    // Back in the arena (free), give or take what making the helper thread cost.
    CHECK(mallinfo2().uordblks + bytes / 2 <= in_use);
  }).join();
}
