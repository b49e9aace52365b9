#include <doctest/doctest.h>

#include "node/clock.hpp"

using namespace settee;

TEST_CASE("manual clock moves only when told") {
  manual_clock c(5000);
  CHECK(c.now_ms() == 5000);
  CHECK(c.now_s() == 5);
  c.advance_ms(1500);
  CHECK(c.now_ms() == 6500);
  c.set_ms(-1000);  // time may go backwards; callers must cope
  CHECK(c.now_ms() == -1000);
  system_clock s;
  CHECK(s.now_s() > 1600000000);
}
