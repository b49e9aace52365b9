#include <doctest/doctest.h>

#include <sys/stat.h>

#include <array>
#include <atomic>
#include <thread>

#include "node/crypto.hpp"
#include "node/files.hpp"
#include "node/live_config.hpp"
#include "temp_dir.hpp"

using namespace settee;

namespace {

config ini(const std::string& text) {
  return *config::parse(text);
}

struct layered {
  temp_dir dir;
  std::string local = dir.path + "/local.ini";
  std::string op = dir.path + "/operator.ini";
  std::unique_ptr<live_config> cfg;

  explicit layered(live_config::checker check = nullptr) {
    REQUIRE(replace_file(local, "; the node's own\n[couchdb]\nuuid = u1\n"));
    REQUIRE(replace_file(op, "[log]\nlevel = info ; the operator's\n", 0640));
    std::vector<live_config::layer> layers;
    layers.push_back({"defaults", "", ini("[log]\nlevel = warning\naccess = false\n[cluster]\nq = 2\n")});
    layers.push_back({"local.ini", local, *config::load_file(local)});
    layers.push_back({"operator", op, *config::load_file(op)});
    layers.push_back({"the command line", "", ini("[chttpd]\nport = 1234\n")});
    cfg = std::make_unique<live_config>(std::move(layers), local, std::move(check));
  }
};

}  // namespace

TEST_CASE("live_config: layers merge, a change goes to the file its value came from, new keys to local.ini") {
  layered l;
  CHECK(l.cfg->get("log", "level") == "info");
  CHECK(l.cfg->get("log", "access") == "false");
  CHECK(l.cfg->get_int("chttpd", "port", 0) == 1234);
  auto before = l.cfg->current();
  const uint64_t v0 = l.cfg->version();

  auto old = l.cfg->set("log", "level", "  debug ", true);  // trimmed, as CouchDB
  REQUIRE(old);
  CHECK(*old == "info");
  CHECK(l.cfg->get("log", "level") == "debug");
  CHECK(before->get("log", "level") == "info");  // a reader's snapshot does not change under it
  CHECK(l.cfg->version() == v0 + 1);
  CHECK(*read_file(l.op) == "[log]\nlevel = debug\n");                       // where it came from
  CHECK(*read_file(l.local) == "; the node's own\n[couchdb]\nuuid = u1\n");  // untouched

  REQUIRE(l.cfg->set("cors", "origins", "http://a.example", true));
  CHECK(*read_file(l.local) == "; the node's own\n[couchdb]\nuuid = u1\n\n[cors]\norigins = http://a.example\n");
  REQUIRE(l.cfg->set("log", "access", "true", true));  // a default: the node's own file takes it
  CHECK(config::load_file(l.local)->get("log", "access") == "true");

  // Deleted from its file: the value below shows again.
  auto gone = l.cfg->erase("log", "level", true);
  REQUIRE(gone);
  CHECK(*gone == "debug");
  CHECK(l.cfg->get("log", "level") == "warning");
  CHECK(*read_file(l.op) == "[log]\n");
  auto missing = l.cfg->erase("nope", "x", true);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == errc::not_found);
}

TEST_CASE("live_config: values not persisted live in memory until a reload, which reads the files again") {
  layered l;
  REQUIRE(l.cfg->set("log", "level", "error", false));
  CHECK(l.cfg->get("log", "level") == "error");
  CHECK(*read_file(l.op) == "[log]\nlevel = info ; the operator's\n");
  REQUIRE(l.cfg->erase("cluster", "q", false));  // a default, gone from memory only
  CHECK_FALSE(l.cfg->current()->has("cluster", "q"));
  // Someone edits a file by hand, then asks for a reload.
  REQUIRE(replace_file(l.local, "[couchdb]\nuuid = u1\n[admins]\nroot = plain-text\n"));
  REQUIRE(l.cfg->reload());
  CHECK(l.cfg->get("log", "level") == "info");
  CHECK(l.cfg->get("cluster", "q") == "2");
  CHECK(crypto::verify("plain-text", l.cfg->get("admins", "root")));  // used through its hash
  REQUIRE(replace_file(l.local, "[broken\n"));
  CHECK_FALSE(l.cfg->reload());
  CHECK(l.cfg->get("log", "level") == "info");  // nothing changed
}

TEST_CASE("live_config: an admin's password is hashed before it is kept anywhere") {
  layered l;
  REQUIRE(l.cfg->set("admins", "bob", "secret-pw", true));
  const std::string stored = l.cfg->get("admins", "bob");
  CHECK(crypto::is_hashed(stored));
  CHECK(crypto::verify("secret-pw", stored));
  auto text = *read_file(l.local);
  CHECK(text.find("secret-pw") == std::string::npos);
  CHECK(text.find(stored) != std::string::npos);
  // An already hashed value is kept as given.
  REQUIRE(l.cfg->set("admins", "eve", stored, true));
  CHECK(l.cfg->get("admins", "eve") == stored);
}

TEST_CASE("live_config: what an ini file cannot hold, and what the node cannot run with, changes nothing") {
  layered l([](const config& c) {
    return c.get("cluster", "q") == "0" ? status{errc::bad_request, "[cluster] q must be at least 1"} : status{};
  });
  const std::string local = *read_file(l.local), op = *read_file(l.op);
  const uint64_t v = l.cfg->version();
  for (auto [sec, key, value] : std::vector<std::array<std::string, 3>>{
           {"log", "level", "a\nb"},
           {"log", "level", "a\r\n[admins]\nx = y"},
           {"log", "lev\nel", "x"},
           {"log", "a=b", "x"},
           {"lo[g", "level", "x"},
           {"log]", "level", "x"},
           {"", "level", "x"},
           {"log", "", "x"},
           {"log", ";level", "x"},
           {"log", " level", "x"},
           {"log", "level", std::string(70000, 'v')},
           {"log", std::string(300, 'k'), "x"},
           {"log", "level", "debug ; comment"},
           {"log", "level", std::string("a\0b", 3)},
           {"cluster", "q", "0"},
       }) {
    CAPTURE(sec);
    CAPTURE(key);
    auto r = l.cfg->set(sec, key, value, true);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == errc::bad_request);
  }
  CHECK(l.cfg->version() == v);
  CHECK(*read_file(l.local) == local);
  CHECK(*read_file(l.op) == op);
  CHECK(live_config::locked_section("query_servers"));
  CHECK_FALSE(live_config::locked_section("cors"));
}

TEST_CASE("live_config: a file the node cannot write refuses the change and keeps the old value") {
  layered l;
  REQUIRE(replace_file(l.op, "[log]\nlevel = info\n", 0440));
  // A directory where the file's temporary copy would go makes the write fail, even as root.
  REQUIRE(::mkdir((l.op + ".tmp").c_str(), 0755) == 0);
  auto r = l.cfg->set("log", "level", "debug", true);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == errc::bad_request);
  CHECK(r.error().reason.find(l.op) != std::string::npos);
  CHECK(l.cfg->get("log", "level") == "info");
}

TEST_CASE("live_config: watchers see each change with the newest snapshot; readers see changes in order") {
  layered l;
  std::atomic<int> seen{0};
  std::string last;
  l.cfg->watch([&](const config& c, const std::string& sec, const std::string& key) {
    CHECK(sec == "x");
    CHECK(key == "k");
    last = c.get("x", "k");
    ++seen;
  });
  std::atomic<bool> done{false};
  std::thread reader([&] {
    int64_t highest = -1;
    while (!done) {
      const int64_t now = l.cfg->current()->get_int("x", "k", -1);
      CHECK(now >= highest);
      highest = now;
    }
  });
  for (int i = 0; i < 200; ++i) REQUIRE(l.cfg->set("x", "k", std::to_string(i), false));
  done = true;
  reader.join();
  CHECK(seen == 200);
  CHECK(last == "199");
}
