// position_merge: the coordinator's merge of copies' pages (views, _find), and the order check
// that turns a copy's page out of order into an error before the merge.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "actors/position_merge.hpp"

using namespace settee;

namespace {

std::vector<std::string> merged(std::vector<std::vector<std::string>> pages, bool descending, size_t limit) {
  std::vector<size_t> next(pages.size(), 0);
  std::vector<std::string> out;
  merge_positions(
      pages.size(), descending, [&](size_t r) { return next[r] < pages[r].size() ? &pages[r][next[r]] : nullptr; },
      [&](size_t r) {
        out.push_back(pages[r][next[r]++]);
        return out.size() < limit;
      });
  return out;
}

const auto same = [](const std::string& p) -> const std::string& { return p; };

}  // namespace

TEST_CASE("position_merge: pages merge by position, in either direction, up to the limit") {
  CHECK(merged({{"a", "d", "e"}, {}, {"b", "c", "f"}}, false, 100) ==
        std::vector<std::string>{"a", "b", "c", "d", "e", "f"});
  CHECK(merged({{"e", "d", "a"}, {"f", "c", "b"}}, true, 100) ==
        std::vector<std::string>{"f", "e", "d", "c", "b", "a"});
  CHECK(merged({{"a", "d"}, {"b", "c"}}, false, 3) == std::vector<std::string>{"a", "b", "c"});
  CHECK(merged({{}, {}}, false, 3).empty());
  // Positions are bytes: 0xff sorts after every ASCII byte (as LMDB's memcmp order).
  CHECK(merged({{std::string("\xff")}, {"z"}}, false, 3) == std::vector<std::string>{"z", std::string("\xff")});
}

TEST_CASE("position_merge: a page out of the query's order is found before the merge") {
  CHECK(in_order(std::vector<std::string>{"a", "b", "b", "c"}, same, false));
  CHECK_FALSE(in_order(std::vector<std::string>{"a", "c", "b"}, same, false));
  CHECK(in_order(std::vector<std::string>{"c", "b", "a"}, same, true));
  CHECK_FALSE(in_order(std::vector<std::string>{"c", "a", "b"}, same, true));
  CHECK(in_order(std::vector<std::string>{}, same, false));
}
