#include "actors/scheduler_caches.hpp"

#include <caf/all.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>

#include "node/clock.hpp"
#include "node/heap.hpp"

namespace settee {

void release_scheduler_caches(caf::actor_system& sys, size_t threads, std::chrono::milliseconds wait) {
  struct rendezvous {
    std::mutex mu;
    std::condition_variable cv;
    size_t started = 0, done = 0;
  };
  auto r = std::make_shared<rendezvous>();
  const auto until = mono::now() + wait;
  for (size_t i = 0; i < threads; ++i) {
    sys.spawn([r, threads, until](caf::event_based_actor*) -> caf::behavior {
      {
        std::unique_lock<std::mutex> lock(r->mu);
        ++r->started;
        r->cv.notify_all();
        // While this job holds its thread, the next one must take another.
        r->cv.wait_until(lock, until, [&] { return r->started >= threads; });
      }
      release_thread_cache();
      {
        std::lock_guard<std::mutex> lock(r->mu);
        ++r->done;
      }
      r->cv.notify_all();
      return {};  // no behavior: the actor ends
    });
  }
  std::unique_lock<std::mutex> lock(r->mu);
  r->cv.wait_until(lock, until + wait, [&] { return r->done >= threads; });
}

}  // namespace settee
