// time_seq_codec: the one wire form of a time-seq (schema/shard_header.capnp's TimeSeq), written
// into a shard header and sent to other nodes (cluster_rpc.capnp's timeSeq imports the same struct).
#pragma once
#include "storage/schema/shard_header.capnp.h"
#include "storage/time_seq.hpp"

namespace settee {

void write_time_seq(TimeSeq::Builder b, const time_seq::tseq& t);
// Another version, or times and seqs that do not pair up: no bins.
time_seq::tseq read_time_seq(TimeSeq::Reader r);

}  // namespace settee
