// The built-in page in a real browser: Debian's chromium, headless, driven by playwright-core.
// Opens <base>/_settee/?db=<db>, signs in through the page's form, waits until the page has loaded
// everything, and prints what it shows as JSON for the Python test (tests/cluster/test_settee_page.py):
// the members and their health, the database rows, each time-seq chart's bin count and how many of
// its pixels are ink, requests to anywhere but the node, console errors. Saves a screenshot of the
// page and one of the first chart.
//   node settee_page.js <base url> <user> <password> <db> <page.png> <chart.png>
"use strict";
const { chromium } = require("playwright-core");

const [base, user, password, db, pageShot, chartShot] = process.argv.slice(2);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--no-proxy-server"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    const outside = [], errors = [];
    page.on("request", (r) => { if (!r.url().startsWith(base)) outside.push(r.url()); });
    // The page's first read is a 401 (not signed in yet), which chromium logs; anything else counts.
    page.on("console", (m) => { if (m.type() === "error" && !m.text().includes("status of 401")) errors.push(m.text()); });
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${base}/_settee/?db=${encodeURIComponent(db)}`);
    await page.waitForSelector("#login:not([hidden])", { timeout: 15000 });
    const loginShown = true;
    // The empty dashboard must not show under the sign-in form (a display rule once beat `hidden`).
    const appHiddenAtLogin = await page.evaluate(() => getComputedStyle(document.getElementById("app")).display === "none");
    await page.fill("#user", user);
    await page.fill("#password", password);
    await page.click("#login button[type=submit]");
    await page.waitForSelector("body[data-loaded=true]", { timeout: 20000 });
    await page.waitForSelector("canvas[data-bins]", { timeout: 20000 });
    // Three polls: the rate line needs two readings, the last one with nothing but the page's reads.
    await page.waitForFunction(() => Number(document.body.dataset.polls) >= 3, null, { timeout: 20000 });
    // Each copy's chart, on demand.
    await page.click("#copies summary");
    await page.waitForSelector("#copy-charts canvas[data-bins]", { timeout: 20000 });
    const shown = await page.evaluate(() => {
      const rows = (id) => [...document.querySelectorAll(`#${id} tr`)].slice(1)
        .map((tr) => [...tr.cells].map((td) => td.textContent.trim()));
      const charts = [...document.querySelectorAll("canvas[data-bins]")].map((c) => {
        const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        let ink = 0;
        for (let i = 0; i < px.length; i += 4) if (px[i] < 200 || px[i + 1] < 200 || px[i + 2] < 200) ink++;
        return { kind: c.dataset.kind, db: c.dataset.db, range: c.dataset.range, node: c.dataset.node,
                 bins: Number(c.dataset.bins), changes: Number(c.dataset.changes), ink };
      });
      const unavailable = [...document.querySelectorAll("#dbs tr.unavailable")].map((tr) => tr.dataset.db);
      const axes = ["chart-requests", "chart-commits", "chart-latency"].map((id) => document.getElementById(id).dataset.max);
      return { members: rows("members"), dbs: rows("dbs"), jobs: rows("jobs"), charts, unavailable, axes,
               rates: document.getElementById("rates").textContent,
               chosen: document.getElementById("db-choice").value };
    });
    await page.screenshot({ path: pageShot, fullPage: true });
    await page.locator("#charts canvas[data-bins]").first().screenshot({ path: chartShot });
    console.log(JSON.stringify(Object.assign(shown, { loginShown, appHiddenAtLogin, outside, errors })));
  } finally {
    await browser.close();
  }
})().catch((e) => { console.error(e); process.exit(1); });
