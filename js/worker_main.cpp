// settee-js: one sandboxed JavaScript worker (the node starts a pool of them; actors/js_pool).
//   settee-js [--timeout-ms N] [--heap-mb N] [--jit] [--no-sandbox]
// Reads requests (a header line and a body line, js/query_server.hpp) on stdin and writes one
// answer line per request on stdout, until stdin closes. A command past its deadline or its memory
// cap is stopped by the watchdog thread; the node kills a worker that does not answer at all.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "js/engine.hpp"
#include "js/query_server.hpp"
#include "js/sandbox.hpp"

using namespace settee::js;

namespace {

struct options {
  limits lim;
  bool jit = false;
  bool sandbox = true;
};

// Lines from fd 0, at most max_line bytes each (a longer one ends the worker: the node never
// sends one).
class line_reader {
 public:
  bool next(std::string& line) {
    for (;;) {
      size_t nl = buf_.find('\n', scanned_);
      if (nl != std::string::npos) {
        line.assign(buf_, 0, nl);
        buf_.erase(0, nl + 1);
        scanned_ = 0;
        return true;
      }
      scanned_ = buf_.size();
      if (buf_.size() > max_line) return false;
      char chunk[1 << 16];
      ssize_t n = ::read(0, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  static constexpr size_t max_line = 1u << 30;
  std::string buf_;
  size_t scanned_ = 0;
};

bool write_all(const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(1, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

struct run_args {
  options opts;
  int rc = 0;
};

void* serve(void* p) {
  auto* args = static_cast<run_args*>(p);
  engine e(args->opts.lim);
  if (!e.ready()) {
    std::fprintf(stderr, "settee-js: cannot create a JavaScript context\n");
    args->rc = 1;
    return nullptr;
  }
  watchdog guard(e);
  // The engine is made and every thread started: from here on the worker can compute and talk
  // to the node, nothing else.
  if (args->opts.sandbox) {
    std::string err = confine(0);
    if (!err.empty()) {
      std::fprintf(stderr, "settee-js: cannot confine the worker: %s\n", err.c_str());
      args->rc = 1;
      return nullptr;
    }
  }
  query_server qs(e);
  line_reader in;
  std::string header, body;
  while (in.next(header) && in.next(body)) {
    if (!write_all(qs.handle(header, body) + "\n")) break;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  run_args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto number = [&](const char* name) -> long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "settee-js: %s needs a value\n", name);
        std::exit(2);
      }
      char* end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end || v <= 0) {
        std::fprintf(stderr, "settee-js: %s must be a positive number\n", name);
        std::exit(2);
      }
      return v;
    };
    if (a == "--timeout-ms") {
      args.opts.lim.timeout = std::chrono::milliseconds(number("--timeout-ms"));
    } else if (a == "--heap-mb") {
      args.opts.lim.heap_bytes = static_cast<size_t>(number("--heap-mb")) << 20;
    } else if (a == "--jit") {
      args.opts.jit = true;
    } else if (a == "--no-sandbox") {
      args.opts.sandbox = false;
    } else {
      std::fprintf(stderr, "usage: settee-js [--timeout-ms N] [--heap-mb N] [--jit] [--no-sandbox]\n");
      return 2;
    }
  }
  if (!process_init(args.opts.jit)) {
    std::fprintf(stderr, "settee-js: JS_Init failed\n");
    return 1;
  }
  // The engine runs on a thread with a known stack (its recursion quota is set below it).
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t t;
  if (pthread_create(&t, &attr, &serve, &args) != 0) {
    std::fprintf(stderr, "settee-js: cannot start the engine thread\n");
    return 1;
  }
  pthread_join(t, nullptr);
  std::fflush(stdout);
  std::_Exit(args.rc);  // no JS_ShutDown: nothing to flush, and the process ends here
}
