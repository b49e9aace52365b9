// attachments: a document's `_attachments` between the forms clients send and read and the form a
// revision stores (docs/architecture.md section 29). Pure: no I/O; the bytes travel as blobs.
//
// Stored entry (in the revision's body):
//   {"content_type","digest":"md5-<base64>","length":<identity bytes>,"revpos":N,
//    "key":"<sha256 hex of the stored bytes>"[,"encoding":"gzip","encoded_length":<stored bytes>]}
// `digest` is CouchDB's, of the stored bytes; `key` names the blob (md5 collides on demand, so it
// never decides which bytes a document gets).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"

namespace settee::attachments {

// Stored bytes under their key: what a write brings for the attachments its body introduces.
struct blob {
  std::string key;
  std::string bytes;
};

// How new attachments are stored: CouchDB's `[attachments] compressible_types` (exact types or
// `type/*`, matched without parameters) are kept gzip-encoded at `compression_level` (1-9; 0: never)
// when that is smaller; larger than `max_bytes` (identity) is a 413.
struct policy {
  size_t max_bytes = size_t{1} << 30;
  int compression_level = 8;
  std::vector<std::string> compressible{"text/*", "application/javascript", "application/json", "application/xml"};
  bool compressible_type(const std::string& content_type) const;
  // The comma-separated list of the config value.
  static std::vector<std::string> parse_types(const std::string& list);
};

// A new attachment's stored entry for `identity` bytes first written at revision position `revpos`,
// and its blob: gzip-encoded when `p` says so (`encoding`, `encoded_length`), else as given.
json make_entry(const std::string& content_type, const std::string& identity, uint64_t revpos, blob& out,
                const policy& p = policy{});

// The identity bytes of stored entry `e` from its stored bytes (decoded when gzip-encoded).
result<std::string> identity_bytes(const json& e, std::string stored);
// Whether stored entry `e` is gzip-encoded.
bool gzipped(const json& e);
// The size of stored entry `e`'s blob: `encoded_length` when gzip-encoded, else `length`.
uint64_t stored_length(const json& e);

// Turns the inline entries of a client's `_attachments` (`{"data":"<base64>","content_type"}`) into
// stored entries, in place, appending their blobs; stubs (`"stub":true`) are left for merge_stubs.
// Their revpos is 0 (the store sets the new revision's) unless `keep_revpos` and the client gave
// one (a replicated revision keeps its source's). Errors (400): not an object, a bad name, bad
// base64, an entry with neither data nor stub.
// `follows` holds the bytes of a multipart body's parts by attachment name: an entry with
// `"follows":true` takes its part (moved out), checked against the entry's `length` (or, with
// `"encoding":"gzip"`, `encoded_length`; the part is then decoded) and `digest`. Without
// `follows`, such an entry is a 400. New entries are made as `p` says (make_entry).
status take_inline(json& atts, bool keep_revpos, std::vector<blob>& blobs,
                   std::map<std::string, std::string>* follows = nullptr, const policy& p = policy{});

// Replaces every stub in `atts` with the parent revision's entry of the same name (CouchDB matches
// stubs by name only). `parent` is the parent's stored `_attachments` (null: no parent revision).
// A stub the parent does not have is a 412 missing_stub naming the document and the attachment.
status merge_stubs(json& atts, const json* parent, const std::string& doc_id);

// True when the stored `_attachments` still hold a stub (a body not merged yet).
bool has_stubs(const json& atts);

// The blob key of a stored entry; null for anything else (a stub, an entry stored as given).
const std::string* key_of(const json& entry);
// Stored body `body`'s entry for attachment `name`; null when it has none.
const json* entry_of(const json& body, const std::string& name);

// The blob keys a stored body's attachments reference (malformed entries are skipped).
std::vector<std::string> keys_of(const json& body);

// Blob bytes by key: what a reader fetched for the attachments it shows inline.
using blob_bytes = std::map<std::string, std::string>;

// Which stored entries a reader gets with their bytes (`attachments=true`, `atts_since`): those
// first written after revision position `after`, as `data` (whose bytes are in `bytes`) or, for a
// multipart answer, as `follows`; the others are stubs.
struct inline_request {
  uint64_t after = 0;
  const blob_bytes* bytes = nullptr;
  bool follows = false;
};

// A stored body as a client reads it: every stored entry of its `_attachments` (one with a `key`)
// rendered as a stub, or inline as `inl` asks; entries stored as given (release 0.2's way) stay as
// they are. False when the body had nothing to rewrite.
bool show(std::string& body, bool encoding_info, const inline_request* inl = nullptr);

// Stored body `body`'s entries first written after revision position `after`, in the body's
// order: what a reader shows inline (and must fetch), or sends as multipart parts.
struct shown {
  std::string name, key, content_type;
  uint64_t length = 0;  // of the stored bytes (encoded_length when gzip-encoded)
  bool gzipped = false;
};
std::vector<shown> shown_after(const std::string& body, uint64_t after);

// How a client reads an attachment.
enum class form { stub, inline_data, follows };
// CouchDB's rendering of stored entry `e` (couch_att:to_json): content_type, revpos, digest, then
// `length`+`stub` / `data` (base64 of the identity bytes of stored `bytes`) / `length`+`follows`,
// then encoding and encoded_length when `encoding_info` and the entry is encoded.
json render(const json& e, form f, bool encoding_info, const std::string* bytes = nullptr);

}  // namespace settee::attachments
