// settee's data browser (/_utils/): databases and their documents, as CouchDB users do them in
// Fauxton. Plain browser modules, no framework: a pane per location hash, built from the node's
// own API as the signed-in user; every error shown is the node's own answer.
//   #/                      the databases, paged, with create and delete (databases.js)
//   #/db/<name>             a database's documents (_all_docs, or _local_docs), paged by key,
//                           searched by id prefix (documents.js)
//   #/db/<name>/settings    its _security, _revs_limit and compaction (databases.js)
//   #/db/<name>/find        a Mango query (_find, _explain, execution_stats), its JSON indexes
//   #/db/<name>/views       its design documents' views, and their rows for a query (queries.js)
//   #/db/<name>/changes     its changes as they happen (since now, optionally by a selector)
//   #/db/<name>/doc/<id>    a document: its JSON to edit and save, its revisions, its conflicts
//                           (a winner picked: the other leaves deleted), its attachments
//   #/db/<name>/new         a new document (new-design: a design document)
//   #/replication           replications: new ones as _replicator documents, /_scheduler/docs
//                           (flows.js)
//   #/users                 _users: new users, passwords, roles (users.js)
// Shared: api.js (requests, paths), page.js (elements, the banner, the router core).
import {api} from "./api.js";
import {$, route, sayError, session, setPanes, showLogin} from "./page.js";
import {showDatabases, showSettings} from "./databases.js";
import {showDocument, showDocuments} from "./documents.js";
import {showFind, showViews} from "./queries.js";
import {forgetPassword, showChanges, showReplication} from "./flows.js";
import {showUsers} from "./users.js";

setPanes(async (parts) => {
  if (parts[0] === "db" && parts.length >= 2 && parts[1]) {
    const db = parts[1];
    if (parts[2] === "doc" && parts.length >= 4) return showDocument(db, parts.slice(3).join("/"));
    if (parts[2] === "new") return showDocument(db, null);
    if (parts[2] === "new-design") return showDocument(db, null, true);
    if (parts[2] === "settings") return showSettings(db);
    if (parts[2] === "find") return showFind(db);
    if (parts[2] === "views") return showViews(db);
    if (parts[2] === "changes") return showChanges(db);
    return showDocuments(db);
  }
  if (parts[0] === "replication") return showReplication();
  if (parts[0] === "users") return showUsers();
  return showDatabases();
});

async function start() {
  try {
    const s = await api("GET", "/_session");
    if (!s.userCtx || !s.userCtx.name) return showLogin();
    session.name = s.userCtx.name;
    session.admin = (s.userCtx.roles || []).includes("_admin");
    // What only server admins may use: the users and the cluster.
    for (const a of document.querySelectorAll("nav a[href='#/users'], nav a[href='/_settee/']")) a.hidden = !session.admin;
    $("who").textContent = "signed in as " + s.userCtx.name;
    $("logout").hidden = false;
    await route();
  } catch (e) { sayError(e); }
}

$("login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try {
    await api("POST", "/_session", {name: $("user").value, password: $("password").value});
    $("login-error").textContent = "";
    start();
  } catch (e) {
    $("login-error").textContent = e.status === 401 ? "Name or password is incorrect." : e.message;
  }
});
$("logout").addEventListener("click", async () => {
  await api("DELETE", "/_session").catch(() => {});
  forgetPassword();
  showLogin();
});
window.addEventListener("hashchange", () => route());
start();
