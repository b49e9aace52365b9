#include "storage/attachments.hpp"

#include "node/crypto.hpp"

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

json make_entry(const std::string& content_type, const std::string& identity, uint64_t revpos, blob& out) {
  out.key = crypto::sha256_hex(identity);
  out.bytes = identity;
  return json{{"content_type", content_type},
              {"digest", md5_digest(identity)},
              {"length", identity.size()},
              {"revpos", revpos},
              {"key", out.key}};
}

status take_inline(json& atts, bool keep_revpos, std::vector<blob>& blobs) {
  if (!atts.is_object()) return bad("`_attachments` must be a JSON object");
  for (auto it = atts.begin(); it != atts.end(); ++it) {
    const std::string& name = it.key();
    if (auto st = check_name(name); !st) return st;
    json& e = it.value();
    if (!e.is_object()) return bad("Attachment '" + name + "' must be a JSON object");
    if (is_true(e, "stub")) continue;
    if (is_true(e, "follows")) return bad("Attachment '" + name + "' follows, but the body is not multipart");
    auto data = e.find("data");
    if (data == e.end()) return bad("Attachment '" + name + "' has neither data nor a stub");
    std::string bytes;
    if (!data->is_string() || !crypto::base64_decode(data->get<std::string>(), bytes)) {
      return bad("Invalid attachment data for " + name);
    }
    std::string type = "application/octet-stream";
    if (auto t = e.find("content_type"); t != e.end()) {
      if (!t->is_string()) return bad("Attachment '" + name + "': content_type must be a string");
      type = t->get<std::string>();
    }
    uint64_t revpos = 0;
    if (auto p = e.find("revpos"); keep_revpos && p != e.end() && p->is_number_unsigned()) revpos = p->get<uint64_t>();
    blob b;
    e = make_entry(type, bytes, revpos, b);
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
    if (!parent->is_object() || had == parent->end() || !key_of(*had)) {
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

const json* entry_of(const json& body, const std::string& name) {
  if (!body.is_object()) return nullptr;
  auto atts = body.find("_attachments");
  if (atts == body.end() || !atts->is_object()) return nullptr;
  auto e = atts->find(name);
  return e == atts->end() ? nullptr : &*e;
}

std::vector<std::string> keys_of(const json& body) {
  std::vector<std::string> keys;
  auto atts = body.is_object() ? body.find("_attachments") : body.end();
  if (!body.is_object() || atts == body.end() || !atts->is_object()) return keys;
  for (auto& [name, e] : atts->items()) {
    if (const std::string* k = key_of(e)) keys.push_back(*k);
  }
  return keys;
}

bool show(std::string& body, bool encoding_info, const inline_request* inl) {
  if (body.find("\"_attachments\"") == std::string::npos) return false;
  auto parsed = parse_json(body);
  if (!parsed || !parsed->is_object()) return false;
  auto atts = parsed->find("_attachments");
  if (atts == parsed->end() || !atts->is_object()) return false;
  bool changed = false;
  for (auto& [name, e] : atts->items()) {
    const std::string* key = key_of(e);
    if (!key) continue;
    const std::string* bytes = nullptr;
    if (inl && inl->bytes && e.value("revpos", uint64_t{0}) > inl->after) {
      auto b = inl->bytes->find(*key);
      if (b != inl->bytes->end()) bytes = &b->second;
    }
    e = render(e, bytes ? form::inline_data : form::stub, encoding_info, bytes);
    changed = true;
  }
  if (changed) body = parsed->dump();
  return changed;
}

std::vector<std::string> keys_after(const std::string& body, uint64_t after) {
  std::vector<std::string> keys;
  if (body.find("\"_attachments\"") == std::string::npos) return keys;
  auto parsed = parse_json(body);
  if (!parsed) return keys;
  auto atts = parsed->is_object() ? parsed->find("_attachments") : parsed->end();
  if (!parsed->is_object() || atts == parsed->end() || !atts->is_object()) return keys;
  for (auto& [name, e] : atts->items()) {
    const std::string* key = key_of(e);
    if (key && e.value("revpos", uint64_t{0}) > after) keys.push_back(*key);
  }
  return keys;
}

json render(const json& e, form f, bool encoding_info, const std::string* bytes) {
  json out = json::object();
  for (const char* k : {"content_type", "revpos", "digest"}) {
    if (e.contains(k)) out[k] = e[k];
  }
  if (f == form::inline_data && bytes) {
    out["data"] = crypto::base64_encode(*bytes);
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
