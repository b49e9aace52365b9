// settee's data browser (/_utils/): databases and their documents, as CouchDB users do them in
// Fauxton. Plain browser code, no framework: a view per location hash, built from the node's own
// API as the signed-in user; every error shown is the node's own answer.
//   #/                      the databases, paged, with create and delete
//   #/db/<name>             a database's documents (_all_docs, or _local_docs), paged by key,
//                           searched by id prefix
//   #/db/<name>/settings    its _security, _revs_limit and compaction
//   #/db/<name>/find        a Mango query (_find, _explain, execution_stats), its JSON indexes
//   #/db/<name>/views       its design documents' views, and their rows for a query
//   #/db/<name>/changes     its changes as they happen (since now, optionally by a selector)
//   #/replication           replications: new ones as _replicator documents, /_scheduler/docs
//   #/users                 _users: new users, passwords, roles
//   #/db/<name>/doc/<id>    a document: its JSON to edit and save, its revisions, its conflicts
//                           (a winner picked: the other leaves deleted), its attachments
//   #/db/<name>/new         a new document
"use strict";

const PAGE = 20;  // rows a page
// X-Requested-With: a 401 then comes without WWW-Authenticate, so the browser shows no Basic
// prompt and the page shows its own sign-in form (as CouchDB does for Fauxton).
const HEADERS = {"Accept": "application/json", "X-Requested-With": "XMLHttpRequest"};
const $ = (id) => document.getElementById(id);

// ---- the node's API ----

class ApiError extends Error {
  constructor(status, body) {
    const what = body && typeof body === "object" ? (body.error || "error") + ": " + (body.reason || "") : String(body);
    super(status + " " + what);
    this.status = status;
    this.body = body;
  }
}

// One request; the parsed JSON answer, else an ApiError holding the node's status and body.
async function api(method, path, body) {
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
const dbPath = (db) => "/" + encodeURIComponent(db);
// A document's path: a design or local document keeps its prefix's slash, as CouchDB's URLs do.
function docPath(db, id) {
  for (const prefix of ["_design/", "_local/"])
    if (id.startsWith(prefix)) return dbPath(db) + "/" + prefix + encodeURIComponent(id.slice(prefix.length));
  return dbPath(db) + "/" + encodeURIComponent(id);
}
const query = (params) => "?" + Object.entries(params).filter(([, v]) => v !== undefined)
  .map(([k, v]) => k + "=" + encodeURIComponent(typeof v === "string" && !k.endsWith("key") ? v : JSON.stringify(v))).join("&");

// ---- what the page shows ----

// The banner: an error (the node's own) or a success; `action` adds a button to it.
function say(text, ok, action) {
  const b = $("banner");
  b.textContent = text;
  b.className = ok ? "ok" : "";
  b.hidden = false;
  if (action) {
    const button = el("button", {type: "button", text: action.label, onclick: action.run});
    button.style.marginLeft = "12px";
    b.appendChild(button);
  }
}
function sayError(e) {
  if (e instanceof ApiError && e.status === 401) return showLogin();
  say(e instanceof ApiError ? e.message : "failed: " + (e.message || e));
}
function quiet() { $("banner").hidden = true; }
// Goes to `hash` with the banner kept (what was just done stays said).
let keepBanner = false;
function navigate(hash) {
  if (location.hash === hash) return route(true);
  keepBanner = true;
  location.hash = hash;
}

// An element: `props` sets text, class, dataset entries (data: {}), handlers (on...) and attributes.
function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "text") e.textContent = v;
    else if (k === "class") e.className = v;
    else if (k === "data") Object.assign(e.dataset, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, "");
    else if (v !== false && v !== undefined) e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}
const link = (text, hash) => el("a", {href: hash, text});
const row = (cells, data) =>
  el("tr", {data}, ...cells.map((c) => (c instanceof Node && (c.tagName === "TD" || c.tagName === "TH") ? c : el("td", {}, c))));

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

function crumbs(...parts) {
  const h = el("h2", {class: "crumbs"}, link("Databases", "#/"));
  for (const p of parts) h.append(" › ", p);
  return h;
}

// A pager over keys: `pages` holds each shown page's first key (the back stack).
function pager(state, more, go) {
  const prev = el("button", {type: "button", text: "‹ Previous", disabled: state.pages.length <= 1,
                             onclick: () => { state.pages.pop(); go(); }});
  const next = el("button", {type: "button", text: "Next ›", disabled: !more,
                             onclick: () => { state.pages.push(more.key); go(); }});
  return el("div", {class: "pager"}, prev, el("span", {class: "muted", text: "page " + state.pages.length}), next);
}

// ---- databases ----

const dbList = {pages: [undefined]};

// The databases this browser opened (for a user who may not list them all), newest first.
const RECENT = "settee-recent-databases";
function recentDatabases() {
  try { return JSON.parse(localStorage.getItem(RECENT) || "[]").filter((n) => typeof n === "string"); } catch (e) { return []; }
}
function remember(db) {
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

async function showDatabases() {
  if (!isAdmin) return showOwnDatabases();
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

// ---- documents ----

const docList = {db: null, prefix: "", local: false, pages: [undefined]};

async function showDocuments(db) {
  if (docList.db !== db) Object.assign(docList, {db, prefix: "", local: false, pages: [undefined]});
  const start = docList.pages[docList.pages.length - 1];
  const params = {limit: PAGE + 1};
  // _local_docs lists ids with their prefix: a search by prefix searches after it.
  const prefix = docList.prefix && docList.local ? "_local/" + docList.prefix : docList.prefix;
  if (prefix) Object.assign(params, {startkey: start ?? prefix, endkey: prefix + "\ufff0"});
  else if (start !== undefined) params.startkey = start;
  const listing = docList.local ? "/_local_docs" : "/_all_docs";
  const [info, page] = await Promise.all([api("GET", dbPath(db)), api("GET", dbPath(db) + listing + query(params))]);
  remember(db);
  const rows = page.rows.slice(0, PAGE);
  const table = el("table", {id: "docs"}, row(["Document", "Revision"].map((t) => el("th", {text: t}))));
  for (const r of rows)
    table.append(row([link(r.id, "#/db/" + encodeURIComponent(db) + "/doc/" + encodeURIComponent(r.id)), el("code", {text: r.value.rev})],
                     {id: r.id}));
  if (!rows.length)
    table.append(row([el("span", {class: "muted", text: docList.prefix ? "no document id starts with " + docList.prefix
                                                       : docList.local ? "no local documents" : "no documents yet"})]));
  const more = page.rows.length > PAGE ? {key: page.rows[PAGE].id} : null;
  const search = el("input", {type: "search", id: "id-prefix", placeholder: "document id starts with…", value: docList.prefix,
                              "aria-label": "document id prefix"});
  const find = el("form", {class: "toolbar", id: "find-docs", onsubmit: (ev) => {
    ev.preventDefault();
    Object.assign(docList, {prefix: search.value, pages: [undefined]});
    route();
  }}, search, el("button", {type: "submit", text: "Find"}),
     el("label", {}, el("input", {type: "checkbox", id: "local-docs", checked: docList.local, onchange: (ev) => {
       Object.assign(docList, {local: ev.target.checked, pages: [undefined]});
       route();
     }}), " local documents"),
     el("a", {href: "#/db/" + encodeURIComponent(db) + "/new", id: "new-doc", text: "New document"}),
     el("a", {href: "#/db/" + encodeURIComponent(db) + "/find", id: "db-find", text: "Mango query"}),
     el("a", {href: "#/db/" + encodeURIComponent(db) + "/views", id: "db-views", text: "Views"}),
     el("a", {href: "#/db/" + encodeURIComponent(db) + "/changes", id: "db-changes", text: "Changes"}),
     el("a", {href: "#/db/" + encodeURIComponent(db) + "/settings", id: "db-settings", text: "Security and settings"}));
  const figures = el("p", {class: "muted", id: "db-figures",
                           text: info.doc_count + " documents, " + info.doc_del_count + " deleted, " +
                                 bytes(info.sizes ? info.sizes.file : 0) + (info.props && info.props.partitioned ? ", partitioned" : "")});
  return [el("section", {class: "wide"}, crumbs(el("span", {text: db})), figures, find, table, pager(docList, more, route))];
}

// ---- Mango ----

// Rows as a table: a column per top-level field met in the first rows (at most 8), in order met.
function docsTable(docs, id) {
  const columns = [];
  for (const d of docs.slice(0, 50))
    for (const k of Object.keys(d || {})) if (!columns.includes(k) && columns.length < 8) columns.push(k);
  const table = el("table", {id}, row(columns.map((c) => el("th", {text: c}))));
  for (const d of docs)
    table.append(row(columns.map((c) => (d && c in d ? (typeof d[c] === "string" ? d[c] : JSON.stringify(d[c])) : "")), {}));
  return table;
}

const findState = {db: null, text: JSON.stringify({selector: {}, limit: 25, execution_stats: true}, null, 2)};

async function showFind(db) {
  if (findState.db !== db) Object.assign(findState, {db, text: JSON.stringify({selector: {}, limit: 25, execution_stats: true}, null, 2)});
  const indexes = await api("GET", dbPath(db) + "/_index");
  const editor = el("textarea", {class: "json", id: "mango", spellcheck: "false", "aria-label": "the Mango query as JSON"});
  editor.value = findState.text;
  editor.style.minHeight = "140px";
  const results = el("div", {id: "mango-results"});
  const parse = () => {
    findState.text = editor.value;
    try {
      const q = JSON.parse(editor.value);
      if (q && typeof q === "object" && !Array.isArray(q)) return q;
    } catch (e) {
      say("The query is not JSON: " + e.message + ". Nothing was sent.");
      return null;
    }
    say("A Mango query is a JSON object. Nothing was sent.");
    return null;
  };
  const run = async (bookmark) => {
    const q = parse();
    if (!q) return;
    if (bookmark) q.bookmark = bookmark;
    try {
      const r = await api("POST", dbPath(db) + "/_find", q);
      quiet();
      const stats = r.execution_stats;
      const figures = el("p", {class: "muted", id: "mango-stats", text: r.docs.length + " documents" +
        (stats ? "; examined " + stats.total_docs_examined + " documents, " + stats.total_keys_examined + " keys in " +
                 Number(stats.execution_time_ms).toFixed(1) + " ms" : "")});
      const json = el("pre", {id: "mango-json", hidden: true, text: JSON.stringify(r, null, 2)});
      const toggle = el("button", {type: "button", text: "JSON", onclick: () => { json.hidden = !json.hidden; }});
      const next = el("button", {type: "button", id: "mango-next", text: "Next page ›", disabled: !r.bookmark || !r.docs.length,
                                 onclick: () => run(r.bookmark)});
      results.replaceChildren(...(r.warning ? [el("p", {class: "error", id: "mango-warning", text: r.warning})] : []),
                              figures, el("div", {class: "toolbar"}, toggle, next), docsTable(r.docs, "mango-docs"), json);
    } catch (e) { sayError(e); }
  };
  const explain = async () => {
    const q = parse();
    if (!q) return;
    try {
      const r = await api("POST", dbPath(db) + "/_explain", q);
      quiet();
      const i = r.index || {};
      results.replaceChildren(el("p", {id: "explain-index", text: "Index used: " + (i.ddoc ? i.ddoc + " " : "") + i.name +
                                                                   " (" + i.type + ")"}),
                              el("details", {}, el("summary", {text: "the whole _explain answer"}),
                                 el("pre", {id: "explain-json", text: JSON.stringify(r, null, 2)})));
    } catch (e) { sayError(e); }
  };
  const list = el("table", {id: "indexes"}, row(["Index", "Type", "Fields", ""].map((t) => el("th", {text: t}))));
  for (const i of indexes.indexes) {
    const fields = (i.def.fields || []).map((f) => Object.entries(f).map(([k, d]) => (d === "desc" ? k + " desc" : k))[0]).join(", ");
    const remove = i.ddoc ? el("button", {type: "button", class: "danger", text: "Delete", onclick: async () => {
      try {
        await api("DELETE", dbPath(db) + "/_index/" + encodeURIComponent(i.ddoc.replace(/^_design\//, "")) + "/json/" +
                  encodeURIComponent(i.name));
        say("Deleted index " + i.name + ".", true);
        route(true);
      } catch (e) { sayError(e); }
    }}) : "";
    list.append(row([(i.ddoc ? i.ddoc + " " : "") + i.name, i.type, fields, el("td", {}, remove)], {name: i.name}));
  }
  const fields = el("input", {type: "text", id: "index-fields", placeholder: "fields, comma separated", "aria-label": "index fields"});
  const name = el("input", {type: "text", id: "index-name", placeholder: "name (optional)", "aria-label": "index name"});
  const create = el("form", {class: "toolbar", id: "create-index", onsubmit: async (ev) => {
    ev.preventDefault();
    const body = {index: {fields: names(fields.value)}, type: "json"};
    if (name.value.trim()) body.name = name.value.trim();
    try {
      const r = await api("POST", dbPath(db) + "/_index", body);
      say("Index " + r.name + ": " + r.result + ".", true);
      route(true);
    } catch (e) { sayError(e); }
  }}, el("strong", {text: "New index"}), fields, name, el("button", {type: "submit", text: "Create"}));
  return [el("section", {class: "wide"}, crumbs(link(db, "#/db/" + encodeURIComponent(db)), el("span", {text: "Mango query"})),
             el("p", {class: "muted", text: "selector, fields, sort, limit, use_index, execution_stats: as POST /db/_find takes them."}),
             editor, el("div", {class: "toolbar"}, el("button", {type: "button", id: "mango-run", text: "Run", onclick: () => run()}),
                                                  el("button", {type: "button", id: "mango-explain", text: "Explain", onclick: explain})),
             results),
          el("section", {class: "wide"}, el("h2", {text: "Indexes"}), list, create)];
}

// ---- views ----

const viewState = {db: null, view: "", params: {}};

async function showViews(db) {
  if (viewState.db !== db) Object.assign(viewState, {db, view: "", params: {}});
  const ddocs = await api("GET", dbPath(db) + "/_design_docs?include_docs=true");
  const views = [];
  for (const r of ddocs.rows)
    for (const [v, def] of Object.entries((r.doc && r.doc.views) || {})) views.push({ddoc: r.id, view: v, reduce: !!def.reduce});
  const choice = el("select", {id: "view-choice", "aria-label": "the view"});
  for (const v of views) choice.add(new Option(v.ddoc.slice(8) + " / " + v.view, v.ddoc + "|" + v.view, false, v.ddoc + "|" + v.view === viewState.view));
  const input = (name, label, type) => el("input", {type: type || "text", id: "view-" + name, "aria-label": label, placeholder: label,
                                                    value: viewState.params[name] ?? ""});
  const fields = {key: input("key", "key (JSON)"), startkey: input("startkey", "startkey (JSON)"), endkey: input("endkey", "endkey (JSON)"),
                  limit: input("limit", "limit", "number"), skip: input("skip", "skip", "number"), group_level: input("group_level", "group_level", "number")};
  const box = (name, label) => el("label", {}, el("input", {type: "checkbox", id: "view-" + name, checked: viewState.params[name] === "true"}), " " + label);
  const boxes = {descending: box("descending", "descending"), reduce: box("reduce", "reduce"), group: box("group", "group"),
                 include_docs: box("include_docs", "include_docs")};
  const results = el("div", {id: "view-results"});
  const run = async () => {
    viewState.view = choice.value;
    const [ddoc, view] = choice.value.split("|");
    const params = {};
    for (const [k, f] of Object.entries(fields)) if (f.value.trim() !== "") params[k] = f.value.trim();
    for (const [k, b] of Object.entries(boxes)) params[k] = b.firstChild.checked ? "true" : "false";
    viewState.params = params;
    const def = views.find((v) => v.ddoc === ddoc && v.view === view);
    if (!def || !def.reduce) delete params.reduce;  // a map-only view refuses reduce=true
    if (params.reduce === "false") { delete params.group; delete params.group_level; }
    // Keys go as typed: the node parses them (and says why when they are not JSON).
    const qs = Object.entries(params).filter(([k, v]) => !(v === "false" && k !== "reduce"))
      .map(([k, v]) => k + "=" + encodeURIComponent(v)).join("&");
    try {
      const r = await api("GET", docPath(db, ddoc) + "/_view/" + encodeURIComponent(view) + (qs ? "?" + qs : ""));
      quiet();
      const table = el("table", {id: "view-rows"}, row(["key", "value", "id"].concat(params.include_docs === "true" ? ["doc"] : [])
        .map((t) => el("th", {text: t}))));
      for (const x of r.rows)
        table.append(row([JSON.stringify(x.key), JSON.stringify(x.value), x.id || ""].concat(params.include_docs === "true" ? [JSON.stringify(x.doc)] : [])));
      const figures = r.total_rows === undefined ? r.rows.length + " rows" : r.rows.length + " rows of " + r.total_rows + ", offset " + r.offset;
      results.replaceChildren(el("p", {class: "muted", id: "view-figures", text: figures}), table);
    } catch (e) { sayError(e); }
  };
  const form = el("form", {class: "toolbar", id: "view-query", onsubmit: (ev) => { ev.preventDefault(); run(); }},
                  choice, ...Object.values(fields), ...Object.values(boxes), el("button", {type: "submit", text: "Query"}));
  const list = el("ul", {id: "design-docs"});
  for (const r of ddocs.rows) list.append(el("li", {}, link(r.id, "#/db/" + encodeURIComponent(db) + "/doc/" + encodeURIComponent(r.id)),
                                          el("span", {class: "muted", text: " " + Object.keys((r.doc && r.doc.views) || {}).join(", ")})));
  return [el("section", {class: "wide"}, crumbs(link(db, "#/db/" + encodeURIComponent(db)), el("span", {text: "views"})),
             views.length ? form : el("p", {class: "muted", text: "no views yet: a design document defines them"}), results),
          el("section", {class: "wide"}, el("h2", {text: "Design documents"}), list,
             el("a", {href: "#/db/" + encodeURIComponent(db) + "/new-design", id: "new-design", text: "New design document"}))];
}

// ---- changes, live ----

// Longpoll after longpoll from `since=now` while this view is shown (`routing` moves on when not).
async function showChanges(db) {
  const mine = routing;
  const selector = el("input", {type: "text", id: "changes-selector", placeholder: 'selector (JSON), e.g. {"type": "a"}',
                                "aria-label": "a selector the changes must match"});
  const table = el("table", {id: "changes"}, row(["Seq", "Document", "Revision", ""].map((t) => el("th", {text: t}))));
  const state = el("p", {class: "muted", id: "changes-state", text: "starting…"});
  let generation = 0;
  const follow = async () => {
    const me = ++generation;
    let filter;
    if (selector.value.trim()) {
      try { filter = {selector: JSON.parse(selector.value)}; } catch (e) { return say("The selector is not JSON: " + e.message + "."); }
    }
    quiet();
    while (table.rows.length > 1) table.deleteRow(1);
    let since = "now";
    state.textContent = "following since now" + (filter ? ", by the selector" : "");
    while (me === generation && mine === routing) {
      try {
        const path = dbPath(db) + "/_changes?feed=longpoll&timeout=10000&since=" + encodeURIComponent(since) +
                     (filter ? "&filter=_selector" : "");
        const r = filter ? await api("POST", path, filter) : await api("GET", path);
        if (me !== generation || mine !== routing) return;
        state.textContent = "following since " + (since === "now" ? "now" : "seq " + since.split("-")[0]) +
                            (filter ? ", by the selector" : "") + "; " + (table.rows.length - 1 + r.results.length) + " changes";
        for (const c of r.results)
          table.insertBefore(row([c.seq.split("-")[0], link(c.id, "#/db/" + encodeURIComponent(db) + "/doc/" + encodeURIComponent(c.id)),
                                  el("code", {text: c.changes.map((x) => x.rev).join(", ")}), c.deleted ? "deleted" : ""], {id: c.id}),
                             table.rows[1] || null);
        document.body.dataset.changesPolls = String(Number(document.body.dataset.changesPolls || 0) + 1);
        since = r.last_seq;
      } catch (e) {
        if (me === generation && mine === routing) { sayError(e); state.textContent = "stopped"; }
        return;
      }
    }
  };
  const form = el("form", {class: "toolbar", id: "changes-filter", onsubmit: (ev) => { ev.preventDefault(); follow(); }},
                  selector, el("button", {type: "submit", text: "Follow"}));
  setTimeout(follow, 0);
  return [el("section", {class: "wide"}, crumbs(link(db, "#/db/" + encodeURIComponent(db)), el("span", {text: "changes"})),
             el("p", {class: "muted", text: "Each change as it is written, newest first (a longpoll _changes feed from now)."}),
             form, state, table)];
}

// ---- replication ----

let replicationPassword = "";  // typed once a page load, never stored

async function showReplication() {
  const docs = await api("GET", "/_scheduler/docs");
  const field = (id, label) => el("input", {type: "text", id, placeholder: label, "aria-label": label});
  const source = field("rep-source", "source: a database here or a URL"), target = field("rep-target", "target: a database here or a URL");
  const since = field("rep-since", "since_seq: a seq or a time, 2026-11-30T09:00:00Z");
  const selector = field("rep-selector", "selector (JSON)");
  const box = (id, label) => el("label", {}, el("input", {type: "checkbox", id}), " " + label);
  const continuous = box("rep-continuous", "continuous"), create = box("rep-create", "create the target");
  const password = el("input", {type: "password", id: "rep-password", autocomplete: "current-password",
                                placeholder: "your password, for this node's databases", "aria-label": "your password",
                                value: replicationPassword});
  password.addEventListener("input", () => { replicationPassword = password.value; });  // kept in this page only
  // A database of this node is named by its URL with the signed-in user's name and password (as
  // Fauxton asks for them): the replicator runs apart from this page's session.
  const endpoint = (text) => (/^https?:\/\//.test(text) ? text
    : {url: location.origin + dbPath(text), auth: {basic: {username: signedIn, password: password.value}}});
  const form = el("form", {class: "toolbar", id: "new-replication", onsubmit: async (ev) => {
    ev.preventDefault();
    const local = [source, target].some((f) => !/^https?:\/\//.test(f.value.trim()));
    if (local && !password.value) return say("Your password is needed to replicate this node's databases. Nothing was sent.");
    const doc = {source: endpoint(source.value.trim()), target: endpoint(target.value.trim())};
    if (continuous.firstChild.checked) doc.continuous = true;
    if (create.firstChild.checked) doc.create_target = true;
    if (since.value.trim()) doc.since_seq = since.value.trim();
    if (selector.value.trim()) {
      try { doc.selector = JSON.parse(selector.value); } catch (e) { return say("The selector is not JSON: " + e.message + ". Nothing was sent."); }
    }
    try {
      const r = await api("POST", "/_replicator", doc);
      say("Replication " + r.id + " saved in _replicator.", true);
      route(true);
    } catch (e) { sayError(e); }
  }}, source, target, since, selector, password, continuous, create, el("button", {type: "submit", text: "Replicate"}));
  const table = el("table", {id: "replications"},
                   row(["Document", "Source → target", "State", "Error", ""].map((t) => el("th", {text: t}))));
  const strip = (url) => String((url && url.url) || url || "").replace(/\/\/[^@/]*@/, "//");  // credentials are not shown
  for (const d of docs.docs) {
    const remove = el("button", {type: "button", class: "danger", text: "Delete", onclick: async () => {
      try {
        const current = await api("GET", "/_replicator/" + encodeURIComponent(d.doc_id));
        await api("DELETE", "/_replicator/" + encodeURIComponent(d.doc_id) + "?rev=" + encodeURIComponent(current._rev));
        say("Deleted replication " + d.doc_id + ".", true);
        route(true);
      } catch (e) { sayError(e); }
    }});
    const error = d.info && d.info.error ? String(d.info.error) : d.error_count ? d.error_count + " errors" : "";
    table.append(row([d.doc_id, strip(d.source) + " → " + strip(d.target), d.state || "", el("td", {class: "error", text: error}),
                      el("td", {}, remove)], {doc: d.doc_id, state: d.state || ""}));
  }
  if (!docs.docs.length) table.append(row([el("span", {class: "muted", text: "no replications in _replicator"})]));
  return [el("section", {class: "wide"}, el("h2", {class: "crumbs", text: "Replication"}), form,
             el("div", {class: "toolbar"}, el("button", {type: "button", id: "rep-refresh", text: "Refresh", onclick: () => route()})),
             table)];
}

// ---- users ----

const USER = "org.couchdb.user:";

async function showUsers() {
  const page = await api("GET", "/_users/_all_docs" + query({startkey: USER, endkey: USER + "\ufff0", include_docs: "true", limit: 1000}));
  const table = el("table", {id: "users"}, row(["User", "Roles", "", ""].map((t) => el("th", {text: t}))));
  for (const r of page.rows) {
    const doc = r.doc, name = doc.name || r.id.slice(USER.length);
    const roles = el("input", {type: "text", class: "user-roles", value: (doc.roles || []).join(", "), "aria-label": "roles of " + name});
    const password = el("input", {type: "password", class: "user-password", placeholder: "new password", "aria-label": "new password of " + name,
                                  autocomplete: "new-password"});
    const save = el("button", {type: "button", class: "user-save", text: "Save", onclick: async () => {
      const next = Object.assign({}, doc, {roles: names(roles.value)});
      if (password.value) next.password = password.value;
      try {
        await api("PUT", "/_users/" + encodeURIComponent(r.id), next);
        say("Saved " + name + (password.value ? ", with a new password" : "") + ".", true);
        route(true);
      } catch (e) { sayError(e); }
    }});
    const remove = el("button", {type: "button", class: "danger user-delete", text: "Delete", onclick: async () => {
      try {
        await api("DELETE", "/_users/" + encodeURIComponent(r.id) + "?rev=" + encodeURIComponent(doc._rev));
        say("Deleted " + name + ".", true);
        route(true);
      } catch (e) { sayError(e); }
    }});
    table.append(row([name, roles, el("td", {}, password, " ", save), el("td", {}, remove)], {user: name}));
  }
  if (!page.rows.length) table.append(row([el("span", {class: "muted", text: "no users yet"})]));
  const name = el("input", {type: "text", id: "user-name", placeholder: "name", "aria-label": "new user's name", autocomplete: "off"});
  const password = el("input", {type: "password", id: "user-password", placeholder: "password", "aria-label": "new user's password",
                                autocomplete: "new-password"});
  const roles = el("input", {type: "text", id: "user-roles", placeholder: "roles, comma separated", "aria-label": "new user's roles"});
  const form = el("form", {class: "toolbar", id: "new-user", onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      await api("PUT", "/_users/" + encodeURIComponent(USER + name.value),
                {_id: USER + name.value, name: name.value, password: password.value, roles: names(roles.value), type: "user"});
      say("Created user " + name.value + ".", true);
      route(true);
    } catch (e) { sayError(e); }
  }}, el("strong", {text: "New user"}), name, password, roles, el("button", {type: "submit", text: "Create"}));
  return [el("section", {class: "wide"}, el("h2", {class: "crumbs", text: "Users"}), form, table)];
}

// ---- a database's settings ----

const names = (text) => text.split(",").map((t) => t.trim()).filter((t) => t);

async function showSettings(db) {
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

// ---- conflicts and attachments of a document ----

// Keeps `winner` and deletes every other leaf (the current winner or the conflicts), in one request.
async function pickWinner(db, id, winner, leaves) {
  const losers = leaves.filter((r) => r !== winner).map((r) => ({_id: id, _rev: r, _deleted: true}));
  try {
    const answers = await api("POST", dbPath(db) + "/_bulk_docs", {docs: losers});
    const failed = answers.filter((a) => a.error);
    if (failed.length) return say("Not every other revision was deleted: " + failed.map((a) => a.rev + " " + a.error).join(", "));
    say("Kept revision " + winner + "; deleted " + losers.length + " other" + (losers.length === 1 ? "" : "s") + ".", true);
    route(true);
  } catch (e) { sayError(e); }
}

function conflictsSection(db, id, doc, conflicts) {
  const leaves = [doc._rev, ...conflicts];
  const table = el("table", {id: "conflicts"}, row(["Revision", ""].map((t) => el("th", {text: t}))));
  for (const rev of leaves) {
    const keep = el("button", {type: "button", text: "Keep this one", onclick: () => pickWinner(db, id, rev, leaves)});
    const view = el("a", {href: docPath(db, id) + "?rev=" + encodeURIComponent(rev), target: "_blank", text: "its JSON"});
    table.append(row([el("span", {}, el("code", {text: rev}), rev === doc._rev ? " (the winner now)" : ""),
                      el("td", {}, keep, " ", view)], {rev}));
  }
  return el("section", {class: "wide"}, el("h2", {text: "Conflicts: " + leaves.length + " leaves"}),
            el("p", {class: "muted", text: "Every node picks the same winner; keep one and the others are deleted."}), table);
}

function attachmentsSection(db, id, doc) {
  const table = el("table", {id: "attachments"}, row(["Attachment", "Type", "Size"].map((t) => el("th", {text: t}))));
  for (const [name, a] of Object.entries(doc._attachments || {}))
    table.append(row([el("a", {href: docPath(db, id) + "/" + encodeURIComponent(name), download: name, text: name}),
                      a.content_type || "", bytes(a.length || 0)], {name}));
  if (!Object.keys(doc._attachments || {}).length) table.append(row([el("span", {class: "muted", text: "none"})]));
  const file = el("input", {type: "file", id: "attachment-file", "aria-label": "a file to attach"});
  const upload = el("button", {type: "button", id: "upload", text: "Upload", onclick: async () => {
    const f = file.files[0];
    if (!f) return say("Choose a file to upload first.");
    const r = await fetch(docPath(db, id) + "/" + encodeURIComponent(f.name) + "?rev=" + encodeURIComponent(doc._rev), {
      method: "PUT", credentials: "same-origin", body: f,
      headers: Object.assign({}, HEADERS, {"Content-Type": f.type || "application/octet-stream"})});
    const answer = await r.json().catch(() => ({}));
    if (!r.ok) return sayError(new ApiError(r.status, answer));
    say("Attached " + f.name + " as revision " + answer.rev + ".", true);
    route(true);
  }});
  return el("section", {}, el("h2", {text: "Attachments"}), table, el("div", {class: "toolbar"}, file, upload));
}

// ---- one document ----

// A new design document starts from a view, as CouchDB's docs show one.
const DESIGN_TEMPLATE = {_id: "_design/app", views: {by_type: {map: "function (doc) {\n  if (doc.type) emit(doc.type, 1);\n}", reduce: "_count"}},
                         language: "javascript"};

async function showDocument(db, id, design) {
  const fresh = id === null, local = !fresh && id.startsWith("_local/");  // a local document has no history
  let doc, revs = [], conflicts = [];
  if (fresh) {
    doc = design ? Object.assign({}, DESIGN_TEMPLATE) : {_id: (await api("GET", "/_uuids")).uuids[0]};
  } else {
    doc = await api("GET", docPath(db, id) + (local ? "" : "?revs_info=true&conflicts=true"));
    revs = doc._revs_info || [];
    conflicts = doc._conflicts || [];
    delete doc._revs_info;
    delete doc._conflicts;
  }
  const editor = el("textarea", {class: "json", id: "editor", spellcheck: "false", "aria-label": "the document as JSON"});
  editor.value = JSON.stringify(doc, null, 2);
  const save = el("button", {type: "button", id: "save", text: fresh ? "Create" : "Save", onclick: () => saveDoc(db, id, editor)});
  const remove = el("button", {type: "button", id: "delete", class: "danger", text: "Delete…", hidden: fresh,
                               onclick: () => deleteDoc(db, id, doc._rev, remove)});
  const reload = el("button", {type: "button", id: "reload", text: "Reload", hidden: fresh, onclick: () => { quiet(); route(); }});
  const parts = [el("section", {class: "wide"},
    crumbs(link(db, "#/db/" + encodeURIComponent(db)), el("span", {id: "doc-id", text: fresh ? "new document" : id})),
    el("div", {class: "toolbar"}, save, reload, remove), editor,
    el("p", {class: "error", id: "editor-error", hidden: true}))];
  if (!fresh && !local) {
    const history = el("table", {id: "revisions"}, row(["Revision", "Status"].map((t) => el("th", {text: t}))));
    for (const r of revs) history.append(row([el("code", {text: r.rev}), r.status], {rev: r.rev}));
    if (conflicts.length) parts.push(conflictsSection(db, id, doc, conflicts));
    parts.push(attachmentsSection(db, id, doc), el("section", {}, el("h2", {text: "Revisions"}), history));
  }
  return parts;
}

async function saveDoc(db, id, editor) {
  let doc;
  try {
    doc = JSON.parse(editor.value);
  } catch (e) {
    return say("The document is not JSON: " + e.message + ". Nothing was saved.");
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return say("A document is a JSON object. Nothing was saved.");
  const target = typeof doc._id === "string" && doc._id ? doc._id : id;
  try {
    const r = target ? await api("PUT", docPath(db, target), doc) : await api("POST", dbPath(db), doc);
    say("Saved " + r.id + " as revision " + r.rev + ".", true);
    navigate("#/db/" + encodeURIComponent(db) + "/doc/" + encodeURIComponent(r.id));
  } catch (e) {
    if (e instanceof ApiError && e.body && e.body.error === "compilation_error") {  // said where the function is
      $("editor-error").textContent = e.body.reason;
      $("editor-error").hidden = false;
    }
    if (e instanceof ApiError && e.status === 409)
      return say("Conflict: " + e.message + " Someone saved a newer revision: reload it, then edit again.", false,
                 {label: "Reload", run: () => { quiet(); route(); }});
    sayError(e);
  }
}

function deleteDoc(db, id, rev, button) {
  if (!button.dataset.armed) {  // a second click deletes
    button.dataset.armed = "true";
    button.textContent = "Delete for good";
    return;
  }
  api("DELETE", docPath(db, id) + "?rev=" + encodeURIComponent(rev)).then(() => {
    say("Deleted " + id + ".", true);
    navigate("#/db/" + encodeURIComponent(db));
  }, sayError);
}

// ---- sign-in and the router ----

function showLogin() {
  $("view").hidden = true;
  $("login").hidden = false;
  $("logout").hidden = true;
  $("who").textContent = "";
  document.body.dataset.view = "login";
}

let routing = 0;
let signedIn = "";  // the user's name
let isAdmin = false;  // a server admin (role _admin)
// Shows the view the hash names; `keep`: the banner stays (what was just done).
async function route(keep) {
  const mine = ++routing;
  if (keep !== true && !keepBanner) quiet();
  keepBanner = false;
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  try {
    let shown;
    if (parts[0] === "db" && parts.length >= 2 && parts[1]) {
      const db = parts[1];
      if (parts[2] === "doc" && parts.length >= 4) shown = await showDocument(db, parts.slice(3).join("/"));
      else if (parts[2] === "new") shown = await showDocument(db, null);
      else if (parts[2] === "settings") shown = await showSettings(db);
      else if (parts[2] === "find") shown = await showFind(db);
      else if (parts[2] === "views") shown = await showViews(db);
      else if (parts[2] === "changes") shown = await showChanges(db);
      else if (parts[2] === "new-design") shown = await showDocument(db, null, true);
      else shown = await showDocuments(db);
    } else if (parts[0] === "replication") {
      shown = await showReplication();
    } else if (parts[0] === "users") {
      shown = await showUsers();
    } else {
      shown = await showDatabases();
    }
    if (mine !== routing) return;  // a later route won
    const section = parts[0] === "replication" || parts[0] === "users" ? parts[0] : "";
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("here", a.getAttribute("href") === "#/" + section);
    $("view").replaceChildren(...shown);
    $("view").hidden = false;
    $("login").hidden = true;
    document.body.dataset.view = parts[0] === "db" ? (parts[2] || "docs") : parts[0] || "dbs";
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return showLogin();
    sayError(e);
    $("view").hidden = false;
    document.body.dataset.view = "error";
  } finally {
    if (mine === routing) document.body.dataset.ready = String(mine);
  }
}

async function start() {
  try {
    const s = await api("GET", "/_session");
    if (!s.userCtx || !s.userCtx.name) return showLogin();
    signedIn = s.userCtx.name;
    isAdmin = (s.userCtx.roles || []).includes("_admin");
    // What only server admins may use: the users and the cluster.
    for (const a of document.querySelectorAll("nav a[href='#/users'], nav a[href='/_settee/']")) a.hidden = !isAdmin;
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
  replicationPassword = "";
  showLogin();
});
window.addEventListener("hashchange", () => route());
start();
