# A piece of one shard's history on its way to another node (storage/import_batch.hpp): what a
# shard move's target imports. It travels inside one node-protocol call; never stored.
@0xd2c94b7e1a3f5068;

struct ImportBatch {
  changes @0 :List(Change);
  header @1 :Data;          # the source's header (shard_header::encode) as of the batch's snapshot
  complete @2 :Bool;        # every change after the batch's `since` is in it
  withLocal @3 :Bool;       # `locals` holds every _local document
  locals @4 :List(Local);
  blobs @5 :List(Blob);     # the attachment bytes the bodies name
  since @6 :UInt64;         # the batch holds the changes after this seq
  purges @7 :List(Purge);   # release 0.4: every purge request the source keeps (storage/purge_log.hpp)

  struct Change {
    seq @0 :UInt64;
    id @1 :Text;
    timeS @2 :Int64;        # commit time
    tree @3 :Data;          # the document's whole revision tree (rev_tree::encode)
    bodies @4 :List(Body);  # every body the source stores, by tree index
  }
  struct Body {
    node @0 :UInt32;
    body @1 :Text;
  }
  struct Local {
    id @0 :Text;
    rev @1 :UInt64;
    body @2 :Text;
  }
  struct Purge {
    seq @0 :UInt64;
    uuid @1 :Text;
    id @2 :Text;
    revs @3 :List(Text);
    gone @4 :Bool;          # the source holds no document of this id (purged whole)
  }
  struct Blob {
    key @0 :Text;
    bytes @1 :Data;
  }
}
