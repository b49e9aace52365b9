// doc_validator: validate_doc_update, run as CouchDB's couch_db runs it: the function of every
// design document of the database that has one (in the order of their ids; the first refusal
// wins), on every write of a normal document this node coordinates, interactive or replicated
// (new_edits=false). Not on design documents (they need a database admin instead), `_local`
// documents, or internal replication between copies (it does not pass through here).
//
// The functions run in the JavaScript workers (actors/js_pool). The design documents with one are
// read from every copy of every range (the newest revision of each: a copy that lags does not hide
// one acknowledged on a quorum) and kept per database incarnation until a commit on this node writes a
// design document (change_notifier::design_changed) or, for ranges this node holds no copy of,
// for at most `recheck` (docs/api.md).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"
#include "actors/js_pool.hpp"
#include "node/clock.hpp"
#include "node/error.hpp"

namespace settee {

class change_notifier;

// Who writes: the arguments CouchDB passes after newDoc and oldDoc (JSON texts).
struct write_caller {
  std::string user_ctx;  // {"db":..,"name":..|null,"roles":[..]}
  std::string sec_obj;   // the database's _security object
};

class doc_validator {
 public:
  doc_validator(coordinator& coord, js_pool& js, change_notifier* notifier,
                std::chrono::milliseconds recheck = std::chrono::seconds(5));

  // One status per document of `docs`: ok, or its refusal (403 forbidden and 401 unauthorized
  // with the function's message; a function that failed otherwise: 500, logged with its design
  // document). An error: the design documents could not be read.
  result<std::vector<status>> validate(const db_meta& db, const std::vector<doc_update>& docs,
                                       const write_caller& caller);
  // Whether `db` has any validate_doc_update now (cheap once cached).
  result<bool> guarded(const db_meta& db);

 private:
  struct function {
    std::string ddoc_id, key;  // key: worker_key (a new revision is a new document for the workers)
    std::string ddoc_json;
  };
  struct entry {
    std::shared_ptr<const std::vector<function>> functions;
    uint64_t design_version = 0;
    mono::time_point loaded{};
  };
  result<std::shared_ptr<const std::vector<function>>> functions_of(const db_meta& db);
  result<std::shared_ptr<const std::vector<function>>> load_functions(const db_meta& db);
  result<std::vector<all_docs_row>> design_docs(const db_meta& db);
  static std::shared_ptr<const std::vector<function>> no_functions();
  // Validations waiting for a worker are gathered, so that one exchange with a worker carries many
  // (a write's own documents, and concurrent writes'): a caller that finds fewer batches under way
  // than max_runners_ runs one with everything queued for the function at the queue's head, again
  // while its own are not answered; the others wait for their answers. When every batch under way
  // has run for stall_after, a waiting caller runs its own function's batch on another worker (up
  // to the pool's max_workers): one database's slow function does not hold every other's writes.
  struct queued {
    const function* f;
    const std::string* db_name;
    std::string args;
    status result;
    bool done = false;
    std::condition_variable* owner = nullptr;  // woken when this is answered
  };
  void run_batched(std::vector<queued>& mine);
  void run_batch(const std::vector<queued*>& batch);

  coordinator& coord_;
  js_pool& js_;
  change_notifier* notifier_;
  std::chrono::milliseconds recheck_;
  std::mutex mu_;
  std::map<std::string, entry> cache_;  // databases with a validate_doc_update, by db_meta::key
  // Databases without one (most), by the hash of their key, sorted: one flat array, not an
  // allocation per database (small long-lived allocations among freed ones keep a node's heap
  // from shrinking once databases came and went: tests/integration/test_db.py IdleMemory).
  struct none_entry {
    uint64_t key_hash;
    uint64_t design_version;
    mono::time_point loaded;
  };
  std::vector<none_entry> none_;
  std::vector<uint64_t> loading_;  // databases being loaded now, by key hash
  std::condition_variable loaded_;

  std::mutex queue_mu_;
  std::vector<queued*> queue_;
  size_t runners_ = 0;
  size_t max_runners_;
  mono::time_point newest_run_{};  // when the latest batch began
  static constexpr std::chrono::milliseconds stall_after{20};
};

// CouchDB's newDoc for an update (its body with _id, _rev and _revisions as the client sent them,
// _deleted) and oldDoc (the revision it edits, rendered with _revisions; "null" when none).
std::string validation_new_doc(const doc_update& u);
std::string validation_old_doc(const doc_update& u, const doc_copy& current);

}  // namespace settee
