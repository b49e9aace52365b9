#include "actors/internal_replication.hpp"

#include "node/json.hpp"

#include <cstdlib>

#include "actors/bridge.hpp"
#include "actors/catalog_entry.hpp"
#include "actors/gather.hpp"
#include "actors/local_copy.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"

namespace settee {

replication_target local_target(const shard_handle& target, std::chrono::milliseconds timeout) {
  replication_target t;
  t.uuid = target.store->header().shard_uuid;
  t.apply = [target, timeout](std::vector<doc_update>& updates) -> result<apply_result> {
    auto write = std::make_shared<write_op>();
    write->docs = std::move(updates);
    // A merge never conflicts: any failure is real.
    if (auto st = write_one(target.writer, write, timeout); !st) return st;
    return apply_result{count_added(write->results), target.store->header().update_seq};
  };
  auto copy = std::make_shared<local_copy>(target, "", timeout);
  t.stage = [copy](const std::string& key, uint64_t offset, const std::string& piece) {
    return copy->stage_blob(key, offset, piece);
  };
  t.purges = copy;
  return t;
}

size_t count_added(const std::vector<doc_result>& results) {
  size_t n = 0;
  for (auto& r : results) n += r.st && r.added;
  return n;
}

std::string checkpoint_id(const std::string& target_uuid) {
  return "_local/shard-sync-" + target_uuid;
}

namespace {

constexpr size_t history_max = 32;

struct checkpoint {
  uint64_t seq = 0;
  uint64_t rev = 0;                                    // of the _local doc
  std::vector<std::pair<uint64_t, uint64_t>> history;  // (source seq, target seq), newest first
  uint64_t purge_seq = 0;                              // this copy's purge requests the target has
  uint64_t target_purge_seq = 0;                       // the target's purge requests this copy has
};

uint64_t unsigned_field(const json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

bool parse_checkpoint(const std::string& body, checkpoint& cp) {
  json j = parse_json(body).value_or(json());
  if (!j.is_object() || !j["seq"].is_number_unsigned()) return false;
  cp.seq = j["seq"].get<uint64_t>();
  cp.purge_seq = unsigned_field(j, "purge_seq");
  cp.target_purge_seq = unsigned_field(j, "target_purge_seq");
  if (j.contains("history") && j["history"].is_array()) {
    for (auto& h : j["history"]) {
      if (h.is_array() && h.size() == 2 && h[0].is_number_unsigned() && h[1].is_number_unsigned())
        cp.history.emplace_back(h[0].get<uint64_t>(), h[1].get<uint64_t>());
    }
  }
  return true;
}

std::string checkpoint_body(const checkpoint& cp) {
  json history = json::array();
  for (auto& [s, t] : cp.history) history.push_back({s, t});
  return json{
      {"seq", cp.seq}, {"history", history}, {"purge_seq", cp.purge_seq}, {"target_purge_seq", cp.target_purge_seq}}
      .dump();
}

checkpoint load(const shard_handle& source, const std::string& id) {
  checkpoint cp;
  local_doc d;
  auto snap = source.store->read();
  if (snap && snap->local(id, d)) {
    cp.rev = d.rev;
    if (!parse_checkpoint(d.body, cp)) cp = checkpoint{0, d.rev, {}};  // unreadable: start over (idempotent)
  }
  return cp;
}

constexpr uint32_t purge_batch = 500;

status save(const shard_handle& source, const std::string& id, checkpoint& cp, std::chrono::milliseconds timeout) {
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::local;
  op->local = {id, checkpoint_body(cp), false, cp.rev};
  if (auto st = write_one(source.writer, op, timeout); !st) return st;
  cp.rev = op->local_rev;
  return {};
}

// The purge requests the two copies lack of each other's: the target's first (applied here, so
// the documents pushed next no longer hold what it purged), then this copy's. Advances `cp`.
status exchange_purges(const shard_handle& source, const replication_target& target, checkpoint& cp,
                       replication_result& out, std::chrono::milliseconds timeout) {
  if (!target.purges) return {};
  const bool nothing_to_take = target.purge_seq && *target.purge_seq <= cp.target_purge_seq;
  for (int round = 0; round < 100000 && !nothing_to_take; ++round) {
    auto page = target.purges->purge_infos(cp.target_purge_seq, purge_batch);
    if (!page && page.error().code == errc::not_implemented) return {};  // an older release keeps none
    if (!page) return page.error();
    if (page->oldest > cp.target_purge_seq + 1) {
      log::warning("internal replication from " + source.store->path() + ": the target forgot purge requests " +
                   std::to_string(cp.target_purge_seq + 1) + ".." + std::to_string(page->oldest - 1) +
                   " before this copy learned them (its _purged_infos_limit)");
    }
    if (!page->infos.empty()) {
      auto apply = std::make_shared<write_op>();
      apply->what = write_op::kind::purge;
      apply->purges = page->infos;
      for (purge_info& p : apply->purges) p.seq = 0;
      if (auto st = write_one(source.writer, apply, timeout); !st) return st;
      out.purges_pulled += page->infos.size();
    }
    if (page->infos.size() < purge_batch) {  // all of them: caught up with its purge seq
      cp.target_purge_seq = std::max(cp.target_purge_seq, page->purge_seq);
      break;
    }
    cp.target_purge_seq = page->infos.back().seq;
  }
  for (int round = 0; round < 100000; ++round) {
    auto snap = source.store->read();
    if (!snap) return snap.error();
    std::vector<purge_info> batch;
    snap->scan_purges(cp.purge_seq, [&](const purge_info& p) {
      batch.push_back(p);
      return batch.size() < purge_batch;
    });
    if (!snap->fault()) return snap->fault();
    if (batch.empty()) break;
    const uint64_t last = batch.back().seq;
    auto sent = wait_one<std::vector<std::vector<rev_id>>>(
        [&](auto done) { target.purges->purge_docs(batch, std::move(done)); }, mono::now() + timeout, "the target");
    if (!sent && sent.error().code == errc::not_implemented) return {};
    if (!sent) return sent.error();
    cp.purge_seq = last;
    out.purges_pushed += batch.size();
  }
  return {};
}

}  // namespace

void add_to_history(std::vector<std::pair<uint64_t, uint64_t>>& history, std::pair<uint64_t, uint64_t> entry,
                    size_t max) {
  history.insert(history.begin(), entry);
  while (history.size() > max && history.size() > 2) {
    // Drop the entry of the older half whose neighbours are closest (in target seq): what is kept
    // spreads out evenly over the whole past. The oldest entry stays.
    size_t from = std::max<size_t>(1, max / 2), victim = history.size() - 2;
    uint64_t best_gap = UINT64_MAX;
    for (size_t i = from; i + 1 < history.size(); ++i) {
      uint64_t gap = history[i - 1].second - history[i + 1].second;
      if (gap < best_gap) {
        best_gap = gap;
        victim = i;
      }
    }
    history.erase(history.begin() + static_cast<std::ptrdiff_t>(victim));
  }
}

std::optional<uint64_t> translate_since(const shard_store::snapshot& local, const std::string& other_uuid_prefix,
                                        uint64_t seq) {
  const std::string prefix = checkpoint_id(other_uuid_prefix);
  std::optional<uint64_t> best;
  local.scan_local([&](const local_doc& d) {
    if (d.id.rfind(prefix, 0) != 0) return true;
    checkpoint cp;
    if (!parse_checkpoint(d.body, cp)) return true;
    for (auto& [source_seq, target_seq] : cp.history) {  // newest first: the first that fits is the best
      if (target_seq <= seq) {
        if (!best || source_seq > *best) best = source_seq;
        break;
      }
    }
    return true;
  });
  return best;
}

resolved_since resolve_on_copy(const shard_handle& copy, const std::string& uuid_prefix, uint64_t seq) {
  resolved_since r;
  shard_header hd = copy.store->header();
  r.uuid = hd.shard_uuid;
  r.update_seq = hd.update_seq;
  if (uuid_prefix.empty()) return r;  // from the start
  if (hd.shard_uuid.rfind(uuid_prefix, 0) == 0) {
    if (seq > hd.update_seq) {
      // The cached header is updated just after a commit becomes visible: a token made from
      // changes read in between names a seq past it. The newest change a snapshot sees counts too
      // (clamping to the stale header would send those changes again).
      if (auto snap = copy.store->read()) {
        snap->scan_changes_descending(0, [&](const change_entry& e) {
          r.update_seq = std::max(r.update_seq, e.seq);
          return false;
        });
      }
    }
    r.seq = std::min(seq, r.update_seq);
    return r;
  }
  r.resolution = resolved_since::how::rewound;
  if (auto snap = copy.store->read()) {
    if (auto t = translate_since(*snap, uuid_prefix, seq)) {
      r.seq = std::min(*t, hd.update_seq);
      r.resolution = resolved_since::how::translated;
    }
  }
  return r;
}

std::optional<local_doc> carry_sync_checkpoint(const local_doc& l, const shard_range& child) {
  const std::string prefix = checkpoint_id("");
  if (l.id.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  checkpoint cp;
  if (!parse_checkpoint(l.body, cp)) return std::nullopt;  // unreadable: the push starts over
  cp.purge_seq = cp.target_purge_seq = 0;
  return local_doc{checkpoint_id(split_child_uuid(l.id.substr(prefix.size()), child)), l.rev, checkpoint_body(cp)};
}

uint64_t read_checkpoint(const shard_handle& source, const std::string& target_uuid) {
  return load(source, checkpoint_id(target_uuid)).seq;
}

result<replication_result> push_changes(const shard_handle& source, const replication_target& target,
                                        std::chrono::milliseconds timeout, size_t batch_docs) {
  std::string id = checkpoint_id(target.uuid);
  checkpoint cp = load(source, id);
  replication_result out;
  out.from_seq = out.to_seq = cp.seq;
  const uint64_t purged_before = cp.purge_seq, pulled_before = cp.target_purge_seq;
  if (auto st = exchange_purges(source, target, cp, out, timeout); !st) return st;
  if (cp.purge_seq != purged_before || cp.target_purge_seq != pulled_before) {
    if (auto st = save(source, id, cp, timeout); !st) return st;
  }
  if (target.progress) target.progress(out.from_seq, out.to_seq);
  for (int round = 0; round < 1000000; ++round) {  // bounded; ends when caught up
    auto snap = source.store->read();
    if (!snap) return snap.error();
    replication_batch batch = snap->read_for_replication(out.to_seq, batch_docs);
    if (!snap->fault()) return snap->fault();
    if (batch.docs == 0) break;
    // Large blobs first, piece by piece from the same snapshot, unless the target has them (an
    // empty piece asks).
    for (auto& [key, length] : batch.large_blobs) {
      auto has = target.stage(key, 0, "");
      if (!has) return has.error();
      for (uint64_t offset = 0; offset < length && !*has; offset += replication_piece_bytes) {
        std::string piece;
        if (!snap->blob_range(key, offset, replication_piece_bytes, piece)) {
          return snap->fault() ? status{errc::internal, "attachment blob missing: " + key} : snap->fault();
        }
        auto whole = target.stage(key, offset, piece);
        if (!whole) return whole.error();
        if (*whole) break;
      }
    }
    auto applied = target.apply(batch.updates);
    if (!applied) return applied.error();
    // Checkpoint only after the target committed (synced) the batch.
    cp.seq = batch.last_seq;
    add_to_history(cp.history, {batch.last_seq, applied->target_seq}, history_max);
    if (auto st = save(source, id, cp, timeout); !st) return st;
    out.to_seq = batch.last_seq;
    out.docs += batch.docs;
    out.applied += applied->applied;
    metrics::node().internal_replication_docs += batch.docs;
    if (target.progress) target.progress(out.from_seq, out.to_seq);
  }
  return out;
}

}  // namespace settee
