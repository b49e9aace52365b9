// GET /_settee/: the built-in page (http/page/settee.html). Like CouchDB's Fauxton at /_utils, the
// page itself is public and holds no data; it signs in through /_session and reads the server-admin
// endpoints as the signed-in user.
#include "http/handlers.hpp"
#include "settee_page.hpp"

namespace settee {

void handle_settee_page(ctx& c) {
  if (c.method() != "GET" && c.method() != "HEAD") return c.method_not_allowed("GET,HEAD");
  if (c.path.size() != 1) return c.error(errc::not_found, "missing");
  // Only this node's own API and inline code: nothing is fetched from anywhere else.
  c.res.set_header("Content-Security-Policy",
                   "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; "
                   "frame-ancestors 'none'");
  c.res.set_header("X-Content-Type-Options", "nosniff");
  c.res.set_header("Cache-Control", "no-cache");
  c.reply_raw(200, settee_page_html, "text/html; charset=utf-8");
}

}  // namespace settee
