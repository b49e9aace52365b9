// The documents pane of the data browser: a database's documents (or local ones) paged and found by
// id prefix; one document as JSON to edit, save, create and delete, with its revisions, its
// conflicts (a winner kept, the other leaves deleted) and its attachments.
import {ApiError, HEADERS, api, dbPath, docPath, query} from "./api.js";
import {$, PAGE, bytes, crumbs, el, link, navigate, pager, quiet, route, row, say, sayError} from "./page.js";
import {remember} from "./databases.js";

// ---- documents ----

const docList = {db: null, prefix: "", local: false, pages: [undefined]};

export async function showDocuments(db) {
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

export async function showDocument(db, id, design) {
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

