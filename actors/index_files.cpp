#include "actors/index_files.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

namespace settee {

std::vector<std::string> stale_indexes(const std::string& dir, const std::string& suffix,
                                       const std::vector<std::string>& keep) {
  std::vector<std::string> stale;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = f.path().filename().string();
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    if (std::find(keep.begin(), keep.end(), name.substr(0, name.size() - suffix.size())) == keep.end())
      stale.push_back(f.path().string());
  }
  return stale;
}

result<index_purges> purges_after(const shard_store::snapshot& snap, uint64_t done, bool indexed_any) {
  index_purges out;
  shard_header h;
  if (!snap.header(h)) return snap.fault() ? status{errc::internal, "unreadable shard header"} : snap.fault();
  out.purge_seq = h.purge_seq;
  if (h.purge_seq <= done) return out;
  if (!indexed_any) {
    out.what = index_purges::step::record;
    return out;
  }
  const uint64_t oldest = snap.oldest_purge_seq();
  if (oldest == 0 || oldest > done + 1) {
    out.what = index_purges::step::rebuild;
    return out;
  }
  std::set<std::string> ids;
  snap.scan_purges(done, [&](const purge_info& p) {
    ids.insert(p.id);
    return true;
  });
  for (const std::string& id : ids) {
    doc_info d;
    if (!snap.doc(id, d)) out.gone.push_back(id);
  }
  if (!snap.fault()) return snap.fault();
  out.what = index_purges::step::remove;
  return out;
}

}  // namespace settee
