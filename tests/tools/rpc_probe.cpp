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
//   malformed SECRET DB
//                  a good handshake, then every method with malformed arguments in each field
//                  (shard refs, ids, revisions, numbers at their extremes, undecodable data and
//                  JSON) against database DB (one range); one line per call, "ok":false when the
//                  call threw (the node must answer every call, and live)
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

// Every method with malformed arguments, field by field (issue 27): the node must answer each
// call with an error or a result, never abort. Variants of each field are tried one at a time.
void malformed_calls(Node::Client& cap, kj::WaitScope& ws, const std::string& db) {
  const std::string huge(1 << 20, 'x');
  const std::vector<std::pair<std::string, std::string>> refs = {{db, "00000000-ffffffff"},
                                                                 {"", ""},
                                                                 {db, "zz"},
                                                                 {db, "00000000-ffffffff-00"},
                                                                 {db, "ffffffff-00000000"},
                                                                 {"../../etc", "00000000-ffffffff"},
                                                                 {huge, "00000000-ffffffff"},
                                                                 {db, huge},
                                                                 {std::string("a\0b", 3), "x"},
                                                                 {"nodb", "00000000-ffffffff"}};
  const std::vector<std::string> texts = {"",    "x", ".",   "a.b.c", "00000000-ffffffff", "00000000-ffffffff.",
                                          ".12", "{", "[1,", "null",  "{\"type\":1}",      huge};
  const std::vector<uint64_t> numbers = {0, 1, 0xffffffffULL, 0x7fffffffffffffffULL, 0xffffffffffffffffULL};
  const std::string garbage = "\xff\x00\x7f\x80garbage";
  auto set_ref = [](auto b, const std::pair<std::string, std::string>& r) {
    b.setDb(kj::StringPtr(r.first.c_str()));
    b.setRange(kj::StringPtr(r.second.c_str()));
  };
  auto data = [](const std::string& s) {
    return capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(s.data()), s.size());
  };
  int n = 0;
  auto run = [&](const std::string& name, auto&& f) {
    attempt((name + "#" + std::to_string(n++)).c_str(), [&] { f(); });
  };
  for (auto& r : refs) {
    run("shardInfo", [&] {
      auto q = cap.shardInfoRequest();
      set_ref(q.initShard(), r);
      q.send().wait(ws);
    });
    run("localDocs", [&] {
      auto q = cap.localDocsRequest();
      set_ref(q.initShard(), r);
      q.send().wait(ws);
    });
    run("timeSeq", [&] {
      auto q = cap.timeSeqRequest();
      set_ref(q.initShard(), r);
      q.send().wait(ws);
    });
    run("sealCopy", [&] {
      auto q = cap.sealCopyRequest();
      set_ref(q.initShard(), r);
      q.setSeal(false);
      q.send().wait(ws);
    });
    run("exportChanges", [&] {
      auto q = cap.exportChangesRequest();
      set_ref(q.initShard(), r);
      q.setSince(~0ULL);
      q.send().wait(ws);
    });
  }
  // Document updates: ids, revisions (positions 0 and past the history, hashes not hex, long
  // histories), bodies that are not JSON objects, blobs with keys and bytes that do not agree.
  struct upd {
    std::string id, body;
    std::vector<std::pair<uint64_t, std::string>> revs;
    bool managed;
    std::string blob_key;
  };
  std::vector<upd> updates = {
      {"", "{}", {{1, "0123456789abcdef0123456789abcdef"}}, false, ""},
      {"d", "{}", {{0, "0123456789abcdef0123456789abcdef"}}, false, ""},
      {"d", "{}", {{1, "a"}, {2, "b"}, {3, "c"}}, false, ""},
      {"d", "{}", {{~0ULL, "zz"}}, false, ""},
      {"d", "{}", {{2, ""}}, false, ""},
      {"d", "not json", {{1, "0123456789abcdef0123456789abcdef"}}, false, ""},
      {"d", "[1,2]", {{1, "0123456789abcdef0123456789abcdef"}}, false, ""},
      {"d", "{\"_attachments\":{\"a\":{\"stub\":true}}}", {{1, "0123456789abcdef0123456789abcdef"}}, true, "nothex"},
      {"d",
       "{\"_attachments\":{\"a\":{\"digest\":\"md5-x\",\"length\":-1}}}",
       {{1, "0123456789abcdef0123456789abcdef"}},
       true,
       ""},
      {"_local/x", "{}", {{1, "0123456789abcdef0123456789abcdef"}}, false, ""},
      {"_design/", "{\"views\":5}", {{1, "0123456789abcdef0123456789abcdef"}}, false, ""},
      {huge, "{}", {{1, "0123456789abcdef0123456789abcdef"}}, false, ""},
      {std::string("a\0b", 3), "{}", {{1, "0123456789abcdef0123456789abcdef"}}, false, ""}};
  for (size_t i = 0; i < 3000; ++i) updates[2].revs.push_back({i + 4, "h" + std::to_string(i)});
  for (auto& u : updates) {
    for (int method = 0; method < 3; ++method) {
      auto fill = [&](DocUpdate::Builder b) {
        b.setId(kj::StringPtr(u.id.c_str(), u.id.size()));
        b.setBody(u.body);
        b.setNewEdits(method == 1);
        b.setManagedAttachments(u.managed);
        auto revs = b.initRevs(static_cast<unsigned>(u.revs.size()));
        for (unsigned k = 0; k < u.revs.size(); ++k) {
          revs[k].setPos(u.revs[k].first);
          revs[k].setHash(u.revs[k].second);
        }
        if (u.managed) {
          auto blobs = b.initBlobs(1);
          blobs[0].setKey(u.blob_key);
          blobs[0].setBytes(data(garbage));
        }
      };
      if (method == 0) {
        run("applyChanges", [&] {
          auto q = cap.applyChangesRequest();
          set_ref(q.initShard(), refs[0]);
          fill(q.initUpdates(1)[0]);
          q.send().wait(ws);
        });
      } else {
        run("updateDocs", [&] {
          auto q = cap.updateDocsRequest();
          set_ref(q.initShard(), refs[0]);
          fill(q.initUpdates(1)[0]);
          q.send().wait(ws);
        });
      }
    }
  }
  for (uint64_t x : numbers) {
    run("changesPage", [&] {
      auto q = cap.changesPageRequest();
      set_ref(q.initShard(), refs[0]);
      q.setSince(x);
      q.setLimit(static_cast<uint32_t>(x));
      q.setNotBefore(static_cast<int64_t>(x));
      q.setDescending(x & 1);
      q.setWithDocs(true);
      q.setConflicts(true);
      q.setAttachments(true);
      q.send().wait(ws);
    });
    run("resolveSince", [&] {
      auto q = cap.resolveSinceRequest();
      set_ref(q.initShard(), refs[0]);
      q.setSeq(x);
      q.setUuidPrefix(x ? "zz" : "");
      q.send().wait(ws);
    });
    run("allDocsPage", [&] {
      auto q = cap.allDocsPageRequest();
      set_ref(q.initShard(), refs[0]);
      q.setMaxRows(x);
      q.setStartKey("\"z\"");
      q.setEndKey("\"a\"");
      q.setByKeys(x & 1);
      q.setIncludeDocs(true);
      auto keys = q.initKeys(3);
      keys.set(0, "not json");
      keys.set(1, "");
      keys.set(2, "{\"a\":");
      q.send().wait(ws);
    });
    run("readBlob", [&] {
      auto q = cap.readBlobRequest();
      set_ref(q.initShard(), refs[0]);
      q.setKey("k");
      q.setOffset(x);
      q.setLength(x);
      q.send().wait(ws);
    });
    run("stageBlob", [&] {
      auto q = cap.stageBlobRequest();
      set_ref(q.initShard(), refs[0]);
      q.setKey(x ? "../k" : "");
      q.setOffset(x);
      q.setPiece(data(garbage));
      q.send().wait(ws);
    });
    run("setRevsLimit", [&] {
      auto q = cap.setRevsLimitRequest();
      set_ref(q.initShard(), refs[0]);
      q.setLimit(static_cast<uint32_t>(x));
      q.send().wait(ws);
    });
    run("dbUpdates", [&] {
      auto q = cap.dbUpdatesRequest();
      q.setUuid(x ? "zz" : "");
      q.setSeq(x);
      q.setLimit(static_cast<uint32_t>(x));
      q.send().wait(ws);
    });
    run("writeLocal", [&] {
      auto q = cap.writeLocalRequest();
      set_ref(q.initShard(), refs[0]);
      q.setId("_local/p");
      q.setRev(x);
      q.setDeleted(x & 1);
      q.setBody("[1]");
      q.send().wait(ws);
    });
    run("retireCopy", [&] {
      auto q = cap.retireCopyRequest();
      q.setDb(db);
      q.setShardId("00000000-ffffffff");
      q.setEndSeq(x);
      q.setRemove(false);
      q.send().wait(ws);
    });
  }
  for (auto& t : texts) {
    auto text = kj::StringPtr(t.c_str(), t.size());
    run("readDoc", [&] {
      auto q = cap.readDocRequest();
      set_ref(q.initShard(), refs[0]);
      q.setId(text);
      auto params = q.initParams(3);
      params[0].setName("rev");
      params[0].setValue(text);
      params[1].setName("open_revs");
      params[1].setValue(text);
      params[2].setName("atts_since");
      params[2].setValue(text);
      q.send().wait(ws);
    });
    for (const char* what : {"local", "bulk_get", "revs_diff", "x"}) {
      run("readDoc", [&] {
        auto q = cap.readDocRequest();
        set_ref(q.initShard(), refs[0]);
        q.setWhat(what);
        q.setMethod("POST");
        q.setBody(text);
        q.setId(text);
        q.send().wait(ws);
      });
    }
    run("openDocs", [&] {
      auto q = cap.openDocsRequest();
      set_ref(q.initShard(), refs[0]);
      auto ids = q.initIds(1);
      ids.set(0, text);
      q.setBodies(true);
      q.setAllBodies(true);
      q.send().wait(ws);
    });
    run("localDoc", [&] {
      auto q = cap.localDocRequest();
      set_ref(q.initShard(), refs[0]);
      q.setId(text);
      q.send().wait(ws);
    });
    run("writeLocal", [&] {
      auto q = cap.writeLocalRequest();
      set_ref(q.initShard(), refs[0]);
      q.setId(text);
      q.setBody(text);
      q.send().wait(ws);
    });
    run("readBlob", [&] {
      auto q = cap.readBlobRequest();
      set_ref(q.initShard(), refs[0]);
      q.setKey(text);
      q.send().wait(ws);
    });
    run("dropStaged", [&] {
      auto q = cap.dropStagedRequest();
      set_ref(q.initShard(), refs[0]);
      q.setKey(text);
      q.send().wait(ws);
    });
    run("compactDb", [&] {
      auto q = cap.compactDbRequest();
      q.setDb(text);
      q.send().wait(ws);
    });
    run("retireCopy", [&] {
      auto q = cap.retireCopyRequest();
      q.setDb(text);
      q.setShardId(text);
      q.setRemove(true);
      q.setEndSeq(~0ULL);
      q.send().wait(ws);
    });
    run("retireCopy", [&] {
      auto q = cap.retireCopyRequest();
      q.setDb(db);
      q.setShardId(text);
      q.setRemove(false);
      q.send().wait(ws);
    });
    run("createJob", [&] {
      auto q = cap.createJobRequest();
      q.setBody(text);
      q.send().wait(ws);
    });
    for (const char* job : {R"({"type":"move"})", R"({"type":"split","db":5})",
                            R"({"type":"move","shard":"x","source":"a","target":"b"})",
                            R"({"type":"split","db":"d","source":"00000000-ffffffff","leader":"n9","copies":[1]})"}) {
      run("createJob", [&] {
        auto q = cap.createJobRequest();
        q.setBody(job);
        q.send().wait(ws);
      });
    }
    run("splitSeal", [&] {
      auto q = cap.splitSealRequest();
      q.setDb(text);
      q.setShardId(text);
      q.send().wait(ws);
    });
    run("splitSeal", [&] {
      auto q = cap.splitSealRequest();
      q.setDb(db);
      q.setShardId(text);
      q.send().wait(ws);
    });
    for (const char* method : {"GET", "PUT", "POST", ""}) {
      run("configRequest", [&] {  // a PUT lands in memory only, in a section of its own
        auto q = cap.configRequestRequest();
        q.setMethod(method);
        auto path = q.initPath(2);
        path.set(0, "settee_probe");
        path.set(1, text);
        q.setBody(text);
        q.setPersist(false);
        q.send().wait(ws);
      });
    }
    for (const char* method : {"GET", "PUT", "DELETE", "POST", ""}) {
      run("reshardRequest", [&] {
        auto q = cap.reshardRequestRequest();
        q.setMethod(method);
        q.setId(text);
        q.setBody(text);
        q.setState(t.size() & 1);
        q.send().wait(ws);
      });
    }
  }
  run("activeTasks", [&] { cap.activeTasksRequest().send().wait(ws); });
  run("nodeStatus", [&] { cap.nodeStatusRequest().send().wait(ws); });
  for (const std::string& t : texts) {
    for (bool set : {false, true}) {
      run("reshardState", [&] {
        auto q = cap.reshardStateRequest();
        q.setSet(set);
        q.setRunning(true);  // the node stays running: other probes may follow
        q.setReason(t);
        q.send().wait(ws);
      });
    }
  }
  run("reshardJobs", [&] { cap.reshardJobsRequest().send().wait(ws); });
  for (const std::string& t : texts) {
    for (bool remove : {false, true}) {
      run("editReshardJob", [&] {
        auto q = cap.editReshardJobRequest();
        q.setId(t);
        q.setRemove(remove);
        q.setRunning(true);
        q.setReason(t);
        q.send().wait(ws);
      });
    }
    for (const char* type : {"split", "move", ""}) {
      run("newReshardJob", [&] {
        auto q = cap.newReshardJobRequest();
        auto j = q.initJob();
        j.setType(type);
        j.setDb(t.size() & 1 ? db : t);
        j.setShard(t);
        j.setSuffix(static_cast<int64_t>(t.size()) - 3);
        j.setLeader(t);
        j.setSource(t);
        q.send().wait(ws);
      });
    }
  }
  run("ping", [&] { cap.pingRequest().send().wait(ws); });
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
    std::string how = mode == "deep" || mode == "malformed" ? "right" : mode;
    attempt("handshake", [&] { handshake(cap, ws, how, secret, mode == "replay" ? &recorded : nullptr); });
  }
  auto shard = [](auto b) {
    b.setDb("_users");
    b.setRange("00000000-ffffffff");
  };
  if (mode == "malformed") {
    malformed_calls(cap, ws, argc > 5 ? argv[5] : "malformed");
    return 0;
  }
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
