#include "actors/purges.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "actors/gather.hpp"
#include "node/log.hpp"
#include "storage/purge_log.hpp"

namespace settee {
namespace {

using purged_revs = std::vector<std::vector<rev_id>>;

// One pass over the map `db`: every request to every copy of its range. Requests that no copy
// applied because a split sealed the range are listed in `moved`.
purge_outcome purge_once(coordinator& c, const db_meta& db, const std::vector<purge_info>& reqs, size_t w,
                         std::vector<size_t>& moved) {
  auto positions = c.by_range(db, reqs);  // range -> input positions
  std::vector<size_t> used, sizes;
  std::vector<std::vector<copy_ptr>> targets;
  for (auto& [range, pos] : positions) {
    used.push_back(range);
    targets.push_back(c.copies(db, range));
    sizes.push_back(targets.back().size());
  }
  const size_t quorum = coordinator::write_quorum(db, w);
  gather<purged_revs> g(sizes);
  for (size_t r = 0; r < used.size(); ++r) {
    std::vector<purge_info> batch;
    for (size_t i : positions[used[r]]) batch.push_back(reqs[i]);
    for (size_t k = 0; k < targets[r].size(); ++k) {
      auto slot = g.slot(r, k);
      targets[r][k]->purge_docs(batch, [slot, node = targets[r][k]->node()](result<purged_revs> a) {
        if (!a) log::warning("purge on " + node + "'s copy failed: " + a.error().reason);
        slot(std::move(a));
      });
    }
  }
  auto answers = g.take(quorum, mono::now() + c.timeout());
  purge_outcome out;
  out.purged.assign(reqs.size(), status{errc::timeout,
                                        "The request could not be processed in a reasonable amount "
                                        "of time."});
  for (size_t r = 0; r < used.size(); ++r) {
    const std::vector<size_t>& pos = positions[used[r]];
    std::vector<std::set<rev_id>> removed(pos.size());
    size_t applied = 0;
    status failure;
    bool sealed = false;
    for (auto& a : answers[r]) {
      if (!a) continue;
      if (!*a) {
        sealed = sealed || a->error().code == errc::shard_moved;
        if (failure) failure = a->error();
        continue;
      }
      ++applied;
      for (size_t d = 0; d < pos.size() && d < (*a)->size(); ++d) removed[d].insert((**a)[d].begin(), (**a)[d].end());
    }
    for (size_t d = 0; d < pos.size(); ++d) {
      if (applied == 0) {
        if (sealed) moved.push_back(pos[d]);
        if (!failure) out.purged[pos[d]] = failure;
        continue;
      }
      out.purged[pos[d]] = std::vector<rev_id>(removed[d].begin(), removed[d].end());
    }
    // A split's sealed parent: the requests go again on the new map, which decides.
    if (applied < quorum && !(sealed && applied == 0)) out.quorum_met = false;
  }
  return out;
}

}  // namespace

result<purge_outcome> purge_docs(coordinator& c, const db_meta& db, const std::vector<purge_info>& reqs, size_t w) {
  std::vector<size_t> moved;
  purge_outcome out = purge_once(c, db, reqs, w, moved);
  // Those a split's sealed parent refused go to the new map once this node sees it.
  status st = c.follow_new_maps(
      db, [&] { return !moved.empty(); },
      [&](const db_meta& current) -> status {
        std::vector<purge_info> retry;
        for (size_t i : moved) retry.push_back(reqs[i]);
        std::vector<size_t> again;
        purge_outcome second = purge_once(c, current, retry, w, again);
        for (size_t k = 0; k < moved.size(); ++k) out.purged[moved[k]] = std::move(second.purged[k]);
        out.quorum_met = out.quorum_met && second.quorum_met;
        std::vector<size_t> still;
        for (size_t k : again) still.push_back(moved[k]);
        moved = std::move(still);
        return {};
      });
  if (!st) return st;
  return out;
}

result<std::vector<purge_info>> purged_infos(coordinator& c, const db_meta& db) {
  std::vector<purge_info> out;
  for (size_t i = 0; i < db.q; ++i) {
    std::set<std::pair<std::string, std::vector<rev_id>>> seen;
    std::vector<purge_info> range;
    bool answered = false;
    status last{errc::unavailable, "no copy of range " + db.ranges[i].name() + " is reachable"};
    for (const copy_ptr& copy : c.copies(db, i)) {
      auto page = copy->purge_infos(0, UINT32_MAX);
      if (!page) {
        last = page.error();
        continue;
      }
      answered = true;
      for (purge_info& p : page->infos) {
        if (!purge_log::is_implied(p) && seen.insert({p.id, p.revs}).second) range.push_back(std::move(p));
      }
    }
    if (!answered) return last;
    out.insert(out.end(), range.begin(), range.end());
  }
  return out;
}

result<uint32_t> purged_infos_limit(coordinator& c, const db_meta& db) {
  auto page = c.first_answer<purge_page>(db, 0, [](shard_copy& copy) { return copy.purge_infos(UINT64_MAX, 0); });
  if (!page) return page.error();
  return page->limit;
}

coordinator::copies_outcome set_purged_infos_limit(coordinator& c, const db_meta& db, uint32_t limit) {
  return c.on_every_copy(db, [limit](shard_copy& copy) { return copy.set_purged_infos_limit(limit); });
}

}  // namespace settee
