# A stand-in for a future release's header: ShardHeader's fields 0-10 plus one more. Used to check
# that this release keeps fields it does not know when it rewrites a header (storage/FORMAT.md).
@0xd71f3c2a9b8e4f10;

struct EpochNext {
  node @0 :Text;
  seq @1 :UInt64;
}

struct ShardHeaderNext {
  formatVersion @0 :UInt32;
  shardUuid @1 :Text;
  epochs @2 :List(EpochNext);
  updateSeq @3 :UInt64;
  revsLimit @4 :UInt32 = 1000;
  security @5 :Text;
  docCount @6 :UInt64;
  docDelCount @7 :UInt64;
  createdAt @8 :Int64;
  externalSize @9 :UInt64;
  timeSeq @10 :TimeSeqNext;
  future @11 :List(UInt64);
}

struct TimeSeqNext {
  version @0 :UInt32;
  times @1 :List(Int64);
  seqs @2 :List(UInt64);
  resetSeq @3 :UInt64;
  resetUntil @4 :Int64;
}
