#include "replicator/rep_attachments.hpp"

#include <algorithm>
#include <string>

namespace settee {
namespace {

// The generation of the newest revision on `doc`'s path that is in `ancestors` (0: none).
uint64_t shared_generation(const json& doc, const json& ancestors) {
  const json& revs = member(doc, "_revisions");
  const json& start = member(revs, "start");
  const json& ids = member(revs, "ids");
  if (!start.is_number_unsigned() || !ids.is_array() || !ancestors.is_array()) return 0;
  const uint64_t top = start.get<uint64_t>();
  uint64_t best = 0;
  for (const json& a : ancestors) {
    if (!a.is_string()) continue;
    const std::string& rev = a.get_ref<const std::string&>();
    size_t dash = rev.find('-');
    if (dash == 0 || dash == std::string::npos || dash > 19) continue;
    uint64_t pos = 0;
    bool digits = std::all_of(rev.begin(), rev.begin() + static_cast<std::ptrdiff_t>(dash),
                              [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) continue;
    pos = std::stoull(rev.substr(0, dash));
    if (pos == 0 || pos > top || top - pos >= ids.size()) continue;
    const json& id = ids[static_cast<size_t>(top - pos)];
    if (id.is_string() && id.get_ref<const std::string&>() == rev.substr(dash + 1)) best = std::max(best, pos);
  }
  return best;
}

uint64_t size_of(const json& att) {
  uint64_t n = 0;
  for (const char* field : {"length", "encoded_length"})
    if (const json& v = member(att, field); v.is_number_unsigned()) n = std::max(n, v.get<uint64_t>());
  return n;
}

}  // namespace

attachments_needed attachments_to_send(const json& doc, const json& possible_ancestors) {
  attachments_needed out;
  const json& atts = member(doc, "_attachments");
  if (!atts.is_object()) return out;
  const uint64_t shared = shared_generation(doc, possible_ancestors);
  for (auto& [name, att] : atts.items()) {
    (void)name;
    const json& revpos = member(att, "revpos");
    if (revpos.is_number_unsigned() && revpos.get<uint64_t>() <= shared) continue;
    ++out.count;
    out.bytes += size_of(att);
  }
  return out;
}

}  // namespace settee
