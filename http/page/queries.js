// The queries panes of the data browser: Mango (_find, _explain, JSON indexes) and a design
// document's views with their query options.
import {api, dbPath, docPath} from "./api.js";
import {crumbs, el, link, names, quiet, route, row, say, sayError} from "./page.js";

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

export async function showFind(db) {
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

export async function showViews(db) {
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

