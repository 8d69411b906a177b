// A minimal DOM for running the page's drawing functions under Node without a browser (tests/web/test_page_strings.py):
// elements keep their children and text, every selector answers one element per selector, and the text of an
// element is its own text plus its children's. Enough for the functions that turn an API answer into strings.
"use strict";
const fs = require("fs");
const vm = require("vm");

class Elem {
  constructor(tag) {
    this.tag = tag; this.children = []; this._text = ""; this.attrs = {}; this.style = {}; this.dataset = {};
    this.hidden = false; this.className = ""; this.files = [];
    this.classList = { add() {}, remove() {}, toggle() {}, contains() { return false; } };
  }
  set textContent(v) { this._text = String(v); this.children = []; }
  get textContent() { return this._text + this.children.map((c) => (typeof c === "string" ? c : c.textContent)).join(""); }
  get innerText() { return this.textContent; }
  setAttribute(k, v) { this.attrs[k] = v; }
  getAttribute(k) { return this.attrs[k]; }
  append(...kids) { this.children.push(...kids); }
  replaceChildren(...kids) { this._text = ""; this.children = kids; }
  replaceWith() {}
  addEventListener() {}
  closest() { return null; }
  querySelector(sel) { return root.get(this.tag + " " + sel); }
  querySelectorAll() { return [new Elem("x"), new Elem("x"), new Elem("x")]; }
}
const root = new Map();
root.get = function (sel) { if (!Map.prototype.has.call(this, sel)) Map.prototype.set.call(this, sel, new Elem(sel)); return Map.prototype.get.call(this, sel); };
const document = { createElement: (t) => new Elem(t), querySelector: (s) => root.get(s), addEventListener() {},
  body: new Elem("body") };

const [, , jsPath, fn, argPath] = process.argv;
const arg = JSON.parse(fs.readFileSync(argPath, "utf8"));
const ctx = { document, console, localStorage: { getItem() { return null; }, setItem() {} }, navigator: { language: "en" },
  location: { search: "" }, URLSearchParams, setTimeout, fetch: async () => ({ json: async () => arg.answer }) };
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(jsPath, "utf8") + "\n;globalThis.__fns = { showRegionPrices, showMemory, check };" +
  "\n;LABELS.en = globalThis.__labels; TERMS.en = globalThis.__terms;", Object.assign(ctx, { __labels: arg.labels || {},
    __terms: Object.fromEntries((arg.terms || []).map((x) => [x.key, x])) }));
(async () => {
  if (fn === "check") {
    root.get("#check-file").files = [{ name: "job.sh" }];
    ctx.FormData = class { append() {} };
    vm.runInContext("FormData = globalThis.FormData", ctx);
    await ctx.__fns.check({ preventDefault() {} });
    process.stdout.write(root.get("#check-result").textContent);
  } else if (fn === "showRegionPrices") {
    ctx.__fns.showRegionPrices(arg.answer);
    process.stdout.write(root.get("#region-prices tbody").textContent);
  } else if (fn === "showMemory") {
    ctx.__fns.showMemory(arg.answer, false);
    process.stdout.write(root.get("#rl-phases").textContent + "\n" + root.get("#mem-summary").textContent + "\n" +
      root.get("#mem-facts").textContent);
  }
})().catch((e) => { process.stderr.write(String(e.stack || e)); process.exit(2); });
