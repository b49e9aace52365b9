// rpc_internal: the parts of rpc_node its files share, and nothing else includes: the loop (the
// KJ thread's state: connections, peers, dialling, the pool for blocking work), the server of one
// connection (node_server; its methods in rpc_server.cpp and rpc_server_node.cpp), the wire codecs
// (rpc_codec.cpp), the batching of concurrent calls, and the client's call machinery.
//   rpc_node.cpp         lifecycle: start, stop, post, peers
//   rpc_server*.cpp      what this node answers (shard and document calls; node-level calls)
//   rpc_client*.cpp      what this node asks (shard and document calls, batched; node-level calls)
//   rpc_codec.cpp        Cap'n Proto <-> settee's data
#pragma once
#include "cluster/rpc_node.hpp"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/compat/tls.h>
#include <kj/timer.h>

#include <algorithm>
#include <future>
#include <map>
#include <optional>
#include <set>

#include <caf/all.hpp>

#include "actors/gather.hpp"
#include "actors/internal_replication.hpp"
#include "actors/local_copy.hpp"
#include "actors/messages.hpp"
#include "cluster/cluster_tls.hpp"
#include "cluster/legacy_calls.hpp"
#include "cluster/peer_auth.hpp"
#include "cluster/schema/cluster_rpc.capnp.h"
#include "node/check.hpp"
#include "node/clock.hpp"
#include "node/json.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"
#include "node/work_pool.hpp"
#include "storage/time_seq_codec.hpp"

namespace settee {

// What one accepted connection has proved. Shared by the connection (which closes when `drop`
// is fulfilled) and its node_server (which a call in flight may keep alive a little longer).
struct conn_gate {
  bool authenticated = false;
  std::string server_nonce;  // the outstanding challenge; empty once used
  kj::Own<kj::PromiseFulfiller<void>> drop;
};

// Serves the Node interface for one connection; forwards to the loop (defined below) on the loop's
// own thread. Every method but challenge and handshake is refused until the handshake proved the
// cluster secret: the gate is in dispatchCall, so a method appended later is behind it too.
class node_server final : public Node::Server {
 public:
  node_server(rpc_node::loop& l, std::shared_ptr<conn_gate> gate) : loop_(l), gate_(std::move(gate)) {}
  DispatchCallResult dispatchCall(uint64_t interface_id, uint16_t method_id,
                                  capnp::CallContext<capnp::AnyPointer, capnp::AnyPointer> context) override {
    // Ordinals in cluster_rpc.capnp: handshake @0, challenge @10.
    bool open = interface_id == capnp::typeId<Node>() && (method_id == 0 || method_id == 10);
    if (!open && !gate_->authenticated) return {refused(), false};
    return Node::Server::dispatchCall(interface_id, method_id, context);
  }
  kj::Promise<void> challenge(ChallengeContext context) override;
  kj::Promise<void> handshake(HandshakeContext context) override;
  kj::Promise<void> ping(PingContext) override { return kj::READY_NOW; }
  kj::Promise<void> shardInfo(ShardInfoContext context) override;
  kj::Promise<void> applyChanges(ApplyChangesContext context) override;
  kj::Promise<void> updateDocs(UpdateDocsContext context) override;
  kj::Promise<void> changesPage(ChangesPageContext context) override;
  kj::Promise<void> resolveSince(ResolveSinceContext context) override;
  kj::Promise<void> readDoc(ReadDocContext context) override;
  kj::Promise<void> allDocsPage(AllDocsPageContext context) override;
  kj::Promise<void> timeSeq(TimeSeqContext context) override;
  kj::Promise<void> openDocs(OpenDocsContext context) override;
  kj::Promise<void> localDoc(LocalDocContext context) override;
  kj::Promise<void> writeLocal(WriteLocalContext context) override;
  kj::Promise<void> localDocs(LocalDocsContext context) override;
  kj::Promise<void> dbUpdates(DbUpdatesContext context) override;
  kj::Promise<void> setRevsLimit(SetRevsLimitContext context) override;
  kj::Promise<void> readBlob(ReadBlobContext context) override;
  kj::Promise<void> stageBlob(StageBlobContext context) override;
  kj::Promise<void> dropStaged(DropStagedContext context) override;
  kj::Promise<void> compactDb(CompactDbContext context) override;
  kj::Promise<void> activeTasks(ActiveTasksContext context) override;
  kj::Promise<void> nodeStatus(NodeStatusContext context) override;
  kj::Promise<void> reshardState(ReshardStateContext context) override;
  kj::Promise<void> reshardJobs(ReshardJobsContext context) override;
  kj::Promise<void> editReshardJob(EditReshardJobContext context) override;
  kj::Promise<void> newReshardJob(NewReshardJobContext context) override;
  kj::Promise<void> exportChanges(ExportChangesContext context) override;
  kj::Promise<void> sealCopy(SealCopyContext context) override;
  kj::Promise<void> retireCopy(RetireCopyContext context) override;
  kj::Promise<void> createJob(CreateJobContext context) override;
  kj::Promise<void> reshardRequest(ReshardRequestContext context) override;
  kj::Promise<void> configRequest(ConfigRequestContext context) override;
  kj::Promise<void> splitSeal(SplitSealContext context) override;
  kj::Promise<void> viewRows(ViewRowsContext context) override;
  kj::Promise<void> mangoRows(MangoRowsContext context) override;
  kj::Promise<void> searchCopy(SearchCopyContext context) override;
  kj::Promise<void> viewCleanup(ViewCleanupContext context) override;
  kj::Promise<void> compactViews(CompactViewsContext context) override;
  kj::Promise<void> purgeDocs(PurgeDocsContext context) override;
  kj::Promise<void> purgeInfos(PurgeInfosContext context) override;
  kj::Promise<void> setPurgedInfosLimit(SetPurgedInfosLimitContext context) override;

 private:
  static kj::Promise<void> refused() {
    return KJ_EXCEPTION(FAILED, "settee: unauthenticated connection (prove the cluster secret in handshake first)");
  }
  // Refuses the call and closes the connection.
  kj::Promise<void> refuse_and_drop(const std::string& why);
  rpc_node::loop& loop_;
  std::shared_ptr<conn_gate> gate_;
};

struct rpc_node::loop : private kj::TaskSet::ErrorHandler {
  struct peer_conn {
    peer_address address;
    kj::Own<kj::AsyncIoStream> stream;
    kj::Own<capnp::TwoPartyClient> client;
    kj::Maybe<Node::Client> cap;
    int backoff_ms = 100;
    kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> wake;  // ends the backoff early (the peer dialled us)
    kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> stop;  // ends the dialling (the member was removed)
    bool dialling = false;                                // a dial loop runs (until its stop has taken effect)
    bool redial = false;                                  // added again while its stopped loop was still winding down
  };

  // One accepted connection: its own RPC system with its own node_server (and gate).
  struct server_conn {
    server_conn(kj::Own<kj::AsyncIoStream>&& s, capnp::Capability::Client bootstrap)
        : stream(kj::mv(s)),
          network(*stream, capnp::rpc::twoparty::Side::SERVER),
          rpc(capnp::makeRpcServer(network, kj::mv(bootstrap))) {}
    kj::Own<kj::AsyncIoStream> stream;
    capnp::TwoPartyVatNetwork network;
    capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
  };

  // The TLS context when the cluster uses TLS: trusts the cluster CA only, presents this node's
  // certificate, and requires one from every client.
  struct tls_state {
    tls_state(const rpc_options& o, kj::Timer& timer)
        : ca(kj::StringPtr(o.tls_ca_pem.c_str())),
          keypair{kj::TlsPrivateKey(kj::StringPtr(o.tls_key_pem.c_str())),
                  kj::TlsCertificate(kj::StringPtr(o.tls_cert_pem.c_str()))} {
      kj::TlsContext::Options options;
      options.useSystemTrustStore = false;
      options.verifyClients = true;
      options.trustedCertificates = kj::arrayPtr(&ca, 1);
      options.defaultKeypair = keypair;
      options.timer = timer;
      options.acceptTimeout = o.handshake_timeout_ms * kj::MILLISECONDS;
      context = kj::heap<kj::TlsContext>(kj::mv(options));
    }
    kj::TlsCertificate ca;
    kj::TlsKeypair keypair;
    kj::Own<kj::TlsContext> context;
  };

  loop(membership& members, const rpc_options& opts, kj::AsyncIoContext& io)
      : members(members), opts(opts), io(io), tasks(*this) {
    if (opts.tls) tls = kj::heap<tls_state>(opts, io.provider->getTimer());
  }

  membership& members;
  const rpc_options& opts;
  kj::AsyncIoContext& io;
  kj::Own<tls_state> tls;
  // Calls that may block (a write that waits for its commit) run here, never on this loop.
  work_pool blocking{8};

  // Runs `job` on the pool; the promise resolves on this loop once it has run (a dropped promise
  // makes the fulfilment a no-op). Results travel in what the job captured.
  kj::Promise<void> off_loop(std::function<void()> job) {
    auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
    auto f = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<void>>>(kj::mv(paf.fulfiller));
    blocking.submit([f, job = std::move(job)] {
      // A peer's malformed call that slipped past a check fails that call, never the node.
      try {
        job();
        (*f)->fulfill();
      } catch (const std::exception& e) {
        log::error(std::string("cluster RPC: a call failed: ") + e.what());
        (*f)->reject(KJ_EXCEPTION(FAILED, "settee: the call failed", e.what()));
      } catch (...) {
        log::error("cluster RPC: a call failed with an unknown exception");
        (*f)->reject(KJ_EXCEPTION(FAILED, "settee: the call failed"));
      }
    });
    return kj::mv(paf.promise);
  }
  std::map<std::string, kj::Own<peer_conn>> peers;
  std::set<std::string> removed;  // members removed from the cluster: not dialled, refused when they dial
  // Declared last, destroyed first: cancelling every promise chain before the connections, peers
  // and server they refer to go away.
  kj::TaskSet tasks;

  void taskFailed(kj::Exception&& e) override {
    warn_limited(std::string("rpc task failed: ") + e.getDescription().cStr());
  }

  log::rate_limited refusals;  // warnings that strangers can cause
  void warn_limited(const std::string& line) { refusals.warning(line); }

  kj::Promise<void> accept_loop(kj::ConnectionReceiver& listener) {
    return listener.accept().then([this, &listener](kj::Own<kj::AsyncIoStream>&& stream) {
      if (!tls) {
        serve(kj::mv(stream));
      } else {
        tasks.add(tls->context->wrapServer(kj::mv(stream))
                      .then([this](kj::Own<kj::AsyncIoStream>&& secured) { serve(kj::mv(secured)); },
                            [this](kj::Exception&& e) {
                              warn_limited(std::string("cluster RPC: TLS handshake with a client failed (is [cluster] "
                                                       "tls the same on every node, and the secret?): ") +
                                           e.getDescription().cStr());
                            }));
      }
      return accept_loop(listener);
    });
  }

  // Serves one connection until the peer hangs up, its proof fails, or it has not proved itself
  // within the handshake timeout.
  void serve(kj::Own<kj::AsyncIoStream>&& stream) {
    auto gate = std::make_shared<conn_gate>();
    auto dropped = kj::newPromiseAndFulfiller<void>();
    gate->drop = kj::mv(dropped.fulfiller);
    auto conn = kj::heap<server_conn>(kj::mv(stream), kj::heap<node_server>(*this, gate));
    auto& timer = io.provider->getTimer();
    auto deadline =
        timer.afterDelay(opts.handshake_timeout_ms * kj::MILLISECONDS).then([this, gate]() -> kj::Promise<void> {
          if (gate->authenticated) return kj::NEVER_DONE;
          warn_limited("cluster RPC: closing a connection that did not authenticate in time");
          return kj::READY_NOW;
        });
    auto ends = conn->network.onDisconnect().exclusiveJoin(kj::mv(dropped.promise)).exclusiveJoin(kj::mv(deadline));
    tasks.add(ends.attach(kj::mv(conn)));
  }

  void fill_hello(Hello::Builder h) {
    h.setName(members.self());
    h.setRelease(opts.release);
    auto f = h.initFeatures(static_cast<unsigned>(opts.features.size()));
    for (size_t i = 0; i < opts.features.size(); ++i) f.set(static_cast<unsigned>(i), opts.features[i]);
    h.setRpcHost(opts.advertised_host);
    h.setRpcPort(opts.port);
    h.setHttpPort(opts.http_port);
  }

  static peer_info info_of(Hello::Reader h) {
    peer_info info;
    info.release = h.getRelease();
    for (auto f : h.getFeatures()) info.features.emplace_back(f.cStr());
    return info;
  }

  // Dials a peer unless we already do. A member removed from the cluster is dialled again only when
  // it is added again (`readd`), not when it introduces itself.
  void add_peer(const peer_address& address, bool readd = false) {
    if (address.name == members.self()) return;
    if (removed.count(address.name)) {
      if (!readd) return;
      removed.erase(address.name);
    }
    if (auto known = peers.find(address.name); known != peers.end()) {
      peer_conn& pc = *known->second;
      if (pc.stop == nullptr) {  // dialling stopped at its removal: start again
        members.add_member(address.name);
        pc.address = address;
        if (pc.dialling) {
          pc.redial = true;  // once the old loop has ended
        } else {
          dial(pc);
        }
        return;
      }
      // It is up (it just dialled us): if we wait to dial it again, dial now.
      KJ_IF_MAYBE (w, pc.wake) {
        pc.backoff_ms = 100;
        (*w)->fulfill();
        pc.wake = nullptr;
      }
      return;
    }
    members.add_member(address.name);
    auto conn = kj::heap<peer_conn>();
    conn->address = address;
    peer_conn& pc = *conn;
    peers.emplace(address.name, kj::mv(conn));
    dial(pc);
  }

  // Stops dialling a removed member and closes our connection to it; it is refused if it dials.
  void remove_peer(const std::string& name) {
    removed.insert(name);
    members.remove_member(name);
    auto it = peers.find(name);
    if (it == peers.end()) return;
    KJ_IF_MAYBE (s, it->second->stop) {
      (*s)->fulfill();
    }
    it->second->stop = nullptr;
    it->second->redial = false;
  }

  // run() until remove_peer() stops it; then the connection is dropped.
  void dial(peer_conn& pc) {
    auto stopped = kj::newPromiseAndFulfiller<void>();
    pc.stop = kj::mv(stopped.fulfiller);
    pc.backoff_ms = 100;
    pc.dialling = true;
    tasks.add(run(pc).exclusiveJoin(kj::mv(stopped.promise)).then([this, &pc]() {
      pc.dialling = false;
      pc.wake = nullptr;
      pc.cap = nullptr;
      pc.client = nullptr;
      pc.stream = nullptr;
      if (pc.redial) {  // added again meanwhile
        pc.redial = false;
        dial(pc);
      } else {
        members.remove_member(pc.address.name);
      }
    }));
  }

  // The dialling side of the handshake (cluster/peer_auth.hpp): the server's challenge (an older
  // release does not know the call: a legacy peer), our proof, then the check of the server's.
  kj::Promise<capnp::Response<Node::HandshakeResults>> authenticate(peer_conn& pc, Node::Client cap) {
    auto& timer = io.provider->getTimer();
    auto challenged = cap.challengeRequest().send().then(
        [](capnp::Response<Node::ChallengeResults>&& r) { return std::string(r.getNonce().cStr()); },
        [](kj::Exception&& e) -> std::string {
          if (e.getType() == kj::Exception::Type::UNIMPLEMENTED) return "";
          kj::throwFatalException(kj::mv(e));
        });
    return timer.timeoutAfter(opts.handshake_timeout_ms * kj::MILLISECONDS, kj::mv(challenged))
        .then([this, &pc, &timer, cap](std::string server_nonce) mutable {
          bool legacy = server_nonce.empty();
          if (legacy && !opts.accept_legacy_peers) {
            log::warning("peer " + pc.address.name + " runs a release without cluster authentication; " +
                         "not connecting (see [cluster] accept_legacy_peers in docs/security.md)");
            kj::throwFatalException(KJ_EXCEPTION(DISCONNECTED, "legacy peer refused"));
          }
          auto req = cap.handshakeRequest();
          auto h = req.initHello();
          fill_hello(h);
          std::string client_nonce = peer_auth::new_nonce();
          if (!legacy) {
            h.setNonce(client_nonce);
            h.setProof(peer_auth::client_proof(opts.secret, server_nonce, client_nonce, members.self()));
          }
          return timer.timeoutAfter(opts.handshake_timeout_ms * kj::MILLISECONDS, req.send())
              .then([this, &pc, legacy, client_nonce, server_nonce](capnp::Response<Node::HandshakeResults>&& r) {
                auto hello = r.getHello();
                std::string expected =
                    peer_auth::server_proof(opts.secret, client_nonce, server_nonce, hello.getName().cStr());
                if (!legacy && !peer_auth::matches(expected, hello.getProof().cStr())) {
                  log::warning("peer " + pc.address.name + " did not prove the cluster secret; not connecting");
                  kj::throwFatalException(KJ_EXCEPTION(DISCONNECTED, "peer failed authentication"));
                }
                return kj::mv(r);
              });
        });
  }

  kj::Promise<void> run(peer_conn& pc) {
    auto& timer = io.provider->getTimer();
    return io.provider->getNetwork()
        .parseAddress(pc.address.host, pc.address.port)
        .then([](kj::Own<kj::NetworkAddress> addr) { return addr->connect(); })
        .then([this](kj::Own<kj::AsyncIoStream> stream) -> kj::Promise<kj::Own<kj::AsyncIoStream>> {
          if (!tls) return kj::mv(stream);
          return tls->context->wrapClient(kj::mv(stream), tls_peer_name);
        })
        .then([this, &pc](kj::Own<kj::AsyncIoStream> stream) {
          pc.stream = kj::mv(stream);
          pc.client = kj::heap<capnp::TwoPartyClient>(*pc.stream);
          Node::Client cap = pc.client->bootstrap().castAs<Node>();
          pc.cap = cap;
          return authenticate(pc, cap).then([this, &pc](capnp::Response<Node::HandshakeResults>&& r) {
            auto hello = r.getHello();
            if (std::string(hello.getName().cStr()) != pc.address.name) {
              log::warning("peer at " + pc.address.host + ":" + std::to_string(pc.address.port) + " says it is " +
                           hello.getName().cStr() + ", expected " + pc.address.name);
            }
            members.connected(pc.address.name, info_of(hello));
            pc.backoff_ms = 100;
            // A peer that closes the connection (it stopped or restarted) is redialled at once,
            // not at the next failed ping: calls after its restart find the new connection.
            return ping_loop(pc).exclusiveJoin(pc.client->onDisconnect().then(
                []() -> kj::Promise<void> { return KJ_EXCEPTION(DISCONNECTED, "the peer closed the connection"); }));
          });
        })
        .catch_([this, &pc, &timer](kj::Exception&&) {
          members.disconnected(pc.address.name);
          pc.cap = nullptr;
          pc.client = nullptr;
          pc.stream = nullptr;
          int delay = pc.backoff_ms;
          pc.backoff_ms = std::min(opts.max_backoff_ms, pc.backoff_ms * 2);
          auto woken = kj::newPromiseAndFulfiller<void>();
          pc.wake = kj::mv(woken.fulfiller);
          return timer.afterDelay(delay * kj::MILLISECONDS).exclusiveJoin(kj::mv(woken.promise));
        })
        .then([this, &pc]() {
          pc.wake = nullptr;
          return run(pc);  // reconnect until the loop stops
        });
  }

  kj::Promise<void> ping_loop(peer_conn& pc) {
    auto& timer = io.provider->getTimer();
    return timer.afterDelay(opts.ping_interval_ms * kj::MILLISECONDS)
        .then([this, &pc, &timer]() {
          KJ_IF_MAYBE (cap, pc.cap) {
            return timer.timeoutAfter(opts.ping_timeout_ms * kj::MILLISECONDS, cap->pingRequest().send())
                .ignoreResult();
          }
          return kj::Promise<void>(KJ_EXCEPTION(DISCONNECTED, "no connection"));
        })
        .then([this, &pc]() { return ping_loop(pc); });
  }
};

// The wire forms of this node's data (rpc_codec.cpp).
void set_status(CallStatus::Builder b, const status& st);
status status_of(CallStatus::Reader r);
void set_shard(ShardRef::Builder b, const std::string& db, const std::string& range);
void write_update(DocUpdate::Builder b, const doc_update& u);
void write_updates(capnp::List<DocUpdate>::Builder list, const std::vector<doc_update>& updates);
doc_update read_update(DocUpdate::Reader u, bool new_edits);
void write_purge(PurgeInfo::Builder b, const purge_info& p);
purge_info read_purge(PurgeInfo::Reader r);
void write_revs(capnp::List<RevId>::Builder list, const std::vector<rev_id>& revs);
std::vector<rev_id> read_revs(capnp::List<RevId>::Reader list);
// A document as data: its tree in the shard file's encoding, its stored bodies; and back (a tree
// that does not decode, or fails rev_tree's checks, is an error, not a document).
void write_doc_copy(DocCopy::Builder b, const doc_copy& d);
result<doc_copy> read_doc_copy(DocCopy::Reader b);
// Peers' document bodies are parsed later as any client's: the same depth limit, checked here once.
status check_updates(capnp::List<DocUpdate>::Reader updates);
void write_job(ReshardJob::Builder b, const split_job& j);
split_job read_job(ReshardJob::Reader r);
void write_new_job(NewJob::Builder b, const new_job& j);
new_job read_new_job(NewJob::Reader r);
void write_node_status(NodeStatus::Builder b, const node_status& s);
node_status read_node_status(NodeStatus::Reader n);
// One end of a view range (its sort key as bytes).
// Bytes as a Data field, and back.
inline capnp::Data::Reader data_of(const std::string& bytes) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size());
}
inline std::string bytes_of(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}
void write_view_bound(ViewBound::Builder b, const view_bound& v);
view_bound read_view_bound(ViewBound::Reader b);

// Calls to one peer's copy of one range that queue up while the loop is busy and then travel as one
// message: the waiters' items (document ids, or documents to write) are concatenated, and the
// answer's items go back to each waiter in the same order (rpc_node::open_docs, update_docs).
template <class Item, class Answer>
struct pending_batch {
  std::string node, db, range;
  doc_bodies bodies = doc_bodies::none;  // reads: which stored bodies
  std::vector<std::pair<std::vector<Item>, std::function<void(result<std::vector<Answer>>)>>> waiters;
  size_t items() const {
    size_t n = 0;
    for (auto& w : waiters) n += w.first.size();
    return n;
  }
  void fail(const status& st) {
    for (auto& w : waiters) w.second(st);
  }
};
struct pending_reads : pending_batch<std::string, doc_copy> {};
struct pending_writes : pending_batch<doc_update, doc_result> {};

struct loop_control {
  kj::Own<const kj::Executor> executor;
  kj::Own<kj::PromiseFulfiller<void>> stop;
  rpc_node::loop* state = nullptr;  // only touched on the loop thread

  // Work other threads hand to the loop without waiting for it (rpc_node::post): queued here, and
  // the loop is woken once per batch through a cross-thread fulfiller. Under load one wake-up
  // starts many calls; the caller never blocks on the loop.
  std::mutex mu;
  std::vector<std::function<void(rpc_node::loop*)>> inbox;
  std::map<std::string, pending_reads> reads;           // by peer, database, range and bodies
  std::map<std::string, pending_writes> writes;         // by peer, database and range
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> wake;  // armed while the loop waits for work
  bool running = false;                                 // the loop takes work
  // Send one batch of reads or writes (set by rpc_node::start; run on the loop).
  std::function<void(rpc_node::loop&, pending_reads&)> send_reads;
  std::function<void(rpc_node::loop&, pending_writes&)> send_writes;

  // Wakes the loop if it waits for work. mu held.
  void wake_locked() {
    if (wake) {
      wake->fulfill();
      wake = nullptr;
    }
  }

  // Runs on the loop: waits for work, runs it, and waits again.
  kj::Promise<void> drain(rpc_node::loop& l) {
    auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!inbox.empty() || !reads.empty() || !writes.empty())
        paf.fulfiller->fulfill();
      else
        wake = kj::mv(paf.fulfiller);
    }
    return paf.promise.then([this, &l]() {
      std::vector<std::function<void(rpc_node::loop*)>> work;
      std::map<std::string, pending_reads> read_batch;
      std::map<std::string, pending_writes> write_batch;
      {
        std::lock_guard<std::mutex> lock(mu);
        work.swap(inbox);
        read_batch.swap(reads);
        write_batch.swap(writes);
      }
      for (auto& f : work) f(&l);
      for (auto& [key, w] : write_batch) send_writes(l, w);
      for (auto& [key, r] : read_batch) send_reads(l, r);
      return drain(l);
    });
  }
  // Stops taking work; what is queued runs with no loop (its callers learn the RPC is stopping).
  void close() {
    std::vector<std::function<void(rpc_node::loop*)>> work;
    std::map<std::string, pending_reads> read_batch;
    std::map<std::string, pending_writes> write_batch;
    {
      std::lock_guard<std::mutex> lock(mu);
      running = false;
      wake = nullptr;
      work.swap(inbox);
      read_batch.swap(reads);
      write_batch.swap(writes);
    }
    status stopping{errc::unavailable, "cluster RPC is stopping"};
    for (auto& f : work) f(nullptr);
    for (auto& [key, r] : read_batch) r.fail(stopping);
    for (auto& [key, w] : write_batch) w.fail(stopping);
  }
};

// The capability of a peer we are connected to right now (handshake done), else null.
inline Node::Client* connected_cap(rpc_node::loop& l, const membership& members, const std::string& peer) {
  auto it = l.peers.find(peer);
  if (it == l.peers.end() || !members.is_connected(peer)) return nullptr;
  KJ_IF_MAYBE (c, it->second->cap) {
    return c;
  }
  return nullptr;
}

// An answered call's latency, from `sent` (settee_rpc_duration_seconds{peer}).
inline void observe_answer(const std::string& peer, std::chrono::steady_clock::time_point sent) {
  metrics::node().rpc_seconds.observe(peer, std::chrono::duration<double>(mono::now() - sent).count());
}

inline status unavailable(const std::string& peer, const std::string& why) {
  return {errc::unavailable, "node " + peer + " is unavailable: " + why};
}

template <class T, class Send>
void rpc_node::start_call(const std::string& peer, Send send, std::function<void(result<T>)> done, int timeout_ms) {
  metrics::node().rpc_calls.add(peer);
  if (timeout_ms <= 0) timeout_ms = opts_.call_timeout_ms;
  post([this, peer, timeout_ms, send = std::move(send), done = std::move(done)](loop* l) mutable {
    auto failed = [&peer](status st) {
      metrics::node().rpc_errors.add(peer);
      return st;
    };
    if (!l) return done(failed(status{errc::unavailable, "cluster RPC is stopping"}));
    Node::Client* cap = connected_cap(*l, members_, peer);
    if (!cap) return done(failed(unavailable(peer, "not connected")));
    auto once = std::make_shared<std::function<void(result<T>)>>(std::move(done));
    auto& timer = l->io.provider->getTimer();
    const auto sent = mono::now();
    l->tasks.add(timer.timeoutAfter(timeout_ms * kj::MILLISECONDS, send(*cap))
                     .then(
                         [once, peer, sent](result<T>&& r) {
                           observe_answer(peer, sent);
                           (*once)(std::move(r));
                         },
                         [once, peer](kj::Exception&& e) {
                           metrics::node().rpc_errors.add(peer);
                           (*once)(unavailable(peer, e.getDescription().cStr()));
                         }));
  });
}

template <class T, class Send>
result<T> rpc_node::call(const std::string& peer, std::chrono::milliseconds timeout, Send send) {
  gather<T> g({1});
  start_call<T>(peer, send, g.slot(0, 0));
  auto answer = g.take(1, mono::now() + timeout);
  if (!answer[0][0]) return status{errc::timeout, "The request could not be processed in a reasonable amount of time."};
  return std::move(*answer[0][0]);
}

template <class Fill>
status rpc_node::call_status(const std::string& peer, std::chrono::milliseconds timeout, Fill fill) {
  auto r = call<bool>(peer, timeout, [fill](Node::Client& cap) {
    return fill(cap).send().then([](auto&& answer) -> result<bool> {
      if (status st = status_of(answer.getStatus()); !st) return st;
      return true;
    });
  });
  return r ? status{} : r.error();
}

}  // namespace settee
