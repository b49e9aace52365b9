#include "storage/doc_key.hpp"

#include "node/crypto.hpp"
#include "storage/codec.hpp"

namespace settee::doc_key {

namespace {
std::string sha256(std::string_view id) {
  crypto::hasher h(crypto::hasher::algo::sha256);
  h.update(id);
  return h.final();
}
}  // namespace

std::string of(std::string_view id) {
  if (id.size() <= max_plain) return std::string(id);
  std::string key(id.substr(0, max_plain));
  key += sha256(id);
  return key;
}

std::string body(std::string_view id, const rev_id& rev) {
  codec::writer w;
  if (id.size() <= max_plain) {
    w.str(id);
  } else {
    w.varint(0);
    w.data() += sha256(id);
  }
  w.data() += rev.str();
  return std::move(w.data());
}

}  // namespace settee::doc_key
