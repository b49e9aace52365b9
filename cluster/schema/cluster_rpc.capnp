# settee's node-to-node RPC (Cap'n Proto, one TCP connection per peer direction).
# Evolution rules as for the shard header: methods and fields are only appended; a peer that does
# not know a method answers "unimplemented", which callers treat as an answer, not a crash.
@0xe2b7a5c13f9d4c01;

struct Hello {
  name @0 :Text;             # node name, e.g. "settee@10.0.0.1"
  release @1 :Text;          # e.g. "0.1.0"
  features @2 :List(Text);   # what this release can do, e.g. "changes", "clustered-seq-v1"
  rpcHost @3 :Text;          # where to dial this node back
  rpcPort @4 :UInt16;
  httpPort @5 :UInt16;
}

interface Node {
  # Exchanged first on every connection: who you are, what you run.
  handshake @0 (hello :Hello) -> (hello :Hello);
  # Liveness; callers put a deadline on it.
  ping @1 () -> ();
}
