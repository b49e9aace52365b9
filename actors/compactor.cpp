#include "actors/compactor.hpp"

#include <future>

#include "node/log.hpp"

namespace settee {

namespace {

constexpr const char* saved_prefix = "_local/compaction/";
constexpr std::chrono::seconds save_every{1};

// The runner's id of a copy's compaction: by database first, so running(db) is a prefix lookup
// (database names have no space).
std::string job_id(const std::string& db, const std::string& shard) {
  return std::string(compactor::lane) + " " + db + " " + shard;
}

// Calls visit(shard name, copy) for every copy of `db` this node holds.
template <class Visit>
void each_local_copy(coordinator& coord, const db_meta& db, Visit visit) {
  for (size_t r = 0; r < db.ranges.size(); ++r) {
    if (!db.hosts(r)) continue;
    for (const copy_ptr& copy : coord.copies(db, r))
      if (auto local = std::dynamic_pointer_cast<local_copy>(copy)) visit(shard_name(db.name, db.shard_id(r)), local);
  }
}

// One copy's compaction: a step compacts `docs_per_step` documents from `from_` on.
class compaction_job final : public job {
 public:
  compaction_job(std::string db, std::string shard, std::shared_ptr<local_copy> copy, size_t docs_per_step,
                 std::string from, job_store* store)
      : db_(std::move(db)),
        shard_(std::move(shard)),
        copy_(std::move(copy)),
        docs_per_step_(docs_per_step),
        from_(std::move(from)),
        store_(store) {
    const shard_header h = copy_->handle().store->header();
    total_ = h.doc_count + h.doc_del_count;
  }

  json task() const override {
    return json{{"type", "database_compaction"}, {"database", shard_}, {"phase", "document copy"}, {"changes_done", 0},
                {"total_changes", total_},       {"progress", 0}};
  }

  job_next step(job_context& ctx) override {
    auto op = std::make_shared<write_op>();
    op->what = write_op::kind::compact;
    op->compact_from = from_;
    op->compact_limit = docs_per_step_;
    std::promise<void> committed;
    copy_->submit(op, [&committed] { committed.set_value(); });
    committed.get_future().wait();
    if (!op->st) return job_next::fail(op->st.reason);
    done_ += op->compact_visited;
    ctx.progress(
        json{{"changes_done", done_}, {"progress", total_ ? std::min<uint64_t>(100, done_ * 100 / total_) : 100}});
    if (op->compact_next.empty()) return job_next::done();
    from_ = std::move(op->compact_next);
    if (store_ && mono::now() - saved_ >= save_every) save();
    if (store_) ctx.failpoint("compaction:step", [this] { save(); });
    return job_next::more();
  }

  void ended(job_next::kind how, const std::string& reason) override {
    if (how == job_next::kind::failed) log::warning("compaction of " + shard_ + " stopped: " + reason);
    if (!store_) return;
    if (how == job_next::kind::cancelled) {
      save();  // the node stops: it goes on from here at the next start
    } else if (auto st = store_->remove(saved_prefix + shard_); !st) {
      log::warning("compaction of " + shard_ + ": " + st.reason);
    }
  }

 private:
  void save() {
    saved_ = mono::now();
    if (auto st = store_->put(saved_prefix + shard_, json{{"db", db_}, {"shard", shard_}, {"from", from_}}); !st)
      log::warning("compaction of " + shard_ + ": its position was not saved: " + st.reason);
  }

  std::string db_, shard_;
  std::shared_ptr<local_copy> copy_;
  size_t docs_per_step_;
  std::string from_;
  job_store* store_;
  uint64_t total_ = 0, done_ = 0;
  mono::time_point saved_ = mono::now();
};

}  // namespace

compactor::compactor(job_runner& runner, job_store* store, size_t docs_per_step)
    : runner_(runner), store_(store), docs_per_step_(std::max<size_t>(1, docs_per_step)) {}

void compactor::enqueue(const std::string& db, const std::string& shard, std::shared_ptr<local_copy> copy,
                        const std::string& from) {
  const std::string id = job_id(db, shard);
  if (runner_.has(id)) return;
  runner_.submit(id, lane, std::make_shared<compaction_job>(db, shard, std::move(copy), docs_per_step_, from, store_));
}

void compactor::enqueue_db(coordinator& coord, const db_meta& db) {
  each_local_copy(coord, db, [&](const std::string& shard, std::shared_ptr<local_copy> copy) {
    enqueue(db.name, shard, std::move(copy));
  });
}

bool compactor::running(const std::string& db) const {
  return !runner_.ids(job_id(db, "")).empty();
}

status compactor::resume(coordinator& coord) {
  if (!store_) return {};
  auto saved = store_->load(saved_prefix);
  if (!saved) return saved.error();
  for (auto& [id, body] : *saved) {
    const std::string db = body.value("db", ""), shard = body.value("shard", "");
    std::shared_ptr<local_copy> copy;
    if (auto m = coord.catalog().find(db)) {
      each_local_copy(coord, *m, [&](const std::string& name, std::shared_ptr<local_copy> c) {
        if (name == shard) copy = std::move(c);
      });
    }
    if (!copy) {  // the database or the copy went meanwhile
      (void)store_->remove(id);
      continue;
    }
    log::info("compaction of " + shard + " goes on from where a restart cut it");
    enqueue(db, shard, std::move(copy), body.value("from", ""));
  }
  return {};
}

}  // namespace settee
