# The header of one shard replica file, stored under key "header" in the `meta` sub-db.
# Evolution rules (storage/FORMAT.md): fields are only appended with the next ordinal; never
# renumbered, retyped or removed; defaults never change. Older binaries ignore newer fields, and a
# rewrite deep-copies the old header first so they survive.
@0xc4a0e1d5b2f3a901;

struct Epoch {
  node @0 :Text;    # the node that owned this copy from `seq` on
  seq @1 :UInt64;
}

struct ShardHeader {
  formatVersion @0 :UInt32;
  shardUuid @1 :Text;         # 32 hex digits, random at creation; its prefix goes into clustered seqs
  epochs @2 :List(Epoch);
  updateSeq @3 :UInt64;
  revsLimit @4 :UInt32 = 1000;
  security @5 :Text;          # the _security object as JSON text ("" = {})
  docCount @6 :UInt64;        # documents whose winner is live
  docDelCount @7 :UInt64;     # documents whose winner is a tombstone
  createdAt @8 :Int64;        # creation time (unix seconds) of the database this shard belongs to
  externalSize @9 :UInt64;    # bytes of leaf bodies stored
  timeSeq @10 :TimeSeq;       # release 0.2: time -> update seq bins (absent: none yet)
  sealed @11 :Bool;           # release 0.3: a moving copy between its seal and the map switch
                              # refuses writes, after a restart too (actors/resharder.hpp)
  purgeSeq @12 :UInt64;       # release 0.4: purge requests applied (storage/FORMAT.md `purges`)
  purgedInfosLimit @13 :UInt32 = 1000;  # release 0.4: purge requests kept (_purged_infos_limit)
}

# CouchDB's time-seq (spec/time_seq.md): bins youngest first, times[i] pairs with seqs[i].
struct TimeSeq {
  version @0 :UInt32;         # 1; another version is not understood and reads as no bins
  times @1 :List(Int64);      # bin start, unix seconds, multiples of 10800
  seqs @2 :List(UInt64);      # update seq when the bin began
  # Release 0.3 (settee's own): what a reset forgot, time_seq::tseq::reset_seq/reset_until.
  resetSeq @3 :UInt64;
  resetUntil @4 :Int64;
  # Release 0.5 (settee's own): a split's lineage, time_seq::tseq::inherited_seq/counted_from. A
  # release before 0.5 rewriting the header drops them: the children then count their parent's
  # changes again in the database's histogram (since=<time> is unaffected).
  inheritedSeq @5 :UInt64;
  countedFrom @6 :UInt64;
}
