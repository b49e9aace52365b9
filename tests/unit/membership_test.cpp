#include <doctest/doctest.h>

#include "cluster/membership.hpp"

using namespace settee;

TEST_CASE("seeds parse as name@host:port lists") {
  auto s = parse_seeds("n1@10.0.0.1:4001, n2@host.example:4002 ,n3@127.0.0.1:1");
  REQUIRE(s.ok());
  REQUIRE(s->size() == 3);
  CHECK((*s)[0].name == "n1@10.0.0.1");
  CHECK((*s)[0].host == "10.0.0.1");
  CHECK((*s)[0].port == 4001);
  CHECK((*s)[1].host == "host.example");
  CHECK(parse_seeds("").ok());
  CHECK(parse_seeds("")->empty());
  for (const char* bad :
       {"n1", "n1@host", "@host:1", "n1@:1", "n1@h:0", "n1@h:70000", "n1@h:x", "n1@h:1,,n2@h:2", "n1@h:1,"}) {
    auto r = parse_seeds(bad);
    CHECK_MESSAGE(!r.ok(), bad);
  }
  auto r = parse_seeds("good@h:1,bad");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().reason.find("`bad`") != std::string::npos);
}

TEST_CASE("membership: members, connections, sorted views with self") {
  membership m("b@h");
  CHECK(m.all_nodes() == std::vector<std::string>{"b@h"});
  m.add_member("c@h");
  m.add_member("a@h");
  m.add_member("b@h");  // self is not a peer
  CHECK(m.cluster_nodes() == std::vector<std::string>{"a@h", "b@h", "c@h"});
  CHECK(m.all_nodes() == std::vector<std::string>{"b@h"});
  m.connected("c@h", {"0.1.0", {"changes"}});
  CHECK(m.all_nodes() == std::vector<std::string>{"b@h", "c@h"});
  CHECK(m.is_connected("c@h"));
  m.disconnected("c@h");
  CHECK_FALSE(m.is_connected("c@h"));
  CHECK(m.cluster_nodes().size() == 3);
  m.connected("d@h", {});  // a node that dialled us is a member too
  CHECK(m.cluster_nodes().size() == 4);
}
