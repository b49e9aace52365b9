#include "replicator/rep_checkpoint.hpp"

#include <algorithm>
#include <ctime>

namespace settee {
namespace {

constexpr size_t max_history = 50;

const json* field_of(const json& obj, const char* name) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(name);
  return it == obj.end() ? nullptr : &*it;
}

bool has_session(const json& history, size_t from, const json& session) {
  for (size_t i = from; i < history.size(); ++i) {
    const json* s = field_of(history[i], "session_id");
    if (s && *s == session) return true;
  }
  return false;
}

json rest_of(const json& history, size_t from) {
  json out = json::array();
  for (size_t i = from; i < history.size(); ++i) out.push_back(history[i]);
  return out;
}

}  // namespace

void rep_stats::raise_to(const rep_stats& o) {
  missing_checked = std::max(missing_checked, o.missing_checked);
  missing_found = std::max(missing_found, o.missing_found);
  docs_read = std::max(docs_read, o.docs_read);
  docs_written = std::max(docs_written, o.docs_written);
  doc_write_failures = std::max(doc_write_failures, o.doc_write_failures);
  bulk_get_docs = std::max(bulk_get_docs, o.bulk_get_docs);
  bulk_get_attempts = std::max(bulk_get_attempts, o.bulk_get_attempts);
}

rep_stats stats_of(const json& history_entry) {
  auto figure = [&](const char* name) -> uint64_t {
    const json* v = field_of(history_entry, name);
    return v && v->is_number_unsigned() ? v->get<uint64_t>() : 0;
  };
  rep_stats s;
  s.missing_checked = figure("missing_checked");
  s.missing_found = figure("missing_found");
  s.docs_read = figure("docs_read");
  s.docs_written = figure("docs_written");
  s.doc_write_failures = figure("doc_write_failures");
  s.bulk_get_docs = figure("bulk_get_docs");
  s.bulk_get_attempts = figure("bulk_get_attempts");
  return s;
}

rep_start compare_replication_logs(const json& source_log, const json& target_log) {
  rep_start out;
  if (!source_log.is_object() || !target_log.is_object()) return out;
  const json* ss = field_of(source_log, "session_id");
  const json* ts = field_of(target_log, "session_id");
  if (ss && ts && *ss == *ts) {
    const json* seq = field_of(source_log, "source_last_seq");
    const json* h = field_of(source_log, "history");
    out.seq = seq ? *seq : json(0);
    out.history = h && h->is_array() ? *h : json::array();
    out.found = true;
    return out;
  }
  const json* sh = field_of(source_log, "history");
  const json* th = field_of(target_log, "history");
  if (!sh || !th || !sh->is_array() || !th->is_array()) return out;
  // Walk both histories newest first, as compare_rep_history does.
  for (size_t i = 0; i < sh->size() && i < th->size(); ++i) {
    const json* sid = field_of((*sh)[i], "session_id");
    if (sid && has_session(*th, i, *sid)) {
      const json* rec = field_of((*sh)[i], "recorded_seq");
      out.seq = rec ? *rec : json(0);
      out.history = rest_of(*sh, i + 1);
      out.found = true;
      return out;
    }
    const json* tid = field_of((*th)[i], "session_id");
    if (tid && has_session(*sh, i + 1, *tid)) {
      const json* rec = field_of((*th)[i], "recorded_seq");
      out.seq = rec ? *rec : json(0);
      out.history = rest_of(*th, i + 1);
      out.found = true;
      return out;
    }
  }
  return out;
}

json checkpoint_log(const std::string& session_id, const json& start_seq, const json& seq,
                    const std::string& start_time, const std::string& end_time, const rep_stats& stats,
                    const json& old_history) {
  json entry = {{"session_id", session_id},
                {"start_time", start_time},
                {"end_time", end_time},
                {"start_last_seq", start_seq},
                {"end_last_seq", seq},
                {"recorded_seq", seq},
                {"missing_checked", stats.missing_checked},
                {"missing_found", stats.missing_found},
                {"docs_read", stats.docs_read},
                {"docs_written", stats.docs_written},
                {"doc_write_failures", stats.doc_write_failures},
                {"bulk_get_docs", stats.bulk_get_docs},
                {"bulk_get_attempts", stats.bulk_get_attempts}};
  json history = json::array({entry});
  if (old_history.is_array())
    for (const json& h : old_history)
      if (history.size() < max_history) history.push_back(h);
  return {{"session_id", session_id}, {"source_last_seq", seq}, {"replication_id_version", 4}, {"history", history}};
}

std::string rfc1123_date(int64_t unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

}  // namespace settee
