// attachment_stream: large attachments in and out without holding them in memory (docs/
// architecture.md section 29). An upload the HTTP front spooled to a file (wire/body_spool.hpp) is
// decoded and encoded file to file as the attachment policy says, hashed, and staged on every copy
// of its range in pieces (coordinator::stage_blob); the revision that names it is written after.
// A download is a response_stream that reads the blob a piece at a time from a copy and, for a
// gzip-stored blob a client cannot take encoded, decodes it on the way.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "actors/coordinator.hpp"
#include "storage/attachments.hpp"
#include "wire/body_spool.hpp"
#include "wire/message.hpp"
#include "wire/multipart.hpp"

namespace settee {

// Pieces of this size move between the spool and the copies; reads for a client go in pieces of
// attachment_read_bytes (below glibc's mmap threshold, 128 KiB here: no fresh mapping to fault in
// for each piece).
constexpr size_t attachment_piece_bytes = 4u << 20;
constexpr size_t attachment_read_bytes = 64u << 10;
// An attachment larger than this is answered by a stream (smaller ones in one body).
constexpr uint64_t attachment_stream_from = 1u << 20;

struct upload {
  std::string content_type;
  std::string encoding;     // "" (identity) or "gzip": how the body was sent
  std::string content_md5;  // the Content-MD5 header (base64), or ""
  // A multipart part: the attachment's name, the length its entry states for the identity bytes
  // (checked), and the revpos it keeps (a replicated revision's; 0: the store sets it).
  std::string name;
  std::optional<uint64_t> identity_length;
  uint64_t revpos = 0;
};

// Stages bytes [offset, offset + size) of spool `spool` (a spooled body, or a multipart part of
// one) as an attachment of document `doc_id`: the stored entry
// (attachments.hpp; revpos u.revpos, 0: the store sets it) when every reachable copy holds the
// blob. Errors:
// 400 content_md5_mismatch, 400 bad gzip, 413 larger than the policy's max_bytes, a copy's refusal.
// On an error nothing stays staged; after a failed document write, call coordinator::drop_staged.
result<json> stage_upload(coordinator& coord, const db_meta& db, const std::string& doc_id, const body_spool& spool,
                          uint64_t offset, uint64_t size, const upload& u, const attachments::policy& p,
                          const std::string& spool_dir);

// The stored bytes [from, to) of blob `key`, decoded (gunzip) when `decode`: then `skip` decoded
// bytes are dropped and `count` sent. A read that fails aborts the response (it ends short).
struct blob_slice {
  std::string key;
  uint64_t from = 0, to = 0;
  bool decode = false;
  uint64_t skip = 0, count = 0;
};
std::shared_ptr<response_stream> blob_stream(coordinator& coord, const db_meta& db, const std::string& doc_id,
                                             blob_slice slice);
// A multipart body with holes (multipart::segments), its blobs' stored bytes read a piece at a
// time as it is sent.
std::shared_ptr<response_stream> segments_stream(coordinator& coord, const db_meta& db, const std::string& doc_id,
                                                 multipart::segments body);

}  // namespace settee
