// The built-in page in a real browser: Debian's chromium, headless, driven by playwright-core.
// Opens <base>/_settee/?db=<db>, signs in through the page's form, waits until the page has loaded
// everything, and prints what it shows as JSON for the Python test (tests/cluster/test_settee_page.py):
// the members and their health, the database rows, each time-seq chart's bin count and how many of
// its pixels are ink, requests to anywhere but the node, console errors. Saves a screenshot of the
// page and one of the first chart. The page's timers run on playwright's clock: the test sees the
// state after the first reading, then moves time on one poll at a time. An empty <db>: a node
// without databases (no chart to wait for).
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
    await page.clock.install();
    await page.goto(`${base}/_settee/?db=${encodeURIComponent(db)}`);
    await page.waitForSelector("#login:not([hidden])", { timeout: 15000 });
    const loginShown = true;
    // The empty dashboard must not show under the sign-in form (a display rule once beat `hidden`).
    const appHiddenAtLogin = await page.evaluate(() => getComputedStyle(document.getElementById("app")).display === "none");
    await page.fill("#user", user);
    await page.fill("#password", password);
    await page.click("#login button[type=submit]");
    await page.waitForSelector("body[data-loaded=true]", { timeout: 20000 });
    // The requests chart: its ink, and the pixels of its lines' colours (requests, 5xx) in its last tenth.
    const rateChart = () => {
      const c = document.getElementById("chart-requests");
      const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let ink = 0, newest = 0;
      for (let i = 0; i < px.length; i += 4) {
        if (px[i] < 200 || px[i + 1] < 200 || px[i + 2] < 200) ink++;
        const x = (i / 4) % c.width;
        const near = (r, g, b) => Math.abs(px[i] - r) < 40 && Math.abs(px[i + 1] - g) < 40 && Math.abs(px[i + 2] - b) < 40;
        if (x > c.width * 0.9 && (near(0x3b, 0x7d, 0xdd) || near(0xb3, 0x26, 0x1e))) newest++;  // requests or 5xx
      }
      return { rates: document.getElementById("rates").textContent, points: Number(c.dataset.points || 0), ink, newest,
               polls: Number(document.body.dataset.polls) };
    };
    const first = await page.evaluate(rateChart);  // one reading: the next poll waits for the clock
    // Two more polls: the rate line needs two readings, the last one with nothing but the page's reads.
    for (const n of [2, 3]) {
      await page.clock.runFor(2000);
      await page.waitForSelector(`body[data-polls="${n}"]`, { timeout: 20000 });
    }
    const third = await page.evaluate(rateChart);
    if (db) {
      await page.waitForSelector("canvas[data-bins]", { timeout: 20000 });
      // Each copy's chart, on demand.
      await page.click("#copies summary");
      await page.waitForSelector("#copy-charts canvas[data-bins]", { timeout: 20000 });
    }
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
      const captions = [...document.querySelectorAll(".chart > div")].map((d) => d.textContent);
      return { members: rows("members"), dbs: rows("dbs"), jobs: rows("jobs"), charts, unavailable, axes, captions,
               jobKinds: [...document.querySelectorAll("#jobs tr")].slice(1).map((tr) => tr.dataset.kind || ""),
               rates: document.getElementById("rates").textContent,
               chosen: document.getElementById("db-choice").value,
               choiceShown: !document.getElementById("db-choice").hidden,
               header: document.querySelector("header").textContent };
    });
    await page.screenshot({ path: pageShot, fullPage: true });
    await page.locator(db ? "#charts canvas[data-bins]" : "#chart-requests").first().screenshot({ path: chartShot });
    console.log(JSON.stringify(Object.assign(shown, { loginShown, appHiddenAtLogin, outside, errors, first, third })));
  } finally {
    await browser.close();
  }
})().catch((e) => { console.error(e); process.exit(1); });
