// json_members: the members of settee's JSON objects (nlohmann::basic_json's ObjectType), kept in
// the order they were written, as CouchDB keeps a document's keys.
//
// nlohmann's own ordered_map holds std::pair<const Key, T>: a member whose key is const cannot be
// moved (the key copies, and a copy may throw), so each time an object's vector grew it copied
// every member before, deeply: a response of 25 search hits was copied whole when the object
// holding it reached its fifth member (a tenth of a term query's CPU), and a parsed document's
// nested objects each time their parent grew. Here a member is std::pair<Key, T>, moved when the
// vector grows.
//
// Lookups are linear, as ordered_map's: objects a request builds are small; parse_json indexes
// large ones itself (node/json.cpp).
#pragma once

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace settee {

template <class Key, class T, class IgnoredLess = std::less<Key>,
          class Allocator = std::allocator<std::pair<const Key, T>>>
struct json_members : std::vector<std::pair<Key, T>,
                                  typename std::allocator_traits<Allocator>::template rebind_alloc<std::pair<Key, T>>> {
  using key_type = Key;
  using mapped_type = T;
  using value_type = std::pair<Key, T>;
  using Container =
      std::vector<value_type, typename std::allocator_traits<Allocator>::template rebind_alloc<value_type>>;
  using iterator = typename Container::iterator;
  using const_iterator = typename Container::const_iterator;
  using size_type = typename Container::size_type;
  using key_compare = std::equal_to<>;  // basic_json takes the key types this compares with Key

  json_members() = default;
  explicit json_members(const Allocator&) {}
  template <class It>
  json_members(It first, It last, const Allocator& = Allocator()) : Container(first, last) {}
  json_members(std::initializer_list<value_type> init, const Allocator& = Allocator()) : Container(init) {}

  template <class K>
  iterator find(const K& key) {
    return std::find_if(this->begin(), this->end(), [&](const value_type& m) { return m.first == key; });
  }
  template <class K>
  const_iterator find(const K& key) const {
    return std::find_if(this->begin(), this->end(), [&](const value_type& m) { return m.first == key; });
  }
  template <class K>
  size_type count(const K& key) const {
    return find(key) == this->end() ? 0 : 1;
  }

  // The member `key` (added last with `value` when there is none), and whether it was added.
  template <class K, class V>
  std::pair<iterator, bool> emplace(K&& key, V&& value) {
    if (auto it = find(key); it != this->end()) return {it, false};
    Container::emplace_back(std::forward<K>(key), std::forward<V>(value));
    return {std::prev(this->end()), true};
  }
  std::pair<iterator, bool> insert(value_type&& member) {
    return emplace(std::move(member.first), std::move(member.second));
  }
  std::pair<iterator, bool> insert(const value_type& member) { return emplace(member.first, member.second); }
  template <class It>
  void insert(It first, It last) {
    for (; first != last; ++first) insert(*first);
  }

  template <class K>
  T& operator[](K&& key) {
    return emplace(std::forward<K>(key), T{}).first->second;
  }
  template <class K>
  const T& operator[](const K& key) const {
    return at(key);
  }
  template <class K>
  T& at(const K& key) {
    if (auto it = find(key); it != this->end()) return it->second;
    throw std::out_of_range("key not found");
  }
  template <class K>
  const T& at(const K& key) const {
    if (auto it = find(key); it != this->end()) return it->second;
    throw std::out_of_range("key not found");
  }

  // Removes the member `key`; how many went (0 or 1). Later members keep their order.
  template <class K, class = std::enable_if_t<!std::is_convertible_v<K, const_iterator>>>
  size_type erase(const K& key) {
    auto it = find(key);
    if (it == this->end()) return 0;
    Container::erase(it);
    return 1;
  }
  iterator erase(iterator pos) { return Container::erase(pos); }
  iterator erase(const_iterator pos) { return Container::erase(pos); }
  iterator erase(iterator first, iterator last) { return Container::erase(first, last); }
};

}  // namespace settee
