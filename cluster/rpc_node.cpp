#include "cluster/rpc_node.hpp"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/timer.h>

#include <algorithm>
#include <future>
#include <map>

#include "cluster/schema/cluster_rpc.capnp.h"
#include "node/log.hpp"

namespace settee {

namespace {

// Serves the Node interface; forwards to the loop (defined below) on the loop's own thread.
class node_server final : public Node::Server {
 public:
  explicit node_server(rpc_node::loop& l) : loop_(l) {}
  kj::Promise<void> handshake(HandshakeContext context) override;
  kj::Promise<void> ping(PingContext) override { return kj::READY_NOW; }

 private:
  rpc_node::loop& loop_;
};

}  // namespace

struct rpc_node::loop : private kj::TaskSet::ErrorHandler {
  struct peer_conn {
    peer_address address;
    kj::Own<kj::AsyncIoStream> stream;
    kj::Own<capnp::TwoPartyClient> client;
    kj::Maybe<Node::Client> cap;
    int backoff_ms = 100;
  };

  loop(membership& members, const rpc_options& opts, kj::AsyncIoContext& io)
      : members(members), opts(opts), io(io), server(kj::heap<node_server>(*this)), tasks(*this) {}

  membership& members;
  const rpc_options& opts;
  kj::AsyncIoContext& io;
  capnp::TwoPartyServer server;
  std::map<std::string, kj::Own<peer_conn>> peers;
  // Declared last, destroyed first: cancelling every promise chain before the connections, peers
  // and server they refer to go away.
  kj::TaskSet tasks;

  void taskFailed(kj::Exception&& e) override {
    log::warning(std::string("rpc task failed: ") + e.getDescription().cStr());
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

  // Dials a peer unless we already do.
  void add_peer(const peer_address& address) {
    if (address.name == members.self() || peers.count(address.name)) return;
    members.add_member(address.name);
    auto conn = kj::heap<peer_conn>();
    conn->address = address;
    peer_conn& pc = *conn;
    peers.emplace(address.name, kj::mv(conn));
    tasks.add(run(pc));
  }

  kj::Promise<void> run(peer_conn& pc) {
    auto& timer = io.provider->getTimer();
    return io.provider->getNetwork()
        .parseAddress(pc.address.host, pc.address.port)
        .then([](kj::Own<kj::NetworkAddress> addr) { return addr->connect(); })
        .then([this, &pc, &timer](kj::Own<kj::AsyncIoStream> stream) {
          pc.stream = kj::mv(stream);
          pc.client = kj::heap<capnp::TwoPartyClient>(*pc.stream);
          Node::Client cap = pc.client->bootstrap().castAs<Node>();
          pc.cap = cap;
          auto req = cap.handshakeRequest();
          fill_hello(req.initHello());
          return timer.timeoutAfter(opts.handshake_timeout_ms * kj::MILLISECONDS, req.send())
              .then([this, &pc](capnp::Response<Node::HandshakeResults>&& r) {
                auto hello = r.getHello();
                if (std::string(hello.getName().cStr()) != pc.address.name) {
                  log::warning("peer at " + pc.address.host + ":" + std::to_string(pc.address.port) + " says it is " +
                               hello.getName().cStr() + ", expected " + pc.address.name);
                }
                members.connected(pc.address.name, info_of(hello));
                pc.backoff_ms = 100;
                return ping_loop(pc);
              });
        })
        .catch_([this, &pc, &timer](kj::Exception&&) {
          members.disconnected(pc.address.name);
          pc.cap = nullptr;
          pc.client = nullptr;
          pc.stream = nullptr;
          int delay = pc.backoff_ms;
          pc.backoff_ms = std::min(opts.max_backoff_ms, pc.backoff_ms * 2);
          return timer.afterDelay(delay * kj::MILLISECONDS);
        })
        .then([this, &pc]() { return run(pc); });  // reconnect until the loop stops
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

namespace {

kj::Promise<void> node_server::handshake(HandshakeContext context) {
  auto theirs = context.getParams().getHello();
  std::string name = theirs.getName();
  if (!name.empty() && theirs.getRpcPort() != 0) {
    // A node that introduces itself is a member; dial it back so the view is symmetric.
    loop_.add_peer({name, theirs.getRpcHost().cStr(), theirs.getRpcPort()});
  }
  loop_.fill_hello(context.getResults().initHello());
  return kj::READY_NOW;
}

}  // namespace

rpc_node::rpc_node(membership& members, rpc_options opts) : members_(members), opts_(std::move(opts)) {
  for (auto& s : opts_.seeds) members_.add_member(s.name);
}

rpc_node::~rpc_node() {
  stop();
}

namespace {

// What the loop thread shares with the thread that stops it.
struct loop_control {
  kj::Own<const kj::Executor> executor;
  kj::Own<kj::PromiseFulfiller<void>> stop;
};

}  // namespace

status rpc_node::start() {
  auto ready = std::make_shared<std::promise<status>>();
  auto ready_future = ready->get_future();
  auto control = std::make_shared<loop_control>();
  thread_ = std::thread([this, ready, control]() {
    bool started = false;
    try {
      auto io = kj::setupAsyncIo();
      auto addr = io.provider->getNetwork().parseAddress(opts_.bind, opts_.port).wait(io.waitScope);
      auto listener = addr->listen();
      port_ = static_cast<uint16_t>(listener->getPort());
      opts_.port = port_;
      {
        loop state(members_, opts_, io);
        state.tasks.add(state.server.listen(*listener));
        for (auto& s : opts_.seeds) state.add_peer(s);
        auto paf = kj::newPromiseAndFulfiller<void>();
        control->executor = kj::getCurrentThreadExecutor().addRef();
        control->stop = kj::mv(paf.fulfiller);
        started = true;
        ready->set_value({});
        paf.promise.wait(io.waitScope);
        control->stop = nullptr;
      }  // the loop state goes before the listener and the event loop it uses
    } catch (const kj::Exception& e) {
      std::string what = std::string("cluster RPC: ") + e.getDescription().cStr();
      if (!started)
        ready->set_value({errc::internal, what});
      else
        log::error(what);
    }
  });
  status st = ready_future.get();
  if (!st) {
    thread_.join();
    return st;
  }
  stop_ = [control]() {
    control->executor->executeSync([&]() {
      if (control->stop) control->stop->fulfill();
    });
  };
  return {};
}

void rpc_node::stop() {
  if (stop_) {
    try {
      stop_();
    } catch (const kj::Exception&) {
      // the loop already ended
    }
    stop_ = nullptr;
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace settee
