#include "storage/import_batch.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include "node/json.hpp"
#include "storage/attachments.hpp"
#include "storage/doc_key.hpp"
#include "storage/schema/import_batch.capnp.h"

namespace settee {

result<import_batch> import_batch::read(const shard_store::snapshot& snap, uint64_t since, size_t limit,
                                        size_t max_bytes, bool with_local) {
  import_batch b;
  b.since_ = since;
  b.complete_ = true;
  b.with_local_ = with_local;
  size_t bytes = 0;
  snap.scan_changes(since, [&](const change_entry& c) {
    if (b.changes_.size() == limit || (bytes >= max_bytes && !b.changes_.empty())) {
      b.complete_ = false;
      return false;
    }
    doc_info d;
    if (!snap.doc(c.id, d)) return false;  // by_seq names a document docs lacks: the fault says
    for (size_t i = 0; i < d.tree.nodes().size(); ++i) {
      std::string body;
      const rev_id rev = d.tree.rev(static_cast<int>(i));
      if (!snap.body(c.id, rev, body)) continue;  // compacted away
      if (body.find("\"_attachments\"") != std::string::npos) {
        auto parsed = parse_json(body);
        for (const std::string& k : parsed ? attachments::keys_of(*parsed) : std::vector<std::string>{}) {
          if (b.blobs_.count(k)) continue;
          std::string blob;
          if (!snap.blob(k, blob)) {
            if (snap.fault()) b.fault_ = {errc::internal, "blob " + k + " of " + c.id + " is missing"};
            return false;
          }
          bytes += blob.size();
          b.blobs_.emplace(k, std::move(blob));
        }
      }
      bytes += body.size();
      b.bodies_.emplace(doc_key::body(c.id, rev), std::move(body));
    }
    b.changes_.push_back({c.seq, c.id, "", false, {}, c.time_s});
    b.docs_.emplace(c.id, std::move(d));
    return true;
  });
  if (!snap.fault()) return snap.fault();
  if (!b.fault_) return b.fault_;
  shard_header h;
  if (!snap.header(h)) return snap.fault();
  b.header_ = h.encode("");
  snap.scan_purges(0, [&](const purge_info& p) {
    b.purges_.push_back(p);
    doc_info d;
    if (!snap.doc(p.id, d)) b.gone_.insert(p.id);
    return true;
  });
  if (!snap.fault()) return snap.fault();
  if (with_local) {
    snap.scan_local([&](const local_doc& l) {
      b.locals_.push_back(l);
      return true;
    });
    if (!snap.fault()) return snap.fault();
  }
  return b;
}

std::string import_batch::encode() const {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<ImportBatch>();
  root.setSince(since_);
  root.setComplete(complete_);
  root.setWithLocal(with_local_);
  root.setHeader(capnp::Data::Reader(reinterpret_cast<const kj::byte*>(header_.data()), header_.size()));
  auto changes = root.initChanges(static_cast<unsigned>(changes_.size()));
  for (size_t i = 0; i < changes_.size(); ++i) {
    const change_entry& c = changes_[i];
    const doc_info& d = docs_.find(c.id)->second;
    auto out = changes[static_cast<unsigned>(i)];
    out.setSeq(c.seq);
    out.setId(c.id);
    out.setTimeS(c.time_s);
    codec::writer w;
    d.tree.encode(w);
    out.setTree(capnp::Data::Reader(reinterpret_cast<const kj::byte*>(w.data().data()), w.data().size()));
    std::vector<std::pair<uint32_t, const std::string*>> stored;
    for (size_t n = 0; n < d.tree.nodes().size(); ++n) {
      auto it = bodies_.find(doc_key::body(c.id, d.tree.rev(static_cast<int>(n))));
      if (it != bodies_.end()) stored.emplace_back(static_cast<uint32_t>(n), &it->second);
    }
    auto bodies = out.initBodies(static_cast<unsigned>(stored.size()));
    for (size_t k = 0; k < stored.size(); ++k) {
      bodies[static_cast<unsigned>(k)].setNode(stored[k].first);
      bodies[static_cast<unsigned>(k)].setBody(*stored[k].second);
    }
  }
  auto purges = root.initPurges(static_cast<unsigned>(purges_.size()));
  for (unsigned i = 0; i < purges_.size(); ++i) {
    purges[i].setSeq(purges_[i].seq);
    purges[i].setUuid(purges_[i].uuid);
    purges[i].setId(purges_[i].id);
    auto revs = purges[i].initRevs(static_cast<unsigned>(purges_[i].revs.size()));
    for (unsigned k = 0; k < purges_[i].revs.size(); ++k) revs.set(k, purges_[i].revs[k].str());
    purges[i].setGone(gone_.count(purges_[i].id) > 0);
  }
  auto locals = root.initLocals(static_cast<unsigned>(locals_.size()));
  for (size_t i = 0; i < locals_.size(); ++i) {
    locals[static_cast<unsigned>(i)].setId(locals_[i].id);
    locals[static_cast<unsigned>(i)].setRev(locals_[i].rev);
    locals[static_cast<unsigned>(i)].setBody(locals_[i].body);
  }
  auto blobs = root.initBlobs(static_cast<unsigned>(blobs_.size()));
  unsigned at = 0;
  for (auto& [key, bytes] : blobs_) {
    blobs[at].setKey(key);
    blobs[at++].setBytes(capnp::Data::Reader(reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size()));
  }
  auto flat = capnp::messageToFlatArray(message);
  auto chars = flat.asChars();
  return std::string(chars.begin(), chars.size());
}

std::optional<import_batch> import_batch::decode(std::string_view bytes) {
  if (bytes.size() % sizeof(capnp::word) != 0) return std::nullopt;
  try {
    // The text is copied to aligned words: a std::string's buffer need not be.
    kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
    std::memcpy(words.begin(), bytes.data(), bytes.size());
    capnp::ReaderOptions options;
    options.traversalLimitInWords = 1ull << 30;
    capnp::FlatArrayMessageReader message(words, options);
    auto root = message.getRoot<ImportBatch>();
    import_batch b;
    b.since_ = root.getSince();
    b.complete_ = root.getComplete();
    b.with_local_ = root.getWithLocal();
    auto header = root.getHeader();
    b.header_.assign(reinterpret_cast<const char*>(header.begin()), header.size());
    for (auto c : root.getChanges()) {
      doc_info d;
      d.id = c.getId();
      d.seq = c.getSeq();
      auto tree = c.getTree();
      codec::reader r(std::string_view(reinterpret_cast<const char*>(tree.begin()), tree.size()));
      if (!rev_tree::decode(r, d.tree) || !r.done() || d.tree.empty()) return std::nullopt;
      for (auto body : c.getBodies()) {
        if (body.getNode() >= d.tree.nodes().size()) return std::nullopt;
        b.bodies_.emplace(doc_key::body(d.id, d.tree.rev(static_cast<int>(body.getNode()))), body.getBody());
      }
      b.changes_.push_back({d.seq, d.id, "", false, {}, c.getTimeS()});
      b.docs_.emplace(d.id, std::move(d));
    }
    for (auto l : root.getLocals()) b.locals_.push_back({l.getId(), l.getRev(), l.getBody()});
    for (auto p : root.getPurges()) {
      purge_info info{p.getSeq(), p.getUuid(), p.getId(), {}};
      for (auto r : p.getRevs()) {
        rev_id rev;
        if (!parse_rev(r.cStr(), rev)) return std::nullopt;
        info.revs.push_back(std::move(rev));
      }
      if (p.getGone()) b.gone_.insert(info.id);
      b.purges_.push_back(std::move(info));
    }
    for (auto blob : root.getBlobs()) {
      auto data = blob.getBytes();
      b.blobs_.emplace(blob.getKey(), std::string(reinterpret_cast<const char*>(data.begin()), data.size()));
    }
    return b;
  } catch (const kj::Exception&) {
    return std::nullopt;
  }
}

void import_batch::scan_changes(uint64_t since, const std::function<bool(const change_entry&)>& visit) const {
  for (const change_entry& c : changes_) {
    if (c.seq > since && !visit(c)) return;
  }
}

bool import_batch::doc(std::string_view id, doc_info& out) const {
  auto it = docs_.find(id);
  if (it == docs_.end()) return false;
  out = it->second;
  return true;
}

bool import_batch::body(std::string_view id, const rev_id& rev, std::string& out) const {
  auto it = bodies_.find(doc_key::body(id, rev));
  if (it == bodies_.end()) return false;
  out = it->second;
  return true;
}

bool import_batch::blob(std::string_view key, std::string& out) const {
  auto it = blobs_.find(key);
  if (it == blobs_.end()) return false;
  out = it->second;
  return true;
}

bool import_batch::header(shard_header& out) const {
  return shard_header::decode(header_, out);
}

void import_batch::scan_local(const std::function<bool(const local_doc&)>& visit) const {
  for (const local_doc& l : locals_) {
    if (!visit(l)) return;
  }
}

void import_batch::scan_purges(uint64_t since, const std::function<bool(const purge_info&)>& visit) const {
  for (const purge_info& p : purges_)
    if (p.seq > since && !visit(p)) return;
}

}  // namespace settee
