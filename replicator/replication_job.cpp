#include "replicator/replication_job.hpp"

#include <algorithm>
#include <thread>

#include "node/check.hpp"
#include "node/crypto.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"
#include "replicator/changes_rows.hpp"
#include "replicator/rep_attachments.hpp"
#include "wire/message.hpp"
#include "wire/multipart.hpp"

namespace settee {
namespace {

constexpr std::chrono::milliseconds caught_up_poll{200};
// A caught-up replication that waits for its watch still steps this often (a lost wake costs no
// more than this).
constexpr std::chrono::milliseconds watched_fallback{60000};
// The longest a watch's longpoll waits for a change (less when the connection timeout is shorter).
constexpr int64_t longpoll_timeout_ms = 10000;
constexpr int max_one_shot_retries = 5;

// An endpoint that refused the credentials (401/403) is tried again only after CouchDB's crash
// backoff (couch_replicator_scheduler:backoff_micros: 30 s * 2^(n-1), n <= 11), never on the short
// network backoff: each try is a failed login, and [chttpd_auth_lockout] locks the account out after
// five within five minutes (the right password is then refused too).
std::chrono::milliseconds refused_backoff(int failures_in_a_row) {
  return std::chrono::milliseconds(30000) * (int64_t{1} << std::clamp(failures_in_a_row - 1, 0, 10));
}
// A revision whose missing attachments total at most this comes with them inline in a second
// `_bulk_get` (CouchDB's MAX_BULK_ATT_SIZE), up to batch_inline_bytes a batch; larger ones are
// copied alone as multipart through a spool file, so memory never holds an attachment.
constexpr uint64_t inline_attachment_bytes = 64u << 10;
constexpr uint64_t batch_inline_bytes = 8u << 20;
// The largest JSON part of a multipart answer (a document without attachments) read back.
constexpr uint64_t max_json_part_bytes = 256u << 20;

// A seq as a query parameter: strings as they are, anything else as its JSON text.
std::string seq_param(const json& seq) {
  return percent_encode(seq.is_string() ? seq.get<std::string>() : request_text(seq));
}

// `items` as two arrays, the first half and the rest (an answer or a write too large, tried again
// in halves).
std::pair<json, json> halves(json items) {
  const size_t half = items.size() / 2;
  json a = json::array(), b = json::array();
  for (size_t i = 0; i < items.size(); ++i) (i < half ? a : b).push_back(std::move(items[i]));
  return {std::move(a), std::move(b)};
}

std::string query_value(const json& v) {
  return percent_encode(v.is_string() ? v.get<std::string>() : v.dump());
}

}  // namespace

// A batch's own connections to both endpoints (one per worker: clients are not thread-safe).
struct replication_job::worker {
  rep_client source, target;
  worker(const rep_request& r, const std::atomic<bool>* stop)
      : source(r.source, std::chrono::milliseconds(r.connection_timeout_ms), static_cast<int>(r.retries_per_request),
               stop),
        target(r.target, std::chrono::milliseconds(r.connection_timeout_ms), static_cast<int>(r.retries_per_request),
               stop) {}
};

replication_job::replication_job(rep_request r, const clock& clk, std::string node, std::string spool_dir,
                                 std::shared_ptr<work_pool> batch_threads)
    : r_(std::move(r)),
      clk_(clk),
      node_(std::move(node)),
      spool_dir_(std::move(spool_dir)),
      batch_threads_(std::move(batch_threads)) {
  started_on_s_ = clk_.now_s();
  history_events_.push_back({{"timestamp", started_on_s_}, {"type", "added"}});
}

replication_job::~replication_job() = default;

void replication_job::carry_on_from(const replication_job& earlier) {
  std::vector<json> history;
  int errors = 0;
  int64_t added_s = 0;
  {
    std::lock_guard<std::mutex> lock(earlier.mu_);
    history = earlier.history_events_;
    errors = earlier.errors_in_a_row_;
    added_s = earlier.started_on_s_;
  }
  std::lock_guard<std::mutex> lock(mu_);
  history.push_back({{"timestamp", clk_.now_s()}, {"type", "stopped"}});
  if (history.size() > 20) history.erase(history.begin() + 1, history.end() - 19);
  history_events_ = std::move(history);
  errors_in_a_row_ = errors;
  started_on_s_ = added_s;
}

void replication_job::set_document(std::string db, std::string doc_id, end_callback on_end) {
  std::lock_guard<std::mutex> lock(mu_);
  doc_db_ = std::move(db);
  doc_id_ = std::move(doc_id);
  on_end_ = std::move(on_end);
}

std::string replication_job::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return end_how_ == job_next::kind::done ? "completed" : "failed";
  if (crashing_) return "crashing";
  return started_ ? "running" : "pending";
}

int replication_job::error_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_in_a_row_;
}

std::string replication_job::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

json replication_job::task() const {
  std::lock_guard<std::mutex> lock(mu_);
  json d = r_.describe();
  return json{{"type", "replication"},
              {"replication_id", r_.id()},
              {"doc_id", doc_id_.empty() ? json(nullptr) : json(doc_id_)},
              {"database", doc_db_.empty() ? json(nullptr) : json(doc_db_)},
              {"user", nullptr},
              {"source", d["source"]},
              {"target", d["target"]},
              {"continuous", r_.continuous},
              {"checkpoint_interval", r_.checkpoint_interval_ms},
              {"checkpointed_source_seq", committed_seq_},
              {"source_seq", through_seq_},
              {"through_seq", through_seq_},
              {"revisions_checked", stats_.missing_checked},
              {"missing_revisions_found", stats_.missing_found},
              {"docs_read", stats_.docs_read},
              {"docs_written", stats_.docs_written},
              {"doc_write_failures", stats_.doc_write_failures},
              {"bulk_get_docs", stats_.bulk_get_docs},
              {"bulk_get_attempts", stats_.bulk_get_attempts},
              {"changes_pending", pending_}};
}

json replication_job::info() const {
  json t = task();
  std::lock_guard<std::mutex> lock(mu_);
  json d = r_.describe();
  json history = json::array();
  for (auto it = history_events_.rbegin(); it != history_events_.rend(); ++it) history.push_back(*it);
  return json{{"id", r_.id()},
              {"pid", nullptr},
              {"source", d["source"]},
              {"target", d["target"]},
              {"database", doc_db_.empty() ? json(nullptr) : json(doc_db_)},
              {"user", nullptr},
              {"doc_id", doc_id_.empty() ? json(nullptr) : json(doc_id_)},
              {"info",
               {{"revisions_checked", t["revisions_checked"]},
                {"missing_revisions_found", t["missing_revisions_found"]},
                {"docs_read", t["docs_read"]},
                {"docs_written", t["docs_written"]},
                {"changes_pending", t["changes_pending"]},
                {"doc_write_failures", t["doc_write_failures"]},
                {"bulk_get_docs", t["bulk_get_docs"]},
                {"bulk_get_attempts", t["bulk_get_attempts"]},
                {"checkpointed_source_seq", t["checkpointed_source_seq"]},
                {"source_seq", t["source_seq"]},
                {"through_seq", t["through_seq"]},
                {"error", last_error_.empty() ? json(nullptr) : json(last_error_)}}},
              {"history", history},
              {"node", node_},
              {"start_time", started_on_s_}};
}

status replication_job::start(job_context& ctx) {
  (void)ctx;
  auto timeout = std::chrono::milliseconds(r_.connection_timeout_ms);
  int retries = static_cast<int>(r_.retries_per_request);
  source_ = std::make_unique<rep_client>(r_.source, timeout, retries, &stop_);
  target_ = std::make_unique<rep_client>(r_.target, timeout, retries, &stop_);
  const uint64_t small = r_.source.rules->max_row_bytes;  // a database's info, a checkpoint
  if (auto s = source_->get("", small); !s.ok()) return reply_error(s, r_.source);
  http_reply t = target_->get("", small);
  if (t.status == 404 && r_.create_target) {
    std::string q;
    for (auto& [k, v] : r_.create_target_params.items()) q += (q.empty() ? "?" : "&") + k + "=" + query_value(v);
    http_reply made = target_->put(q, "");
    if (!made.ok() && made.status != 412) return reply_error(made, r_.target);
    t = target_->get("", small);
  }
  if (!t.ok()) return reply_error(t, r_.target);
  json source_log, target_log;
  if (r_.use_checkpoints) {
    const std::string doc = "_local/" + r_.base_id;
    http_reply sl = source_->get(doc, small), tl = target_->get(doc, small);
    if (sl.ok()) source_log = parse_reply(sl.body);
    if (tl.ok()) target_log = parse_reply(tl.body);
    if (!sl.ok() && sl.status != 404) return reply_error(sl, r_.source);
    if (!tl.ok() && tl.status != 404) return reply_error(tl, r_.target);
  }
  rep_start from = compare_replication_logs(source_log, target_log);
  std::lock_guard<std::mutex> lock(mu_);
  source_rev_ = string_at(source_log, "_rev");
  target_rev_ = string_at(target_log, "_rev");
  start_seq_ = from.found ? from.seq : r_.since_seq.value_or(json(0));
  through_seq_ = committed_seq_ = start_seq_;
  history_ = from.history;
  if (!history_.empty()) stats_.raise_to(stats_of(history_[0]));  // counts carry on, as CouchDB's
  session_id_ = crypto::random_hex(16);
  start_time_ = rfc1123_date(clk_.now_s());
  last_checkpoint_ms_ = clk_.now_ms();
  workers_.clear();
  started_ = true;
  history_events_.push_back({{"timestamp", clk_.now_s()}, {"type", "started"}});
  log::info("replication " + r_.id() + " from " + r_.source.url() + " to " + r_.target.url() + " starts at " +
            start_seq_.dump() + (from.found ? " (checkpoint)" : ""));
  return {};
}

std::string replication_job::changes_query(bool longpoll) const {
  std::string q = "_changes?since=" + seq_param(through_seq_);
  if (longpoll)
    q +=
        "&feed=longpoll&limit=1&timeout=" + std::to_string(std::min(longpoll_timeout_ms, r_.connection_timeout_ms / 2));
  else
    q += "&feed=normal&limit=" + std::to_string(r_.worker_processes * r_.worker_batch_size);
  if (!r_.winning_revs_only) q += "&style=all_docs";
  if (r_.doc_ids) q += "&filter=_doc_ids";
  if (r_.selector) q += "&filter=_selector";
  if (!r_.filter.empty()) {
    q += "&filter=" + percent_encode(r_.filter);
    const json in_body = changes_body();
    for (auto& [k, v] : r_.query_params.items())
      if (!in_body.contains(k)) q += "&" + percent_encode(k) + "=" + query_value(v);
  }
  return q;
}

json replication_job::changes_body() const {
  if (r_.doc_ids) return json{{"doc_ids", *r_.doc_ids}};
  if (r_.selector) return json{{"selector", *r_.selector}};
  // filter=_doc_ids / _selector with their argument in query_params: in the body, as CouchDB takes it.
  for (const char* arg : {"doc_ids", "selector"})
    if (r_.filter == std::string("_") + arg && r_.query_params.contains(arg)) return json{{arg, r_.query_params[arg]}};
  return nullptr;
}

result<bool> replication_job::advance(job_context& ctx) {
  const json body = changes_body();
  const std::string body_text = body.is_null() ? std::string() : request_text(body);
  const size_t limit = static_cast<size_t>(r_.worker_processes * r_.worker_batch_size);
  const remote_rules& rules = *r_.source.rules;
  // The page: rows parsed one at a time as they arrive, until `limit` rows or the response
  // limit's worth of them (a source that does not honour `limit` is read no further).
  std::vector<json> rows;
  uint64_t page_bytes = 0;
  bool page_full = false;
  bool bad_row = false;
  changes_rows feed(rules.max_row_bytes, [&](std::string_view text) {
    json row = parse_reply(std::string(text));
    page_bytes += text.size();
    if (!row.is_object()) return !(bad_row = true);  // a change that cannot be read is not passed over
    rows.push_back(std::move(row));
    page_full = rows.size() >= limit || page_bytes >= rules.max_response_bytes;
    return !page_full;
  });
  http_reply got = source_->stream(
      // Rows stop at the response limit: twice that bounds a feed padded with whitespace.
      changes_query(), body.is_null() ? nullptr : &body_text, 2 * rules.max_response_bytes,
      "twice [chttpd] max_http_request_size",
      [&] {
        rows.clear();
        page_bytes = 0;
        page_full = bad_row = false;
        feed.reset();
      },
      [&](std::string_view bytes) { return feed.feed(bytes); });
  if (!feed.error()) return status{errc::internal, feed.error().reason};
  if (!got.ok()) return reply_error(got, r_.source);
  if (bad_row) return status{errc::internal, "a row of the source's _changes is not JSON (or nests too deeply)"};
  json last_seq;
  uint64_t pending = 0;
  if (page_full) {  // read up to here: the next read goes on from the last row
    last_seq = member(rows.back(), "seq");
    pending = 1;
  } else {
    json rest = feed.whole() ? parse_reply(feed.rest()) : json();
    if (!rest.is_object() || !rest.contains("results") || !rest["results"].is_array())
      return status{errc::internal, "the source's _changes answered something else than a feed"};
    last_seq = member(rest, "last_seq");
    const json& p = member(rest, "pending");
    pending = p.is_number_unsigned() ? p.get<uint64_t>() : 0;
  }
  // Batches of worker_batch_size rows, at most as many at once as the job has workers.
  const size_t per_batch = static_cast<size_t>(r_.worker_batch_size);
  const size_t n = (rows.size() + per_batch - 1) / per_batch;
  std::vector<rep_stats> stats(n);
  std::vector<status> errors(n);
  run_batches(n, [&](size_t i, worker& w) {
    json b = json::array();
    for (size_t k = i * per_batch; k < rows.size() && k < (i + 1) * per_batch; ++k) b.push_back(std::move(rows[k]));
    errors[i] = replicate_batch(w, b, stats[i]);
  });
  for (const status& e : errors)
    if (!e) return e;
  if (ctx.cancelled() || stop_) return status{errc::internal, "cancelled"};
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const rep_stats& st : stats) stats_ += st;
    // Also when no row came: a filter may have passed over changes (the next read starts after them).
    if (!last_seq.is_null() && (!rows.empty() || pending == 0)) through_seq_ = last_seq;
    pending_ = pending;
  }
  ctx.progress(task());
  return !page_full && rows.size() < limit && pending == 0;
}

void replication_job::run_batches(size_t n, const std::function<void(size_t, worker&)>& batch) {
  if (n == 0) return;
  // Workers (each a pair of connections) as the replication asks, but no more than can run at once.
  const size_t helpers = batch_threads_ ? batch_threads_->threads() : 0;
  const size_t width = std::min<size_t>({static_cast<size_t>(r_.worker_processes), helpers + 1, n});
  while (workers_.size() < width) workers_.push_back(std::make_unique<worker>(r_, &stop_));
  std::atomic<size_t> next{0};
  auto drain = [&](worker& w) {
    for (size_t i; (i = next++) < n;) batch(i, w);
  };
  std::mutex mu;
  std::condition_variable cv;
  size_t running = 0;
  for (size_t k = 1; k < width; ++k) {
    std::lock_guard<std::mutex> lock(mu);
    const bool queued = batch_threads_->submit([&, k] {
      drain(*workers_[k]);
      std::lock_guard<std::mutex> done(mu);
      if (--running == 0) cv.notify_all();
    });
    if (queued) ++running;
  }
  drain(*workers_[0]);
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return running == 0; });
  // Every batch ran (and its error was kept) before the page's last seq may become the checkpoint's.
  SETTEE_CHECK(next.load() >= n);
}

void replication_job::release_connections() {
  workers_.clear();
  if (source_) source_->abort();
  if (target_) target_->abort();
}

status replication_job::replicate_batch(worker& w, const json& rows, rep_stats& stats) {
  if (rows.empty()) return {};
  auto wanted = missing_revisions(w, rows, stats);
  if (!wanted) return wanted.error();
  if (wanted->empty()) return {};
  auto docs = fetch_revisions(w, *wanted, stats);
  if (!docs) return docs.error();
  stats.docs_read += docs->size();
  return write_revisions(w, std::move(*docs), stats);
}

result<json> replication_job::missing_revisions(worker& w, const json& rows, rep_stats& stats) {
  json diff = json::object();
  for (const json& row : rows) {
    if (!row.contains("id") || !row["id"].is_string() || !row.contains("changes")) continue;
    json& revs = diff[row["id"].get<std::string>()];
    if (revs.is_null()) revs = json::array();
    for (const json& c : row["changes"])
      if (c.contains("rev")) revs.push_back(c["rev"]), ++stats.missing_checked;
  }
  auto missing = w.target.post_json("_revs_diff", diff);
  if (!missing) return missing.error();
  json wanted = json::array();
  for (auto& [id, m] : missing->items()) {
    // Only revisions that were asked about: a target may answer anything.
    auto asked = diff.find(id);
    if (asked == diff.end() || !m.is_object() || !m.contains("missing") || !m["missing"].is_array()) continue;
    for (const json& rev : m["missing"]) {
      if (!rev.is_string() || std::find(asked->begin(), asked->end(), rev) == asked->end()) continue;
      json e = {{"id", id}, {"rev", rev}};
      if (m.contains("possible_ancestors") && m["possible_ancestors"].is_array())
        e["atts_since"] = m["possible_ancestors"];
      wanted.push_back(std::move(e));
      ++stats.missing_found;
    }
  }
  return wanted;
}

result<json> replication_job::bulk_get(worker& w, const json& wanted, bool attachments, rep_stats& stats,
                                       int halvings) {
  ++stats.bulk_get_attempts;
  http_reply got =
      w.source.post(std::string("_bulk_get?revs=true&latest=true") + (attachments ? "&attachments=true" : ""),
                    request_text(json{{"docs", wanted}}));
  if (got.local_error.code == errc::too_large && wanted.size() > 1 && halvings < 4) {
    // Too large an answer for memory: ask for each half (one revision alone may still be refused).
    auto [a, b] = halves(wanted);
    auto first = bulk_get(w, a, attachments, stats, halvings + 1);
    if (!first || first->is_null()) return first;
    auto second = bulk_get(w, b, attachments, stats, halvings + 1);
    if (!second || second->is_null()) return second;
    for (json& d : *second) first->push_back(std::move(d));
    return first;
  }
  if (!got.ok()) {
    if (!got.local_error || (got.status != 400 && got.status != 404 && got.status != 405 && got.status != 501))
      return reply_error(got, r_.source);
    no_bulk_get_ = true;  // a source without _bulk_get: each document's revisions with open_revs
    return json();
  }
  json answer = parse_reply(got.body);
  if (!answer.is_object() || !answer.contains("results"))
    return status{errc::internal, "the source's _bulk_get answered something else than results"};
  json docs = json::array();
  for (const json& res : answer["results"])
    for (const json& d : member(res, "docs"))
      if (d.is_object() && d.contains("ok") && d["ok"].is_object()) docs.push_back(d["ok"]);
  stats.bulk_get_docs += docs.size();
  return docs;
}

result<json> replication_job::fetch_revisions(worker& w, const json& wanted, rep_stats& stats) {
  std::map<std::string, json> since;  // id -> the target's possible ancestors
  for (const json& e : wanted)
    if (e.contains("atts_since")) since[e["id"].get<std::string>()] = e["atts_since"];
  auto since_of = [&](const std::string& id) { return since.count(id) ? since[id] : json(); };
  json docs = json::array();
  if (r_.use_bulk_get && !no_bulk_get_) {
    auto stubs = bulk_get(w, wanted, false, stats);
    if (!stubs) return stubs.error();
    if (!stubs->is_null()) {
      json inline_wanted = json::array();
      uint64_t inline_bytes = 0;
      for (json& d : *stubs) {
        const std::string id = string_at(d, "_id"), rev = string_at(d, "_rev");
        attachments_needed need = attachments_to_send(d, since_of(id));
        if (need.count == 0 || id.empty() || rev.empty()) {
          docs.push_back(std::move(d));
        } else if (need.bytes <= inline_attachment_bytes && inline_bytes + need.bytes <= batch_inline_bytes) {
          inline_bytes += need.bytes;
          json e = {{"id", id}, {"rev", rev}};
          if (!since_of(id).is_null()) e["atts_since"] = since_of(id);
          inline_wanted.push_back(std::move(e));
        } else if (auto st = copy_multipart(w, id, json::array({rev}), since_of(id), docs, stats); !st) {
          return st;
        }
      }
      if (inline_wanted.empty()) return docs;
      auto full = bulk_get(w, inline_wanted, true, stats);
      if (!full) return full.error();
      for (json& d : *full) docs.push_back(std::move(d));
      return docs;
    }
  }
  std::map<std::string, json> by_id;  // id -> revs
  for (const json& e : wanted) {
    json& revs = by_id[e["id"].get<std::string>()];
    if (revs.is_null()) revs = json::array();
    revs.push_back(e["rev"]);
  }
  for (auto& [id, revs] : by_id)
    if (auto st = copy_multipart(w, id, revs, since_of(id), docs, stats); !st) return st;
  return docs;
}

status replication_job::copy_multipart(worker& w, const std::string& id, const json& revs, const json& atts_since,
                                       json& docs, rep_stats& stats) {
  std::string q =
      percent_encode(id) + "?revs=true&latest=true&attachments=true&open_revs=" + percent_encode(request_text(revs));
  if (!atts_since.is_null()) q += "&atts_since=" + percent_encode(request_text(atts_since));
  const uint64_t max_spool = r_.source.rules->max_spool_bytes * std::max<size_t>(revs.size(), 1);
  spooled_reply got = w.source.get_spooled(q, "multipart/mixed", spool_dir_, max_spool);
  if (!got.head.ok()) return reply_error(got.head, r_.source);
  const body_spool& spool = *got.spool;
  multipart::source body{spool.size(),
                         [&spool](uint64_t at, size_t n, std::string& out) { return spool.read(at, n, out); }};
  auto read_json = [&](uint64_t at, uint64_t n) -> json {
    std::string text;
    if (n > max_json_part_bytes || !body.read(at, static_cast<size_t>(n), text)) return json();
    return parse_reply(text);
  };
  if (multipart::media_type_of(got.content_type) != "multipart/mixed") {  // JSON: [{"ok":doc}, ...]
    for (const json& d : read_json(0, spool.size()))
      if (d.is_object() && d.contains("ok") && d["ok"].is_object()) docs.push_back(d["ok"]);
    return {};
  }
  auto parts = multipart::locate(body, multipart::boundary_of(got.content_type));
  if (!parts) return status{errc::internal, "the source's answer for " + id + ": " + parts.error().reason};
  for (const multipart::located& p : *parts) {
    const std::string type = p.headers.header("content-type");
    const std::string media = multipart::media_type_of(type);
    if (media == "application/json") {  // a revision without attachments to send, or a missing one
      json d = read_json(p.offset, p.length);
      if (d.is_object() && d.contains("_id") && d.contains("_rev")) docs.push_back(std::move(d));
      continue;
    }
    if (media != "multipart/related") continue;
    ++stats.docs_read;
    http_reply put = w.target.put_spooled(percent_encode(id) + "?new_edits=false", type, spool, p.offset, p.length);
    if (put.ok()) {
      ++stats.docs_written;
      ++metrics::node().replication_docs_written;
    } else if (put.status >= 400 && put.status < 500 && put.status != 401 && put.status != 404) {
      ++stats.doc_write_failures;  // as one document refused in _bulk_docs
      ++metrics::node().replication_doc_write_failures;
      log::warning("replication " + r_.id() + ": the target refused " + id + ": " + r_.target.redact(put.body));
    } else {
      return reply_error(put, r_.target);
    }
  }
  return {};
}

status replication_job::write_revisions(worker& w, json docs, rep_stats& stats) {
  std::vector<json> pieces = {std::move(docs)};
  while (!pieces.empty()) {
    json piece = std::move(pieces.back());
    pieces.pop_back();
    if (piece.empty()) continue;
    http_reply put = w.target.post("_bulk_docs", request_text(json{{"docs", piece}, {"new_edits", false}}));
    // 413, or 400 for one document of the batch the target cannot take (CouchDB stops the whole
    // replication there): halved until the document alone is refused and counted as a failure.
    const bool refused = put.status == 413 || put.status == 400;
    if (refused && piece.size() > 1) {
      auto [a, b] = halves(std::move(piece));
      pieces.push_back(std::move(b));
      pieces.push_back(std::move(a));
      continue;
    }
    if (refused) {
      ++stats.doc_write_failures;
      ++metrics::node().replication_doc_write_failures;
      log::warning("replication " + r_.id() + ": the target refused " + string_at(piece[0], "_id") + ": " +
                   r_.target.redact(put.body));
      continue;
    }
    if (!put.ok()) return reply_error(put, r_.target);
    json answer = parse_reply(put.body);
    uint64_t failures = 0;
    if (answer.is_array())
      for (const json& a : answer)
        if (a.is_object() && a.contains("error")) {
          ++failures;
          log::warning("replication " + r_.id() + ": the target refused " + string_at(a, "id") + ": " +
                       r_.target.redact(string_at(a, "error") + " " + string_at(a, "reason")));
        }
    stats.doc_write_failures += failures;
    metrics::node().replication_doc_write_failures += failures;
    stats.docs_written += piece.size() - std::min<uint64_t>(failures, piece.size());
    metrics::node().replication_docs_written += piece.size() - std::min<uint64_t>(failures, piece.size());
  }
  return {};
}

status replication_job::checkpoint() {
  std::unique_lock<std::mutex> lock(mu_);
  if (through_seq_ == committed_seq_) return {};
  if (!r_.use_checkpoints) {
    committed_seq_ = through_seq_;
    log_ = json{{"use_checkpoints", false}};
    return {};
  }
  json log =
      checkpoint_log(session_id_, start_seq_, through_seq_, start_time_, rfc1123_date(clk_.now_s()), stats_, history_);
  const json seq = through_seq_;
  std::string revs[2] = {source_rev_, target_rev_};
  lock.unlock();
  const std::string doc = "_local/" + r_.base_id;
  rep_client* sides[2] = {source_.get(), target_.get()};
  for (int i = 0; i < 2; ++i) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      json body = log;
      body["_id"] = doc;
      if (!revs[i].empty()) body["_rev"] = revs[i];
      http_reply put = sides[i]->put(doc, request_text(body));
      if (put.status == 409 && attempt == 0) {  // someone else wrote it: take its revision
        json now = parse_reply(sides[i]->get(doc, r_.source.rules->max_row_bytes).body);
        revs[i] = string_at(now, "_rev");
        continue;
      }
      if (!put.ok()) {
        ++metrics::node().replication_checkpoint_failures;
        return reply_error(put, sides[i]->endpoint());
      }
      json answer = parse_reply(put.body);
      revs[i] = string_at(answer, "rev");
      break;
    }
  }
  lock.lock();
  source_rev_ = revs[0];
  target_rev_ = revs[1];
  committed_seq_ = seq;
  log_ = log;
  last_checkpoint_ms_ = clk_.now_ms();
  ++metrics::node().replication_checkpoints;
  return {};
}

job_next replication_job::step(job_context& ctx) {
  auto give_up_or_retry = [&](const status& st, bool final) {
    std::lock_guard<std::mutex> lock(mu_);
    ++metrics::node().replication_failures;
    last_error_ = st.reason;
    crashing_ = true;
    ++errors_in_a_row_;
    history_events_.push_back({{"timestamp", clk_.now_s()}, {"type", "crashed"}, {"reason", st.reason}});
    if (history_events_.size() > 20) history_events_.erase(history_events_.begin() + 1);
    started_ = false;  // the next attempt starts again from the checkpoints
    const bool one_shot = !r_.continuous && doc_id_.empty();
    const bool refused = st.code == errc::unauthorized;  // a retry would only add a failed login
    if (final || (one_shot && (refused || ctx.attempts() >= max_one_shot_retries))) {
      end_status_ = st;
      log::warning("replication " + r_.id() + " from " + r_.source.url() + " to " + r_.target.url() +
                   " failed: " + st.reason);
      return job_next::fail(st.reason);
    }
    // The retry's own line is the jobs framework's ("job ... retries (attempt N): <reason>").
    if (refused) return job_next::retry(st.reason, refused_backoff(errors_in_a_row_));
    return job_next::retry(st.reason);
  };
  if (!started_) {
    // A document's replication retries whatever failed (it stands until edited, as CouchDB's).
    if (auto st = start(ctx); !st) return give_up_or_retry(st, !r_.continuous && doc_id_.empty());
  }
  auto caught_up = advance(ctx);
  if (!caught_up && (stop_ || ctx.cancelled())) return job_next::more();  // the runner ends it now
  if (!caught_up) return give_up_or_retry(caught_up.error(), false);
  {
    std::lock_guard<std::mutex> lock(mu_);
    crashing_ = false;
    errors_in_a_row_ = 0;
  }
  bool due = clk_.now_ms() - last_checkpoint_ms_ >= r_.checkpoint_interval_ms;
  if (*caught_up && !r_.continuous) {
    if (auto st = checkpoint(); !st) return give_up_or_retry(st, false);
    return job_next::done();
  }
  if (due)
    if (auto st = checkpoint(); !st) return give_up_or_retry(st, false);
  if (!*caught_up) return job_next::more();
  if (!watch_) return job_next::pause(caught_up_poll);
  release_connections();  // a waiting replication holds no connection but its watch
  watch_(changes_query(true), changes_body());
  return job_next::pause(watched_fallback);
}

void replication_job::ended(job_next::kind how, const std::string& reason) {
  if (how == job_next::kind::cancelled && started_) (void)checkpoint();  // keep what was done
  end_callback on_end;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (how == job_next::kind::cancelled) end_status_ = status{errc::internal, "cancelled"};
    if (how == job_next::kind::failed && end_status_) end_status_ = status{errc::internal, reason};
    ended_ = true;
    end_how_ = how;
    on_end = on_end_;
    ended_cv_.notify_all();
  }
  if (on_end) on_end(how, wait());
}

void replication_job::abandon(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  end_status_ = status{errc::unavailable, reason};
  ended_ = true;
  end_how_ = job_next::kind::cancelled;
  ended_cv_.notify_all();
}

result<json> replication_job::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  ended_cv_.wait(lock, [&] { return ended_; });
  if (!end_status_) return end_status_;
  if (log_.is_null()) return json{{"ok", true}, {"no_changes", true}};
  json out = {{"ok", true}};
  for (auto& [k, v] : log_.items()) out[k] = v;
  return out;
}

}  // namespace settee
