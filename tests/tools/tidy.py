"""The layout's rules, checked like a test (issues 29 and 50). Fails on:
  - an include a folder may not make (MAY_INCLUDE: the one table of who may include whom; app/,
    the composition root, includes anything; js/ is the sandboxed worker and nothing includes it);
  - a third-party header where its folder may not use it (FORBIDDEN_HEADERS);
  - a read of the system or monotonic clock outside the clock seam (node/clock.cpp);
  - an error name written as a literal (`{"error", "..."}` or `["error"] = "..."`) instead of taken
    from the table (node/errc.def) through add_error/error_json/error_name_of;
  - a function over 70 lines that is not in LONG_FUNCTIONS, or longer than its figure there, or
    shorter (lower the figure: the ratchet only tightens) or no longer long (strike it);
  - a sleep (sleep_for, usleep, nanosleep) outside SLEEPS, where each one left has its reason.

Known debts are listed below with the count of places: a new place fails, and so does a debt that
was paid without striking it from the list (the list only shrinks).
    python3 tests/tools/tidy.py [SOURCE_DIR]
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
MODULES = ["node", "wire", "storage", "query", "search", "actors", "cluster", "replicator", "http", "app", "js"]
# Which folders each folder may include besides itself (docs/architecture.md section 37).
_BELOW_ACTORS = {"node", "wire", "storage", "query", "search"}
MAY_INCLUDE = {
    "node": set(),                                  # clock, config, errors, JSON, crypto: the ground
    "wire": {"node"},                               # HTTP messages as values: no sockets, no actors
    "storage": {"node"},                            # LMDB files and their codecs
    "query": {"node", "wire", "storage"},           # Mango and view queries: pure code
    "search": {"node", "wire", "storage"},          # full-text search definitions and queries: pure code
    "actors": _BELOW_ACTORS,                        # shard replicas, the coordinator, readers, jobs
    "cluster": _BELOW_ACTORS | {"actors"},          # Cap'n Proto RPC between nodes
    "replicator": _BELOW_ACTORS | {"actors"},       # couch_replicator: knows no HTTP server
    "http": _BELOW_ACTORS | {"actors", "replicator"},  # parses requests, renders answers
    "app": set(MODULES) - {"js"},                   # the composition root: main, node_process
    "js": {"node"},                                 # the sandboxed SpiderMonkey worker
}
COMPOSITION_ROOT = re.compile(r"^app/")
# Third-party headers a folder may not include.
_NO_IO = r"caf/|lmdb\.h|capnp/|kj/|httplib"
FORBIDDEN_HEADERS = {
    "node": re.compile(r"#include [<\"](caf/|lmdb\.h|capnp/|kj/|httplib)"),
    "wire": re.compile(r"#include [<\"](" + _NO_IO + ")"),
    "query": re.compile(r"#include [<\"](" + _NO_IO + ")"),
    "search": re.compile(r"#include [<\"](" + _NO_IO + r"|lucene\+\+/)"),
    "storage": re.compile(r"#include [<\"](caf/|httplib|nlohmann/|node/json\.hpp)"),
    "actors": re.compile(r"#include [<\"](httplib|capnp/rpc|kj/async)"),
    "cluster": re.compile(r"#include [<\"](httplib)"),
    "replicator": re.compile(r"#include [<\"](lmdb\.h|capnp/|kj/)"),
    "http": re.compile(r"#include [<\"](lmdb\.h|capnp/|kj/|httplib)"),
}
SANDBOX_ONLY = re.compile(r"#include <(jsapi\.h|js/[^>]+|mozilla/[^>]+|seccomp\.h)>")
CLOCK = re.compile(r"\b(steady_clock|system_clock|high_resolution_clock)::now\b|\b(time|clock_gettime|gettimeofday)\(")
CLOCK_SEAM = {"node/clock.cpp"}
ERROR_LITERAL = re.compile(r'\{\s*"error"\s*,\s*"|\["error"\]\s*=\s*"')
SLEEP = re.compile(r"\b(sleep_for|usleep|nanosleep|sleep)\s*\(")
# (file, function) -> why it sleeps instead of waiting for an event. A new sleep fails.
SLEEPS = {
    ("actors/reshard_steps.cpp", "resharder::wait_for_readers"):
        "readers hold a shard by reference count, which has no release event; 10 ms looks, 10 s at most, "
        "on the peer's RPC thread answering retire_copy (architecture 42)",
    ("http/server.cpp", "http_server::impl::accept_all"):
        "accept failed for want of file descriptors or memory: back off 10 ms instead of spinning",
    ("replicator/rep_client.cpp", "rep_client::retrying"):
        "the backoff between a request's retries (250 ms doubling to 10 s), sliced to 50 ms so that a "
        "cancel (an atomic flag set by the job's stop) acts within 50 ms",
    ("js/engine.cpp", "watchdog::watchdog"):
        "the worker's watchdog ticks every 2 ms while a call runs (SpiderMonkey's interrupt is polled, "
        "not an event); parked on a condition variable when idle",
}
# (rule, file, what) -> places. Issue 29 pays these; strike each line as it is paid.
DEBTS = {
    ("third-party", "storage/attachments.hpp", "node/json.hpp"): 1,
    ("third-party", "storage/db_events.cpp", "node/json.hpp"): 1,
    ("third-party", "storage/import_batch.cpp", "node/json.hpp"): 1,
    ("third-party", "storage/shard_store.cpp", "node/json.hpp"): 1,
}


# (file, function) -> lines: the functions over 70 lines when the ratchet began (issue 50). One may
# not grow, a new one may not appear; split them and lower or strike their figures.
LONG_FUNCTIONS = {
    ("http/changes_handlers.cpp", "parse_changes"): 134,
    ("http/bulk_handlers.cpp", "handle_bulk_docs"): 105,
    ("storage/shard_store.cpp", "shard_store::commit"): 127,
    ("http/metrics_handlers.cpp", "prometheus"): 105,
    ("storage/shard_store.cpp", "shard_store::apply_doc"): 105,
    ("storage/shard_store.cpp", "shard_store::import_step"): 93,
    ("storage/shard_store.cpp", "shard_store::open_env"): 81,
    ("http/doc_handlers.cpp", "get_attachment"): 96,
    ("http/doc_handlers.cpp", "write_attachment"): 91,
    ("query/view_query.cpp", "apply_one"): 90,
    ("query/mango_selector.cpp", "evaluation::match_op"): 71,
    ("cluster/shard_sync.cpp", "sync_database"): 86,
    ("http/reshard_handlers.cpp", "handle_jobs"): 86,
    ("query/mango_query.cpp", "parse_find"): 83,
    ("actors/reshard_steps.cpp", "resharder::step"): 73,
}


def sources():
    for module in MODULES:
        base = os.path.join(ROOT, module)
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                if f.endswith((".cpp", ".hpp")):
                    full = os.path.join(dirpath, f)
                    yield os.path.relpath(full, ROOT), full


def check(found):
    """found: {(rule, file, what): places}. Returns the failures."""
    failures = []
    for key, n in sorted(found.items()):
        allowed = DEBTS.get(key, 0)
        if n > allowed:
            failures.append(f"{key[1]}: {key[0]}: {key[2]} ({n} place(s), {allowed} allowed)")
    for key, allowed in sorted(DEBTS.items()):
        if found.get(key, 0) < allowed:
            failures.append(f"{key[1]}: {key[0]}: {key[2]} is paid ({found.get(key, 0)} of {allowed}): strike it from DEBTS")
    return failures


def functions(text):
    """Functions defined at column 0 (clang-format puts every namespace-level one there; a
    signature may run over several lines): (first line, last line, name), 1-based."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not re.match(r"^[A-Za-z_~]", line) or re.match(
                r"^(namespace|struct|class|enum|union|extern|template|using|typedef|static_assert)\b", line):
            i += 1
            continue
        # The signature: up to the line that opens the body; a ';' first means a declaration.
        j = i
        while j < len(lines) and j < i + 8 and not lines[j].rstrip().endswith("{") and ";" not in lines[j]:
            j += 1
        if j >= len(lines) or ";" in lines[j] or "(" not in "".join(lines[i:j + 1]) or "=" in lines[i].split("(")[0]:
            i += 1
            continue
        end = j + 1
        while end < len(lines) and lines[end] != "}":
            end += 1
        name = re.search(r"([\w:~]+)\s*\(", " ".join(lines[i:j + 1]))
        out.append((i + 1, end + 1, name.group(1) if name else "?"))
        i = end + 1
    return out


def enclosing(funcs, line_no):
    for first, last, name in funcs:
        if first <= line_no <= last:
            return name
    return "(namespace level)"


def main():
    found, long = {}, {}
    for rel, full in sources():
        with open(full, encoding="utf-8") as f:
            text = f.read()
        module = rel.split("/")[0]
        for m in re.finditer(r'^#include "(\w+)/([^"]+)"', text, re.M):
            dst = m.group(1)
            if dst not in MODULES or dst == module or dst in MAY_INCLUDE[module]:
                continue
            key = ("direction", rel, f"{dst}/{m.group(2)}")
            found[key] = found.get(key, 0) + 1
        if module != "js":  # SpiderMonkey and seccomp stay in the worker
            for m in SANDBOX_ONLY.finditer(text):
                key = ("third-party", rel, m.group(1))
                found[key] = found.get(key, 0) + 1
        if module in FORBIDDEN_HEADERS:
            for m in FORBIDDEN_HEADERS[module].finditer(text):
                header = re.search(r'[<"]([^>"]+)', m.group(0)[len("#include "):]).group(1)
                key = ("third-party", rel, header)
                found[key] = found.get(key, 0) + 1
        funcs = functions(text)
        for n, line in enumerate(text.split("\n"), 1):
            code = line.split("//")[0]
            if rel not in CLOCK_SEAM and CLOCK.search(code):
                key = ("clock", rel, "reads the clock outside node/clock")
                found[key] = found.get(key, 0) + 1
            if ERROR_LITERAL.search(code):
                key = ("error-name", rel, "an error name not from node/errc.def")
                found[key] = found.get(key, 0) + 1
            if SLEEP.search(code) and "SCMP_SYS" not in code:
                where = (rel, enclosing(funcs, n))
                if where not in SLEEPS:
                    key = ("sleep", rel, f"{where[1]} sleeps (wait for an event, or list it in SLEEPS with the reason)")
                    found[key] = found.get(key, 0) + 1
        for first, last, name in funcs:
            if last - first + 1 > 70:
                long[(rel, name)] = last - first + 1
    failures = check(found)
    for key, n in sorted(long.items(), key=lambda kv: -kv[1]):
        allowed = LONG_FUNCTIONS.get(key)
        if allowed is None:
            failures.append(f"{key[0]}: {key[1]} has {n} lines: a new function over 70 (split it)")
        elif n > allowed:
            failures.append(f"{key[0]}: {key[1]} grew to {n} lines ({allowed} allowed): it may not grow")
        elif n < allowed:
            failures.append(f"{key[0]}: {key[1]} is {n} lines now: lower its figure in LONG_FUNCTIONS to {n}")
    for key, allowed in sorted(LONG_FUNCTIONS.items()):
        if key not in long:
            failures.append(f"{key[0]}: {key[1]} is no longer over 70 lines (or moved): strike it from LONG_FUNCTIONS")
    print(f"functions over 70 lines: {len(long)}")
    for key, n in sorted(long.items(), key=lambda kv: -kv[1]):
        print(f"  {n:4d}  {key[0]}  {key[1]}")
    for f in failures:
        print("FAIL " + f)
    print(f"tidy: {len(failures)} failure(s), {sum(DEBTS.values())} known debt place(s), "
          f"{len(long)} long function(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
