#include "node/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace settee::metrics {

histogram::histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  const auto micros = static_cast<uint64_t>(std::llround(std::max(0.0, v) * 1e6));
  sum_micros_.fetch_add(micros, std::memory_order_relaxed);
  for (uint64_t m = min_micros_.load(std::memory_order_relaxed);
       micros < m && !min_micros_.compare_exchange_weak(m, micros, std::memory_order_relaxed);) {
  }
  for (uint64_t m = max_micros_.load(std::memory_order_relaxed);
       micros > m && !max_micros_.compare_exchange_weak(m, micros, std::memory_order_relaxed);) {
  }
}

double histogram::reading::quantile(double q) const {
  if (count == 0) return 0;
  const double rank = q * static_cast<double>(count);
  uint64_t below = 0;
  double lower = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    const uint64_t upto = i < bounds.size() ? cumulative[i] : count;
    const double upper = i < bounds.size() ? bounds[i] : max;
    if (static_cast<double>(upto) >= rank && upto > below) {
      double at = lower + (upper - lower) * (rank - static_cast<double>(below)) / static_cast<double>(upto - below);
      return std::clamp(at, min, max);
    }
    below = upto;
    lower = i < bounds.size() ? bounds[i] : lower;
  }
  return max;
}

histogram::reading histogram::read() const {
  reading r;
  r.bounds = bounds_;
  uint64_t total = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    r.cumulative.push_back(total);
  }
  r.count = count_.load(std::memory_order_relaxed);
  r.sum = static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6;
  if (r.count) {
    r.min = static_cast<double>(min_micros_.load(std::memory_order_relaxed)) / 1e6;
    r.max = static_cast<double>(max_micros_.load(std::memory_order_relaxed)) / 1e6;
  }
  return r;
}

void labelled_counter::add(const std::string& label, uint64_t by) {
  std::lock_guard<std::mutex> lock(mu_);
  values_[label] += by;
}

std::map<std::string, uint64_t> labelled_counter::read() const {
  std::lock_guard<std::mutex> lock(mu_);
  return values_;
}

void labelled_histogram::observe(const std::string& label, double v) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& h = values_[label];
  if (!h) h = std::make_unique<histogram>(bounds_);
  h->observe(v);
}

std::map<std::string, histogram::reading> labelled_histogram::read() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, histogram::reading> out;
  for (auto& [label, h] : values_) out[label] = h->read();
  return out;
}

void replication_lag::update(const key& k, uint64_t source_seq, std::optional<uint64_t> pushed_seq) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& v = values_[k];
  v.first = source_seq;
  if (pushed_seq) v.second = *pushed_seq;
}

void replication_lag::retain(const std::string& db, const std::set<key>& keep) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = values_.lower_bound({db, "", ""}); it != values_.end() && std::get<0>(it->first) == db;) {
    it = keep.count(it->first) ? std::next(it) : values_.erase(it);
  }
}

std::map<replication_lag::key, uint64_t> replication_lag::read() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<key, uint64_t> out;
  for (auto& [k, v] : values_) out[k] = v.first > v.second ? v.first - v.second : 0;
  return out;
}

void fixed_counter::add(const std::string& label) {
  size_t i = 0;
  while (i + 1 < labels_.size() && labels_[i] != label) ++i;  // the last label is `other`
  counts_[i].fetch_add(1, std::memory_order_relaxed);
}

void fixed_counter::add_status(int code) {
  counts_[code >= 0 && code < 1000 ? code : 0].fetch_add(1, std::memory_order_relaxed);
}

std::map<std::string, uint64_t> fixed_counter::read() const {
  // Every label is present from the start, at zero (a rate over a series that appears late loses
  // its first increase); of the status codes, those a CouchDB client meets.
  static const std::set<size_t> usual{200, 201, 202, 204, 206, 301, 302, 304, 400, 401, 403, 404,
                                      405, 406, 409, 412, 413, 415, 416, 417, 500, 501, 503};
  std::map<std::string, uint64_t> out;
  const size_t n = labels_.empty() ? 1000 : labels_.size();
  for (size_t i = 0; i < n; ++i) {
    uint64_t v = counts_[i].load(std::memory_order_relaxed);
    if (!labels_.empty())
      out[labels_[i]] = v;
    else if (v || usual.count(i))
      out[std::to_string(i)] = v;
  }
  return out;
}

registry& node() {
  static registry r;
  return r;
}

namespace {

// The shortest of %.15g/%.17g that reads back as `v` (0.0005, not 0.00050000000000000001).
std::string number(double v) {
  if (std::isinf(v)) return "+Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// A label value escaped as the text format wants (backslash, quote, newline).
std::string escaped(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out;
}

std::string labels_text(const std::map<std::string, std::string>& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (auto& [k, v] : labels) out += (out.size() > 1 ? "," : "") + k + "=\"" + escaped(v) + "\"";
  return out + "}";
}

void head(std::string& out, const std::string& name, const std::string& help, const std::string& type) {
  out += "# HELP settee_" + name + " " + help + "\n# TYPE settee_" + name + " " + type + "\n";
}

// `zeros`: label values present at 0 until they count anything.
template <class Counter>
void counter(std::string& out, const std::string& name, const std::string& help, const std::string& label,
             const Counter& c, const std::set<std::string>& zeros = {}) {
  head(out, name, help, "counter");
  auto values = c.read();
  for (const std::string& z : zeros) values.emplace(z, 0);
  for (auto& [value, n] : values) out += "settee_" + name + labels_text({{label, value}}) + " " + number(n) + "\n";
}

// One histogram's series; `labels` (e.g. `peer="n2",`) go before `le`.
void hist_series(std::string& out, const std::string& name, const histogram::reading& r, const std::string& labels) {
  for (size_t i = 0; i < r.bounds.size(); ++i)
    out += "settee_" + name + "_bucket{" + labels + "le=\"" + number(r.bounds[i]) + "\"} " + number(r.cumulative[i]) +
           "\n";
  out += "settee_" + name + "_bucket{" + labels + "le=\"+Inf\"} " + number(r.count) + "\n";
  std::string plain = labels.empty() ? "" : "{" + labels.substr(0, labels.size() - 1) + "}";
  out += "settee_" + name + "_sum" + plain + " " + number(r.sum) + "\n";
  out += "settee_" + name + "_count" + plain + " " + number(r.count) + "\n";
}

void hist(std::string& out, const std::string& name, const std::string& help, const histogram& h) {
  head(out, name, help, "histogram");
  hist_series(out, name, h.read(), "");
}

void hist(std::string& out, const std::string& name, const std::string& help, const std::string& label,
          const labelled_histogram& h, const std::vector<double>& bounds, const std::set<std::string>& zeros) {
  head(out, name, help, "histogram");
  auto values = h.read();
  for (const std::string& z : zeros) {
    histogram::reading empty;
    empty.bounds = bounds;
    empty.cumulative.assign(bounds.size(), 0);
    values.emplace(z, std::move(empty));
  }
  for (auto& [value, r] : values) hist_series(out, name, r, label + "=\"" + escaped(value) + "\",");
}

}  // namespace

std::string prometheus_text(const registry& r, const std::vector<sample>& extra, const std::set<std::string>& peers) {
  std::string out;
  counter(out, "http_requests_total", "HTTP requests answered, by method.", "method", r.requests_by_method);
  counter(out, "http_responses_total", "HTTP responses, by status code.", "status", r.requests_by_status);
  hist(out, "http_request_duration_seconds", "Time to answer a request (a feed: until it starts streaming).",
       r.request_seconds);
  hist(out, "commit_duration_seconds", "Shard group commits: the whole transaction.", r.commit_seconds);
  hist(out, "commit_ops", "Operations gathered into one shard commit.", r.commit_ops);
  hist(out, "fsync_duration_seconds", "Shard commits: LMDB's commit, which writes and fsyncs.", r.fsync_seconds);
  counter(out, "rpc_calls_total", "Calls to other nodes, by peer.", "peer", r.rpc_calls, peers);
  counter(out, "rpc_errors_total", "Calls to other nodes that failed (transport, timeout), by peer.", "peer",
          r.rpc_errors, peers);
  hist(out, "rpc_duration_seconds", "Time until a peer answered a call, by peer.", "peer", r.rpc_seconds,
       r.rpc_seconds.bounds(), peers);
  for (const sample& s : extra) {
    const std::string name = (s.prefixed ? "settee_" : "") + s.name;
    out += "# HELP " + name + " " + s.help + "\n# TYPE " + name + " " + s.type + "\n";
    for (auto& [labels, v] : s.values) out += name + labels_text(labels) + " " + number(v) + "\n";
  }
  return out;
}

}  // namespace settee::metrics
