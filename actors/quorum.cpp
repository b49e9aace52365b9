#include "actors/quorum.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace settee {

quorum_answer decide_quorum(const std::vector<doc_result>& answers, size_t w) {
  if (answers.empty()) {
    return {{status{errc::unavailable, "No copy of the document's shard could be reached."}, {}}, false};
  }
  std::map<std::string, std::pair<size_t, const doc_result*>> oks, errors;
  std::set<std::string> written;  // revisions a copy committed in this request
  for (const doc_result& a : answers)
    if (a.st && a.added) written.insert(a.rev.str());
  for (const doc_result& a : answers) {
    // A copy that already had the very revision another copy just wrote agrees with it.
    bool agrees = a.st || (a.known && written.count(a.rev.str()));
    auto& slot = agrees ? oks[a.rev.str()] : errors[std::string(error_name_of(a.st.code)) + ":" + a.st.reason];
    if (slot.first++ == 0 || !slot.second->st) slot.second = &a;
  }
  auto most = [](const auto& m) {
    auto best = m.begin();
    for (auto it = m.begin(); it != m.end(); ++it)
      if (it->second.first > best->second.first) best = it;
    return best;
  };
  if (!oks.empty()) {
    auto ok = most(oks);
    if (ok->second.first >= w) return {*ok->second.second, true};
    if (!errors.empty()) {
      auto err = most(errors);
      if (err->second.first >= w) return {*err->second.second, true};
    }
    return {*ok->second.second, false};
  }
  auto err = most(errors);
  return {*err->second.second, err->second.first >= w};
}

merged_read merge_doc_copies(const std::vector<doc_copy>& answers) {
  merged_read out;
  if (answers.empty()) return out;
  out.doc.id = answers.front().id;
  out.doc.info.id = out.doc.id;
  for (const doc_copy& a : answers) {
    if (!a.found) continue;
    out.doc.found = true;
    out.doc.info.seq = std::max(out.doc.info.seq, a.info.seq);
    const rev_tree& t = a.info.tree;
    for (int leaf : t.leaves()) {
      std::vector<rev_id> path;
      for (int i : t.path_to(leaf)) path.push_back(t.rev(i));
      bool added = false;
      out.doc.info.tree.merge_path(path, t.nodes()[leaf].deleted, added);
    }
    for (auto& [rev, body] : a.bodies)
      if (!out.doc.body(rev)) out.doc.bodies.emplace_back(rev, body);
  }
  if (!out.doc.found) return out;
  const rev_tree& merged = out.doc.info.tree;
  for (int leaf : merged.leaves()) {
    rev_id rev = merged.rev(leaf);
    bool everywhere = std::all_of(answers.begin(), answers.end(),
                                  [&](const doc_copy& a) { return a.found && a.info.tree.find(rev) >= 0; });
    const std::string* body = out.doc.body(rev);
    if (everywhere || !body) continue;
    doc_update u;
    u.id = out.doc.id;
    u.body = *body;
    u.deleted = merged.nodes()[leaf].deleted;
    u.new_edits = false;
    u.honor_purges = true;  // a copy that purged it keeps it purged
    for (int i : merged.path_to(leaf)) u.revs.push_back(merged.rev(i));
    out.repairs.push_back(std::move(u));
  }
  return out;
}

}  // namespace settee
