#include "storage/attachments.hpp"

#include <utility>

#include "node/crypto.hpp"
#include "node/gzip.hpp"

namespace settee::attachments {

namespace {

// "md5-<base64>" of `bytes`, as CouchDB shows it.
std::string md5_digest(const std::string& bytes) {
  return "md5-" + crypto::base64_encode(crypto::md5(bytes));
}

status bad(const std::string& reason) {
  return {errc::bad_request, reason};
}

status check_name(const std::string& name) {
  if (name.empty()) return bad("Attachment name must not be empty");
  if (name[0] == '_') return bad("Attachment name '" + name + "' starts with prohibited character '_'");
  return {};
}

bool is_true(const json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

bool policy::compressible_type(const std::string& content_type) const {
  std::string type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  for (auto& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string& pattern : compressible) {
    if (pattern == type) return true;
    if (pattern.size() > 2 && pattern.compare(pattern.size() - 2, 2, "/*") == 0 &&
        type.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> policy::parse_types(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = std::min(list.find(',', start), list.size());
    std::string t = list.substr(start, end - start);
    t.erase(0, t.find_first_not_of(" \t"));
    t.erase(t.find_last_not_of(" \t") + 1);
    for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!t.empty()) out.push_back(t);
    start = end + 1;
  }
  return out;
}

json make_entry(const std::string& content_type, const std::string& identity, uint64_t revpos, blob& out,
                const policy& p) {
  json e{{"content_type", content_type}};
  std::string packed;
  if (p.compression_level > 0 && !identity.empty() && p.compressible_type(content_type)) {
    packed = gzip::compress(identity, p.compression_level);
  }
  // As CouchDB's couch_att:maybe_compress: a compressible type is stored gzip-encoded whatever it
  // saves (even a few bytes that grow), so digest and encoded_length match CouchDB's.
  const bool encode = !packed.empty();
  out.bytes = encode ? std::move(packed) : identity;
  out.key = crypto::sha256_hex(out.bytes);
  e["digest"] = md5_digest(out.bytes);  // CouchDB's md5 is of the stored (encoded) bytes
  e["length"] = identity.size();
  e["revpos"] = revpos;
  e["key"] = out.key;
  if (encode) {
    e["encoding"] = "gzip";
    e["encoded_length"] = out.bytes.size();
  }
  return e;
}

bool gzipped(const json& e) {
  return e.is_object() && e.value("encoding", "") == "gzip";
}

uint64_t stored_length(const json& e) {
  const char* field = gzipped(e) ? "encoded_length" : "length";
  auto it = e.find(field);
  return it != e.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

result<std::string> identity_bytes(const json& e, std::string stored) {
  if (!gzipped(e)) return stored;
  return gzip::decompress(stored, std::max<uint64_t>(e.value("length", uint64_t{0}), 1));
}

namespace {

// The bytes of a `"follows":true` entry: its part, checked against what the entry says of it.
status take_part(const std::string& name, const json& e, std::map<std::string, std::string>* follows, size_t max_bytes,
                 std::string& bytes) {
  if (!follows) return bad("Attachment '" + name + "' follows, but the body is not multipart");
  auto part = follows->find(name);
  if (part == follows->end()) return bad("Attachment '" + name + "' follows, but the body has no part for it");
  bytes = std::move(part->second);
  follows->erase(part);
  const bool gzipped = e.value("encoding", "identity") == "gzip";
  if (!gzipped && e.contains("encoding") && e["encoding"] != "identity")
    return bad("Attachment '" + name + "': only gzip and identity encodings are supported");
  // A part's size must be the one its entry states: encoded_length (gzip), then length once decoded.
  auto check_length = [&](const char* key) -> status {
    auto l = e.find(key);
    if (l == e.end() || (l->is_number_unsigned() && l->get<uint64_t>() == bytes.size())) return {};
    return bad("Attachment '" + name + "' says " + key + " " + l->dump() + " but its part has " +
               std::to_string(bytes.size()) + " bytes");
  };
  if (gzipped) {
    if (auto st = check_length("encoded_length"); !st) return st;
  } else if (auto st = check_length("length"); !st) {
    return st;
  }
  if (auto d = e.find("digest"); d != e.end() && d->is_string() &&
                                 d->get_ref<const std::string&>().rfind("md5-", 0) == 0 && *d != md5_digest(bytes)) {
    return {errc::content_md5_mismatch, "Possible message corruption."};
  }
  if (gzipped) {
    auto plain = gzip::decompress(bytes, max_bytes);
    if (!plain) return plain.error();
    bytes = std::move(*plain);
    if (auto st = check_length("length"); !st) return st;
  }
  if (bytes.size() > max_bytes)
    return {errc::too_large, "Attachment '" + name + "' is larger than max_attachment_size"};
  return {};
}

}  // namespace

status take_inline(json& atts, bool keep_revpos, std::vector<blob>& blobs, std::map<std::string, std::string>* follows,
                   const policy& p) {
  const size_t max_bytes = p.max_bytes;
  if (!atts.is_object()) return bad("`_attachments` must be a JSON object");
  for (auto it = atts.begin(); it != atts.end(); ++it) {
    const std::string& name = it.key();
    if (auto st = check_name(name); !st) return st;
    json& e = it.value();
    if (!e.is_object()) return bad("Attachment '" + name + "' must be a JSON object");
    if (is_true(e, "stub")) continue;
    std::string bytes;
    if (is_true(e, "follows")) {
      if (auto st = take_part(name, e, follows, max_bytes, bytes); !st) return st;
    } else {
      auto data = e.find("data");
      if (data == e.end()) return bad("Attachment '" + name + "' has neither data nor a stub");
      if (!data->is_string() || !crypto::base64_decode(data->get<std::string>(), bytes)) {
        return bad("Invalid attachment data for " + name);
      }
      if (bytes.size() > max_bytes)
        return {errc::too_large, "Attachment '" + name + "' is larger than max_attachment_size"};
    }
    std::string type = "application/octet-stream";
    if (auto t = e.find("content_type"); t != e.end()) {
      if (!t->is_string()) return bad("Attachment '" + name + "': content_type must be a string");
      type = t->get<std::string>();
    }
    uint64_t revpos = 0;
    if (auto p = e.find("revpos"); keep_revpos && p != e.end() && p->is_number_unsigned()) revpos = p->get<uint64_t>();
    blob b;
    e = make_entry(type, bytes, revpos, b, p);
    blobs.push_back(std::move(b));
  }
  return {};
}

status merge_stubs(json& atts, const json* parent, const std::string& doc_id) {
  if (!atts.is_object()) return bad("`_attachments` must be a JSON object");
  for (auto it = atts.begin(); it != atts.end(); ++it) {
    if (!is_true(it.value(), "stub")) continue;
    if (!parent) return {errc::missing_stub, "Previous revision missing for document " + doc_id};
    auto had = parent->is_object() ? parent->find(it.key()) : parent->end();
    // A stub naming a revpos must name the parent's (couch_att:merge_stubs).
    const json& revpos = member(it.value(), "revpos");
    if (!parent->is_object() || had == parent->end() || !key_of(*had) ||
        (!revpos.is_null() && revpos != member(*had, "revpos"))) {
      return {errc::missing_stub, "Invalid attachment stub in " + doc_id + " for " + it.key()};
    }
    it.value() = *had;
  }
  return {};
}

bool has_stubs(const json& atts) {
  if (!atts.is_object()) return false;
  for (auto& [name, e] : atts.items()) {
    if (e.is_object() && is_true(e, "stub")) return true;
  }
  return false;
}

const std::string* key_of(const json& entry) {
  if (!entry.is_object()) return nullptr;
  auto k = entry.find("key");
  return k != entry.end() && k->is_string() ? &k->get_ref<const std::string&>() : nullptr;
}

namespace {

// A stored body's `_attachments` object, or null (none, or not an object).
template <class Json>
Json* atts_of(Json& body) {
  if (!body.is_object()) return nullptr;
  auto atts = body.find("_attachments");
  return atts != body.end() && atts->is_object() ? &*atts : nullptr;
}

}  // namespace

const json* entry_of(const json& body, const std::string& name) {
  const json* atts = atts_of(body);
  if (!atts) return nullptr;
  auto e = atts->find(name);
  return e == atts->end() ? nullptr : &*e;
}

std::vector<std::string> keys_of(const json& body) {
  std::vector<std::string> keys;
  const json* atts = atts_of(body);
  if (!atts) return keys;
  for (auto& [name, e] : atts->items()) {
    if (const std::string* k = key_of(e)) keys.push_back(*k);
  }
  return keys;
}

bool show(std::string& body, bool encoding_info, const inline_request* inl) {
  if (body.find("\"_attachments\"") == std::string::npos) return false;
  auto parsed = parse_json(body);
  json* atts = parsed ? atts_of(*parsed) : nullptr;
  if (!atts) return false;
  bool changed = false;
  for (auto& [name, e] : atts->items()) {
    const std::string* key = key_of(e);
    if (!key) continue;
    const std::string* bytes = nullptr;
    form f = form::stub;
    if (inl && e.value("revpos", uint64_t{0}) > inl->after) {
      if (inl->follows) {
        f = form::follows;
      } else if (inl->bytes) {
        auto b = inl->bytes->find(*key);
        if (b != inl->bytes->end()) bytes = &b->second;
        f = bytes ? form::inline_data : form::stub;
      }
    }
    e = render(e, f, encoding_info, bytes);
    changed = true;
  }
  if (changed) body = parsed->dump();
  return changed;
}

std::vector<shown> shown_after(const std::string& body, uint64_t after) {
  std::vector<shown> out;
  if (body.find("\"_attachments\"") == std::string::npos) return out;
  auto parsed = parse_json(body);
  const json* atts = parsed ? atts_of(std::as_const(*parsed)) : nullptr;
  if (!atts) return out;
  for (auto& [name, e] : atts->items()) {
    const std::string* key = key_of(e);
    if (!key || e.value("revpos", uint64_t{0}) <= after) continue;
    const bool packed = gzipped(e);
    out.push_back({name, *key, e.value("content_type", "application/octet-stream"),
                   e.value(packed ? "encoded_length" : "length", uint64_t{0}), packed});
  }
  return out;
}

json render(const json& e, form f, bool encoding_info, const std::string* bytes) {
  json out = json::object();
  for (const char* k : {"content_type", "revpos", "digest"}) {
    if (e.contains(k)) out[k] = e[k];
  }
  std::optional<std::string> plain;  // inline data is always the identity bytes
  if (f == form::inline_data && bytes) {
    if (auto decoded = identity_bytes(e, *bytes)) plain = std::move(*decoded);
  }
  if (plain) {
    out["data"] = crypto::base64_encode(*plain);
  } else {
    out["length"] = e.value("length", uint64_t{0});
    out[f == form::follows ? "follows" : "stub"] = true;
  }
  if (encoding_info && e.contains("encoding")) {
    out["encoding"] = e["encoding"];
    out["encoded_length"] = e.value("encoded_length", uint64_t{0});
  }
  return out;
}

}  // namespace settee::attachments
