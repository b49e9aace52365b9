// check: invariants asserted in every build (not only debug ones). A violated invariant is a bug in
// settee, not bad input: the process logs where and stops, before it can write a wrong answer to
// disk. Data read from disk or the network is validated into error values instead (status).
#pragma once

namespace settee {

[[noreturn]] void check_failed(const char* expr, const char* file, int line);

// Threads that must never block (the cluster RPC event loop) say so once; SETTEE_DEBUG_CHECK(
// !on_event_loop_thread()) in every blocking wait proves under the test suite that none of them
// does (debug builds; the sanitizer build runs the suite in Debug).
void mark_event_loop_thread();
bool on_event_loop_thread();

}  // namespace settee

#ifdef NDEBUG
#define SETTEE_DEBUG_CHECK(cond) ((void)0)
#else
#define SETTEE_DEBUG_CHECK(cond) SETTEE_CHECK(cond)
#endif

#define SETTEE_CHECK(cond) ((cond) ? (void)0 : ::settee::check_failed(#cond, __FILE__, __LINE__))
