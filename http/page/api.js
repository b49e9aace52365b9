// The node's API as the data browser calls it (http/page/utils.js): one request with the page's
// session cookie, the answer parsed, a refusal as an ApiError holding the node's status and body;
// the paths of databases and documents, percent-encoded as CouchDB's URLs are.

// X-Requested-With: a 401 then comes without WWW-Authenticate, so the browser shows no Basic
// prompt and the page shows its own sign-in form (as CouchDB does for Fauxton).
export const HEADERS = {"Accept": "application/json", "X-Requested-With": "XMLHttpRequest"};

export class ApiError extends Error {
  constructor(status, body) {
    const what = body && typeof body === "object" ? (body.error || "error") + ": " + (body.reason || "") : String(body);
    super(status + " " + what);
    this.status = status;
    this.body = body;
  }
}

// One request; the parsed JSON answer, else an ApiError holding the node's status and body.
export async function api(method, path, body) {
  const options = {method, credentials: "same-origin", headers: Object.assign({}, HEADERS)};
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  const r = await fetch(path, options);
  const text = await r.text();
  let parsed = text;
  try { parsed = JSON.parse(text); } catch (e) { /* kept as text */ }
  if (!r.ok) throw new ApiError(r.status, parsed);
  return parsed;
}

// A database's path: each name percent-encoded whole ("a/b" is one database, as CouchDB's).
export const dbPath = (db) => "/" + encodeURIComponent(db);
// A document's path: a design or local document keeps its prefix's slash, as CouchDB's URLs do.
export function docPath(db, id) {
  for (const prefix of ["_design/", "_local/"])
    if (id.startsWith(prefix)) return dbPath(db) + "/" + prefix + encodeURIComponent(id.slice(prefix.length));
  return dbPath(db) + "/" + encodeURIComponent(id);
}
export const query = (params) => "?" + Object.entries(params).filter(([, v]) => v !== undefined)
  .map(([k, v]) => k + "=" + encodeURIComponent(typeof v === "string" && !k.endsWith("key") ? v : JSON.stringify(v))).join("&");

