"""The layout's rules, checked like a test (issue 29 point 7). Fails on:
  - an include against the module direction: node <- storage <- actors <- cluster, and http/ may
    include node, storage and actors but not cluster (it asks actors/ interfaces: coordinator,
    members); only the composition root (node/main.cpp, node/node_process.*, node/time_seq_tool.*) includes anything;
  - a third-party header where DESIGN.md forbids it: CAF, JSON or httplib in storage/, LMDB or
    Cap'n Proto in http/, SpiderMonkey or seccomp outside js/ (the sandboxed worker, which may
    include node/ only, and which nothing includes);
  - a read of the system or monotonic clock outside the clock seam (node/clock.cpp);
  - an error name written as a literal (`{"error", "..."}` or `["error"] = "..."`) instead of taken
    from the table (node/errc.def) through add_error/error_json/error_name_of;
and lists the functions longer than 70 lines (not a failure: the list to shrink).

Known debts are listed below with the count of places: a new place fails, and so does a debt that
was paid without striking it from the list (the list only shrinks).
    python3 tests/tools/tidy.py [SOURCE_DIR]
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
MODULES = ["node", "storage", "actors", "cluster", "http", "js"]
RANK = {"node": 0, "storage": 1, "actors": 2, "cluster": 3}
COMPOSITION_ROOT = re.compile(r"^node/(main\.cpp|node_process\.(cpp|hpp)|time_seq_tool\.(cpp|hpp))$")
THIRD_PARTY = {
    "storage": re.compile(r"#include [<\"](caf/|httplib|nlohmann/|node/json\.hpp)"),
    "http": re.compile(r"#include [<\"](lmdb\.h|capnp/|kj/)"),
}
SANDBOX_ONLY = re.compile(r"#include <(jsapi\.h|js/[^>]+|mozilla/[^>]+|seccomp\.h)>")
CLOCK = re.compile(r"\b(steady_clock|system_clock|high_resolution_clock)::now\b|\b(time|clock_gettime|gettimeofday)\(")
CLOCK_SEAM = {"node/clock.cpp"}
ERROR_LITERAL = re.compile(r'\{\s*"error"\s*,\s*"|\["error"\]\s*=\s*"')

# (rule, file, what) -> places. Issue 29 pays these; strike each line as it is paid.
DEBTS = {
    ("third-party", "storage/attachments.hpp", "node/json.hpp"): 1,
    ("third-party", "storage/db_events.cpp", "node/json.hpp"): 1,
    ("third-party", "storage/import_batch.cpp", "node/json.hpp"): 1,
    ("third-party", "storage/shard_store.cpp", "node/json.hpp"): 1,
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


def long_functions(rel, text, limit=70):
    """Functions defined at column 0 (clang-format puts every namespace-level one there; a
    signature may run over several lines) longer than `limit` lines: (lines, file:line, start)."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not re.match(r"^[A-Za-z_]", line) or re.match(
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
        if end - i + 1 > limit:
            out.append((end - i + 1, f"{rel}:{i + 1}", line.strip()[:90]))
        i = end + 1
    return out


def main():
    found, long = {}, []
    for rel, full in sources():
        with open(full, encoding="utf-8") as f:
            text = f.read()
        module = rel.split("/")[0]
        for m in re.finditer(r'^#include "(\w+)/([^"]+)"', text, re.M):
            dst = m.group(1)
            if COMPOSITION_ROOT.match(rel) or dst not in MODULES or dst == module:
                continue
            # js/ is the sandboxed worker's (SpiderMonkey): it may use node/, and nothing uses it.
            bad = dst == "http" or (module == "http" and dst == "cluster") or (
                module in RANK and dst in RANK and RANK[dst] > RANK[module]) or dst == "js" or (
                module == "js" and dst != "node")
            if bad:
                key = ("direction", rel, f"{dst}/{m.group(2)}")
                found[key] = found.get(key, 0) + 1
        if module != "js":  # SpiderMonkey and seccomp stay in the worker
            for m in SANDBOX_ONLY.finditer(text):
                key = ("third-party", rel, m.group(1))
                found[key] = found.get(key, 0) + 1
        if module in THIRD_PARTY and not COMPOSITION_ROOT.match(rel):
            for m in THIRD_PARTY[module].finditer(text):
                header = re.search(r'[<"]([^>"]+)', m.group(0)[len("#include "):]).group(1)
                key = ("third-party", rel, header)
                found[key] = found.get(key, 0) + 1
        if rel not in CLOCK_SEAM:
            for line in text.split("\n"):
                code = line.split("//")[0]
                if CLOCK.search(code):
                    key = ("clock", rel, "reads the clock outside node/clock")
                    found[key] = found.get(key, 0) + 1
        for line in text.split("\n"):
            if ERROR_LITERAL.search(line.split("//")[0]):
                key = ("error-name", rel, "an error name not from node/errc.def")
                found[key] = found.get(key, 0) + 1
        long.extend(long_functions(rel, text))
    failures = check(found)
    long.sort(reverse=True)
    print(f"functions over 70 lines: {len(long)}")
    for n, where, first in long:
        print(f"  {n:4d}  {where}  {first}")
    for f in failures:
        print("FAIL " + f)
    print(f"tidy: {len(failures)} failure(s), {sum(DEBTS.values())} known debt place(s), "
          f"{len(long)} long function(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
