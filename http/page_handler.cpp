// The built-in pages, compiled in from http/page (CMakeLists.txt): GET /_settee/, the operator's
// dashboard, and GET /_utils/, the data browser where CouchDB users look for Fauxton. Like Fauxton
// the pages themselves are public and hold no data; they sign in through /_session and call the
// node's API as the signed-in user, who sees what that user may see.
#include <string_view>

#include "http/handlers.hpp"
#include "settee_page.hpp"

namespace settee {

namespace {

const page_file* page_named(std::string_view name) {
  for (const page_file& f : page_files)
    if (f.name == name) return &f;
  return nullptr;
}

// Serves http/page/<name>, or 404 when there is none (path segments past the page's own).
void serve_page(ctx& c, std::string_view name) {
  if (c.method() != "GET" && c.method() != "HEAD") return c.method_not_allowed("GET,HEAD");
  const page_file* f = page_named(name);
  if (!f) return c.error(errc::not_found, "missing");
  // Only this node's own API and its own files: nothing is fetched from anywhere else.
  c.res.set_header("Content-Security-Policy",
                   "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
                   "img-src 'self' data:; frame-ancestors 'none'");
  c.res.set_header("X-Content-Type-Options", "nosniff");
  c.res.set_header("Cache-Control", "no-cache");
  c.reply_raw(200, std::string(f->body), f->type.data());
}

// The pages' own files besides their HTML (modules, style), as /_settee/<file> and /_utils/<file>;
// serve_page answers 404 for a name that is not one of them.
bool is_asset(std::string_view name) {
  auto ends = [&](std::string_view tail) {
    return name.size() > tail.size() && name.substr(name.size() - tail.size()) == tail;
  };
  return ends(".js") || ends(".css");
}

}  // namespace

void handle_settee_page(ctx& c) {
  if (c.path.size() == 1) return serve_page(c, "settee.html");
  if (c.path.size() == 2 && is_asset(c.path[1])) return serve_page(c, c.path[1]);
  c.error(errc::not_found, "missing");
}

void handle_utils_page(ctx& c) {
  // CouchDB answers /_utils with a redirect to /_utils/, where the page's relative links work.
  const std::string_view target = c.req.target;
  if (c.path.size() == 1 && target.substr(0, target.find('?')) == "/_utils") {
    c.res.status = 301;
    c.res.set_header("Location", c.absolute_uri("/_utils/"));
    return;
  }
  if (c.path.size() == 1 || (c.path.size() == 2 && c.path[1] == "index.html")) return serve_page(c, "utils.html");
  if (c.path.size() == 2 && is_asset(c.path[1])) return serve_page(c, c.path[1]);
  c.error(errc::not_found, "missing");
}

}  // namespace settee
