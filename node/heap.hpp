// heap: giving memory back to the system after a busy spell (docs/architecture.md section 24).
//
// malloc_trim(0) returns the free pages of glibc's arenas, but each thread keeps a cache of the
// small chunks it freed last (tcache: up to 7 per size class, 64 classes of up to 1,032 bytes).
// Those chunks count as in use, so no trim can take their pages, and after 2,000 databases came and
// went the caches of ~30 threads kept ~5 MB resident: more than a fresh node's whole heap.
// glibc has no call to empty a thread's cache; a thread that exits empties its own. So:
// release_thread_cache() takes every cached chunk out of the calling thread's cache (a malloc of a
// class takes from the cache first) and frees them on a helper thread that then exits.
// Thread-safety: affects the calling thread only; call it when the thread is idle (its cache then
// refills as it works again: the cost is ~450 mallocs and one short-lived thread).
#pragma once

namespace settee {

void release_thread_cache();

}  // namespace settee
