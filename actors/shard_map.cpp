#include "actors/shard_map.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

namespace settee {

std::string shard_range::name() const {
  // "%08x-%08x", without printf's parsing (every read and write of a document names its range).
  std::string out(17, '-');
  static constexpr char hex[] = "0123456789abcdef";
  for (int i = 0; i < 8; ++i) {
    out[7 - i] = hex[(begin >> (4 * i)) & 0xf];
    out[16 - i] = hex[(end >> (4 * i)) & 0xf];
  }
  return out;
}

std::optional<shard_range> shard_range::parse(std::string_view name) {
  auto hex8 = [](std::string_view s, uint32_t& out) {
    if (s.size() != 8) return false;
    out = 0;
    for (char ch : s) {
      int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
      if (d < 0) return false;
      out = out << 4 | static_cast<uint32_t>(d);
    }
    return true;
  };
  shard_range r;
  if (name.size() != 17 || name[8] != '-' || !hex8(name.substr(0, 8), r.begin) || !hex8(name.substr(9), r.end) ||
      r.end < r.begin)
    return std::nullopt;
  return r;
}

std::optional<std::pair<shard_range, shard_range>> shard_range::halves() const {
  if (begin == end) return std::nullopt;
  uint32_t mid = begin + (end - begin) / 2;  // the first half keeps the middle hash
  return std::make_pair(shard_range{begin, mid}, shard_range{mid + 1, end});
}

std::vector<shard_range> make_ranges(uint32_t q) {
  if (q == 0) q = 1;
  std::vector<shard_range> out;
  uint64_t size = (uint64_t{1} << 32) / q;
  for (uint32_t i = 0; i < q; ++i) {
    uint64_t b = size * i;
    uint64_t e = (i + 1 == q) ? 0xffffffffull : size * (i + 1) - 1;
    out.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e)});
  }
  return out;
}

uint32_t hash_doc_id(std::string_view id) {
  return static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(id.data()), static_cast<uInt>(id.size())));
}

std::string_view partition_of(std::string_view id) {
  if (id.empty() || id[0] == '_') return {};
  size_t colon = id.find(':');
  return colon == std::string_view::npos ? std::string_view() : id.substr(0, colon);
}

uint32_t placement_hash(std::string_view id, bool partitioned) {
  std::string_view p = partitioned ? partition_of(id) : std::string_view();
  return hash_doc_id(p.empty() ? id : p);
}

size_t range_index(const std::vector<shard_range>& ranges, uint32_t hash) {
  // Ranges are sorted and contiguous: binary search on the end.
  size_t lo = 0, hi = ranges.size();
  while (lo + 1 < hi) {
    size_t mid = (lo + hi) / 2;
    if (ranges[mid].begin <= hash)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

std::vector<std::vector<std::string>> place_copies(const std::vector<std::string>& nodes, uint32_t q, uint32_t n,
                                                   size_t offset) {
  std::vector<std::vector<std::string>> out(q);
  if (nodes.empty()) return out;
  size_t copies = std::min<size_t>(n, nodes.size());
  for (uint32_t i = 0; i < q; ++i) {
    for (size_t k = 0; k < copies; ++k) out[i].push_back(nodes[(offset + i * copies + k) % nodes.size()]);
  }
  return out;
}

}  // namespace settee
