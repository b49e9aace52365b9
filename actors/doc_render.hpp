// doc_render: documents as JSON text, built from the stored body without re-parsing it:
// {"_id":..,"_rev":.., <stored fields>, "_deleted"?, "_revisions"?, "_revs_info"?, "_conflicts"?, ...}
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "actors/shard_copy.hpp"
#include "storage/attachments.hpp"
#include "storage/shard_store.hpp"

namespace settee {

struct render_options {
  bool revs = false;
  bool revs_info = false;
  bool conflicts = false;
  bool deleted_conflicts = false;
  bool local_seq = false;
  bool att_encoding_info = false;  // attachments' stubs show encoding and encoded_length
  // `attachments=true`: attachments show their bytes (`data`), those first written after the newest
  // revision of `atts_since` in the rendered one's history (all when none is); bytes from `blobs`.
  bool attachments = false;
  std::vector<rev_id> atts_since;
  const attachments::blob_bytes* blobs = nullptr;
  bool follows = false;  // a multipart answer: those attachments are `"follows":true` parts instead
};

// Whether rendering `d` with `opts` adds meta fields (couch_db:doc_meta_info: `_revs_info`,
// `_local_seq`, or `_conflicts`/`_deleted_conflicts` when there are some): such a read has no ETag,
// as chttpd_db's send_doc.
bool has_meta(const doc_info& d, const render_options& opts);

// The revision position after which revision `index`'s attachments show inline: that of the newest
// revision of `opts.atts_since` in its history (CouchDB's find_ancestor_rev_pos), else 0.
uint64_t inline_after(const doc_info& d, int index, const render_options& opts);

// The blob keys rendering revisions `indices` of `d` with `opts` shows inline (none without
// `opts.attachments`): what to fetch into `opts.blobs` first.
std::vector<std::string> inline_keys(const doc_copy& d, const std::vector<int>& indices, const render_options& opts);

// Revision `index` of `d`, or nullopt when its body is not stored (not a leaf any more).
std::optional<std::string> render_rev(const doc_copy& d, int index, const render_options& opts);
std::optional<std::string> render_rev(const shard_store::snapshot& snap, const doc_info& d, int index,
                                      const render_options& opts);
// The winning revision (its body is always stored).
std::string render_winner(const shard_store::snapshot& snap, const doc_info& d, const render_options& opts);
// Assembles a document from its parts; `extra` is appended verbatim (",\"_x\":...").
std::string render_doc(std::string_view id, const std::string& rev, bool deleted, std::string_view body,
                       const std::string& extra);

}  // namespace settee
