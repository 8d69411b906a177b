// trainfit page: a form over the JSON API (/api/memory, /api/plan, /api/render, /api/check). No logic of its own:
// it sends the fields, draws what comes back. Loads nothing from outside this origin.
"use strict";

// The page's labels come from the server's one message catalog (GET /api/labels?lang=en|zh, web/labels.py), loaded
// per language on first use; every API call carries ?lang= so the server's own messages (reasons, fixes, warnings,
// rejections, errors) come back in the same language. Until the labels arrive the page shows index.html's English.
// The memory terms (label, unit, colour) come the same way from their descriptors (GET /api/terms, estimate/terms.py).
const LABELS = {};
const TERMS = {};
const SHOWN_PLANS = 12;  // rows shown before "show all" (the CLI shows 10 by default)
const MAIN_FIELDS = new Set(["method", "seq_len", "micro_batch", "gpus"]);
const $ = (sel) => document.querySelector(sel);
const state = { lang: "en", specs: null, lastMemory: null, lastMemoryBody: null, lastPlan: null, history: [], chart: null };

function t(key, vars) {
  let s = (LABELS[state.lang] && LABELS[state.lang][key]) || (LABELS.en && LABELS.en[key]) || key;
  for (const [k, v] of Object.entries(vars || {})) s = s.replace("{" + k + "}", v);
  return s;
}
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const kid of kids) if (kid != null) e.append(kid);
  return e;
}
const fmt = (x, d = 1) => (x == null ? "–" : Number(x).toLocaleString(state.lang === "zh" ? "zh-CN" : "en-US",
  { maximumFractionDigits: d, minimumFractionDigits: d }));

const withLang = (path, lang) => path + (path.includes("?") ? "&" : "?") + "lang=" + (lang || state.lang);

async function loadLabels(lang) {
  if (!LABELS[lang]) {
    const [labels, terms] = await Promise.all(["/api/labels", "/api/terms"].map((p) => api(p, undefined, lang)
      .then((r) => r.json())));
    TERMS[lang] = Object.fromEntries(terms.map((x) => [x.key, x]));
    LABELS[lang] = labels;
  }
  return LABELS[lang];
}
// a memory term of a breakdown as the server describes it (label in the page's language, unit, colour)
function term(key) {
  return (TERMS[state.lang] && TERMS[state.lang][key]) || (TERMS.en && TERMS.en[key])
    || { key, label: key, unit: "GiB", colour: "#999" };
}

// the switch: the labels of the new language, then what is on screen (memory, plans, an error) asked again in it,
// so the server's reasons, fixes and warnings follow; body[data-shown-lang] says when everything is in it
async function setLang(lang) {
  lang = lang === "zh" ? "zh" : "en";
  await loadLabels(lang);
  state.lang = lang;
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  try { localStorage.setItem("trainfit-lang", lang); } catch (e) { /* private mode */ }
  document.querySelectorAll("[data-i18n]").forEach((n) => { n.textContent = t(n.dataset.i18n); });
  document.querySelectorAll(".lang button").forEach((b) => b.classList.toggle("active", b.dataset.lang === lang));
  document.querySelectorAll("option[data-i18n-opt]").forEach((o) => { o.textContent = t(o.dataset.i18nOpt); });
  if (state.lastMemory) showMemory(state.lastMemory, false);
  if (state.lastPlan) showPlan(state.lastPlan);
  const again = [];
  const ask = (path, body, show) => again.push(api(path, body).then((r) => r.json())
    .then((d) => { if (state.lang === lang) show(d); }, (e) => { if (state.lang === lang) showError(e); }));
  if (state.lastMemory && state.lastMemoryBody) ask("/api/memory", state.lastMemoryBody, (d) => showMemory(d, false));
  if (state.lastPlan && state.lastPlanBody) ask("/api/plan", state.lastPlanBody, showPlan);
  if (state.lastError) ask("/api/" + state.lastError.action, state.lastError.body, () => showError(null));
  fetch(withLang("/api/options", lang)).then((r) => r.json()).then((specs) => { if (state.lang === lang) helpTips(specs); })
    .catch(() => { /* the tooltips stay as they were */ });
  await Promise.all(again);
  if (state.lang === lang) document.body.dataset.shownLang = lang;
}

async function api(path, body, lang) {
  const r = await fetch(withLang(path, lang), body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!r.ok) {
    let e = null;
    try { e = (await r.json()).error; } catch (x) { /* not JSON */ }
    throw e || { message: `HTTP ${r.status}`, fix: null };
  }
  return r;
}

// the option table's help as each input's tooltip (in the page's language)
function helpTips(specs) {
  const f = $("#form");
  for (const o of [...specs.workload, ...specs.plan, ...(specs.rl || [])]) {
    const n = f.elements[o.name];
    if (!n || !n.closest) continue;
    n.title = o.help;
    if (n.closest("label")) n.closest("label").title = o.help;
  }
}

function option(value, label, i18nKey) {
  const o = el("option", { value }, label);
  if (i18nKey) o.dataset.i18nOpt = i18nKey;
  return o;
}

function buildForm(specs, models, catalog) {
  const byName = Object.fromEntries(specs.workload.concat(specs.plan).map((o) => [o.name, o]));
  const msel = $("#model");
  for (const m of models) msel.append(option(m.name, `${m.name} (${fmt(m.params_total / 1e9, 1)}B)`));
  msel.value = models.some((m) => m.name === "Qwen3-8B") ? "Qwen3-8B" : models[0].name;
  for (const c of byName.method.choices) $("#method").append(option(c, c));
  $("#method").value = byName.method.default;
  const gsel = $("#gpu");
  gsel.append(option("", t("none_gpu"), "none_gpu"));
  for (const g of catalog.gpus) gsel.append(option(g.name, `${g.name} (${g.mem_gib} GiB)`));
  gsel.value = catalog.gpus.some((g) => g.name === "A10") ? "A10" : "";
  const pg = $("#plan_gpu");
  pg.append(option("", t("any"), "any"));
  for (const g of catalog.gpus) pg.append(option(g.name, g.name));
  const psel = $("#provider");
  psel.append(option("", t("any"), "any"));
  for (const c of byName.provider.choices) psel.append(option(c, c));
  const rc = $("#resource_class");
  rc.append(option("", t("any"), "any"));
  for (const c of byName.resource_class.choices) rc.append(option(c, c));
  for (const o of specs.plan) {  // the option table's help as the tooltip of each plan input
    const n = $("#form").elements[o.name];
    if (n && n.closest) n.closest("label").title = o.help;
  }
  // RL: the option table's algorithms and engines (plan --rl / memory --rl)
  const rlBy = Object.fromEntries((specs.rl || []).map((o) => [o.name, o]));
  if (rlBy.rl) {
    $("#rl").append(option("", t("no_rl"), "no_rl"));
    for (const c of rlBy.rl.choices) $("#rl").append(option(c, c));
    $("#rollout_engine").append(option("", t("default"), "default"));
    for (const c of rlBy.rollout_engine.choices) $("#rollout_engine").append(option(c, c));
    for (const o of specs.rl) {
      const n = $("#form").elements[o.name];
      if (n && n.closest) n.closest("label").title = o.help;
    }
  }
  // every other workload option, generically from the one option table
  const more = $("#more-fields");
  for (const o of specs.workload) {
    if (MAIN_FIELDS.has(o.name)) continue;
    let input;
    if (o.choices || typeof o.default === "boolean") {
      input = el("select", { name: o.name, id: "f-" + o.name });
      input.append(option("", t("default"), "default"));
      for (const c of o.choices || ["true", "false"]) input.append(option(c, c));
    } else {
      input = el("input", { name: o.name, id: "f-" + o.name,
        placeholder: o.default == null ? "" : Array.isArray(o.default) ? o.default.join(",") : String(o.default) });
    }
    input.title = o.help;
    more.append(el("label", { title: o.help }, el("span", { text: o.name }), input));
  }
}

const WORKLOAD_KEYS = () => state.specs.workload.map((o) => o.name);
const PLAN_KEYS = ["tokens", "objective", "provider", "plan_gpu", "resource_class", "region", "gpu_mem", "spot",
  "compare_regions", "allow_fp16"];
const RL_KEYS = ["rl", "rollout_engine", "rollout_tp", "prompt_len", "response_len", "num_generations", "rollout_batch",
  "steps"];
function collect(action) {
  const f = $("#form");
  const body = {};
  const cfg = f.config.value.trim();
  if (cfg) body.config = cfg; else body.model = f.model.value;
  const rl = f.elements.rl && f.elements.rl.value;
  // memory: "gpu" is the GPU it runs on; plan: "plan_gpu" keeps only instance types with that GPU. The RL fields
  // go only with an algorithm (as --rl); "steps" only to plan (memory sizes one step).
  const keys = WORKLOAD_KEYS().concat(action === "plan" ? PLAN_KEYS : ["gpu", "gpu_mem"],
    rl ? RL_KEYS.filter((k) => action === "plan" || k !== "steps") : []);
  for (const k of keys) {
    const n = f.elements[k];
    if (!n) continue;
    if (n.type === "checkbox") { if (n.checked) body[k] = true; continue; }
    const v = (n.value || "").trim();
    if (v !== "") body[k === "plan_gpu" ? "gpu" : k] = v;
  }
  if (rl) { delete body.tokens; delete body.seq_len; }  // RL: the budget is steps, the sequence prompt + response
  if (action === "plan") Object.assign(body, state.planExtra || {});  // applied fixes without a form field
  return body;
}

function showError(err) {
  const box = $("#error");
  document.querySelectorAll(".invalid").forEach((n) => n.classList.remove("invalid"));
  if (!err) { box.hidden = true; return; }
  box.hidden = false;
  box.replaceChildren(el("div", { text: err.message }), err.fix ? el("div", { text: `${t("fix_label")}: ${err.fix}` }) : null);
  if (err.field) {
    const f0 = $("#form");
    const n = f0.elements[err.field === "gpu" && state.lastAction === "plan" ? "plan_gpu" : err.field];
    if (n && n.classList) { n.classList.add("invalid"); if (n.closest("details")) n.closest("details").open = true; }
  }
}

function memBar(d, small) {
  const cap = d.gpu_mem_gib || 0;
  const total = d.reserved_gib;
  const scale = Math.max(total, cap) || 1;
  const bar = el("div", { class: "bar" + (small ? " small" : "") });
  for (const [key, gib] of Object.entries(d.breakdown_gib)) {
    if (gib <= 0) continue;
    const tm = term(key);
    const seg = el("div", { class: "seg", title: `${tm.label}: ${fmt(gib, 2)} ${tm.unit}`, "data-term": key },
      small ? "" : `${tm.label} ${fmt(gib, 1)}`);
    seg.style.width = (100 * gib / scale) + "%";
    seg.style.background = tm.colour;
    bar.append(seg);
  }
  if (cap) {
    const c = el("div", { class: "cap" }, small ? null : el("span", { text: `${t("usable")} ${fmt(cap, 1)} GiB` }));
    c.style.left = (100 * cap / scale) + "%";
    bar.append(c);
  }
  return bar;
}

// a phase of the step (forward, backward, optimizer; an RL run's rollout, train, sync) in the page's language
const phaseName = (p) => (p ? t("phase_" + String(p).replace(/^rl-/, "")).replace(/^phase_.*/, p) : "–");

// the verdict: an RL run's is the binding phase's (trainer, engine and sync), as memory --rl prints
function verdictOf(d) { return (d.rl && d.rl.verdict) || d.verdict || "none"; }

function showMemory(d, record = true) {
  state.lastMemory = d;
  $("#memory-view").hidden = false;
  $("#memory-view").classList.remove("stale");
  const v = verdictOf(d);
  const vb = $("#verdict");
  const hostOom = v === "oom" && d.fit && d.fit.host_verdict === "oom" && d.fit.gpu_verdict !== "oom";
  vb.className = "verdict " + v; vb.textContent = t(hostOom ? "verdict_host_oom" : "verdict_" + v); vb.dataset.verdict = v;
  // reserved with its p10-p90 range (fit corpus), as the CLI's table (issue 26)
  $("#mem-summary").textContent = `${d.model} · ${d.workload.method} · ${t("reserved")} ` +
    `${withRange(d.reserved_gib, d.reserved_interval_gib, 1)} GiB` +
    (d.gpu_mem_gib ? ` ${t("of")} ${fmt(d.gpu_mem_gib, 1)} GiB ${t("usable")}` + (d.gpu ? ` (${d.gpu})` : "") : "");
  $("#bar").replaceWith(Object.assign(memBar(d, false), { id: "bar" }));
  $("#legend").replaceChildren(...Object.entries(d.breakdown_gib).map(([key, gib]) => {
    const tm = term(key);
    const i = el("i"); i.style.background = tm.colour;
    return el("span", {}, i, `${tm.label} ${fmt(gib, 2)} ${tm.unit}`);
  }));
  // the headroom with its p10-p90 range (the card less the memory's range; headroom_interval_gib), issue 26
  const facts = [[t("headroom"), d.headroom_gib == null ? "–" : `${withRange(d.headroom_gib, d.headroom_interval_gib, 1)} GiB`],
    [t("max_mb"), d.max_micro_batch == null ? "–" : String(d.max_micro_batch)],
    [t("max_seq"), d.max_seq_len == null ? "–" : String(d.max_seq_len)],
    [t("peak_phase"), phaseName(d.peak_phase)], [t("host_ram"), `${fmt(d.host_ram_gib, 1)} GiB`],
    [t("params"), `${fmt(d.params.total / 1e9, 2)}B (${t("trainable")} ${fmt(d.params.trainable / 1e6, 1)}M)`]];
  $("#mem-facts").replaceChildren(...facts.flatMap(([k, v2]) => [el("dt", { text: k }), el("dd", { text: v2 })]));
  $("#mem-facts").querySelectorAll("dd")[1].id = "max-micro-batch";
  const rl = d.rl;
  // the binding phase's GiB (what the verdict is on) with its p10-p90 range, as memory --rl prints it (issue 26)
  const ph = (k) => (rl.binding_phase === k ? withRange(rl.phases_gib[k], rl.peak_interval_gib, 1) : fmt(rl.phases_gib[k], 1));
  $("#rl-phases").textContent = rl ? t("rl_phases", { r: ph("rollout"), t: ph("train"), s: ph("sync"),
    b: phaseName(rl.binding_phase) }) : "";
  // why the verdict is not "fits", and what the GPU cannot run (FlashAttention-3 off Hopper): as the CLI prints
  const fit = rl ? rl.fit : d.fit;
  $("#mem-warnings").replaceChildren(...[...((fit && v !== "fits") ? fit.reasons || [] : []),
    ...(d.warnings || []), ...(rl ? rl.warnings || [] : [])].map((w) => el("li", { text: w })),
    // the calibrated P(OOM) of the verdict, as memory prints it
    ...(fit && fit.oom_probability != null
      ? [el("li", { class: "note", id: "mem-p-oom", text: t("p_oom", { p: prob(fit.oom_probability) }) })] : []));
  // a job that fits by the margin but carries a P(OOM) at or above the planner's limit: say why the hints are there
  const risky = v === "fits" && (d.suggestions || []).length && d.oom_risk_limit != null;
  $("#suggestions").replaceChildren(...(risky ? [el("li", { class: "note", id: "risky-fit",
    text: t("risky_fit", { limit: prob(d.oom_risk_limit) }) })] : []), ...(d.suggestions || []).map((s) => {
    const b = el("button", { type: "button", class: "apply" }, t("apply"));
    b.addEventListener("click", () => applyOptions(s.options || {}));
    return el("li", {}, el("code", { text: s.change }), ` → ${withRange(s.reserved_gib, s.reserved_interval_gib, 1)} GiB` +
      (s.fits === true ? ` (${t("verdict_fits")})` : "") + (s.why ? ` — ${s.why} ` : " "), b);
  }));
  $("#download-memory").hidden = !d.gpu;
  if (record) {
    const w = d.workload;
    const label = `${d.model} ${w.method} seq ${w.seq_len} mb ${w.micro_batch} ×${w.gpus} ${w.strategy}` +
      (d.gpu ? ` ${d.gpu}` : "") + (rl ? ` ${rl.algo}` : "");
    // the same setting twice (the panel re-runs when the form changes) is one row, the newest
    state.history = [{ d, label }, ...state.history.filter((h) => h.label !== label)].slice(0, 6);
  }
  $("#history").replaceChildren(...state.history.map((h) => {
    const v3 = verdictOf(h.d);
    return el("div", { class: "hrow" }, el("span", { text: h.label }), memBar(h.d, true),
      el("span", { class: "verdict " + v3, text: `${withRange(h.d.reserved_gib, h.d.reserved_interval_gib, 1)} GiB` }));
  }));
}

// y of the chart: cost (plans with a price) or GPU-hours (every plan). The frontier drawn is the service's
// (res.pareto), plotted with the chosen measure; nothing is recomputed here.
function chartMetric(res) {
  const sel = $("#y-metric");
  const priced = res.plans.filter((p) => p.cost != null).length;
  if (!sel.dataset.touched) sel.value = priced && priced === res.plans.length ? "cost" : "gpu_hours";
  sel.querySelector("option[value=cost]").disabled = !priced;
  return sel.value;
}

// a figure with its p10-p90 prediction interval: "172 (140–230)" (docs/accuracy.md)
function withRange(v, r, digits) {
  if (v == null) return "–";
  return r ? `${fmt(v, digits)} (${fmt(r.p10, digits)}–${fmt(r.p90, digits)})` : fmt(v, digits);
}

function paretoChart(res) {
  const plans = res.plans;
  const metric = chartMetric(res);
  const yOf = (p) => (metric === "cost" ? p.cost : p.gpu_hours);
  const pts = plans.map((p, i) => ({ x: p.hours, y: yOf(p), i })).filter((p) => p.x != null && p.y != null);
  const front = res.pareto.map((i) => ({ x: plans[i].hours, y: yOf(plans[i]), i }))
    .filter((p) => p.x != null && p.y != null).sort((a, b) => a.x - b.x);
  const curs = [...new Set(plans.filter((p) => p.cost != null).map((p) => p.currency || "?"))].join(", ");
  $("#chart-note").textContent = metric === "cost" && res.pareto.length && !front.length ? t("frontier_unpriced") : "";
  if (state.chart) state.chart.destroy();
  if (typeof Chart === "undefined") return;
  const rangeOf = (p, k) => (p.intervals || {})[k];
  const label = (ctx) => {
    const p = plans[ctx.raw.i];
    const yk = metric === "cost" ? "cost" : "gpu_hours";
    return `#${ctx.raw.i + 1} ${p.instance_type || p.gpu} ×${p.nodes}: ${withRange(p.hours, rangeOf(p, "hours"), 1)} h, ` +
      (metric === "cost" ? `${withRange(p.cost, rangeOf(p, yk), 0)} ${p.currency || ""}`
        : `${withRange(p.gpu_hours, rangeOf(p, yk), 1)} GPU-h`);
  };
  // error bars: the p10-p90 range of hours (horizontal) and of the y measure (vertical) of every plotted plan
  const errorBars = { id: "errorBars", afterDatasetsDraw(chart) {
    const { ctx, scales: { x, y } } = chart;
    ctx.save();
    ctx.strokeStyle = "rgba(60,70,80,.55)";
    ctx.lineWidth = 1;
    for (const pt of pts) {
      const p = plans[pt.i];
      const hx = rangeOf(p, "hours"), hy = rangeOf(p, metric === "cost" ? "cost" : "gpu_hours");
      const px = x.getPixelForValue(pt.x), py = y.getPixelForValue(pt.y);
      ctx.beginPath();
      if (hx) { ctx.moveTo(x.getPixelForValue(hx.p10), py); ctx.lineTo(x.getPixelForValue(hx.p90), py); }
      if (hy) { ctx.moveTo(px, y.getPixelForValue(hy.p10)); ctx.lineTo(px, y.getPixelForValue(hy.p90)); }
      ctx.stroke();
    }
    ctx.restore();
  } };
  state.chart = new Chart($("#pareto"), {
    type: "scatter",
    data: { datasets: [
      { label: t("frontier"), data: front, showLine: true, borderColor: "#2962c8", backgroundColor: "#2962c8",
        pointRadius: 5, order: 0 },
      { label: t("all_plans"), data: pts, borderColor: "#7b8794", backgroundColor: "rgba(123,135,148,.45)",
        pointRadius: 4, order: 1 },
    ] },
    plugins: [errorBars],
    options: { animation: false, responsive: true, maintainAspectRatio: false,
      plugins: { tooltip: { callbacks: { label } } },
      scales: { x: { type: "logarithmic", title: { display: true, text: t("x_hours") } },
                y: { type: "logarithmic", title: { display: true,
                     text: metric === "cost" ? t("y_cost", { c: curs }) : t("y_gpu_hours") } } } },
  });
}

// a figure with its p10-p90 range on a second line, as the CLI's table: [text, <br>, <small>(p10–p90)</small>]
function ranged(v, r, digits, unit = "") {
  if (v == null) return "–";
  const main = fmt(v, digits) + unit;
  return r ? [main, el("br"), el("small", { text: `(${fmt(r.p10, digits)}–${fmt(r.p90, digits)})` })] : main;
}
const pct = (r) => (r ? { p10: 100 * r.p10, p90: 100 * r.p90 } : null);
const prob = (x) => (x < 0.01 ? "<1%" : x > 0.99 ? ">99%" : `${Math.round(100 * x)}%`);

// the CLI's settings column: strategy, offload, ep/tp, micro-batch × accumulation, checkpointing, RL engine
function settingsText(p) {
  const s = p.settings;
  let st = s.strategy + (s.offload !== "none" ? `+off:${s.offload}` : "");
  if (s.ep > 1) st += ` ep${s.ep}`;
  if (s.tp > 1) st += ` tp${s.tp}`;
  st += ` mb${s.micro_batch}` + (s.grad_accum > 1 ? `×ga${s.grad_accum}` : "");
  if (s.global_batch != null) st += ` gb${s.global_batch}`;
  if (s.grad_ckpt) st += " GC";
  const r = p.rl;
  if (r) {
    if (r.rollout_tp && r.algo !== "dpo") st += ` rollout-tp${r.rollout_tp}` + (r.trainer_offload ? " trainer-off" : "");
    st += ` ${r.binding_phase}-bound` + (r.max_concurrent_seqs != null ? `, KV ${r.max_concurrent_seqs} seqs` : "");
  }
  return st;
}

// price per instance-hour with its date, age and public source (a link), as the CLI's "#N price:" line
function priceAge(asOf) {
  if (!asOf) return t("price_unknown_date");
  const d = new Date(String(asOf).slice(0, 10) + "T00:00:00Z");
  if (isNaN(d)) return String(asOf);
  const days = Math.floor((Date.now() - d.getTime()) / 86400000);
  return t("price_age", { d: String(asOf).slice(0, 10), n: days });
}
function priceCell(p) {
  if (p.price_per_hour == null) return el("span", { class: "muted", title: t("no_price") }, "–");
  const src = String(p.price_source || "");
  const link = /^https?:\/\//.test(src) ? el("a", { href: src, target: "_blank", rel: "noopener noreferrer", title: src }, t("source"))
    : el("span", { title: src }, src ? t("source") + ": " + src : "");
  return [`${fmt(p.price_per_hour, 2)} ${p.currency || ""}` + (p.spot_price_fraction ? ` (${t("spot_price", { p: prob(p.spot_price_fraction) })})` : ""),
    el("br"), el("small", {}, priceAge(p.price_as_of), " · ", link)];
}

// plan --compare-regions: the shown plans priced per region (cheapest 3, the plan's region and the dearest)
function showRegionPrices(res) {
  const rows = (res.region_prices || []).filter((r) => r.plan < SHOWN_PLANS);
  $("#region-box").hidden = !rows.length;
  $("#region-prices thead").replaceChildren(el("tr", {}, ...["rank", "instance", "region_col", "price", "cost", "as_of"]
    .map((h) => el("th", { text: t(h) }))));
  const out = [];
  for (const r of rows) {
    const regions = r.regions;
    let shown = regions;
    if (r.same_everywhere) shown = regions.slice(0, 1);
    else {
      const keep = new Set([0, 1, 2, regions.length - 1]);
      regions.forEach((g, k) => { if (g.region === r.plan_region) keep.add(k); });
      shown = regions.filter((g, k) => keep.has(k));
    }
    shown.forEach((g, k) => {
      const region = g.region + (r.same_everywhere ? ` (${t("same_all", { n: regions.length })})` : "") +
        (g.region === r.plan_region ? " ←" : "");
      out.push(el("tr", {}, el("td", { class: "num", text: k === 0 ? String(r.plan + 1) : "" }),
        el("td", { text: k === 0 ? r.instance_type : "" }), el("td", { text: region }),
        el("td", { class: "num", text: `${fmt(g.price_per_hour, 2)} ${g.currency}` }),
        // the cost with its p10-p90 range, as the plan table's (issue 26)
        el("td", { class: "num" }, ...[].concat(ranged(g.cost, g.cost_interval, 0, ` ${g.currency}`))),
        el("td", { text: g.as_of || "" })));
    });
  }
  $("#region-prices tbody").replaceChildren(...out);
}

function showPlan(res) {
  state.lastPlan = res;
  $("#plan-view").hidden = false;
  // the basis the server ranked by (cost only when every plan has a price in one currency), never the objective alone
  const basis = (res.ranking && res.ranking.basis) || (res.workload.objective === "time" ? "hours" : "gpu_hours");
  const obj = t({ cost: "by_cost", gpu_hours: "by_gpu_hours", hours: "by_time" }[basis]);
  $("#plan-summary").textContent = res.plans.length ? t("plans_found", { n: res.plans.length, r: res.rejected.length, o: obj })
    : t("no_plans");
  const r = res.ranking;
  $("#plan-ranking").textContent = res.plans.length && r ? [r.summary, r.why_first,
    r.unpriced.length ? t("unpriced", { n: r.unpriced.length, how: r.price_fix || "" }) : ""].filter(Boolean).join(" · ")
    : "";
  paretoChart(res);
  $("#plan-stale").hidden = true;
  const pareto = new Set(res.pareto);
  const ties = new Set(res.ties || []);
  // the CLI's plan table: the same columns, each figure with its p10-p90 range, then every row's warnings
  const head = ["rank", "instance", "gpu_col", "nodes", "strategy", "precision", "gib", "tok_s", "mfu", "hours",
    "gpu_hours", "cost", "price", "files"];
  const NUM = new Set(["rank", "nodes", "gib", "tok_s", "mfu", "hours", "gpu_hours", "cost", "price"]);
  $("#plans thead").replaceChildren(el("tr", {}, ...head.map((h) => el("th", { text: t(h), "data-col": h }))));
  const rows = [];
  res.plans.forEach((p, i) => {
    const btn = el("button", { type: "button", "data-pick": String(i) }, t("zip"));
    btn.addEventListener("click", () => {
      const region = $("#job-region").value.trim() || p.region || "";
      downloadZip(region ? { plan: p, region } : { plan: p });
    });
    const iv = p.intervals || {};
    const cells = { rank: String(i + 1) + (ties.has(i) ? " ≈" : ""), instance: p.instance_type || "–",
      gpu_col: `${p.gpus_per_node}× ${p.gpu}`, nodes: String(p.nodes), strategy: settingsText(p),
      precision: p.settings.precision_mode || p.settings.precision,
      gib: ranged(p.per_gpu_gib, iv.per_gpu_gib, 1, `/${fmt(p.gpu_mem_gib, 0)}`),
      tok_s: ranged(p.tokens_per_s, iv.tokens_per_s, 0),
      mfu: p.mfu == null ? "–" : ranged(100 * p.mfu, pct(iv.mfu), 0, " %"),
      hours: ranged(p.hours, iv.hours, 1), gpu_hours: ranged(p.gpu_hours, iv.gpu_hours, 1),
      cost: p.cost == null ? "–" : ranged(p.cost, iv.cost, 0, ` ${p.currency || ""}`), price: priceCell(p), files: btn };
    const warns = (p.warnings || []).map((w) => el("li", { text: `${t("warning")}: ${w}` }));
    if (p.oom_probability != null && p.oom_probability >= 0.1) {  // a note, as the CLI's dim line
      warns.push(el("li", { class: "note", text: t("p_oom", { p: prob(p.oom_probability) }) }));
    }
    const extra = i >= SHOWN_PLANS ? " extra" : "";
    rows.push(el("tr", { class: "plan" + (pareto.has(i) ? " pareto" : "") + (warns.length ? " has-warn" : "") + extra,
      "data-plan": String(i) }, ...head.map((h) => {
      const c = cells[h];
      return el("td", { class: NUM.has(h) ? "num" : "", "data-col": h }, ...(Array.isArray(c) ? c : [c]));
    })));
    if (warns.length) {
      rows.push(el("tr", { class: "warn" + extra, "data-warn": String(i) }, el("td", {}),
        el("td", { colspan: String(head.length - 1) }, el("ul", {}, ...warns))));
    }
  });
  $("#plans tbody").replaceChildren(...rows);
  showRegionPrices(res);
  const more = $("#show-all");
  more.hidden = res.plans.length <= SHOWN_PLANS;
  more.textContent = t("show_all", { n: res.plans.length });
  $("#plans").classList.toggle("collapsed", !state.showAll);
  $("#rejected-count").textContent = ` (${res.rejected.length})`;
  $("#rejected thead").replaceChildren(el("tr", {}, ...["instance", "reason", "fix"].map((h) => el("th", { text: t(h) }))));
  $("#rejected tbody").replaceChildren(...res.rejected.map((r) => {
    // each fix the planner checked (fix_options, the CLI flags of the fix) as a button: applied to the form, re-planned
    const buttons = (r.fix_options || []).map((o) => {
      const b = el("button", { type: "button", class: "apply", title: JSON.stringify(o) }, t("apply"));
      b.addEventListener("click", () => applyFix(o));
      return b;
    });
    return el("tr", {}, el("td", { text: r.instance_type }), el("td", { text: r.reason }),
      el("td", {}, r.fix || "", ...buttons.flatMap((b) => [" ", b])));
  }));
  const extra = Object.entries(state.planExtra || {});
  $("#plan-extra").hidden = !extra.length;
  $("#plan-extra-text").textContent = extra.map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(",") : v}`).join(" ");
  const ood = res.plans.map((p, i) => (p.speed_interval && p.speed_interval.out_of_domain
    ? `#${i + 1}: ${p.speed_interval.note}` : null)).filter((n) => n);
  const rangeNote = res.plans.some((p) => p.intervals && p.intervals.hours) ? [t("range_note")] : [];
  $("#plan-notes").replaceChildren(...[...rangeNote, ...res.notes, ...ood].map((n) => el("li", { text: n })));
}

function applyOptions(opts) {
  const f = $("#form");
  for (const [k, v] of Object.entries(opts)) {
    const n = f.elements[k];
    if (!n) continue;
    if (n.type === "checkbox") n.checked = v === true || v === "true"; else n.value = Array.isArray(v) ? v.join(",") : String(v);
    if (n.closest("details")) n.closest("details").open = true;
  }
  run("memory");
}

// a rejection's fix: fields the form has are set; the others (ignore_rule, max_days...) are kept for the next
// plans and shown above the table with a button to clear them
function applyFix(opts) {
  const f = $("#form");
  for (const [k, v] of Object.entries(opts)) {
    const n = f.elements[k === "gpu" ? "plan_gpu" : k];
    if (n && n.type === "checkbox") n.checked = v === true;
    else if (n) n.value = Array.isArray(v) ? v.join(",") : String(v);
    else {
      state.planExtra = state.planExtra || {};
      const old = state.planExtra[k];
      state.planExtra[k] = Array.isArray(v) && Array.isArray(old) ? [...new Set([...old, ...v])] : v;
    }
  }
  run("plan");
}

async function downloadZip(body) {
  try {
    const r = await api("/api/render", body);
    const blob = await r.blob();
    const a = el("a", { href: URL.createObjectURL(blob), download: "trainfit-job.zip" });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  } catch (e) { showError(e); }
}

async function run(action) {
  showError(null);
  const body = collect(action);
  state.lastAction = action;
  const started = performance.now();
  const btn = action === "plan" ? $("#run-plan") : $("#run-memory");
  btn.disabled = true;
  try {
    const r = await api("/api/" + action, body);
    const d = await r.json();
    state.lastError = null;
    if (action === "plan") { state.lastPlanBody = body; showPlan(d); } else { state.lastMemoryBody = body; showMemory(d); }
    document.body.dataset.lastMs = String(Math.round(performance.now() - started));
    document.body.dataset.readyAt = String(Math.round(performance.now()));  // ms since the page was requested
    document.body.dataset.ready = action;
  } catch (e) {
    state.lastError = { action, body };
    showError(e);
    document.body.dataset.ready = "error";
  } finally { btn.disabled = false; }
}

async function check(ev) {
  ev.preventDefault();
  const f = $("#check-file").files[0];
  if (!f) return;
  const fd = new FormData(); fd.append("file", f);
  const out = $("#check-result");
  try {
    const r = await fetch(withLang("/api/check"), { method: "POST", body: fd });
    const d = await r.json();
    if (d.error) { out.replaceChildren(el("div", { class: "error", text: d.error.fix ? t("check_bad", { m: d.error.message, f: d.error.fix }) : d.error.message })); return; }
    const errors = d.violations.filter((v) => v.severity === "error").length;
    out.replaceChildren(el("p", { text: `${d.file} (${d.kind}): ` + (d.violations.length ? t("findings", { n: d.violations.length, e: errors }) : t("check_ok")) }),
      el("ul", {}, ...d.violations.map((v) => el("li", { text: `${t("sev_" + v.severity)} ${v.rule}: ${v.message} — ${t("fix_label")}: ${v.fix}` }))),
      // check's notes: the memory it found, with its p10-p90 range and P(OOM), as the CLI prints them (issue 26)
      el("ul", { id: "check-notes" }, ...(d.notes || []).map((n) => el("li", { class: "note", text: n }))));
  } catch (e) { out.textContent = String(e); }
}

async function init() {
  let lang = "en";
  try { lang = localStorage.getItem("trainfit-lang") || ((navigator.language || "").startsWith("zh") ? "zh" : "en"); } catch (e) { /* */ }
  const q = new URLSearchParams(location.search);
  if (q.get("lang")) lang = q.get("lang");
  state.lang = lang = lang === "zh" ? "zh" : "en";
  const [specs, models, catalog] = await Promise.all(["/api/options", "/api/models", "/api/catalog"].map((p) => api(p).then((r) => r.json()))
    .concat([loadLabels(lang)]));
  state.specs = specs;
  buildForm(specs, models, catalog);
  document.querySelectorAll(".lang button").forEach((b) => b.addEventListener("click", () => setLang(b.dataset.lang)));
  let action = "memory";
  document.querySelectorAll("#form button[type=submit]").forEach((b) => b.addEventListener("click", () => { action = b.dataset.action; }));
  $("#form").addEventListener("submit", (ev) => { ev.preventDefault(); run(action); });
  $("#download-memory").addEventListener("click", () => downloadZip(state.lastMemoryBody));
  $("#check-form").addEventListener("submit", check);
  $("#plan-extra-clear").addEventListener("click", () => { state.planExtra = {}; run("plan"); });
  $("#show-all").addEventListener("click", () => { state.showAll = true; $("#plans").classList.remove("collapsed"); $("#show-all").hidden = true; });
  $("#y-metric").addEventListener("change", (ev) => { ev.target.dataset.touched = "1"; if (state.lastPlan) paretoChart(state.lastPlan); });
  // the memory panel follows the form: a change re-runs it (it never shows one setting's breakdown under another's
  // name); a plan on screen is marked out of date (a search takes longer: it runs when asked)
  let pending = null;
  $("#form").addEventListener("change", () => {
    if (state.lastPlan) $("#plan-stale").hidden = false;
    if (!state.lastMemory) return;
    $("#memory-view").classList.add("stale");
    clearTimeout(pending);
    pending = setTimeout(() => {
      if (JSON.stringify(collect("memory")) === JSON.stringify(state.lastMemoryBody)) {
        $("#memory-view").classList.remove("stale");
        return;
      }
      run("memory");
    }, 250);
  });
  // the form can be filled from the address (?model=Qwen3-8B&method=lora&run=plan): shareable links
  const f = $("#form");
  for (const [k, v] of q.entries()) {
    const n = f.elements[k];
    if (!n || k === "run" || k === "lang") continue;
    if (n.type === "checkbox") n.checked = ["1", "true", "yes", "on"].includes(v.toLowerCase()); else n.value = v;
  }
  await setLang(lang);
  document.body.dataset.loaded = "1";
  if (q.get("run") === "memory" || q.get("run") === "plan") await run(q.get("run"));
}

document.addEventListener("DOMContentLoaded", () => { init().catch((e) => showError(e)); });
