#include "http/attachment_stream.hpp"

#include "node/crypto.hpp"
#include "node/gzip.hpp"
#include "node/log.hpp"

namespace settee {

namespace {

// Bytes [offset, offset + size) of a spool.
struct span {
  const body_spool* spool;
  uint64_t offset, size;
  status read(uint64_t at, size_t n, std::string& out) const {
    return spool->read(offset + at, static_cast<size_t>(std::min<uint64_t>(n, size - std::min(at, size))), out);
  }
};

span whole(const body_spool& s) {
  return {&s, 0, s.size()};
}

// Runs the bytes of `in` through `z` into a new spool.
result<std::unique_ptr<body_spool>> transform(const span& in, gzip::stream& z, const std::string& dir) {
  auto out = body_spool::create(dir);
  if (!out) return out.error();
  std::string piece, produced;
  for (uint64_t at = 0; at < in.size; at += piece.size()) {
    if (auto st = in.read(at, attachment_piece_bytes, piece); !st) return st;
    produced.clear();
    if (auto st = z.feed(piece, produced); !st) return st;
    if (auto st = (*out)->append(produced.data(), produced.size()); !st) return st;
  }
  produced.clear();
  if (auto st = z.finish(produced); !st) return st;
  if (auto st = (*out)->append(produced.data(), produced.size()); !st) return st;
  return out;
}

// md5 and sha256 of a span's bytes.
status hash(const span& s, std::string& md5, std::string& sha256) {
  crypto::hasher m(crypto::hasher::algo::md5), h(crypto::hasher::algo::sha256);
  std::string piece;
  for (uint64_t at = 0; at < s.size; at += piece.size()) {
    if (auto st = s.read(at, attachment_piece_bytes, piece); !st) return st;
    m.update(piece);
    h.update(piece);
  }
  md5 = m.final();
  std::string raw = h.final();
  sha256 = crypto::to_hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
  return {};
}

}  // namespace

result<json> stage_upload(coordinator& coord, const db_meta& db, const std::string& doc_id, const body_spool& spool,
                          uint64_t offset, uint64_t size, const upload& u, const attachments::policy& p,
                          const std::string& spool_dir) {
  const span body{&spool, offset, size};
  std::string md5, key;
  if (!u.content_md5.empty()) {  // of the bytes as sent
    if (auto st = hash(body, md5, key); !st) return st;
    if (crypto::base64_encode(md5) != u.content_md5)
      return status{errc::content_md5_mismatch, "Possible message corruption."};
  }
  // The identity bytes: the body, or what it decodes to.
  std::unique_ptr<body_spool> decoded, packed;
  span identity = body;
  if (u.encoding == "gzip") {
    gzip::stream z(gzip::stream::mode::decompress, 0, p.max_bytes);
    auto d = transform(body, z, spool_dir);
    if (!d) return d.error();
    decoded = std::move(*d);
    identity = whole(*decoded);
  }
  if (identity.size > p.max_bytes) return status{errc::too_large, "Attachment is larger than max_attachment_size"};
  if (u.identity_length && *u.identity_length != identity.size) {
    return status{errc::bad_request, "Attachment '" + u.name + "' says length " + std::to_string(*u.identity_length) +
                                         " but its part has " + std::to_string(identity.size) + " bytes"};
  }
  // Stored gzip-encoded when the policy says so and that is smaller (attachments::make_entry).
  span stored = identity;
  if (p.compression_level > 0 && identity.size > 0 && p.compressible_type(u.content_type)) {
    gzip::stream z(gzip::stream::mode::compress, p.compression_level);
    auto g = transform(identity, z, spool_dir);
    if (!g) return g.error();
    packed = std::move(*g);
    if (packed->size() < identity.size) stored = whole(*packed);
  }
  if (auto st = hash(stored, md5, key); !st) return st;
  // Every copy stages the stored bytes; one that holds the blob already stops the sending.
  std::string piece;
  uint64_t at = 0;
  do {
    if (auto st = stored.read(at, attachment_piece_bytes, piece); !st) return st;
    auto whole = coord.stage_blob(db, doc_id, key, at, piece);
    if (!whole) {
      coord.drop_staged(db, doc_id, key);
      return whole.error();
    }
    if (*whole) break;
    at += piece.size();
  } while (at < stored.size);
  json e{{"content_type", u.content_type},
         {"digest", "md5-" + crypto::base64_encode(md5)},
         {"length", identity.size},
         {"revpos", u.revpos},
         {"key", key}};
  if (stored.spool != identity.spool) {
    e["encoding"] = "gzip";
    e["encoded_length"] = stored.size;
  }
  return e;
}

namespace {

class blob_reader final : public response_stream {
 public:
  blob_reader(coordinator& coord, db_meta db, std::string doc_id, blob_slice slice)
      : coord_(coord), db_(std::move(db)), doc_id_(std::move(doc_id)), s_(std::move(slice)), at_(s_.from) {
    if (s_.decode) z_ = std::make_unique<gzip::stream>(gzip::stream::mode::decompress);
  }

  pump_result pump(std::string& out) override {
    if (s_.decode && s_.count == 0) return {pump_result::next::done, {}, 0, {}};
    if (at_ >= s_.to) return {s_.decode ? pump_result::next::abort : pump_result::next::done, {}, 0, {}};
    auto piece = coord_.read_blob(db_, doc_id_, s_.key, at_, std::min<uint64_t>(attachment_read_bytes, s_.to - at_));
    if (!piece || piece->empty()) {
      log::warning("attachment " + s_.key + " of " + doc_id_ + " in " + db_.name + " ended short at " +
                   std::to_string(at_) + (piece ? "" : ": " + piece.error().reason));
      return {pump_result::next::abort, {}, 0, {}};
    }
    at_ += piece->size();
    if (!s_.decode) {
      out = std::move(*piece);
      return {};
    }
    std::string plain;
    if (auto st = z_->feed(*piece, plain); !st) {
      log::warning("attachment " + s_.key + " of " + doc_id_ + " in " + db_.name + " does not decode");
      return {pump_result::next::abort, {}, 0, {}};
    }
    uint64_t drop = std::min<uint64_t>(s_.skip, plain.size());
    s_.skip -= drop;
    uint64_t take = std::min<uint64_t>(s_.count, plain.size() - drop);
    s_.count -= take;
    out.assign(plain, drop, take);
    return {};
  }

 private:
  coordinator& coord_;
  db_meta db_;
  std::string doc_id_;
  blob_slice s_;
  uint64_t at_;
  std::unique_ptr<gzip::stream> z_;
};

class segment_reader final : public response_stream {
 public:
  segment_reader(coordinator& coord, db_meta db, std::string doc_id, multipart::segments body)
      : coord_(coord), db_(std::move(db)), doc_id_(std::move(doc_id)), body_(std::move(body)) {}

  pump_result pump(std::string& out) override {
    for (;;) {
      if (blob_) {
        pump_result r = blob_->pump(out);
        if (r.then != pump_result::next::done) return r;
        blob_.reset();
      }
      if (next_ == body_.size()) return {pump_result::next::done, {}, 0, {}};
      multipart::segment& s = body_[next_++];
      if (s.key.empty()) {
        out = std::move(s.text);
        return {};
      }
      blob_ = std::make_unique<blob_reader>(coord_, db_, doc_id_, blob_slice{s.key, 0, s.length});
    }
  }

 private:
  coordinator& coord_;
  db_meta db_;
  std::string doc_id_;
  multipart::segments body_;
  size_t next_ = 0;
  std::unique_ptr<blob_reader> blob_;
};

}  // namespace

std::shared_ptr<response_stream> segments_stream(coordinator& coord, const db_meta& db, const std::string& doc_id,
                                                 multipart::segments body) {
  return std::make_shared<segment_reader>(coord, db, doc_id, std::move(body));
}

std::shared_ptr<response_stream> blob_stream(coordinator& coord, const db_meta& db, const std::string& doc_id,
                                             blob_slice slice) {
  return std::make_shared<blob_reader>(coord, db, doc_id, std::move(slice));
}

}  // namespace settee
