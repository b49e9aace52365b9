// rpc_probe: a hand-built Cap'n Proto client of settee's cluster RPC, for tests of its
// authentication. It connects to HOST:PORT, optionally handshakes, then calls every method of
// the Node interface once and prints one JSON line per call:
//   {"method":"shardInfo","ok":false,"error":"..."}
// Modes:
//   none           no handshake at all
//   legacy         a handshake without proof (what releases before 0.3 send)
//   wrong          a handshake whose proof uses a wrong secret
//   replay SECRET  a good handshake on one connection, then its proof replayed on a second one
//                  (the method calls go over the second)
//   right SECRET   a good handshake (the positive control: every method answers)
//   deep SECRET DB a good handshake, then JSON nested 100,000 deep in every call that carries JSON,
//                  against database DB (one range); prints each call's CallStatus error
// The handshake's own outcome is printed first as method "handshake".
#include <capnp/ez-rpc.h>

#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "cluster/peer_auth.hpp"
#include "cluster/schema/cluster_rpc.capnp.h"

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    out += c;
  }
  return out + "\"";
}

void print(const char* method, bool ok, const std::string& error) {
  std::printf("{\"method\":\"%s\",\"ok\":%s,\"error\":%s}\n", method, ok ? "true" : "false",
              json_string(error).c_str());
  std::fflush(stdout);
}

// Runs one call: ok unless it throws or, for a call that returns what went wrong, says anything.
template <class F>
void attempt(const char* method, F&& f) {
  try {
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      print(method, true, "");
    } else {
      std::string error = f();
      print(method, error.empty(), error);
    }
  } catch (const kj::Exception& e) {
    print(method, false, e.getDescription().cStr());
  }
}

const char* probe_name = "probe@127.0.0.1";

std::string peer_auth_nonce() {
  return settee::peer_auth::new_nonce();
}

struct proof {
  std::string client_nonce, value;
};

// Returns the proof it sent (for a replay), or throws.
proof handshake(Node::Client& cap, kj::WaitScope& ws, const std::string& mode, const std::string& secret,
                const proof* replay) {
  auto req = cap.handshakeRequest();
  auto hello = req.initHello();
  hello.setName(probe_name);
  hello.setRelease("0.0.0-probe");
  proof sent;
  if (mode != "legacy") {
    std::string server_nonce = cap.challengeRequest().send().wait(ws).getNonce();
    sent.client_nonce = peer_auth_nonce();
    if (replay) {
      sent = *replay;
    } else {
      std::string key = mode == "wrong" ? std::string("not-the-cluster-secret-at-all") : secret;
      sent.value = settee::peer_auth::client_proof(key, server_nonce, sent.client_nonce, probe_name);
    }
    hello.setNonce(sent.client_nonce);
    hello.setProof(sent.value);
  }
  req.send().wait(ws);
  return sent;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: rpc_probe HOST PORT none|legacy|wrong|replay SECRET|right SECRET\n");
    return 2;
  }
  std::string host = argv[1], mode = argv[3], secret = argc > 4 ? argv[4] : "";
  unsigned port = static_cast<unsigned>(std::stoul(argv[2]));
  capnp::EzRpcClient first(host, port);
  auto& ws = first.getWaitScope();
  proof recorded;
  if (mode == "replay") {
    Node::Client cap = first.getMain<Node>();
    attempt("handshake-original", [&] { recorded = handshake(cap, ws, "right", secret, nullptr); });
  }
  // The calls go over a fresh connection (for a replay: not the one the proof was made for).
  auto second = kj::heap<capnp::EzRpcClient>(host, port);
  Node::Client cap = second->getMain<Node>();
  if (mode != "none") {
    std::string how = mode == "deep" ? "right" : mode;
    attempt("handshake", [&] { handshake(cap, ws, how, secret, mode == "replay" ? &recorded : nullptr); });
  }
  auto shard = [](auto b) {
    b.setDb("_users");
    b.setRange("00000000-ffffffff");
  };
  if (mode == "deep") {
    std::string db = argc > 5 ? argv[5] : "deep";
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    // A call's CallStatus as the error to print ("" when ok).
    auto error_of = [](auto status) {
      return status.getError().size() == 0 ? std::string()
                                           : std::string(status.getError().cStr()) + ": " + status.getReason().cStr();
    };
    auto deep_update = [&](DocUpdate::Builder u, const char* id) {
      u.setId(id);
      u.setBody("{\"x\":" + deep + "}");
      auto rev = u.initRevs(1)[0];
      rev.setPos(1);
      rev.setHash("0123456789abcdef0123456789abcdef");
    };
    auto on_db = [&](auto b) {
      b.setDb(db);
      b.setRange("00000000-ffffffff");
    };
    for (bool new_edits : {true, false}) {
      attempt(new_edits ? "updateDocs" : "updateDocs-replicated", [&] {
        auto r = cap.updateDocsRequest();
        on_db(r.initShard());
        auto u = r.initUpdates(1)[0];
        deep_update(u, "deep");
        u.setNewEdits(new_edits);
        return error_of(r.send().wait(ws).getStatus());
      });
    }
    attempt("applyChanges", [&] {
      auto r = cap.applyChangesRequest();
      on_db(r.initShard());
      deep_update(r.initUpdates(1)[0], "deep2");
      return error_of(r.send().wait(ws).getStatus());
    });
    for (const char* what : {"bulk_get", "revs_diff"}) {
      attempt(what, [&] {
        auto r = cap.readDocRequest();
        on_db(r.initShard());
        r.setWhat(what);
        r.setMethod("POST");
        r.setBody(std::string("{\"docs\":") + deep + "}");
        auto res = r.send().wait(ws);
        std::string error = error_of(res.getStatus());
        if (error.empty() && res.getHttpStatus() >= 300)
          error = std::to_string(res.getHttpStatus()) + " " + res.getBody().cStr();
        return error;
      });
    }
    return 0;
  }
  attempt("ping", [&] { cap.pingRequest().send().wait(ws); });
  attempt("shardInfo", [&] {
    auto r = cap.shardInfoRequest();
    shard(r.initShard());
    r.send().wait(ws);
  });
  attempt("applyChanges", [&] {
    auto r = cap.applyChangesRequest();
    shard(r.initShard());
    r.initUpdates(0);
    r.send().wait(ws);
  });
  attempt("updateDocs", [&] {
    auto r = cap.updateDocsRequest();
    shard(r.initShard());
    r.initUpdates(0);
    r.send().wait(ws);
  });
  attempt("changesPage", [&] {
    auto r = cap.changesPageRequest();
    shard(r.initShard());
    r.setLimit(10);
    r.send().wait(ws);
  });
  attempt("resolveSince", [&] {
    auto r = cap.resolveSinceRequest();
    shard(r.initShard());
    r.send().wait(ws);
  });
  attempt("readDoc", [&] {
    auto r = cap.readDocRequest();
    shard(r.initShard());
    r.setId("org.couchdb.user:x");
    r.send().wait(ws);
  });
  attempt("allDocsPage", [&] {
    auto r = cap.allDocsPageRequest();
    shard(r.initShard());
    r.setMaxRows(10);
    r.send().wait(ws);
  });
  attempt("timeSeq", [&] {
    auto r = cap.timeSeqRequest();
    shard(r.initShard());
    r.send().wait(ws);
  });
  attempt("challenge", [&] { cap.challengeRequest().send().wait(ws); });
  return 0;
}
