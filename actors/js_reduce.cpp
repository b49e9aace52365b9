#include "actors/js_reduce.hpp"

#include "actors/view_index.hpp"
#include "node/log.hpp"

namespace settee {

reduce_limit reduce_limit_of(const std::string& setting) {
  if (setting == "false") return reduce_limit::off;
  if (setting == "log") return reduce_limit::log;
  return reduce_limit::on;
}

namespace {

constexpr size_t overflow_floor = 4096;  // couchjs' views.js: answers up to this size always pass

// One call of a round: whose group, its argument array (JSON), how many rows or values it takes.
struct call {
  size_t group;
  std::string args;
  size_t inputs;
};

// The calls reducing `items` (JSON texts, each one row's [[key, id], value] split into `keys` and
// `values`, or one value to re-reduce) of group `g` in chunks.
void chunk_calls(size_t g, const std::vector<std::string>& keys, const std::vector<std::string>& values,
                 const js_reduce_options& o, std::vector<call>& out) {
  const bool rereduce = keys.empty();
  for (size_t from = 0; from < values.size();) {
    std::string k = "[", v = "[";
    size_t to = from, bytes = 0;
    for (; to < values.size() && (to == from || (to - from < o.chunk_rows && bytes < o.chunk_bytes)); ++to) {
      if (!rereduce) {
        if (to != from) k += ',';
        k += keys[to];
      }
      if (to != from) v += ',';
      v += values[to];
      bytes += values[to].size() + (rereduce ? 0 : keys[to].size());
    }
    out.push_back(
        {g, "[" + (rereduce ? std::string("null") : k + "]") + "," + v + "]," + (rereduce ? "true" : "false") + "]",
         to - from});
    from = to;
  }
}

// Runs `calls` in as few exchanges as the exchange's size allows: one reply per call.
result<std::vector<js_reply>> run_calls(js_pool& js, const design_views& dv, const json& path,
                                        const std::vector<call>& calls, const js_reduce_options& o) {
  std::vector<js_reply> out;
  out.reserve(calls.size());
  for (size_t from = 0; from < calls.size();) {
    std::vector<std::string> batch;
    size_t bytes = 0;
    for (size_t i = from; i < calls.size() && (batch.empty() || bytes < o.exchange_bytes); ++i) {
      batch.push_back(calls[i].args);
      bytes += calls[i].args.size();
    }
    auto replies = js.run_each(dv.worker_key, dv.ddoc_json, path, batch);
    if (!replies) return replies.error();
    for (auto& r : *replies) out.push_back(std::move(r));
    from += batch.size();
  }
  return out;
}

// Runs the first round's `calls` for `groups` groups, then rereduce rounds until each group has
// one value.
result<std::vector<json>> rounds(js_pool& js, const design_views& dv, const std::string& view, std::vector<call> calls,
                                 size_t groups, const js_reduce_options& opts) {
  const json path = json::array({"views", view, "reduce"});
  const std::string where = dv.db_name + "/" + dv.ddoc_id + " view " + view;
  std::vector<json> out(groups);
  std::vector<bool> overflowed(groups, false);
  while (!calls.empty()) {
    auto replies = run_calls(js, dv, path, calls, opts);
    if (!replies) return replies.error();
    std::vector<std::vector<std::string>> partial(groups);
    for (size_t i = 0; i < calls.size(); ++i) {
      const call& c = calls[i];
      js_reply& r = (*replies)[i];
      for (const auto& line : r.log) log::info("reduce of " + where + " logged: " + line);
      if (r.what == js_reply::kind::fault) {
        if (r.name == "timeout") return status{errc::timeout, "the reduce function of " + where + ": " + r.reason};
        return status{errc::internal, "the reduce function of " + where + " failed: " + r.name + ": " + r.reason};
      }
      if (overflowed[c.group]) continue;
      std::string value = "null";
      if (r.ok()) {
        value = r.value.dump();
      } else {  // couchjs' handleViewError: logged, the reduction is null
        log::warning("the reduce function of " + where + " raised " +
                     (r.what == js_reply::kind::thrown ? r.value.dump() : r.name + ": " + r.reason));
      }
      if (opts.limit != reduce_limit::off && c.inputs > 1 && value.size() > overflow_floor &&
          value.size() * 2 > c.args.size()) {
        const std::string reason =
            "Reduce output must shrink more rapidly: input size: " + std::to_string(c.args.size()) +
            " output size: " + std::to_string(value.size());
        log::error("the reduce function of " + where + ": " + reason);
        if (opts.limit == reduce_limit::on) {
          overflowed[c.group] = true;
          out[c.group] = json{{"reduce_overflow_error", reason}};
          continue;
        }
      }
      partial[c.group].push_back(std::move(value));
    }
    // Groups left with one value are reduced; the others' values are re-reduced in the next round.
    calls.clear();
    for (size_t g = 0; g < groups; ++g) {
      if (overflowed[g] || partial[g].empty()) continue;
      if (partial[g].size() == 1) {
        out[g] = json::parse(partial[g][0], nullptr, false);
        continue;
      }
      chunk_calls(g, {}, partial[g], opts, calls);
    }
  }
  return out;
}

}  // namespace

result<std::vector<json>> js_reduce_groups(js_pool& js, const design_views& dv, const std::string& view,
                                           const std::vector<std::vector<const view_row*>>& groups,
                                           const js_reduce_options& opts) {
  std::vector<call> calls;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<std::string> keys, values;
    for (const view_row* row : groups[g]) {
      keys.push_back("[" + row->key_json + "," + quote(row->id) + "]");
      values.push_back(row->value_json);
    }
    chunk_calls(g, keys, values, opts, calls);
  }
  return rounds(js, dv, view, std::move(calls), groups.size(), opts);
}

result<std::vector<json>> js_rereduce_groups(js_pool& js, const design_views& dv, const std::string& view,
                                             const std::vector<std::vector<std::string>>& values,
                                             const js_reduce_options& opts) {
  std::vector<call> calls;
  std::vector<json> out(values.size());
  std::vector<size_t> asked;  // the groups with more than one value, in order
  for (size_t g = 0; g < values.size(); ++g) {
    if (values[g].size() == 1) {
      out[g] = json::parse(values[g][0], nullptr, false);
      continue;
    }
    chunk_calls(asked.size(), {}, values[g], opts, calls);
    asked.push_back(g);
  }
  auto reduced = rounds(js, dv, view, std::move(calls), asked.size(), opts);
  if (!reduced) return reduced.error();
  for (size_t i = 0; i < asked.size(); ++i) out[asked[i]] = std::move((*reduced)[i]);
  return out;
}

}  // namespace settee
