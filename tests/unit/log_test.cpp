#include <doctest/doctest.h>

#include "node/log.hpp"

using namespace settee;

TEST_CASE("log: what a line must not carry raw becomes '?'") {
  CHECK(log::printable("GET /a\nforged line\r\x01\x7f ok") == "GET /a?forged line??? ok");
  CHECK(log::printable("plain é text") == "plain é text");  // UTF-8 stays
}

TEST_CASE("log: a line is UTF-8 whatever bytes it quotes") {
  CHECK(log::utf8_only("plain é 中 😀 text") == "plain é 中 😀 text");
  CHECK(log::utf8_only("db \x9a\xff name") == "db ?? name");          // stray continuation, 0xff
  CHECK(log::utf8_only("\xc3") == "?");                               // cut short
  CHECK(log::utf8_only("\xc0\xaf") == "??");                          // overlong '/'
  CHECK(log::utf8_only("\xed\xa0\x80") == "???");                     // a surrogate
  CHECK(log::utf8_only("\xf4\x90\x80\x80") == "????");                // above U+10FFFF
  CHECK(log::utf8_only("\xe2\x82\xac\xe2\x82") == "\xe2\x82\xac??");  // a valid one, then a cut one
}
