#include <doctest/doctest.h>

#include "node/log.hpp"

using namespace settee;

TEST_CASE("log: what a line must not carry raw becomes '?'") {
  CHECK(log::printable("GET /a\nforged line\r\x01\x7f ok") == "GET /a?forged line??? ok");
  CHECK(log::printable("plain é text") == "plain é text");  // UTF-8 stays
}
