#include "actors/doc_render.hpp"

#include <algorithm>
#include <functional>

#include "node/json.hpp"
#include "storage/attachments.hpp"

namespace settee {

std::string render_doc(std::string_view id, const std::string& rev, bool deleted, std::string_view body,
                       const std::string& extra) {
  std::string out;
  out.reserve(body.size() + id.size() + rev.size() + extra.size() + 32);
  out += "{\"_id\":";
  out += quote(id);
  out += ",\"_rev\":\"";
  out += rev;
  out += '"';
  if (body.size() > 2) {  // "{...}": splice the stored fields in
    out += ',';
    out.append(body.data() + 1, body.size() - 2);
  }
  if (deleted) out += ",\"_deleted\":true";
  out += extra;
  out += '}';
  return out;
}

uint64_t inline_after(const doc_info& d, int index, const render_options& opts) {
  if (opts.atts_since.empty()) return 0;
  for (int i : d.tree.path_to(index)) {
    rev_id r = d.tree.rev(i);
    if (std::find(opts.atts_since.begin(), opts.atts_since.end(), r) != opts.atts_since.end()) return r.pos;
  }
  return 0;
}

namespace {

std::string rev_list(const doc_info& d, bool deleted_leaves) {
  std::string out;
  int winner = d.tree.winner();
  for (int leaf : d.tree.sorted_leaves()) {
    if (leaf == winner || d.tree.nodes()[leaf].deleted != deleted_leaves) continue;
    out += out.empty() ? "[" : ",";
    out += quote(d.tree.rev(leaf).str());
  }
  return out.empty() ? out : out + "]";
}

// Where a revision's stored body comes from: a snapshot, or a document read as data.
using body_lookup = std::function<bool(const rev_id&, std::string&)>;

std::optional<std::string> render_with(const doc_info& d, int index, const body_lookup& bodies,
                                       const render_options& opts) {
  rev_id rev = d.tree.rev(index);
  std::string body;
  if (!bodies(rev, body)) return std::nullopt;
  if (opts.attachments) {
    attachments::inline_request inl{inline_after(d, index, opts), opts.blobs, opts.follows};
    attachments::show(body, opts.att_encoding_info, &inl);
  } else {
    attachments::show(body, opts.att_encoding_info);  // stored entries become stubs
  }
  std::string extra;
  if (opts.revs) {
    extra += ",\"_revisions\":{\"start\":" + std::to_string(rev.pos) + ",\"ids\":[";
    bool first = true;
    for (int i : d.tree.path_to(index)) {
      extra += first ? "" : ",";
      extra += quote(d.tree.nodes()[i].hash);
      first = false;
    }
    extra += "]}";
  }
  if (opts.revs_info) {
    extra += ",\"_revs_info\":[";
    bool first = true;
    std::string unused;
    for (int i : d.tree.path_to(index)) {
      const auto& n = d.tree.nodes()[i];
      const char* st = n.deleted ? "deleted" : bodies(d.tree.rev(i), unused) ? "available" : "missing";
      extra += std::string(first ? "" : ",") + "{\"rev\":" + quote(d.tree.rev(i).str()) + ",\"status\":\"" + st + "\"}";
      first = false;
    }
    extra += "]";
  }
  if (opts.conflicts) {
    std::string c = rev_list(d, false);
    if (!c.empty()) extra += ",\"_conflicts\":" + c;
  }
  if (opts.deleted_conflicts) {
    std::string c = rev_list(d, true);
    if (!c.empty()) extra += ",\"_deleted_conflicts\":" + c;
  }
  if (opts.local_seq) extra += ",\"_local_seq\":" + std::to_string(d.seq);
  return render_doc(d.id, rev.str(), d.tree.nodes()[index].deleted, body, extra);
}

}  // namespace

std::vector<std::string> inline_keys(const doc_copy& d, const std::vector<int>& indices, const render_options& opts) {
  std::vector<std::string> keys;
  if (!opts.attachments) return keys;
  for (int index : indices) {
    const std::string* body = d.body(d.info.tree.rev(index));
    if (!body) continue;
    for (auto& a : attachments::shown_after(*body, inline_after(d.info, index, opts))) {
      if (std::find(keys.begin(), keys.end(), a.key) == keys.end()) keys.push_back(std::move(a.key));
    }
  }
  return keys;
}

std::optional<std::string> render_rev(const shard_store::snapshot& snap, const doc_info& d, int index,
                                      const render_options& opts) {
  return render_with(
      d, index, [&](const rev_id& rev, std::string& out) { return snap.body(d.id, rev, out); }, opts);
}

std::optional<std::string> render_rev(const doc_copy& d, int index, const render_options& opts) {
  return render_with(
      d.info, index,
      [&](const rev_id& rev, std::string& out) {
        const std::string* b = d.body(rev);
        if (b) out = *b;
        return b != nullptr;
      },
      opts);
}

std::string render_winner(const shard_store::snapshot& snap, const doc_info& d, const render_options& opts) {
  auto out = render_rev(snap, d, d.tree.winner(), opts);
  return out ? std::move(*out) : render_doc(d.id, d.tree.rev(d.tree.winner()).str(), d.tree.winner_deleted(), "{}", "");
}

bool has_meta(const doc_info& d, const render_options& opts) {
  return opts.revs_info || opts.local_seq || (opts.conflicts && !rev_list(d, false).empty()) ||
         (opts.deleted_conflicts && !rev_list(d, true).empty());
}

}  // namespace settee
