// http_server: settee's HTTP/1.1 front (docs/architecture.md section 22). `threads` workers share
// one epoll set: a worker takes a connection that has bytes, parses them (nodejs' http-parser from
// Debian), runs the handler on its own thread and writes the answer, then gives the connection back
// to epoll. A connection holds a thread only while a request of it runs; an idle one or a live feed
// waiting for a commit holds none (a feed is a response_stream, woken by change_notifier or its
// timer). Pipelined requests are answered in order; bad framing is a 400 at once; a timer thread
// closes connections whose headers are too slow, idle keep-alives and stalled transfers.
// bind() then run() (blocks until stop()); stop() may be called from any thread.
#pragma once
#include <memory>
#include <string>

#include "http/request.hpp"

namespace settee {

struct http_options {
  std::string bind = "127.0.0.1";
  int port = 5984;
  size_t threads = 64;                   // the most worker threads (requests in progress, not connections);
                                         // 8 stay, the others start when busy and leave when idle
  size_t max_request_bytes = 64u << 20;  // a larger body is 413
  // A PUT of an attachment or of a multipart/related document whose body is larger than
  // spool_from_bytes (or chunked) goes to a file in spool_dir (wire/body_spool.hpp) instead of
  // memory, up to max_attachment_bytes + max_request_bytes (an attachment's own limit applies once
  // it is decoded).
  size_t max_attachment_bytes = size_t{1} << 30;
  size_t spool_from_bytes = 1u << 20;
  std::string spool_dir = ".";
  int keep_alive_timeout_s = 30;  // an idle connection is closed after this long
  int header_timeout_s = 15;      // a request's line and headers must arrive within this
  int io_timeout_s = 60;          // a body read or a response write that stalls this long ends
  int body_timeout_s = 300;       // a whole request body must arrive within this (+1 s per MiB declared)
  // After this long without work, memory goes back ([node] idle_release_s): a worker beyond the
  // core leaves (a core one empties its malloc cache), a shard nobody used gives its mapped pages
  // back, and a node without requests or shard use runs node_services::on_idle, then trims the heap.
  int idle_release_s = 30;
  // The metrics listener ([prometheus] additional_port): answers handle_metrics_request only, and
  // writes no access log (node_services::access_log: one line per request (host, peer, user, method,
  // target, status, ms, as CouchDB's request log) at info; at [log] level = debug always).
  bool metrics_only = false;
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
