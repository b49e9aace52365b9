// check: invariants asserted in every build (not only debug ones). A violated invariant is a bug in
// settee, not bad input: the process logs where and stops, before it can write a wrong answer to
// disk. Data read from disk or the network is validated into error values instead (status).
#pragma once

namespace settee {

[[noreturn]] void check_failed(const char* expr, const char* file, int line);

}  // namespace settee

#define SETTEE_CHECK(cond) ((cond) ? (void)0 : ::settee::check_failed(#cond, __FILE__, __LINE__))
