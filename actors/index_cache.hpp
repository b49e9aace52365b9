// index_cache: the index files (or directories) a reader keeps open, by path (view_reader's view
// stores, search_reader's text indexes). At most `most` are kept: past it the least recently used
// one that nobody holds is closed first (one LMDB environment or Lucene writer per file per
// process: never one a query or an update still uses). Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "node/error.hpp"

namespace settee {

template <class T>
class index_cache {
 public:
  explicit index_cache(size_t most) : most_(most) {}

  // The entry kept for `path`, or the one `open` makes (under the cache's lock; its error, and
  // nothing kept, when it fails).
  result<std::shared_ptr<T>> get(const std::string& path, const std::function<result<std::shared_ptr<T>>()>& open) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kept_.find(path);
    if (it != kept_.end()) {
      it->second.used = ++uses_;
      return it->second.entry;
    }
    while (kept_.size() >= most_) {
      auto oldest = kept_.end();
      for (auto k = kept_.begin(); k != kept_.end(); ++k)
        if (k->second.entry.use_count() == 1 && (oldest == kept_.end() || k->second.used < oldest->second.used))
          oldest = k;
      if (oldest == kept_.end()) break;
      kept_.erase(oldest);
    }
    auto made = open();
    if (!made) return made.error();
    kept_.emplace(path, slot{*made, ++uses_});
    return *made;
  }
  // Closed here (a query that still holds it keeps it until it ends).
  void erase(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    kept_.erase(path);
  }
  // Every path below directory `dir`.
  void erase_below(const std::string& dir) {
    const std::string prefix = dir + "/";
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = kept_.lower_bound(prefix); it != kept_.end() && it->first.compare(0, prefix.size(), prefix) == 0;)
      it = kept_.erase(it);
  }
  // Runs `f(kept)` under the cache's lock, `kept` the entry kept for `path` (null: none); when it
  // answers true the entry is dropped.
  void with(const std::string& path, const std::function<bool(T* kept)>& f) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kept_.find(path);
    if (f(it == kept_.end() ? nullptr : it->second.entry.get()) && it != kept_.end()) kept_.erase(it);
  }

 private:
  struct slot {
    std::shared_ptr<T> entry;
    uint64_t used = 0;  // when last handed out (a counter)
  };
  const size_t most_;
  std::mutex mu_;
  std::map<std::string, slot> kept_;
  uint64_t uses_ = 0;
};

}  // namespace settee
