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
  # Release 0.3: proof of the cluster secret (docs/security.md). `nonce` is the sender's fresh
  # random hex; `proof` is HMAC-SHA256(secret, role | the challenger's nonce | nonce | name) in hex.
  # Empty from older releases, which a node accepts only with [cluster] accept_legacy_peers = true.
  nonce @6 :Text;
  proof @7 :Text;
}

interface Node {
  # Exchanged first on every connection: who you are, what you run.
  handshake @0 (hello :Hello) -> (hello :Hello);
  # Liveness; callers put a deadline on it.
  ping @1 () -> ();
  # The local copy of a shard range: its uuid and update seq.
  shardInfo @2 (shard :ShardRef) -> (status :CallStatus, uuid :Text, updateSeq :UInt64,
                                     docCount :UInt64, docDelCount :UInt64, externalSize :UInt64, fileSize :UInt64,
                                     revsLimit :UInt32, purgeSeq :UInt64);
      # revsLimit: release 0.3 (0 from older nodes); purgeSeq: 0.4 (0 from older nodes)
  # Merges replicated leaves into the local copy (committed with fsync before the answer).
  applyChanges @3 (shard :ShardRef, updates :List(DocUpdate)) -> (status :CallStatus, applied :UInt32, updateSeq :UInt64);
  # A coordinator's write to this node's copy (each update new_edits or not, as it says);
  # answered after the fsync, one result per update, in order.
  updateDocs @4 (shard :ShardRef, updates :List(DocUpdate)) -> (status :CallStatus, results :List(DocResult));
  # A page of this copy's changes, for a coordinator that holds no copy of the range.
  # `notBefore` (appended, 0.2): first skip the changes committed before this time (Unix seconds,
  # 0 = none); `skippedTo` says where the rows start (0 = nothing skipped). An older node ignores it.
  # `attachments`, `attEncodingInfo` (appended, 0.3): documents with their attachments' bytes / encoding.
  changesPage @5 (shard :ShardRef, since :UInt64, limit :UInt32, descending :Bool, withDocs :Bool, conflicts :Bool,
                  notBefore :Int64, attachments :Bool, attEncodingInfo :Bool)
      -> (status :CallStatus, rows :List(ChangeRow), pending :UInt64, skippedTo :UInt64);
  # Where a feed that read copy `uuidPrefix` up to `seq` continues on this copy (exact when it is
  # this copy; translated through the replication checkpoints; else rewound to 0).
  resolveSince @6 (shard :ShardRef, uuidPrefix :Text, seq :UInt64)
      -> (status :CallStatus, uuid :Text, updateSeq :UInt64, seq :UInt64, resolution :UInt8);
  # GET of one document as a client asked for it (query parameters, If-None-Match), rendered
  # from this node's copy, for a coordinator that holds no copy of the range.
  # `what` (appended): "local", "bulk_get" or "revs_diff" instead of a document, with `method`/`body`.
  readDoc @7 (shard :ShardRef, id :Text, params :List(Param), ifNoneMatch :Text,
              what :Text, method :Text, body :Text)
      -> (status :CallStatus, httpStatus :UInt16, body :Text, etag :Text);
  # This copy's part of an _all_docs request (keys are JSON texts, "" = unbounded);
  # `attachments`, `attEncodingInfo` appended in 0.3.
  allDocsPage @8 (shard :ShardRef, startKey :Text, endKey :Text, descending :Bool, inclusiveEnd :Bool,
                  includeDocs :Bool, conflicts :Bool, maxRows :UInt64, byKeys :Bool, keys :List(Text),
                  attachments :Bool, attEncodingInfo :Bool, withDeleted :Bool)
      -> (status :CallStatus, rows :List(AllDocsRow), before :UInt64, docCount :UInt64);
      # withDeleted (0.4): tombstones listed too (a partition's info counts them)
  # Release 0.2: this copy's time-seq bins (reset: emptied first, committed before the answer).
  timeSeq @9 (shard :ShardRef, reset :Bool) -> (status :CallStatus, bins :TimeSeq, updateSeq :UInt64);
  # Release 0.3: the first call on every connection. The server's fresh nonce, good for one
  # handshake on this connection; every other method is refused until that handshake proved the
  # cluster secret. An older node answers "unimplemented".
  challenge @10 () -> (nonce :Text);

  # Release 0.3, the typed document calls (a node announces them with the feature
  # "typed-copies-v1"; readDoc stays for 0.2 nodes). Documents travel as data: each document's rev
  # tree in the shard file's own encoding (storage/FORMAT.md, validated on decode) and its stored
  # bodies; the coordinator renders them once.
  # The documents `ids` of this copy, in order, found or not; `bodies`: the leaves' stored bodies,
  # with `allBodies` (appended in 0.3 with old revisions kept until compaction) every stored body.
  openDocs @11 (shard :ShardRef, ids :List(Text), bodies :Bool, allBodies :Bool)
      -> (status :CallStatus, docs :List(DocCopy));
  # A _local document of this copy.
  localDoc @12 (shard :ShardRef, id :Text) -> (status :CallStatus, found :Bool, rev :UInt64, body :Text);
  # Writes (or, deleted, removes) a _local document on this copy; committed before the answer.
  writeLocal @13 (shard :ShardRef, id :Text, rev :UInt64, deleted :Bool, body :Text)
      -> (status :CallStatus, rev :UInt64);
  # Every _local document of this copy.
  localDocs @14 (shard :ShardRef) -> (status :CallStatus, docs :List(LocalDoc));
  # Sets this copy's revs_limit; committed before the answer.
  setRevsLimit @15 (shard :ShardRef, limit :UInt32) -> (status :CallStatus);
  # This node's update log (the `updated` rows of _db_updates) after `seq`, up to `limit` rows. When
  # `uuid` is not the log's own uuid prefix, from its start. `uuid` and `top` in the answer: the
  # log's uuid prefix and its update seq at the read.
  dbUpdates @16 (uuid :Text, seq :UInt64, limit :UInt32)
      -> (status :CallStatus, uuid :Text, top :UInt64, rows :List(DbUpdateRow));
  # Release 0.3 (feature attachments-v1): at most `length` stored bytes of an attachment's blob
  # from `offset`, by blob key, from this copy (a large one is read in pieces).
  readBlob @17 (shard :ShardRef, key :Text, offset :UInt64 = 0, length :UInt64 = 0xffffffffffffffff)
      -> (status :CallStatus, bytes :Data);
  # Stages a piece of a large blob on this copy, committed before the answer (blob_store::stage):
  # `whole` when the copy holds all of it already. dropStaged forgets a blob that is only staged.
  stageBlob @18 (shard :ShardRef, key :Text, offset :UInt64, piece :Data) -> (status :CallStatus, whole :Bool);
  dropStaged @19 (shard :ShardRef, key :Text) -> (status :CallStatus);
  # Release 0.3 (feature tasks-v1): queues compaction of this node's copies of database `db`
  # (answered once queued), and this node's background tasks as GET /_active_tasks shows them
  # (one JSON object per task).
  compactDb @20 (db :Text) -> (status :CallStatus);
  activeTasks @21 () -> (status :CallStatus, tasks :List(Text));
  # Release 0.3 (feature reshard-v1), a shard move's calls from the node the copy moves to
  # (actors/resharder.hpp): this node's copy of a range after `since` as an import batch
  # (storage/schema/import_batch.capnp); its seal (or unseal) and seq once drained; and, once the
  # map moved it, waiting for its readers (remove = false) or deleting it at `endSeq`.
  exportChanges @22 (shard :ShardRef, since :UInt64, withLocal :Bool) -> (status :CallStatus, batch :Data);
  sealCopy @23 (shard :ShardRef, seal :Bool) -> (status :CallStatus, updateSeq :UInt64);
  retireCopy @24 (db :Text, shardId :Text, endSeq :UInt64, remove :Bool) -> (status :CallStatus);
  # Creates a job on this node from what POST /_reshard/jobs on another node resolved: a move
  # (this node the target) or a split following the leader's (several copies); the job as JSON.
  createJob @25 (body :Text) -> (status :CallStatus, job :Text);
  # A /_reshard/jobs request answered from this node's jobs only: GET with an empty `id` lists
  # them; otherwise GET|DELETE /_reshard/jobs/<id> or, with `state`, GET|PUT .../<id>/state.
  # The HTTP status and JSON body it would answer (404 when the job is not here).
  reshardRequest @26 (method :Text, id :Text, state :Bool, body :Text) -> (code :UInt16, body :Text);
  # A split of a range with copies on several nodes, from its leader: seal this node's copy of
  # the parent (recorded), run its job's last pass; its end seq and uuid. "conflict" while the job
  # here is not waiting at update_shardmap.
  splitSeal @27 (db :Text, shardId :Text) -> (status :CallStatus, endSeq :UInt64, uuid :Text);
  # What this node's GET /_node/_local/_system says (release 0.4, "node-status-v1"): any node
  # answers /_node/<this node>/_system, and the page shows every member's figures.
  nodeStatus @28 () -> (status :CallStatus, node :NodeStatus);
  # Release 0.4 (feature "members-v1"), the node-level calls of actors/members.hpp: this node's
  # resharding state, set first when `set` (PUT /_reshard/state on any node sets every member's).
  reshardState @29 (set :Bool, running :Bool, reason :Text) -> (status :CallStatus, running :Bool, reason :Text);
  # This node's reshard jobs, typed (release 0.3's reshardRequest and createJob stay for 0.3
  # callers): the list; a job stopped, resumed (`remove` false) or removed; a job made here.
  reshardJobs @30 () -> (status :CallStatus, jobs :List(ReshardJob));
  editReshardJob @31 (id :Text, remove :Bool, running :Bool, reason :Text) -> (status :CallStatus);
  newReshardJob @32 (job :NewJob) -> (status :CallStatus, made :ReshardJob);
  # Release 0.4 (issue 31): this copy's part of a view query. Its index of design document
  # `ddocId` at `rev` (the document's JSON in `ddoc`; `signature` the index the coordinator
  # expects) brought up to date first when `update`, then the rows between `low` and `high` in
  # the query's direction, at most `limit`; `total` the view's rows, `before` (with countBefore)
  # the rows before the range's start in its direction; `lazy` (with update false): updated after
  # the answer; `countRange`: `counted` the rows in the range (a _count reduce, no rows read);
  # `reduce` (a built-in, actors/view_reduce.hpp): the range reduced here, in `reduction`;
  # `grouped`: the rows are the range's groups (`groupLevel`, -1 exact) reduced here by `reduce`
  # (255: the view's JavaScript function); `describe`: `uuid` and the sizes are filled;
  # `compacting`: a compaction of the index is queued or running. An older node answers "unimplemented".
  viewRows @33 (shard :ShardRef, ddocId :Text, rev :Text, ddoc :Text, signature :Text, view :UInt32,
                low :ViewBound, high :ViewBound, descending :Bool, limit :UInt64, update :Bool,
                countBefore :Bool, lazy :Bool, countRange :Bool, reduce :UInt8, grouped :Bool,
                groupLevel :Int64, describe :Bool, partition :Text)
      -> (status :CallStatus, rows :List(ViewRow), total :UInt64, before :UInt64, indexedSeq :UInt64,
          copySeq :UInt64, diskSize :UInt64, activeSize :UInt64, updating :Bool, counted :UInt64,
          reduction :Text, uuid :Text, compacting :Bool, purgeSeq :UInt64);
  # Release 0.4 (views-v1): POST /db/_view_cleanup on this node's copies of `db`: the index files
  # whose signature is not in `keep` go.
  viewCleanup @34 (db :Text, keep :List(Text)) -> (status :CallStatus);
  # Release 0.4 (views-v1): POST /db/_compact/ddoc on this node's copies of `db`: their index files
  # of design document `ddocId` (revision `rev`, its JSON `ddoc`) compacted in the background.
  compactViews @35 (db :Text, ddocId :Text, rev :Text, ddoc :Text) -> (status :CallStatus);
  # Release 0.4 (views-v1, issue 32): this copy's part of a _find on a JSON index
  # (actors/shard_copy.hpp mango_copy_request): the index `signature` (kept from now on, built in
  # the background when new, answered from a scan until built), the rows of `ranges` after `after`
  # whose documents match `selector`, at most `limit`, each with its position and document; with
  # `estimate`, no rows but `estimated`, how many rows the ranges hold (a planner's choice);
  # `covered`: the ranges hold only matches (the selector is not evaluated on an index's rows).
  mangoRows @36 (shard :ShardRef, signature :Text, definition :Text, selector :Text, ranges :List(KeyRange),
                 descending :Bool, after :Data, limit :UInt64, conflicts :Bool, estimate :Bool,
                 covered :Bool)
      -> (status :CallStatus, rows :List(MangoRow), keysExamined :UInt64, docsExamined :UInt64, built :Bool,
          estimated :UInt64);
  # Release 0.4 (purge-v1, issue 35): applies purge requests on this copy (committed before the
  # answer): per request, the leaves it removed; a request the copy applied already removes nothing.
  # The coordinator's fan-out and internal replication (a copy that missed some) use the same call.
  purgeDocs @37 (shard :ShardRef, purges :List(PurgeInfo)) -> (status :CallStatus, purged :List(RevList));
  # At most `limit` of this copy's purge requests after `since`, its purge seq, the oldest it keeps
  # and its purged_infos_limit.
  purgeInfos @38 (shard :ShardRef, since :UInt64, limit :UInt32)
      -> (status :CallStatus, infos :List(PurgeInfo), purgeSeq :UInt64, oldest :UInt64, limit :UInt32);
  setPurgedInfosLimit @39 (shard :ShardRef, limit :UInt32) -> (status :CallStatus);
  # Release 0.5 (issue 52): /_node/<this node>/_config asked on another member. `path` is what
  # follows `_config`; the answer is the HTTP status and JSON body this node's own
  # /_node/_local/_config gives, and whether the change waits for a restart. An older node
  # answers "unimplemented".
  configRequest @40 (method :Text, path :List(Text), body :Text, persist :Bool)
      -> (status :CallStatus, code :UInt16, body :Text, restart :Bool);
  # Release 0.5 (feature search-v1, issue 54): this copy's part of a full-text query, both ways as
  # search/search_query.hpp's JSON text (encode_request, encode_page): its index of the design
  # document's search index brought up to date first when asked, then the query's term
  # statistics, its hits (scored from the statistics given) or the index described. An older
  # node answers "unimplemented".
  searchCopy @41 (shard :ShardRef, request :Text) -> (status :CallStatus, page :Text);
}

# A purge request (storage/purge_log.hpp); seq is the sender copy's (0 in a request to apply).
struct PurgeInfo {
  seq @0 :UInt64;
  uuid @1 :Text;
  id @2 :Text;
  revs @3 :List(RevId);
}

struct RevList {
  revs @0 :List(RevId);
}

# [low, high) positions of a JSON index (storage/json_index.hpp).
struct KeyRange {
  low @0 :Data;
  high @1 :Data;
}

struct MangoRow {
  pos @0 :Data;
  doc @1 :Text;  # JSON
}

# One end of a view range (storage/view_store.hpp view_bound): the key's collation sort key.
struct ViewBound {
  set @0 :Bool;
  sortKey @1 :Data;
  hasDocId @2 :Bool;
  docId @3 :Text;
  inclusive @4 :Bool;
}

struct ViewRow {
  id @0 :Text;
  key @1 :Text;           # JSON
  value @2 :Text;         # JSON
  pos @3 :Data;           # its position in the index (storage/view_store.hpp view_row::pos)
}

# A reshard job as actors/reshard_job.hpp keeps it.
struct ReshardJob {
  id @0 :Text;
  db @1 :Text;
  created @2 :Int64;
  type @3 :Text;
  source @4 :Text;
  fromNode @5 :Text;
  endSeq @6 :UInt64;
  leader @7 :Text;
  copies @8 :List(Text);
  childSuffix @9 :Int64;
  jobState @10 :Text;
  splitState @11 :Text;
  reason @12 :Text;
  stoppedByUser @13 :Bool;
  startTime @14 :Int64;
  updateTime @15 :Int64;
  history @16 :List(ReshardEvent);
  copiedTo @17 :UInt64;
  total @18 :UInt64;
}

struct ReshardEvent {
  time @0 :Int64;
  type @1 :Text;
  detail @2 :Text;
}

struct NewJob {
  type @0 :Text;
  db @1 :Text;
  shard @2 :Text;
  suffix @3 :Int64;
  leader @4 :Text;
  source @5 :Text;
}

struct NodeStatus {
  release @0 :Text;
  uptimeS @1 :Int64;
  rssBytes @2 :UInt64;
  threads @3 :UInt64;
  openFiles @4 :UInt64;
  liveFeeds @5 :UInt64;
  feedWatches @6 :UInt64;
  fsSizeBytes @7 :UInt64;       # the data directory's filesystem
  fsFreeBytes @8 :UInt64;
  dbFilesBytes @9 :UInt64;      # every shard file of this node
  requests @10 :UInt64;         # HTTP requests answered since the start
  serverErrors @11 :UInt64;     # of which 5xx
}

struct DbUpdateRow {
  db @0 :Text;
  instance @1 :UInt64;
  time @2 :Int64;
  seq @3 :UInt64;
}

struct DocCopy {
  id @0 :Text;
  found @1 :Bool;
  seq @2 :UInt64;
  tree @3 :Data;           # rev_tree::encode
  bodies @4 :List(RevBody);
}

struct RevBody {
  rev @0 :RevId;
  body @1 :Text;
}

struct LocalDoc {
  id @0 :Text;
  rev @1 :UInt64;
  body @2 :Text;
}

# A copy's time-seq: the struct its shard header keeps (one schema, one codec: storage's). Until
# release 0.4 this was a struct of its own with the same fields, so the wire form is the same.
using TimeSeq = import "/storage/schema/shard_header.capnp".TimeSeq;

struct AllDocsRow {
  id @0 :Text;
  rev @1 :Text;
  deleted @2 :Bool;
  found @3 :Bool;
  doc @4 :Text;
}

struct Param {
  name @0 :Text;
  value @1 :Text;
}

struct ChangeRow {
  seq @0 :UInt64;
  id @1 :Text;
  rev @2 :Text;
  deleted @3 :Bool;
  leafRevs @4 :List(Text);
  timeS @5 :Int64;
  doc @6 :Text;           # the rendered winner, when asked for
}

# --- shard-level calls (appended in release 0.1 development) ---

struct RevId {
  pos @0 :UInt64;
  hash @1 :Text;
}

# One leaf with its known history, as internal replication sends it (new_edits=false merge).
struct DocUpdate {
  id @0 :Text;
  body @1 :Text;
  deleted @2 :Bool;
  revs @3 :List(RevId);   # newest first
  newEdits @4 :Bool;      # updateDocs: true = an edit (revs holds the base rev, if any); applyChanges ignores it
  # Release 0.3 (storage/attachments.hpp): `_attachments` hold stored entries and stubs, and the
  # bytes of the blobs the body introduces travel with it. Older releases ignore both fields.
  managedAttachments @5 :Bool;
  blobs @6 :List(Blob);
  honorPurges @7 :Bool;   # release 0.4: a merge from another copy of the range (storage/shard_store.hpp)
  # Release 0.5 (revs-sha256-v1): a new_edits write makes its revision with SHA-256, not MD5
  # (storage/rev_tree.hpp rev_hash). Sent only to nodes that announce it: an older one would make MD5.
  sha256Revs @8 :Bool;
}

struct Blob {
  key @0 :Text;           # SHA-256 (hex) of the stored bytes
  bytes @1 :Data;
}

struct DocResult {
  status @0 :CallStatus;
  rev @1 :RevId;          # the new (or merged) revision when ok
  added @2 :Bool;         # something was written
  known @3 :Bool;         # a conflict only because `rev` exists already (the same edit arrived first)
}

struct ShardRef {
  db @0 :Text;
  range @1 :Text;         # "00000000-7fffffff"
}

# Expected errors travel as data; a KJ exception means the transport failed.
struct CallStatus {
  error @0 :Text;         # "" when ok; else the CouchDB error name, e.g. "not_found"
  reason @1 :Text;
  code @2 :Text;          # settee's error code, e.g. "db_not_found" (exact; `error` is ambiguous)
}

