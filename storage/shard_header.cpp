#include "storage/shard_header.hpp"
#include "storage/time_seq_codec.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/array.h>
#include <kj/exception.h>

#include <cstring>

#include "storage/schema/shard_header.capnp.h"

namespace settee {

namespace {

// capnp needs word-aligned input; LMDB values have no alignment guarantee, so copy.
kj::Array<capnp::word> aligned_copy(std::string_view bytes) {
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), words.size() * sizeof(capnp::word));
  return words;
}

// Ends a format-2 header (see current_format): not a whole word, so releases before 0.3 refuse it.
constexpr std::string_view format2_trailer{"SPL\x02", 4};

// The Cap'n Proto message of a stored header (without a format-2 trailer).
std::string_view message_of(std::string_view bytes) {
  if (bytes.size() % sizeof(capnp::word) == format2_trailer.size() &&
      bytes.substr(bytes.size() - format2_trailer.size()) == format2_trailer)
    bytes.remove_suffix(format2_trailer.size());
  return bytes;
}

}  // namespace

bool shard_header::decode(const std::string& stored, shard_header& out) {
  std::string_view bytes = message_of(stored);
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) return false;
  try {
    auto words = aligned_copy(bytes);
    capnp::ReaderOptions opts;
    opts.traversalLimitInWords = 1u << 26;
    capnp::FlatArrayMessageReader msg(words, opts);
    auto h = msg.getRoot<ShardHeader>();
    out.format_version = h.getFormatVersion();
    out.shard_uuid = h.getShardUuid();
    out.epochs.clear();
    for (auto e : h.getEpochs()) out.epochs.emplace_back(e.getNode(), e.getSeq());
    out.update_seq = h.getUpdateSeq();
    out.revs_limit = h.getRevsLimit();
    out.security = h.getSecurity();
    out.doc_count = h.getDocCount();
    out.doc_del_count = h.getDocDelCount();
    out.created_at = h.getCreatedAt();
    out.external_size = h.getExternalSize();
    out.sealed = h.getSealed();
    out.purge_seq = h.getPurgeSeq();
    out.purged_infos_limit = h.getPurgedInfosLimit();
    out.time_seq = h.hasTimeSeq() ? read_time_seq(h.getTimeSeq()) : time_seq::tseq{};
    return true;
  } catch (const kj::Exception&) {
    return false;
  }
}

std::string shard_header::encode(const std::string& stored) const {
  std::string_view previous = message_of(stored);
  capnp::MallocMessageBuilder msg;
  bool copied = false;
  if (!previous.empty() && previous.size() % sizeof(capnp::word) == 0) {
    try {
      auto words = aligned_copy(previous);
      capnp::FlatArrayMessageReader old(words);
      msg.setRoot(old.getRoot<ShardHeader>());  // deep copy keeps unknown fields
      copied = true;
    } catch (const kj::Exception&) {
    }
  }
  auto h = copied ? msg.getRoot<ShardHeader>() : msg.initRoot<ShardHeader>();
  h.setFormatVersion(format_version);
  h.setShardUuid(shard_uuid);
  auto ep = h.initEpochs(static_cast<unsigned>(epochs.size()));
  for (size_t i = 0; i < epochs.size(); ++i) {
    ep[i].setNode(epochs[i].first);
    ep[i].setSeq(epochs[i].second);
  }
  h.setUpdateSeq(update_seq);
  h.setRevsLimit(revs_limit);
  h.setSecurity(security);
  h.setDocCount(doc_count);
  h.setDocDelCount(doc_del_count);
  h.setCreatedAt(created_at);
  h.setExternalSize(external_size);
  h.setSealed(sealed);
  h.setPurgeSeq(purge_seq);
  h.setPurgedInfosLimit(purged_infos_limit);
  write_time_seq(h.initTimeSeq(), time_seq);
  // The init* calls above orphan the copied lists, which stay in the message as zeroed words; a
  // second deep copy keeps only what is reachable. Without it a header with 60 time-seq bins
  // doubles to ~2.2 KB, past what LMDB keeps in a 4 KB page, and every commit writes an overflow
  // page (measured: 4% fewer commits/s, bench/commit_cost.cpp).
  capnp::MallocMessageBuilder compact;
  compact.setRoot(h.asReader());
  auto flat = capnp::messageToFlatArray(compact);
  auto bytes = flat.asBytes();
  std::string out(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
  if (format_version >= split_catalog_format) out += format2_trailer;
  return out;
}

void write_time_seq(TimeSeq::Builder b, const time_seq::tseq& t) {
  b.setVersion(t.v);
  b.setResetSeq(t.reset_seq);
  b.setResetUntil(t.reset_until);
  b.setInheritedSeq(t.inherited_seq);
  b.setCountedFrom(t.counted_from);
  auto times = b.initTimes(static_cast<unsigned>(t.bins.size()));
  auto seqs = b.initSeqs(static_cast<unsigned>(t.bins.size()));
  for (unsigned i = 0; i < t.bins.size(); ++i) {
    times.set(i, t.bins[i].time);
    seqs.set(i, t.bins[i].seq);
  }
}

time_seq::tseq read_time_seq(TimeSeq::Reader r) {
  time_seq::tseq out;
  auto times = r.getTimes();
  auto seqs = r.getSeqs();
  if (r.getVersion() != time_seq::version || times.size() != seqs.size()) return out;
  for (unsigned i = 0; i < times.size(); ++i) out.bins.push_back({times[i], seqs[i]});
  out.reset_seq = r.getResetSeq();
  out.reset_until = r.getResetUntil();
  out.inherited_seq = r.getInheritedSeq();
  out.counted_from = r.getCountedFrom();
  return out;
}

}  // namespace settee
