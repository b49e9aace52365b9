#include <doctest/doctest.h>

#include "node/config.hpp"
#include "node/settings.hpp"
#include "temp_dir.hpp"

using namespace settee;

TEST_CASE("ini parsing: sections, comments, unknown keys kept") {
  auto c = config::parse("; comment\n[log]\nlevel = warning\n\n[future]\nthing = 1 ; trailing\n# x\n");
  REQUIRE(c.ok());
  CHECK(c->get("log", "level") == "warning");
  CHECK(c->get("future", "thing") == "1");
  CHECK(c->get_int("future", "thing", 0) == 1);
  CHECK(c->get("nope", "x", "def") == "def");
  CHECK(c->get_int("log", "level", 7) == 7);  // not a number: default
}

TEST_CASE("ini errors name the line") {
  auto c = config::parse("[a]\nx = 1\nnot a pair\n");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().reason.find(":3:") != std::string::npos);
  CHECK_FALSE(config::parse("key = before section\n").ok());
  CHECK_FALSE(config::parse("[unterminated\n").ok());
}

TEST_CASE("save and load round-trip; merge lets the later layer win") {
  temp_dir dir;
  config a;
  a.set("s", "k", "1");
  a.set("s", "j", "x");
  REQUIRE(a.save_file(dir.path + "/a.ini"));
  auto b = config::load_file(dir.path + "/a.ini");
  REQUIRE(b.ok());
  CHECK(b->get("s", "j") == "x");
  config over;
  over.set("s", "k", "2");
  b->merge(over);
  CHECK(b->get("s", "k") == "2");
  CHECK(b->get("s", "j") == "x");
  CHECK_FALSE(config::load_file(dir.path + "/missing.ini").ok());
}

TEST_CASE("edited sets one key in place, adds a missing one to its section, removes one, keeping everything else") {
  const std::string text =
      "; the operator's notes\n[chttpd]\nport = 5984\n\n[admins]\n; first admin\n  admin = plain ; old\nother = x\n"
      "[other]\nadmin = untouched";
  const std::string hash = "-pbkdf2:sha256-aa,bb,1";
  std::string out = config::edited(text, "admins", "admin", &hash);
  CHECK(out ==
        "; the operator's notes\n[chttpd]\nport = 5984\n\n[admins]\n; first admin\n  admin = -pbkdf2:sha256-aa,bb,1\n"
        "other = x\n[other]\nadmin = untouched");
  CHECK(config::parse(out)->get("admins", "admin") == hash);
  CHECK(config::parse(out)->get("other", "admin") == "untouched");
  const std::string two = "2";
  CHECK(config::edited("[a]\nk=1\n", "a", "k", &two) == "[a]\nk = 2\n");
  // Missing: after the section's last key (not after the blank line or the next section's header).
  CHECK(config::edited(text, "chttpd", "bind_address", &two) ==
        "; the operator's notes\n[chttpd]\nport = 5984\nbind_address = 2\n\n[admins]\n; first admin\n  admin = plain ; "
        "old\nother = x\n[other]\nadmin = untouched");
  CHECK(config::edited(text, "other", "k", &two) == text + "\nk = 2\n");  // the last section, no final newline
  CHECK(config::edited("[a]\nk = 1\n", "b", "k", &two) == "[a]\nk = 1\n\n[b]\nk = 2\n");
  CHECK(config::edited("", "b", "k", &two) == "[b]\nk = 2\n");
  CHECK(config::edited("[e]\n", "e", "k", &two) == "[e]\nk = 2\n");
  // Removed: only that line.
  CHECK(config::edited(text, "admins", "other", nullptr) ==
        "; the operator's notes\n[chttpd]\nport = 5984\n\n[admins]\n; first admin\n  admin = plain ; old\n"
        "[other]\nadmin = untouched");
  CHECK(config::edited(text, "admins", "nobody", nullptr) == text);
  for (const std::string& t : {text, std::string("[a]\nk = 1")}) {
    auto parsed = config::parse(config::edited(t, "z", "new", &two));
    REQUIRE(parsed);
    CHECK(parsed->get("z", "new") == "2");
  }
}

TEST_CASE("settings: CouchDB's defaults from an empty configuration, every limit in its unit") {
  auto s = read_settings(config{});
  REQUIRE(s);
  CHECK(s->request_timeout == std::chrono::milliseconds(60000));
  CHECK(s->view_timeout == std::chrono::milliseconds(3600000));  // [fabric] view_permsg_timeout
  CHECK(s->map_size_bytes == (65536ull << 20));
  CHECK(s->max_document_id_length == SIZE_MAX);  // "infinity"
  CHECK(s->max_document_size_bytes == 8000000);
  CHECK(s->port == 5984);
  CHECK(s->server_threads == 128);
  CHECK_FALSE(s->rpc_port);  // no cluster RPC unless asked
  CHECK_FALSE(s->time_seq_min_time_s);
  CHECK(s->tls == settings::tls_mode::automatic);
  CHECK(s->sync_interval == std::chrono::milliseconds(5000));
  CHECK(s->push_timeout == std::chrono::milliseconds(30000));
  CHECK(s->catalog_push_timeout == std::chrono::milliseconds(5000));
  CHECK_FALSE(s->everyone_may_read_new_dbs);
}

TEST_CASE("settings: values are clamped to what works, and what cannot be taken names its key") {
  auto c = config::parse(
      "[chttpd]\nserver_threads = 2\nheader_timeout = 0\n[couchdb]\nmax_json_depth = 999999\n"
      "max_document_id_length = 64\n[cluster]\nrpc_port = 0\nq = 0\n[time_seq]\nmin_time = 0\n"
      "[fabric]\nview_permsg_timeout = 99999999999\n");
  REQUIRE(c);
  auto s = read_settings(*c);
  REQUIRE(s);
  CHECK(s->server_threads == 8);
  CHECK(s->header_timeout_s == 1);
  CHECK(s->max_json_depth == 10000);
  CHECK(s->max_document_id_length == 64);
  CHECK(s->view_timeout == std::chrono::milliseconds(INT32_MAX));  // an RPC call's timer takes an int
  CHECK(s->max_dbs_open == 500);                                   // 500 maps of 64 GiB: 31 TiB of address space
  REQUIRE(s->rpc_port);
  CHECK(*s->rpc_port == 0);  // any free port
  CHECK(s->default_q == 1);
  REQUIRE(s->time_seq_min_time_s);
  CHECK(*s->time_seq_min_time_s == 0);
  // More open shards than the address space holds: as many as 96 TiB of maps hold.
  for (auto [ini, open] :
       {std::pair{"[couchdb]\nmax_dbs_open = 5000\n", 1536},
        std::pair{"[couchdb]\nmax_dbs_open = 5000\nmap_size_mb = 16384\n", 5000},
        std::pair{"[couchdb]\nmap_size_mb = 8388608\n", 12}, std::pair{"[couchdb]\nmap_size_mb = 1073741824\n", 1}}) {
    auto m = config::parse(ini);
    REQUIRE(m);
    auto r = read_settings(*m);
    REQUIRE(r);
    CHECK(r->max_dbs_open == size_t(open));
  }
  for (const char* bad : {"[couchdb]\ndefault_security = open\n", "[cluster]\ntls = maybe\n",
                          "[cluster]\nrpc_port = 70000\n", "[chttpd]\nport = -2\n"}) {
    auto b = config::parse(bad);
    REQUIRE(b);
    auto r = read_settings(*b);
    REQUIRE_FALSE(r);
    CHECK(r.error().reason.rfind("[", 0) == 0);
  }
}
