// http_server: cpp-httplib tuned for a database (notes/stack.md section 5): TCP_NODELAY (the 44 ms
// Nagle/delayed-ACK stall), long keep-alive, a listen backlog of 1024, a thread pool sized from
// config, a request size limit, and every response rendered in CouchDB's error shape.
// run() blocks; stop() may be called from any thread.
#pragma once
#include <memory>
#include <string>

#include "http/request.hpp"

namespace httplib {
class Server;
}

namespace settee {

struct http_options {
  std::string bind = "127.0.0.1";
  int port = 5984;
  size_t threads = 64;
  size_t max_request_bytes = 64u << 20;
  int keep_alive_timeout_s = 30;
  size_t keep_alive_max_requests = 100000;
};

class http_server {
 public:
  http_server(node_services& node, http_options opts);
  ~http_server();
  status bind();  // binds the port; returns an error when it is taken
  int port() const { return port_; }
  void run();
  void stop();

 private:
  void dispatch(const httplib::Request& req, httplib::Response& res);

  node_services& node_;
  http_options opts_;
  std::unique_ptr<httplib::Server> server_;
  int listen_fd_ = -1;
  int port_ = 0;
};

}  // namespace settee
