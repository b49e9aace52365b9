// The databases pane of the data browser: every database paged (server admins), or those a user
// opened (anyone else), created and deleted; a database's _security, _revs_limit and compaction.
import {ApiError, api, dbPath, query} from "./api.js";
import {PAGE, bytes, crumbs, el, link, names, navigate, pager, route, row, say, sayError, session} from "./page.js";

// ---- databases ----

const dbList = {pages: [undefined]};

// The databases this browser opened (for a user who may not list them all), newest first.
const RECENT = "settee-recent-databases";
function recentDatabases() {
  try { return JSON.parse(localStorage.getItem(RECENT) || "[]").filter((n) => typeof n === "string"); } catch (e) { return []; }
}
export function remember(db) {
  const list = [db, ...recentDatabases().filter((n) => n !== db)].slice(0, 20);
  try { localStorage.setItem(RECENT, JSON.stringify(list)); } catch (e) { /* a private window: not kept */ }
}

// A user who is not a server admin may not list databases (CouchDB's admin_only_all_dbs): they open
// one by name, and the ones they opened before are listed, each as its _security lets them read it.
async function showOwnDatabases() {
  const name = el("input", {type: "text", id: "open-db", placeholder: "database name", "aria-label": "a database to open", required: true});
  const open = el("form", {class: "toolbar", id: "open-db-form", onsubmit: (ev) => {
    ev.preventDefault();
    navigate("#/db/" + encodeURIComponent(name.value.trim()));
  }}, el("strong", {text: "Open a database"}), name, el("button", {type: "submit", text: "Open"}));
  const table = el("table", {id: "dbs"}, row(["Database", "Documents", "Size"].map((t) => el("th", {text: t}))));
  const recent = recentDatabases();
  const infos = await Promise.all(recent.map((db) => api("GET", dbPath(db)).catch((e) => e)));
  recent.forEach((db, k) => {
    const info = infos[k];
    if (info instanceof ApiError)
      table.append(row([db, el("td", {class: "error", text: info.status + " " + ((info.body && info.body.reason) || "")}), ""], {db}));
    else table.append(row([link(db, "#/db/" + encodeURIComponent(db)), String(info.doc_count), bytes(info.sizes ? info.sizes.file : 0)], {db}));
  });
  if (!recent.length) table.append(row([el("span", {class: "muted", text: "none opened yet"})]));
  return [el("section", {class: "wide"}, crumbs(), open,
             el("p", {class: "muted", text: "Only server admins list every database; the ones you opened are below."}), table)];
}

export async function showDatabases() {
  if (!session.admin) return showOwnDatabases();
  const start = dbList.pages[dbList.pages.length - 1];
  const names = await api("GET", "/_all_dbs" + query({limit: PAGE + 1, startkey: start}));
  const shown = names.slice(0, PAGE);
  const infos = shown.length ? await api("POST", "/_dbs_info", {keys: shown}) : [];
  const table = el("table", {id: "dbs"}, row(["Database", "Documents", "Size", ""].map((t) => el("th", {text: t}))));
  shown.forEach((name, k) => {
    const info = (infos[k] && infos[k].info) || {};
    const remove = el("button", {type: "button", class: "danger", text: "Delete…", onclick: () => confirmDelete(tr, name)});
    const tr = row([link(name, "#/db/" + encodeURIComponent(name)), String(info.doc_count ?? ""),
                    info.sizes ? bytes(info.sizes.file) : "", el("td", {}, remove)], {db: name});
    table.append(tr);
  });
  if (!names.length && dbList.pages.length === 1) table.append(row([el("span", {class: "muted", text: "no databases yet"})]));
  const more = names.length > PAGE ? {key: names[PAGE]} : null;
  const name = el("input", {type: "text", id: "new-db", placeholder: "name", "aria-label": "new database name", required: true});
  const q = el("input", {type: "number", id: "new-q", min: 1, max: 256, placeholder: "q", "aria-label": "q"});
  const n = el("input", {type: "number", id: "new-n", min: 1, max: 9, placeholder: "n", "aria-label": "n"});
  const partitioned = el("input", {type: "checkbox", id: "new-partitioned"});
  const create = el("form", {id: "create-db", class: "toolbar", onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      const params = {q: q.value || undefined, n: n.value || undefined, partitioned: partitioned.checked ? "true" : undefined};
      await api("PUT", dbPath(name.value) + query(params));
      say("Created database " + name.value + ".", true);
      navigate("#/db/" + encodeURIComponent(name.value));
    } catch (e) { sayError(e); }
  }}, el("strong", {text: "New database"}), name, q, n, el("label", {}, partitioned, " partitioned"),
     el("button", {type: "submit", text: "Create"}));
  return [el("section", {class: "wide"}, crumbs(), create, table, pager(dbList, more, route))];
}

// Delete asks for the database's name typed again, as Fauxton does.
function confirmDelete(tr, name) {
  const typed = el("input", {type: "text", class: "confirm-name", "aria-label": "type the name to delete", placeholder: name});
  const go = el("button", {type: "button", class: "danger confirm-delete", text: "Delete for good", disabled: true,
                           onclick: async () => {
                             try {
                               await api("DELETE", dbPath(name));
                               say("Deleted database " + name + ".", true);
                               route(true);
                             } catch (e) { sayError(e); }
                           }});
  typed.addEventListener("input", () => { go.disabled = typed.value !== name; });
  const td = tr.lastChild;
  td.textContent = "";
  td.append("type its name: ", typed, " ", go);
  typed.focus();
}

// ---- a database's settings ----


export async function showSettings(db) {
  const [security, revsLimit, info] = await Promise.all([
    api("GET", dbPath(db) + "/_security"), api("GET", dbPath(db) + "/_revs_limit"), api("GET", dbPath(db))]);
  const field = (who, what) => el("input", {type: "text", id: who + "-" + what, "aria-label": who + " " + what,
                                            value: ((security[who] || {})[what] || []).join(", "), placeholder: "none"});
  const inputs = {};
  const table = el("table", {id: "security"}, row(["", "Names", "Roles"].map((t) => el("th", {text: t}))));
  for (const who of ["admins", "members"]) {
    inputs[who] = {names: field(who, "names"), roles: field(who, "roles")};
    table.append(row([el("strong", {text: who}), inputs[who].names, inputs[who].roles]));
  }
  const saveSecurity = el("button", {type: "button", id: "save-security", text: "Save security", onclick: async () => {
    const body = Object.assign({}, security);
    for (const who of ["admins", "members"])
      body[who] = Object.assign({}, security[who], {names: names(inputs[who].names.value), roles: names(inputs[who].roles.value)});
    try {
      await api("PUT", dbPath(db) + "/_security", body);
      say("Saved the security of " + db + ".", true);
    } catch (e) { sayError(e); }
  }});
  const limit = el("input", {type: "number", id: "revs-limit", "aria-label": "revisions kept", value: String(revsLimit), min: 1});
  const saveLimit = el("button", {type: "button", id: "save-revs-limit", text: "Save", onclick: async () => {
    try {
      await api("PUT", dbPath(db) + "/_revs_limit", limit.value.trim() === "" ? "null" : limit.value.trim());
      say("Kept revisions of " + db + ": " + limit.value + ".", true);
    } catch (e) { sayError(e); }
  }});
  const compact = el("button", {type: "button", id: "compact", text: "Compact now", onclick: async () => {
    try {
      await api("POST", dbPath(db) + "/_compact", {});
      say("Compaction of " + db + " started.", true);
    } catch (e) { sayError(e); }
  }});
  return [el("section", {class: "wide"},
    crumbs(link(db, "#/db/" + encodeURIComponent(db)), el("span", {text: "security and settings"})),
    el("p", {class: "muted", text: "Members may read and write documents; admins may also change design documents and " +
                                   "this page. With no member names or roles, the database is open to everyone."}),
    table, el("div", {class: "toolbar"}, saveSecurity),
    el("h2", {text: "Revisions kept (_revs_limit)"}), el("div", {class: "toolbar"}, limit, saveLimit),
    el("h2", {text: "Compaction"}),
    el("div", {class: "toolbar"}, compact, el("span", {class: "muted", id: "compact-state",
      text: bytes(info.sizes ? info.sizes.file : 0) + " on disk, " + bytes(info.sizes ? info.sizes.active : 0) + " in use" +
            (info.compact_running ? ", compacting" : "")})))];
}

