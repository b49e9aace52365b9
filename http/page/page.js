// What every pane of the data browser (http/page/utils.js) shares: the elements it builds, the
// banner that says what happened (the node's own words for a refusal), a pager over keys, who is
// signed in, and the router core that shows the pane a location hash names.
import {ApiError} from "./api.js";

export const PAGE = 20;  // rows a page
export const $ = (id) => document.getElementById(id);
export const session = {name: "", admin: false};  // who is signed in; admin: a server admin (_admin)
// Comma-separated names ("a, b") as a list.
export const names = (text) => text.split(",").map((t) => t.trim()).filter((t) => t);


// The banner: an error (the node's own) or a success; `action` adds a button to it.
export function say(text, ok, action) {
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
export function sayError(e) {
  if (e instanceof ApiError && e.status === 401) return showLogin();
  say(e instanceof ApiError ? e.message : "failed: " + (e.message || e));
}
export function quiet() { $("banner").hidden = true; }
// Goes to `hash` with the banner kept (what was just done stays said).
let keepBanner = false;
export function navigate(hash) {
  if (location.hash === hash) return route(true);
  keepBanner = true;
  location.hash = hash;
}

// An element: `props` sets text, class, dataset entries (data: {}), handlers (on...) and attributes.
export function el(tag, props, ...children) {
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
export const link = (text, hash) => el("a", {href: hash, text});
export const row = (cells, data) =>
  el("tr", {data}, ...cells.map((c) => (c instanceof Node && (c.tagName === "TD" || c.tagName === "TH") ? c : el("td", {}, c))));

export function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

export function crumbs(...parts) {
  const h = el("h2", {class: "crumbs"}, link("Databases", "#/"));
  for (const p of parts) h.append(" › ", p);
  return h;
}

// A pager over keys: `pages` holds each shown page's first key (the back stack).
export function pager(state, more, go) {
  const prev = el("button", {type: "button", text: "‹ Previous", disabled: state.pages.length <= 1,
                             onclick: () => { state.pages.pop(); go(); }});
  const next = el("button", {type: "button", text: "Next ›", disabled: !more,
                             onclick: () => { state.pages.push(more.key); go(); }});
  return el("div", {class: "pager"}, prev, el("span", {class: "muted", text: "page " + state.pages.length}), next);
}


// ---- sign-in and the router core ----

let routing = 0;  // routes started: a pane still loading checks it is still the newest
let panes = null;  // utils.js's table: the hash's parts -> the pane's elements
export const routeNumber = () => routing;
export function setPanes(table) { panes = table; }

export function showLogin() {
  $("view").hidden = true;
  $("login").hidden = false;
  $("logout").hidden = true;
  $("who").textContent = "";
  document.body.dataset.view = "login";
}

// Shows the pane the hash names; `keep`: the banner stays (what was just done). body[data-ready]
// counts the routes finished (the page test waits on it).
export async function route(keep) {
  const mine = ++routing;
  if (keep !== true && !keepBanner) quiet();
  keepBanner = false;
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  try {
    const shown = await panes(parts);
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
