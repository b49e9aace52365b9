// router: one request to the handler of its path, after authentication and the access checks every
// path below /db needs (http/handlers.hpp has the handlers). Independent of the transport: the
// HTTP server calls it for each request it has read, on the thread that read it.
#pragma once
#include <memory>

#include "http/request.hpp"

namespace settee {

// The response to `req` (never null; an exception in a handler becomes a 500).
std::shared_ptr<http_response> handle_request(node_services& node, const http_request& req);
// The metrics listener's answer ([prometheus] additional_port): GET /_node/_local/_prometheus (or
// this node's name) with no credentials asked; anything else is 404.
std::shared_ptr<http_response> handle_metrics_request(node_services& node, const http_request& req);

// Whether a PUT's body may go to a file instead of memory (http_options::spool_from_bytes): an
// attachment's (/db/doc/att, /db/_design/ddoc/att) or a document's sent as multipart/related.
bool streams_body(const http_request& req);

}  // namespace settee
