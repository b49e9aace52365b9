// http_server: settee's HTTP/1.1 front (docs/architecture.md section 22). One event-loop thread
// owns every connection through KJ's HTTP server (from the Cap'n Proto already in the stack): it
// parses requests (pipelined ones answered in order, bad framing answered 400 at once, a header
// timeout for slow senders, an idle timeout for keep-alive), reads bodies, writes responses.
// Handlers run on a work_pool; a live feed is a response_stream pumped on the pool between waits,
// so neither an idle connection nor a listener holds a thread.
// bind() then run() on one thread (run blocks); stop() may be called from any thread.
#pragma once
#include <memory>
#include <string>

#include "http/request.hpp"

namespace settee {

struct http_options {
  std::string bind = "127.0.0.1";
  int port = 5984;
  size_t threads = 64;                   // handler threads (requests in progress, not connections)
  size_t max_request_bytes = 64u << 20;  // a larger body is 413
  int keep_alive_timeout_s = 30;         // an idle connection is closed after this long
  int header_timeout_s = 15;             // a request's line and headers must arrive within this
  int io_timeout_s = 60;                 // a body read or a response write that stalls this long ends
};

class http_server {
 public:
  http_server(node_services& node, http_options opts);
  ~http_server();
  status bind();  // binds the port; returns an error when it is taken
  int port() const { return port_; }
  void run();
  void stop();

  struct impl;

 private:
  node_services& node_;
  http_options opts_;
  std::unique_ptr<impl> impl_;
  int listen_fd_ = -1;
  int port_ = 0;
};

}  // namespace settee
