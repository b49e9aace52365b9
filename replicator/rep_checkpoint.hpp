// rep_checkpoint: the replication logs CouchDB's replicator keeps in `_local/<replication id>` on
// both the source and the target, read and written in its format, so that a replication resumes
// where it left off whichever implementation ran it before (couch_replicator_scheduler_job's
// compare_replication_logs and do_checkpoint). Pure.
#pragma once
#include <cstdint>
#include <string>

#include "node/json.hpp"

namespace settee {

// Where a replication starts, from the two logs (null: missing): the same last session on both
// sides -> its source_last_seq; else the newest session both histories hold -> its recorded_seq;
// else nothing found (the caller starts at since_seq, or 0). `history` is what the next checkpoint
// continues.
struct rep_start {
  json seq = 0;
  json history = json::array();
  bool found = false;
};
rep_start compare_replication_logs(const json& source_log, const json& target_log);

// One session's figures, as a checkpoint's history entry records them.
struct rep_stats {
  uint64_t missing_checked = 0, missing_found = 0, docs_read = 0, docs_written = 0, doc_write_failures = 0;
  uint64_t bulk_get_docs = 0, bulk_get_attempts = 0;

  rep_stats& operator+=(const rep_stats& o) {
    missing_checked += o.missing_checked;
    missing_found += o.missing_found;
    docs_read += o.docs_read;
    docs_written += o.docs_written;
    doc_write_failures += o.doc_write_failures;
    bulk_get_docs += o.bulk_get_docs;
    bulk_get_attempts += o.bulk_get_attempts;
    return *this;
  }
  // Each figure the larger of the two (couch_replicator_stats:max_stats).
  void raise_to(const rep_stats& o);
};

// The figures a checkpoint's history entry recorded (missing ones 0): a resumed replication counts on
// from the newest entry it resumes after, as couch_replicator_scheduler_job:init_state does.
rep_stats stats_of(const json& history_entry);

// The body of `_local/<id>` after a checkpoint (without _id and _rev): session_id,
// source_last_seq, replication_id_version 4 and the history, newest first, at most 50 entries.
json checkpoint_log(const std::string& session_id, const json& start_seq, const json& seq,
                    const std::string& start_time, const std::string& end_time, const rep_stats& stats,
                    const json& old_history);

// "Fri, 27 Nov 2026 03:40:00 GMT" (httpd_util:rfc1123_date) for Unix seconds.
std::string rfc1123_date(int64_t unix_s);

}  // namespace settee
