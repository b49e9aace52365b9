// POST|PUT /db/_design/{ddoc}/_update/{name}[/{docid}]: CouchDB's update handlers
// (chttpd_show:handle_doc_update_req, share/server/render.js runUpdate). The function gets the
// document the path names (null when none or missing) and CouchDB's request object, and returns
// [doc, response]: a doc that is an object is written as a PUT writes it (validate_doc_update
// runs), and the response is sent as chttpd_external:send_external_response sends it.
#include <strings.h>

#include <algorithm>
#include <cctype>

#include "actors/doc_render.hpp"
#include "actors/js_pool.hpp"
#include "http/design_function.hpp"
#include "http/handlers.hpp"
#include "node/crypto.hpp"
#include "node/log.hpp"

namespace settee {
namespace {

// An error with CouchDB's status for the names its chttpd knows, 500 for any other name.
void reply_named_error(ctx& c, const std::string& name, const std::string& reason) {
  int code = 500;
  if (name == "not_found") code = 404;
  if (name == "forbidden") code = 403;
  if (name == "unauthorized") code = 401;
  if (name == "bad_request") code = 400;
  if (name == "conflict") code = 409;
  c.reply(code, json{{"error", name}, {"reason", reason}});
}

// What a function's failure becomes (render.js renderError): ["error", name, reason] and
// {error, reason} as they are, anything else a render_error.
void reply_failure(ctx& c, const js_reply& r, const std::string& where) {
  if (r.what == js_reply::kind::fault) {
    log::warning("update function " + where + ": " + r.name + ": " + r.reason);
    if (r.name == "timeout") return c.error(errc::timeout, "update function " + where + ": " + r.reason);
    if (r.name == "compilation_error") return c.error(errc::compilation_error, r.reason);  // stored, never compiled
    return c.error(errc::internal, "update function " + where + " failed: " + r.name + ": " + r.reason);
  }
  if (r.what == js_reply::kind::thrown) {
    const json& v = r.value;
    if (v.is_array() && v.size() == 3 && v[0] == "error" && v[1].is_string())
      return reply_named_error(c, v[1].get<std::string>(), v[2].is_string() ? v[2].get<std::string>() : v[2].dump());
    if (v.is_object() && v.contains("error") && v.contains("reason") && v["error"].is_string())
      return reply_named_error(c, v["error"].get<std::string>(),
                               v["reason"].is_string() ? v["reason"].get<std::string>() : v["reason"].dump());
    log::warning("update function " + where + " raised " + v.dump());
    return c.error(errc::render_error, "function raised error: " + v.dump());
  }
  log::warning("update function " + where + " raised " + r.name + ": " + r.reason);
  c.error(errc::render_error, "function raised error: " + r.name + ": " + r.reason);
}

bool header_token(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char ch : s)
    if (!std::isalnum(ch) && std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(ch)) == std::string_view::npos)
      return false;
  return true;
}

bool header_value(const std::string& s) {
  for (unsigned char ch : s)
    if (ch == '\r' || ch == '\n' || ch == 0) return false;
  return true;
}

// The function's response object as an HTTP response (chttpd_external:parse_external_response):
// `code`, `headers`, and the body from `json`, `body` or `base64` (the last given wins, as each
// sets the content type it implies unless the headers name one). Framing headers are the
// server's own and are not taken (Content-Length, Transfer-Encoding, Connection); a header that
// would split the response is an error (500 external_response_error, as CouchDB's for bad data).
void send_external_response(ctx& c, const json& resp, int code, const json& extra_headers) {
  const auto bad = [&c](const std::string& what) {
    c.error(errc::external_response_error, "Invalid data from external server: " + what);
  };
  std::string body, type = "application/octet-stream";
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [key, value] : resp.items()) {
    if (key == "code") {
      if (!value.is_number_integer() || value.get<int64_t>() < 100 || value.get<int64_t>() > 599)
        return bad("code " + value.dump());
      code = value.get<int>();
    } else if (key == "json") {
      body = value.dump() + "\n";
      type = "application/json";
    } else if (key == "body") {
      if (!value.is_string()) return bad("body " + value.dump());
      body = value.get<std::string>();
      type = "text/html; charset=utf-8";
    } else if (key == "base64") {
      if (!value.is_string()) return bad("base64 " + value.dump());
      if (!crypto::base64_decode(value.get<std::string>(), body)) return bad("base64 that does not decode");
      type = "application/binary";
    } else if (key == "headers") {
      if (!value.is_object()) return bad("headers " + value.dump());
      for (const auto& [name, v] : value.items()) {
        if (!v.is_string() || !header_token(name) || !header_value(v.get<std::string>()))
          return bad("header " + json(name).dump() + ": " + v.dump());
        headers.emplace_back(name, v.get<std::string>());
      }
    } else if (key != "stop") {
      return bad(key + ": " + value.dump());
    }
  }
  for (const auto& [name, v] : extra_headers.items()) {  // ours replace the function's
    headers.erase(std::remove_if(headers.begin(), headers.end(),
                                 [&](const auto& h) { return strcasecmp(h.first.c_str(), name.c_str()) == 0; }),
                  headers.end());
    headers.emplace_back(name, v.get<std::string>());
  }
  c.res.status = code;
  c.res.body = std::move(body);
  c.res.set_header("Content-Type", type);
  for (const auto& [name, v] : headers) {
    const char* n = name.c_str();
    if (strcasecmp(n, "Content-Length") == 0 || strcasecmp(n, "Transfer-Encoding") == 0 ||
        strcasecmp(n, "Connection") == 0)
      continue;
    c.res.set_header(name, v);
  }
}

}  // namespace

void handle_update(ctx& c, const db_meta& db, const std::string& ddoc_id, const std::string& name,
                   const std::optional<std::string>& doc_id) {
  // Any method runs the function (chttpd_show, DELETE too) but GET, which CouchDB's query server
  // refuses (and CouchDB answers 500 for it); 405 says what it is.
  if (c.method() == "GET" || c.method() == "HEAD") {
    c.error(errc::method_not_allowed, "Update functions do not allow " + c.method());
    c.res.set_header("Allow", "POST,PUT,DELETE");
    return;
  }
  auto fn = open_design_function(c, db, ddoc_id, {"updates", name});
  if (!fn) return c.error(fn.error());
  std::string doc = "null";
  if (doc_id) {
    if (auto st = validate_doc_id(*doc_id, c.node.max_document_id_length); !st) return c.error(st);
    auto d = c.node.coord.open_doc(db, *doc_id);
    if (!d) return c.error(d.error());
    if (d->found && !d->info.tree.winner_deleted()) {
      render_options opts;
      opts.revs = opts.conflicts = true;  // couch_query_servers:json_doc of a doc opened with [conflicts]
      doc = render_rev(*d, d->info.tree.winner(), opts).value_or("null");
    }
  }
  const std::string where = db.name + "/" + ddoc_id + " " + name;
  const std::string args = "[" + doc + "," + js_request_object(c, db, doc_id ? json(*doc_id) : json()).dump() + "]";
  auto r = c.node.js->run(fn->key, fn->ddoc, json::array({"updates", name}), args);
  if (!r) return c.error(r.error());
  for (const auto& line : r->log) log::info("update function " + where + " logged: " + line);
  if (!r->ok()) return reply_failure(c, *r, where);
  // [doc, response]: a string response is its body (render.js maybeWrapResponse).
  const json& v = r->value;
  if (!v.is_array() || v.size() < 2 || !(v[1].is_object() || v[1].is_string()))
    return c.error(errc::render_error, "undefined response from update function");
  json resp = v[1].is_string() ? json{{"body", v[1]}} : v[1];
  if (!v[0].is_object()) {
    return send_external_response(c, resp, 200, json::object());
  }
  json new_doc = v[0];
  const json& given = member(new_doc, "_id");
  if (!given.is_string()) return c.error(errc::illegal_docid, "Document id must be a string");
  const std::string id = given.get<std::string>();
  if (auto st = validate_doc_id(id, c.node.max_document_id_length); !st) return c.error(st);
  if (auto st = authorize_doc_write(c, db, id, &new_doc); !st) return c.error(st);
  auto u =
      to_doc_update(db, std::move(new_doc), id, true, nullptr, c.node.attachment_policy, c.node.js, c.node.cluster);
  if (!u) return c.error(u.error());
  if (auto st = check_document_size(c, *u); !st) return c.error(st);
  if (u->managed_attachments)
    if (auto st = attachments_here(c, db); !st) return c.error(st);
  auto written = write_one(c, db, std::move(*u));
  if (!written) return c.error(written.error());
  const doc_result& w = written->results.front();
  if (!w.st) return c.error(w.st);
  json ours = {{"X-Couch-Update-NewRev", w.rev.str()}, {"X-Couch-Id", percent_encode(id)}};
  send_external_response(c, resp, written->quorum_met ? 201 : 202, ours);
}

}  // namespace settee
