#include <doctest/doctest.h>

#include "wire/multipart.hpp"

using namespace settee;

TEST_CASE("multipart: what the writer builds, the parser reads back") {
  multipart::writer w("b0undary");
  w.add({{"Content-Type", "application/json"}}, R"({"a":1})");
  w.add({{"Content-Disposition", "attachment; filename=\"dir/x.bin\""}}, std::string("\0\r\n--b0", 7));
  std::string body = w.finish();
  CHECK(w.content_type("related") == "multipart/related; boundary=\"b0undary\"");
  CHECK(body.rfind("--b0undary\r\nContent-Type: application/json\r\n\r\n{\"a\":1}\r\n--b0undary\r\n", 0) == 0);
  CHECK(body.size() >= 14);
  CHECK(body.substr(body.size() - 14) == "\r\n--b0undary--");
  auto parts = multipart::parse(body, "b0undary");
  REQUIRE(parts);
  REQUIRE(parts->size() == 2);
  CHECK((*parts)[0].header("content-type") == "application/json");
  CHECK((*parts)[0].body == R"({"a":1})");
  CHECK((*parts)[1].filename() == "dir/x.bin");
  CHECK((*parts)[1].body == std::string("\0\r\n--b0", 7));  // a near-delimiter inside the bytes
}

TEST_CASE("multipart: preamble, padding, parts without headers, and parameters") {
  std::string body = "preamble\r\n--xyz  \r\n\r\nno headers\r\n--xyz\r\nX-A:  1 \r\n\r\n\r\n--xyz--\r\nepilogue";
  auto parts = multipart::parse(body, "xyz");
  REQUIRE(parts);
  REQUIRE(parts->size() == 2);
  CHECK((*parts)[0].headers.empty());
  CHECK((*parts)[0].body == "no headers");
  CHECK((*parts)[1].header("x-a") == "1");
  CHECK((*parts)[1].body.empty());
  CHECK(multipart::boundary_of("multipart/related; boundary=\"a b\"") == "a b");
  CHECK(multipart::boundary_of("Multipart/Related;Boundary=abc;x=y") == "abc");
  CHECK(multipart::boundary_of("multipart/related") == "");
  CHECK(multipart::media_type_of(" Multipart/Related ; boundary=x") == "multipart/related");
}

TEST_CASE("multipart: malformed bodies are 400s, never a crash") {
  for (std::string bad :
       {"", "--xyz", "--xyz\r\nA: 1", "--xyz\r\nA: 1\r\n\r\nbody", "--xyz\r\nno colon\r\n\r\nx\r\n--xyz--",
        "text without the delimiter", "--xyz\r\n\r\nnever closed\r\n--xy"}) {
    auto parts = multipart::parse(bad, "xyz");
    INFO(bad);
    REQUIRE(!parts);
    CHECK(parts.error().code == errc::bad_request);
  }
  CHECK(!multipart::parse("--\r\n\r\nx\r\n----", ""));
  CHECK(!multipart::parse("x", std::string(71, 'b')));
  auto empty = multipart::parse("--xyz--", "xyz");
  REQUIRE(empty);
  CHECK(empty->empty());
}
