#include "actors/quorum.hpp"

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

}  // namespace settee
