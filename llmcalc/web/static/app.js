// llmcalc serve: the page. Every figure comes from /api/calc (the CLI's functions); this file only
// keeps the state (in the URL), sends it, and draws what comes back. No formula lives here.
"use strict";

const $ = (id) => document.getElementById(id);
const COLORS = ["#1d4ed8", "#b91c1c", "#047857", "#7e22ce"];  // each ≥ 4.5:1 on white (AA)
const MAX_MODELS = 4;
const SETTINGS = ["ctx", "batch", "dtype", "kv_dtype", "gpu", "gpu_mem", "gpu_flops", "gpu_bandwidth", "gpus", "tokens", "ctx_max",
  "gen", "engine", "backend", "tp", "pp", "zero", "micro_batch", "recompute", "flash_attention", "method", "optimizer", "lora_r", "lora_targets"];
// the page's words for a setting, and the CLI option an error names it by (longest first)
const LABELS = {ctx: "context", batch: "batch", dtype: "weights format", kv_dtype: "KV cache dtype",
  gpu: "GPU", gpu_mem: "memory per GPU", gpu_flops: "FLOP/s per GPU",
  gpu_bandwidth: "memory bandwidth per GPU", gpus: "GPUs", tokens: "training tokens",
  ctx_max: "charts up to", gen: "tokens generated", engine: "engine", backend: "backend", tp: "tensor parallel", pp: "pipeline parallel",
  zero: "ZeRO stage", micro_batch: "micro-batch", recompute: "recompute", flash_attention: "FlashAttention",
  method: "method", optimizer: "optimizer", lora_r: "LoRA rank", lora_targets: "LoRA targets"};
const OPTIONS = [["--ctx-max", "ctx_max"], ["--ctx", "ctx"], ["--batch", "batch"], ["--kv-dtype", "kv_dtype"],
  ["--dtype", "dtype"], ["--gpu-mem", "gpu_mem"], ["--gpu-flops", "gpu_flops"], ["--gpu-bandwidth", "gpu_bandwidth"], ["--gpus", "gpus"], ["--gpu", "gpu"],
  ["--tokens", "tokens"], ["--gen", "gen"], ["--engine", "engine"], ["--backend", "backend"], ["--tp", "tp"], ["--pp", "pp"], ["--zero", "zero"],
  ["--micro-batch", "micro_batch"], ["--recompute", "recompute"], ["--flash-attention", "flash_attention"],
  ["--method", "method"], ["--optimizer", "optimizer"], ["--lora-r", "lora_r"], ["--lora-targets", "lora_targets"]];
// the panels that answer on their own (/api/calc's "unavailable" names them)
const PANEL_OF = {latency: "speed", expected: "speed", train: "train", finetune: "finetune", engine_vllm: "engines",
  engine_sglang: "engines", engine_trtllm: "engines", offload: "offload"};
const ENGINES = {engine_vllm: "vLLM", engine_sglang: "SGLang", engine_trtllm: "TensorRT-LLM"};
// what fits this machine: the CLI's --sort keys, each ordered as `llmcalc fit --sort KEY` orders it
const FIT_SORTS = {params: "params", name: "name", ctx: "ctx", speed: "speed"};
const DEBOUNCE_MS = 400;
const KNOBS = ["d_model", "layers", "heads", "kv_heads", "head_dim", "d_ff", "ffn", "norm", "vocab",
  "positions", "max_positions", "experts", "top_k", "tied"];

let catalog = null;
let state = null;          // {models: [{name}|{text, format}|{scratch}, with set: [...]], active, settings}
let results = [];          // per model: the /api/calc answer or {error}
let charts = {};
let timer = null;
let seq = 0;
let dirty = false;         // an edit not yet sent; body[data-idle="1"] when all is drawn
let stash = [];            // per model: the last state of each input mode, so switching back keeps it
let linkProblems = [];     // what a link held that the page could not read
let foldedFor = null;      // the model the editor last folded away for (it folds once a model loads)
let fits = null;           // the /api/fits answer (what fits this machine) or {error}
let fitsSeq = 0;
// a server bound beyond loopback prints its URL with ?token=…: the API wants it back
const TOKEN = new URLSearchParams(location.search).get("token");
const AUTH = TOKEN ? {"Authorization": "Bearer " + TOKEN} : {};

// ---- exact integers: JSON numbers past 2^53 become BigInt, read from their source text ----
function parseExact(text) {
  return JSON.parse(text, (k, v, ctx) =>
    (typeof v === "number" && !Number.isSafeInteger(v) && ctx && /^-?\d+$/.test(ctx.source))
      ? BigInt(ctx.source) : v);
}
function toJSON(obj) {
  return JSON.stringify(obj, (k, v) => typeof v === "bigint" ? JSON.rawJSON(v.toString()) : v, 2);
}
const num = (v) => (v === null || v === undefined) ? "—" : v.toLocaleString("en-US");
function short(v) {
  const x = Number(v);
  for (const [u, s] of [["Y", 1e24], ["Z", 1e21], ["E", 1e18], ["P", 1e15], ["T", 1e12], ["B", 1e9], ["M", 1e6], ["K", 1e3]])
    if (Math.abs(x) >= s) return (x / s).toPrecision(3) + u;
  return String(x);
}
function shortAxis(v) {
  const x = Number(v);
  for (const [u, s] of [["E", 1e18], ["P", 1e15], ["T", 1e12], ["B", 1e9], ["M", 1e6], ["K", 1e3]])
    if (Math.abs(x) >= s) return Number((x / s).toPrecision(3)) + u;
  return String(x);
}
// bytes in the binary unit that fits their size (the CLI's rule): 512 B, 112.50 KiB, 12.55 GiB, 1.25 TiB
// two decimals rounded as Python's format rounds them (an exact tie to even: 224.625 → 224.62)
const fixed2 = (x) => x.toLocaleString("en-US", {minimumFractionDigits: 2, maximumFractionDigits: 2, roundingMode: "halfEven"});
const BYTE_UNITS = [["TiB", 2 ** 40], ["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]];
const byteUnit = (b) => BYTE_UNITS.find(([, s]) => Math.abs(b) >= s) || ["B", 1];
function size(b) {
  const x = Number(b), [u, s] = byteUnit(x);
  return s === 1 ? num(x) + " B" : fixed2(x / s) + " " + u;
}
// a chart axis: every tick in the one unit that fits the axis's largest value
const sizeAxis = (unit) => (b) => (Number(b) / unit[1]).toLocaleString("en-US", {maximumFractionDigits: 2}) + " " + unit[0];
const BYTE_STEPS = Array.from({length: 61}, (_, i) => 2 ** i);  // 1 B … 1 EiB, powers of two
function ctxLabel(c) {
  for (const [u, s] of [["M", 2 ** 20], ["k", 2 ** 10]]) if (c >= s && c % s === 0) return c / s + u;
  return String(c);
}
function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
}

// ---- state <-> URL: readable query parameters (?model=NAME repeated, ctx, batch, dtype, kv_dtype,
// gpu, gpus …); pasted and from-scratch models travel as JSON in the fragment ----
function defaultState() {
  const settings = {};
  for (const k of SETTINGS) settings[k] = catalog.defaults[k] ?? "";
  return {models: [{name: catalog.default_model, set: []}], active: 0, settings, view: "model", fits: {sort: "params", match: "", all: false}};
}
function validModel(m) {
  // one model read from a link, or null (with the reason in linkProblems)
  if (!m || typeof m !== "object" || Array.isArray(m)) return null;
  const set = Array.isArray(m.set) ? m.set.filter((x) => typeof x === "string") : [];
  if (typeof m.name === "string") return {name: m.name, set};
  if (typeof m.text === "string") return {text: m.text, format: m.format === "yaml" ? "yaml" : "json", set};
  if (m.scratch && typeof m.scratch === "object" && !Array.isArray(m.scratch)) {
    const from = catalog.scratch[m.from] ? m.from : "llama";
    const scratch = {...catalog.scratch[from]};
    for (const k of KNOBS) if (k in m.scratch && ["string", "number", "boolean"].includes(typeof m.scratch[k]) || m.scratch[k] === null) scratch[k] = m.scratch[k];
    return {scratch, from, set};
  }
  return null;
}
function readURL() {
  linkProblems = [];
  const s = defaultState();
  const q = new URLSearchParams(location.search);
  for (const k of SETTINGS) if (q.has(k)) s.settings[k] = q.get(k);
  if (q.get("view") === "fits") s.view = "fits";
  else if (q.has("view")) linkProblems.push(`view: ${JSON.stringify(q.get("view"))} is not one of model, fits`);
  if (q.has("sort")) {
    if (FIT_SORTS[q.get("sort")]) s.fits.sort = q.get("sort");
    else linkProblems.push(`sort: ${JSON.stringify(q.get("sort"))} is not one of ${Object.keys(FIT_SORTS).join(", ")}`);
  }
  if (q.has("match")) s.fits.match = q.get("match");
  if (q.get("all") === "1") s.fits.all = true;
  let models = q.getAll("model").filter((n) => n.trim()).map((n) => ({name: n.trim(), set: []}));
  const h = location.hash.slice(1);
  if (h) {
    let parsed = null;
    try { parsed = JSON.parse(decodeURIComponent(h)); } catch (e) { linkProblems.push("the part after # is not JSON"); }
    if (parsed && typeof parsed === "object") {
      if (Array.isArray(parsed.models)) {
        parsed.models.forEach((m, i) => {
          const v = validModel(m);
          if (v) models.push(v); else linkProblems.push(`model ${i + 1}: expected {"name": …}, {"text": …} or {"scratch": {…}}, got ${JSON.stringify(m)}`);
        });
      } else if ("models" in parsed) linkProblems.push("models: expected a list");
      if (parsed.settings && typeof parsed.settings === "object")
        for (const k of SETTINGS) if (k in parsed.settings) s.settings[k] = parsed.settings[k] == null ? "" : String(parsed.settings[k]);
      if (Number.isInteger(parsed.active)) s.active = parsed.active;
    }
  }
  if (models.length > MAX_MODELS) { linkProblems.push(`at most ${MAX_MODELS} models: the rest are left out`); models = models.slice(0, MAX_MODELS); }
  if (models.length) s.models = models;
  s.active = Math.min(Math.max(0, s.active | 0), s.models.length - 1);
  return s;
}
function writeURL() {
  const q = new URLSearchParams();
  if (TOKEN) q.set("token", TOKEN);
  if (state.view === "fits") {
    q.set("view", "fits");
    if (state.fits.sort !== "params") q.set("sort", state.fits.sort);
    if (state.fits.match) q.set("match", state.fits.match);
    if (state.fits.all) q.set("all", "1");
  }
  const named = state.models.every((m) => "name" in m && !(m.set || []).length);
  if (named) for (const m of state.models) q.append("model", m.name);
  for (const k of SETTINGS) {
    const v = String(state.settings[k] ?? "");
    if (v !== String(catalog.defaults[k] ?? "")) q.set(k, v);
  }
  const hash = named ? "" : "#" + encodeURIComponent(JSON.stringify({models: state.models, active: state.active}));
  history.replaceState(null, "", "?" + q.toString() + hash);
}

// a setting's field: a checkbox holds "true"/"false", every other field its text
function fieldValue(k) { return $(k).type === "checkbox" ? String($(k).checked) : $(k).value; }
function setField(k, v) {
  if ($(k).type === "checkbox") $(k).checked = String(v) === "true"; else $(k).value = v ?? "";
}

// ---- the model editor folds away once a model is loaded; "edit the model" unfolds it ----
function setEditor(open) {
  $("editor").hidden = !open;
  $("edit-model").setAttribute("aria-expanded", String(open));
  $("edit-model").textContent = open ? "hide the model editor" : "edit the model";
}
function foldEditor() {
  const r = results[state.active];
  const key = state.active + " " + JSON.stringify(state.models[state.active]);
  if (r && r.error) { setEditor(true); return; }  // the error sits in the editor, beside its field
  if (!r || key === foldedFor || $("models").contains(document.activeElement) && !$("tabs").contains(document.activeElement)) return;
  foldedFor = key;
  setEditor(false);
}

// ---- the editor shows the active model; edits go back into state ----
function mode(m) { return "scratch" in m ? "scratch" : "text" in m ? "text" : "name"; }
function showMode(md) {
  for (const x of ["name", "text", "scratch"]) $("mode-" + x).hidden = x !== md;
  document.querySelector(`input[name=mode][value=${md}]`).checked = true;
}
function fillEditor() {
  const m = state.models[state.active];
  $("remove-model").hidden = state.models.length < 2;
  showMode(mode(m));
  $("sets").value = (m.set || []).join("\n");
  if (mode(m) === "name") {
    $("name").value = m.name;
    const r = results[state.active];
    for (const k of ["d_model", "layers"]) {
      const knob = r && r.knobs && r.knobs[k];
      $("knob-" + k).value = knob ? knob.value : "";
      $("knob-" + k).disabled = !knob;
    }
  } else if (mode(m) === "text") {
    $("text").value = m.text; $("format").value = m.format || "json";
  } else {
    $("start").value = m.from || "llama";
    for (const k of KNOBS) {
      const el = $("s-" + k), v = m.scratch[k];
      if (el.type === "checkbox") el.checked = !!v; else el.value = v ?? "";
    }
  }
}
function scratchFromForm() {
  const out = {};
  for (const k of KNOBS) {
    const el = $("s-" + k);
    out[k] = el.type === "checkbox" ? el.checked : el.tagName === "SELECT" ? el.value
      : el.value === "" ? null : Number(el.value);
  }
  return out;
}
function readEditor(changed) {
  const m = state.models[state.active];
  const md = document.querySelector("input[name=mode]:checked").value;
  const set = $("sets").value.split("\n").map((s) => s.trim()).filter(Boolean);
  let next;
  if (md === "name") {
    next = {name: $("name").value.trim(), set};
    // d_model / layers are --set on the config key this model uses
    const r = results[state.active];
    for (const k of ["d_model", "layers"]) {
      const knob = r && r.knobs && r.knobs[k];
      if (changed === "knob-" + k && knob) {
        // a cleared knob drops its --set: the model's own value again
        next.set = next.set.filter((s) => !s.startsWith(knob.key + "="));
        if ($("knob-" + k).value) next.set.push(`${knob.key}=${$("knob-" + k).value}`);
        $("sets").value = next.set.join("\n");
      }
    }
  } else if (md === "text") {
    next = {text: $("text").value, format: $("format").value, set};
  } else {
    const scratch = scratchFromForm();
    // head_dim follows d_model / heads until it is set by hand
    if (changed !== "s-head_dim" && m.scratch && (m.scratch.head_dim == null || m.scratch.head_dim === "")) scratch.head_dim = null;
    if (changed === "s-d_model" || changed === "s-heads") $("s-head_dim").value = scratch.head_dim ?? "";
    next = {scratch, from: $("start").value, set};
  }
  state.models[state.active] = next;
}
function scratchStart(from) {
  const k = {...catalog.scratch[from]};
  if (k.head_dim && k.heads && k.d_model === k.head_dim * k.heads) k.head_dim = null;  // derived
  return k;
}
function switchMode(md) {
  const m = state.models[state.active];
  if (md === mode(m)) return;
  const kept = stash[state.active] || (stash[state.active] = {});
  kept[mode(m)] = m;  // switching back finds it as it was
  if (kept[md]) state.models[state.active] = kept[md];
  else if (md === "name") state.models[state.active] = {name: catalog.default_model, set: []};
  else if (md === "text") state.models[state.active] = {text: "", format: "json", set: []};
  else state.models[state.active] = {scratch: scratchStart("llama"), from: "llama", set: []};
  fillEditor();
  update();
}

// ---- tabs: up to four models compared ----
function modelLabel(i) {
  const r = results[i], m = state.models[i];
  if (r && r.label) return r.label;
  return "name" in m ? m.name || "model" : "text" in m ? "pasted config" : "from scratch";
}
function selectTab(i, focus) {
  state.active = i; fillEditor(); drawTabs(); render(); writeURL();
  if (focus) $("tab-" + i).focus();
}
function removeModel(i) {
  state.models.splice(i, 1); results.splice(i, 1); stash.splice(i, 1);
  state.active = Math.min(state.active, state.models.length - 1);
  fillEditor(); update();
  $("tab-" + state.active).focus();
}
function drawTabs() {
  // the tabs pattern: arrows move between tabs, the selected one is the tab stop
  const tabs = $("tabs");
  const hadFocus = tabs.contains(document.activeElement);
  tabs.innerHTML = "";
  state.models.forEach((m, i) => {
    const b = document.createElement("button");
    b.type = "button"; b.id = "tab-" + i;
    b.className = "tab" + (i === state.active ? " active" : "");
    b.setAttribute("role", "tab");
    b.setAttribute("aria-selected", String(i === state.active));
    b.setAttribute("aria-controls", "editor");
    b.tabIndex = i === state.active ? 0 : -1;
    b.style.borderBottomColor = COLORS[i];
    b.innerHTML = `<span class="dot" style="background:${COLORS[i]}"></span>${esc(modelLabel(i))}`;
    b.onclick = () => selectTab(i, true);
    b.onkeydown = (e) => {
      const n = state.models.length;
      const to = {ArrowRight: (i + 1) % n, ArrowLeft: (i + n - 1) % n, Home: 0, End: n - 1}[e.key];
      if (to !== undefined) { e.preventDefault(); selectTab(to, true); }
      if (e.key === "Delete" && n > 1) { e.preventDefault(); removeModel(i); }
    };
    tabs.appendChild(b);
  });
  $("editor").setAttribute("aria-labelledby", "tab-" + state.active);
  $("add-model").hidden = state.models.length >= MAX_MODELS;
  if (hadFocus) $("tab-" + state.active).focus();
}
function addModel() {
  // "+ compare" starts from a copy of the model shown
  state.models.push(JSON.parse(JSON.stringify(state.models[state.active])));
  results.push(results[state.active]);
  state.active = state.models.length - 1;
  fillEditor(); drawTabs(); update();
  $("tab-" + state.active).focus();
}

// ---- talking to the server ----
async function calc(m) {
  const body = {model: "scratch" in m ? {scratch: m.scratch} : "text" in m ? {text: m.text, format: m.format || "json"} : {name: m.name},
    set: m.set || [], ...state.settings};
  // blank means the CLI's default; anything else goes as typed (GPUs 0 is refused, never read as 1)
  for (const k of SETTINGS) if (body[k] === "" || body[k] == null) body[k] = null;
  if (body.gpus !== null) body.gpus = /^\d+$/.test(String(body.gpus).trim()) ? Number(body.gpus) : String(body.gpus);
  const resp = await fetch("/api/calc", {method: "POST", headers: {"Content-Type": "application/json", ...AUTH}, body: JSON.stringify(body)});
  const data = parseExact(await resp.text());
  return resp.ok ? data : {error: data.error || `HTTP ${resp.status}`};
}
function update() {
  dirty = true;
  document.body.dataset.idle = "0";
  writeURL();
  clearTimeout(timer);
  timer = setTimeout(run, DEBOUNCE_MS);  // one request once typing pauses, not one a keystroke
}
async function run() {
  if (state.view === "fits") {  // what fits this machine: one list, no model
    dirty = false;
    await runFits();
    return;
  }
  const mine = ++seq;
  dirty = false;
  document.body.classList.add("busy");
  const answers = await Promise.all(state.models.map((m) => calc(m).catch((e) => ({error: String(e)}))));
  if (mine !== seq) return;  // a newer edit is on its way
  results = answers;
  document.body.classList.remove("busy");
  render();
}

// ---- drawing ----
function ok() { return results.map((r, i) => [r, i]).filter(([r]) => r && !r.error); }
function render() {
  const r = results[state.active];
  const err = $("error");
  const [field, words] = r && r.error ? placeError(r.error) : [null, ""];
  err.hidden = !(r && r.error) || field !== null;
  err.textContent = r && r.error && field === null ? "error: " + r.error : "";
  // a panel's own error (a setting only it reads) sits beside that setting, or in the panel
  const fieldErrors = field ? {[field]: words} : {};
  const panelErrors = {};
  if (r && !r.error) for (const [panel, msg] of Object.entries(r.unavailable || {})) {
    // beside the field when the panel owns it (tokens generated, ZeRO …), else in the panel
    const [f, w] = placeError(msg), home = PANEL_OF[panel] || panel;
    if (f && $(f).closest("#panel-" + home) && !fieldErrors[f]) fieldErrors[f] = w;
    else panelErrors[home] = pageWords(msg);
  }
  for (const k of SETTINGS) {
    if (!$("err-" + k)) continue;
    $("err-" + k).textContent = fieldErrors[k] || "";
    if (fieldErrors[k]) $(k).setAttribute("aria-invalid", "true"); else $(k).removeAttribute("aria-invalid");
  }
  const panelNotes = r && !r.error ? r.panel_notes || {} : {};
  for (const panel of ["speed", "train", "finetune", "engines", "offload"]) $(panel + "-note").textContent = panelErrors[panel] ? "not worked out: " + panelErrors[panel]
    : panelNotes[panel] ? "note: " + pageWords(panelNotes[panel]) : "";
  for (const el of document.querySelectorAll("#editor input, #editor textarea")) el.removeAttribute("aria-invalid");
  if (r && r.error && field === null) {
    const md = mode(state.models[state.active]);
    const el = md === "name" ? $("name") : md === "text" ? $("text") : null;
    if (el) el.setAttribute("aria-invalid", "true");
  }
  if (r && !r.error && mode(state.models[state.active]) === "name") {
    for (const k of ["d_model", "layers"]) {
      const knob = r.knobs[k];
      if (document.activeElement !== $("knob-" + k)) $("knob-" + k).value = knob ? knob.value : "";
      $("knob-" + k).disabled = !knob;
    }
  }
  drawTabs();
  // three or four models: a panel a row, so that a column per model is never cut at 1280 px
  document.querySelector("main").classList.toggle("many", ok().length > 2);
  for (const box of document.querySelectorAll(".export")) box.innerHTML = "";
  drawVerdict(); drawCompare();
  drawParams(); drawFlops(); drawMemory(); drawSpeed(); drawEngines(); drawOffload(); drawFinetune(); drawTrain();
  foldEditor();
  if (!dirty) document.body.dataset.idle = "1";
}

// an API error that names a setting goes beside that field, in the page's words (no CLI flags)
function pageWords(msg) {
  let out = msg;
  for (const [opt, key] of OPTIONS) out = out.split(opt).join(LABELS[key]);
  return out;
}
function placeError(msg) {
  for (const [opt, key] of [...OPTIONS, ["gpu", "gpu"]])
    if (msg.startsWith(opt + " ") || msg.startsWith(opt + ":")) return [key, pageWords(msg)];
  return [null, msg];
}

// ---- the verdict: fits or not on the chosen hardware, first on the page ----
const PARTS = [["weights", "weights", "#1d4ed8"], ["kv_cache", "KV cache", "#0e7490"],
  ["recurrent_state", "recurrent state", "#7e22ce"], ["headroom", "headroom", "#6b7280"], ["free", "free", "#d1fae5"]];
function drawVerdict() {
  const card = $("verdict-card");
  const r = results[state.active];
  card.classList.toggle("stale", dirty);
  if (!r) { card.innerHTML = ""; return; }
  if (r.error) {
    card.innerHTML = `<p class="verdict-error">No answer for ${esc(modelLabel(state.active))}: ${esc(pageWords(r.error))}</p>`;
    return;
  }
  const v = r.verdict;
  const scale = Math.max(Number(v.memory_bytes), Number(v.needed_bytes) + Number(v.parts.headroom));
  const used = v.gpus > 1 ? `${v.gpus} × ${esc(v.accelerator)}` : esc(v.accelerator);
  const own = state.settings.dtype ? "" : " (the checkpoint's own)";
  const segs = PARTS.filter(([k]) => Number(v.parts[k]) > 0).map(([k, label, color]) =>
    `<span class="seg seg-${k}" style="width:${(100 * Number(v.parts[k]) / scale).toFixed(2)}%;background:${color}" title="${label}: ${size(v.parts[k])}"></span>`).join("");
  const legend = PARTS.filter(([k]) => Number(v.parts[k]) > 0 || k === "weights" || k === "kv_cache").map(([k, label, color]) =>
    `<li><span class="swatch" style="background:${color}"></span>${label} <b class="part" data-part="${k}" data-value="${v.parts[k]}">${size(v.parts[k])}</b></li>`).join("");
  const notes = [...new Set([...(r.memory.notes || []), ...(r.flops.notes || []), ...(r.count.notes || [])])];
  card.innerHTML =
    `<h2 id="verdict-head" class="${v.fits ? "fits" : "nofit"}">${v.fits ? "Fits" : "Does not fit"}: ${esc(r.label)} on ${used}</h2>` +
    `<p class="verdict-line">${num(v.ctx)} tokens × batch ${num(v.batch)} in ${esc(v.dtype)}${own}, KV cache ${esc(v.kv_dtype)}: ` +
    `<b id="needed" data-value="${v.needed_bytes}">${size(v.needed_bytes)}</b> of <span id="usable" data-value="${v.usable_bytes}">${size(v.usable_bytes)}</span> usable ` +
    `(${size(v.memory_bytes)} less ${Math.round(v.headroom * 100)}% headroom)</p>` +
    `<div class="stack" role="img" aria-label="memory use: the list below gives each part">${segs}</div>` +
    `<ul class="legend">${legend}</ul>` +
    `<dl class="facts">` +
    `<div><dt>fewest GPUs that fit</dt><dd id="min-gpus">${v.min_gpus === null ? "more than 65,536" : num(v.min_gpus)}</dd></div>` +
    `<div><dt>largest batch at ${ctxLabel(v.ctx)}</dt><dd id="max-batch">${v.max_batch !== null ? num(v.max_batch) : v.batch_unbounded ? "any (nothing is cached)" : "none"}</dd></div>` +
    (v.decode ? `<div><dt>decode at batch ${num(v.decode.batch)} × ${ctxLabel(v.ctx)} (${v.decode.source === "latency" ? "roofline" : "bandwidth bound"})</dt><dd id="decode" data-value="${v.decode.tokens_per_sec_per_sequence}" data-source="${v.decode.source}">≤ ${rate(v.decode.tokens_per_sec_per_sequence)} tokens/s a sequence</dd></div>` : "") +
    (v.decode && v.decode.ttft_s !== null ? `<div><dt>first token</dt><dd id="ttft" data-value="${v.decode.ttft_s}">≥ ${secs(v.decode.ttft_s)}</dd></div>` : "") +
    `<div><dt>largest context at batch ${num(v.batch)}</dt><dd id="max-ctx">${v.max_ctx === null ? "none" : num(v.max_ctx)}${v.limited_by_context_limit ? " (the model's limit)" : ""}</dd></div>` +
    `</dl>` +
    (notes.length ? `<ul id="notes" class="notes">${notes.map((n) => `<li>note: ${esc(n)}</li>`).join("")}</ul>` : "");
}

// ---- comparison: one row per model ----
function drawCompare() {
  const box = $("compare");
  box.hidden = state.models.length < 2;
  if (box.hidden) { box.innerHTML = ""; return; }
  // the verdict next to the name, so that a phone shows it without scrolling sideways
  let html = `<table id="compare-table"><caption>models compared on the same settings</caption><thead><tr><th scope="col">model</th><th scope="col" class="verdict">verdict</th><th scope="col">total</th><th scope="col">largest context</th><th scope="col">weights</th><th scope="col">KV cache</th><th scope="col">parameters</th><th scope="col">active</th><th scope="col"><span class="sr">remove</span></th></tr></thead><tbody>`;
  state.models.forEach((m, i) => {
    const r = results[i];
    const name = `<th scope="row" style="color:${COLORS[i]}">${esc(modelLabel(i))}</th>`;
    const rm = `<td><button type="button" class="remove" data-model="${i}" aria-label="remove ${esc(modelLabel(i))}">×</button></td>`;
    if (!r || r.error) { html += `<tr data-model="${i}">${name}<td colspan="7">${r ? esc(pageWords(r.error)) : "…"}</td>${rm}</tr>`; return; }
    const v = r.verdict;
    html += `<tr data-model="${i}">${name}<td class="verdict ${v.fits ? "fits" : "nofit"}">${v.fits ? "fits" : "does not fit"}</td>` +
      `<td class="n" data-value="${r.memory.total_bytes}">${size(r.memory.total_bytes)}</td><td class="n">${v.max_ctx === null ? "none" : num(v.max_ctx)}</td>` +
      `<td class="n">${size(r.memory.weights_bytes)}</td><td class="n">${size(r.memory.kv_cache_bytes)}</td>` +
      `<td class="n">${num(r.count.total_params)}</td><td class="n">${num(r.count.active_params)}</td>${rm}</tr>`;
  });
  box.innerHTML = html + "</tbody></table>";
  for (const b of box.querySelectorAll("button.remove")) b.onclick = () => removeModel(Number(b.dataset.model));
}

function dataTable(id, head, rows) {
  $(id).innerHTML = `<thead><tr>${head.map((h) => `<th scope="col">${esc(h)}</th>`).join("")}</tr></thead><tbody>` +
    rows.map((r) => `<tr>${r.map((c, j) => j ? `<td class="n">${esc(c)}</td>` : `<th scope="row">${esc(c)}</th>`).join("")}</tr>`).join("") + "</tbody>";
}

function exportBar(panel, name, json, csv, commands) {
  const box = document.querySelector(`#panel-${panel} .export`);
  box.innerHTML = "";
  if (!commands.length) return;  // nothing computed: nothing to export
  const dl = (label, type, text, ext) => {
    const a = document.createElement("a");
    a.textContent = label; a.className = "button"; a.download = `llmcalc-${name}.${ext}`;
    a.href = URL.createObjectURL(new Blob([text], {type}));
    box.appendChild(a);
  };
  dl("JSON", "application/json", json, "json");
  dl("CSV", "text/csv", csv, "csv");
  for (const c of commands) {
    const code = document.createElement("code");
    code.className = "cli"; code.textContent = c;
    box.appendChild(code);
  }
}
const csv = (rows) => rows.map((r) => r.map((c) => /[",\n]/.test(String(c)) ? `"${String(c).replace(/"/g, '""')}"` : String(c)).join(",")).join("\n") + "\n";

function drawParams() {
  const models = ok();
  const sum = $("params-summary"), table = $("params-table"), layers = $("layers-table"), bars = $("params-chart");
  if (!models.length) { sum.innerHTML = ""; table.innerHTML = ""; layers.innerHTML = ""; bars.innerHTML = ""; return; }
  const a = results[state.active];
  if (!a || a.error) sum.innerHTML = "";  // never another model's total under this one's name
  const c = a && !a.error ? a.count : models[0][0].count;
  const rule = c.rule_of_thumb;
  if (a && !a.error) sum.innerHTML = `<div class="big"><span id="total" data-value="${c.total_params}">${num(c.total_params)}</span> parameters</div>` +
    (c.active_params !== c.total_params ? `<div><span id="active">${num(c.active_params)}</span> active per token</div>` : "") +
    `<div class="rule">rule of thumb 12·L·d² + V·d = <span id="rule">${num(rule.params)}</span> (${rule.percent_off >= 0 ? "+" : ""}${rule.percent_off.toFixed(2)}% off the exact total)</div>` +
    `<div class="shape">layers ${c.num_layers} · d_model ${num(c.hidden_size)} · heads ${c.num_heads} · kv heads ${c.num_kv_heads} · head_dim ${c.head_dim} · d_ff ${num(c.intermediate_size)} · vocab ${num(c.vocab_size)} · tied ${c.tied_embeddings ? "yes" : "no"}</div>` +
    (c.notes || []).map((n) => `<div class="note">note: ${esc(n)}</div>`).join("");
  // chart: one bar per breakdown key, as a share of the total
  const total = Number(c.total_params);
  bars.innerHTML = Object.entries(c.breakdown).filter(([, v]) => Number(v) > 0).map(([k, v]) =>
    `<div class="bar"><span class="k">${esc(k)}</span><span class="track"><span class="fill" style="width:${(100 * Number(v) / total).toFixed(2)}%"></span></span><span class="v">${short(v)}</span></div>`).join("");
  // the exact table, one column per compared model
  const keys = [...new Set(models.flatMap(([r]) => Object.keys(r.count.breakdown)))];
  let html = `<thead><tr><th>tensor group</th>${models.map(([r, i]) => `<th style="color:${COLORS[i]}">${esc(r.label)}</th>`).join("")}</tr></thead><tbody>`;
  for (const k of keys) html += `<tr><td>${esc(k)}</td>${models.map(([r, i]) => `<td class="n" data-model="${i}" data-key="${esc(k)}">${num(r.count.breakdown[k] ?? 0)}</td>`).join("")}</tr>`;
  html += `<tr class="total"><td>total</td>${models.map(([r, i]) => `<td class="n" data-model="${i}" data-key="total">${num(r.count.total_params)}</td>`).join("")}</tr>`;
  html += `<tr><td>12·L·d² + V·d</td>${models.map(([r]) => `<td class="n">${num(r.count.rule_of_thumb.params)}</td>`).join("")}</tr></tbody>`;
  table.innerHTML = html;
  let lh = `<thead><tr><th>model</th><th>layer group</th><th>layers</th><th>per layer</th><th>all layers</th></tr></thead><tbody>`;
  for (const [r, i] of models) for (const g of r.count.groups)
    lh += `<tr><td style="color:${COLORS[i]}">${esc(r.label)}</td><td>${esc(g.name)}</td><td class="n">${g.num_layers}</td><td class="n">${num(g.params_per_layer)}</td><td class="n">${num(BigInt(g.params_per_layer) * BigInt(g.num_layers))}</td></tr>`;
  layers.innerHTML = lh + "</tbody>";
  const rows = [["model", "key", "params"]];
  for (const [r] of models) {
    for (const [k, v] of Object.entries(r.count.breakdown)) rows.push([r.label, k, String(v)]);
    rows.push([r.label, "total", String(r.count.total_params)]);
  }
  exportBar("params", "params", toJSON(models.map(([r]) => r.count)), csv(rows), models.map(([r]) => r.commands.count));
}

function chartWidth(el) { return Math.max(280, Math.min(el.clientWidth || 600, 900)); }
function markers(lines) {
  // vertical lines at x values (crossover, largest fitting context), drawn after the series; each
  // label beside its line, in the first row where it overlaps no other label and stays inside the
  // plot, on a white ground (the boxes, in CSS pixels, are kept in data-labels for the tests)
  return {hooks: {draw: [(u) => {
    const g = u.ctx, dpr = devicePixelRatio, row = 14 * dpr, pad = 4 * dpr;
    const left = u.bbox.left, right = u.bbox.left + u.bbox.width, top = u.bbox.top;
    const seen = new Set(), placed = [];
    g.save();
    g.font = `${11 * dpr}px sans-serif`; g.textBaseline = "alphabetic";
    for (const {x, color, label} of lines) {
      if (!x || x < u.scales.x.min || x > u.scales.x.max || seen.has(x + " " + label)) continue;
      seen.add(x + " " + label);
      const px = u.valToPos(x, "x", true);
      g.strokeStyle = color; g.setLineDash([4, 4]); g.lineWidth = 1.5 * dpr;
      g.beginPath(); g.moveTo(px, top); g.lineTo(px, top + u.bbox.height); g.stroke();
      const w = g.measureText(label).width + 2 * dpr;
      // right of the line, else left of it, else wherever it fits inside the plot
      const xs = [px + pad, px - pad - w, Math.min(Math.max(left, px - w / 2), right - w)].filter((l) => l >= left && l + w <= right);
      let box = null;
      for (let r = 0; !box && r < Math.floor(u.bbox.height / row); r++)
        for (const l of xs) {
          const b = {l, t: top + r * row + 2 * dpr, w, h: row - 2 * dpr};
          if (!placed.some((o) => b.l < o.l + o.w && o.l < b.l + b.w && b.t < o.t + o.h && o.t < b.t + b.h)) { box = b; break; }
        }
      if (!box) continue;  // no room left: the line alone (the table below has the figure)
      placed.push({...box, label});
      g.fillStyle = "rgba(255,255,255,0.85)"; g.fillRect(box.l, box.t, box.w, box.h);
      g.fillStyle = color; g.textAlign = "left";
      g.fillText(label, box.l + dpr, box.t + box.h - 3 * dpr);
    }
    g.restore();
    u.root.parentElement.dataset.labels = JSON.stringify(placed.map((b) => ({label: b.label, l: b.l / dpr, t: b.t / dpr, w: b.w / dpr, h: b.h / dpr})));
    u.root.parentElement.dataset.plot = JSON.stringify({l: left / dpr, t: top / dpr, w: u.bbox.width / dpr, h: u.bbox.height / dpr});
  }]}};
}
// the y axis as wide as its widest label (uPlot's default font), never cut at the left edge
function axisSize(u, values) {
  if (!values) return 48;
  const g = u.ctx, font = u.axes[1] && u.axes[1].font;
  g.save(); g.font = Array.isArray(font) ? font[0] : `${12 * devicePixelRatio}px system-ui, sans-serif`;
  const widest = Math.max(0, ...values.map((v) => g.measureText(String(v)).width)) / devicePixelRatio;
  g.restore();
  return Math.ceil(widest) + 18;
}
const isPow = (v, b) => v > 0 && Math.abs(Math.log(v) / Math.log(b) - Math.round(Math.log(v) / Math.log(b))) < 1e-9;
function lineChart(id, title, yLog, yFormat, series, data, lines) {
  const el = $(id);
  if (charts[id]) { charts[id].destroy(); delete charts[id]; }
  el.innerHTML = "";
  if (!series.length) return;
  const opts = {
    title, width: chartWidth(el), height: 300,
    scales: {x: {time: false, distr: 3, log: 2}, y: yLog ? {distr: 3, log: 10} : {range: (u, lo, hi) => [0, hi * 1.05]}},
    axes: [{values: (u, vs) => vs.map((v) => isPow(v, 2) ? ctxLabel(v) : ""), label: "context (tokens)", space: 34},
      {values: (u, vs) => vs.map((v) => !yLog || isPow(v, 10) ? yFormat(v) : ""), size: axisSize, ...(yLog ? {} : {incrs: BYTE_STEPS})}],
    series: [{label: "context", value: (u, v) => v == null ? "" : ctxLabel(v)}, ...series],
    legend: {live: false},
    plugins: [markers(lines)],
  };
  charts[id] = new uPlot(opts, data, el);
}

function drawFlops() {
  const models = ok();
  const series = [], columns = [], lines = [];
  let xs = models.length ? models[0][0].series.ctx : [];
  for (const [r] of models) if (r.series.ctx.length > xs.length) xs = r.series.ctx;
  for (const [r, i] of models) {
    const s = r.series;
    const at = (x) => { const j = s.ctx.indexOf(x); return j < 0 ? null : j; };
    const w = Number(s.weight_flops_per_token);
    columns.push(xs.map((x) => at(x) === null ? null : w));
    columns.push(xs.map((x) => at(x) === null ? null : Number(s.attention_flops_per_token[at(x)])));
    columns.push(xs.map((x) => at(x) === null ? null : w + Number(s.attention_flops_per_token[at(x)])));
    const name = models.length > 1 ? r.label + " " : "";
    series.push({label: name + "weights", stroke: COLORS[i], dash: [6, 4], value: (u, v) => v == null ? "" : short(v)});
    series.push({label: name + "attention", stroke: COLORS[i], width: 1, value: (u, v) => v == null ? "" : short(v)});
    series.push({label: name + "total", stroke: COLORS[i], width: 2.5, value: (u, v) => v == null ? "" : short(v)});
    if (s.crossover_ctx) lines.push({x: s.crossover_ctx, color: COLORS[i], label: "attention > weights at " + num(s.crossover_ctx)});
  }
  $("flops-summary").innerHTML = models.map(([r, i]) => `<div style="color:${COLORS[i]}">${esc(r.label)}: <b><span class="flops-token" data-model="${i}">${num(r.flops.forward_flops_per_token)}</span></b> FLOPs per token at context ${num(r.flops.ctx)} (weights ${num(r.flops.weight_flops_per_token)}, attention ${num(r.flops.attention_flops_per_token)}); attention overtakes the weights at <span class="crossover" data-model="${i}">${r.flops.attention_crossover_ctx === null ? "no context (every layer is windowed)" : num(r.flops.attention_crossover_ctx)}</span></div>`).join("");
  lineChart("flops-chart", "forward FLOPs per token (log–log)", true, shortAxis, series, [xs, ...columns], lines);
  dataTable("flops-data", ["model", "context", "weights", "attention", "total"],
    models.flatMap(([r]) => r.series.ctx.map((x, j) => [r.label, num(x), num(r.series.weight_flops_per_token), num(r.series.attention_flops_per_token[j]), num(BigInt(r.series.weight_flops_per_token) + BigInt(r.series.attention_flops_per_token[j]))])));
  const rows = [["model", "ctx", "weight_flops_per_token", "attention_flops_per_token", "forward_flops_per_token"]];
  for (const [r] of models) r.series.ctx.forEach((x, j) => rows.push([r.label, x, String(r.series.weight_flops_per_token), String(r.series.attention_flops_per_token[j]), String(BigInt(r.series.weight_flops_per_token) + BigInt(r.series.attention_flops_per_token[j]))]));
  exportBar("flops", "flops", toJSON(models.map(([r]) => ({...r.flops, series: r.series}))), csv(rows), models.map(([r]) => r.commands.flops));
}

function drawMemory() {
  const models = ok();
  const series = [], columns = [], lines = [];
  let xs = models.length ? models[0][0].series.ctx : [];
  for (const [r] of models) if (r.series.ctx.length > xs.length) xs = r.series.ctx;
  for (const [r, i] of models) {
    const s = r.series;
    const at = (x) => s.ctx.indexOf(x);
    const w = Number(s.weights_bytes);
    columns.push(xs.map((x) => at(x) < 0 ? null : w));
    columns.push(xs.map((x) => at(x) < 0 ? null : w + Number(s.kv_cache_bytes[at(x)])));
    const name = models.length > 1 ? r.label + " " : "";
    series.push({label: name + "weights", stroke: COLORS[i], dash: [6, 4], value: (u, v) => v == null ? "" : size(v)});
    series.push({label: name + "weights + KV cache", stroke: COLORS[i], width: 2.5, value: (u, v) => v == null ? "" : size(v)});
    if (r.fit.max_ctx) lines.push({x: r.fit.max_ctx, color: COLORS[i], label: "fits up to " + ctxLabel(r.fit.max_ctx)});
    if (s.context_limit) lines.push({x: s.context_limit, color: "#4b5563", label: "model's limit " + ctxLabel(s.context_limit)});
  }
  if (models.length) {
    const f = models[0][0].fit;
    // the same budget the fit uses: memory less its headroom
    const cap = Number(models[0][0].series.usable_bytes);
    columns.push(xs.map(() => cap));
    series.push({label: `usable on ${f.gpus} × ${f.accelerator.name} (less ${Math.round(f.headroom * 100)}%)`, stroke: "#111", width: 1.5, value: (u, v) => v == null ? "" : size(v)});
    lines.push({x: models[0][0].series.chosen_ctx, color: "#111", label: "chosen " + ctxLabel(models[0][0].series.chosen_ctx)});
  }
  $("memory-summary").innerHTML = models.map(([r, i]) => `<div style="color:${COLORS[i]}">${esc(r.label)}: weights ${size(r.memory.weights_bytes)} (${r.memory.dtype}) + KV cache ${size(r.memory.kv_cache_bytes)} at batch ${r.memory.batch} × ${num(r.memory.ctx)} = <b><span class="memory-total" data-model="${i}" data-value="${r.memory.total_bytes}">${num(r.memory.total_bytes)}</span> bytes</b>; largest context that fits on ${r.fit.gpus} × ${esc(r.fit.accelerator.name)} (less ${Math.round(r.fit.headroom * 100)}% headroom): <b><span class="max-ctx" data-model="${i}">${r.fit.max_ctx === null ? "none" : num(r.fit.max_ctx)}</span></b>${r.fit.limited_by_context_limit ? " (the model's context limit)" : ""}</div>`).join("");
  const top = Math.max(0, ...columns.flat().filter((v) => v != null));
  lineChart("memory-chart", `memory at batch ${models.length ? models[0][0].memory.batch : ""}`, false, sizeAxis(byteUnit(top)), series, [xs, ...columns], lines);
  dataTable("memory-data", ["model", "context", "weights (bytes)", "KV cache (bytes)", "total (bytes)"],
    models.flatMap(([r]) => r.series.ctx.map((x, j) => [r.label, num(x), num(r.series.weights_bytes), num(r.series.kv_cache_bytes[j]), num(BigInt(r.series.weights_bytes) + BigInt(r.series.kv_cache_bytes[j]))])));
  const rows = [["model", "ctx", "batch", "weights_bytes", "kv_cache_bytes", "total_bytes"]];
  for (const [r] of models) r.series.ctx.forEach((x, j) => rows.push([r.label, x, r.memory.batch, String(r.series.weights_bytes), String(r.series.kv_cache_bytes[j]), String(BigInt(r.series.weights_bytes) + BigInt(r.series.kv_cache_bytes[j]))]));
  exportBar("memory", "memory", toJSON(models.map(([r]) => ({memory: r.memory, fit: r.fit, series: r.series}))), csv(rows), models.flatMap(([r]) => [r.commands.memory, r.commands.fit]));
}

const rate = (x) => Number(x).toLocaleString("en-US", {maximumFractionDigits: 1});
// a time in ms below a second, in seconds from one on: 473.40 ms, 3.58 s
const secs = (s) => s * 1e3 >= 999.995 ? fixed2(s) + " s" : fixed2(s * 1e3) + " ms";  // never "1,000.00 ms"
const exactShort = (v) => `<span title="${num(v)}" data-value="${v}">${short(v)}</span>`;
// a table with one column per model: rows of [label, key, cell(figures)], data-key on each cell
function figureTable(id, models, rows) {
  let html = `<thead><tr><th scope="col"><span class="sr">figure</span></th>${models.map(([r, i]) => `<th scope="col" style="color:${COLORS[i]}">${esc(r.label)}</th>`).join("")}</tr></thead><tbody>`;
  for (const [label, key, f] of rows) html += `<tr><th scope="row">${label}</th>${models.map(([r, i, x]) => `<td class="n" data-model="${i}" data-key="${key}">${f(x)}</td>`).join("")}</tr>`;
  $(id).innerHTML = models.length ? html + "</tbody>" : "";
}
const valued = (v, text) => `<span data-value="${v}">${text}</span>`;

function drawSpeed() {
  const models = ok().filter(([r]) => r.latency).map(([r, i]) => [r, i, r.latency]);
  const tp = models.length ? models[0][2].inputs.tp : 1;
  figureTable("speed-table", models, [
    ["time to first token (prefill)", "ttft_s", (l) => valued(l.ttft_s, secs(l.ttft_s))],
    ["time per output token", "tpot_s", (l) => valued(l.tpot_s, secs(l.tpot_s))],
    ["end to end (TTFT + (gen − 1) × TPOT)", "e2e_s", (l) => valued(l.e2e_s, secs(l.e2e_s))],
    ["whole requests, prefill and decode overlapped", "whole_s", (l) => valued(l.whole_s, secs(l.whole_s))],
    ["decode tokens/s per user", "tokens_per_s_per_request", (l) => valued(l.tokens_per_s_per_request, rate(l.tokens_per_s_per_request))],
    ["decode tokens/s, all users (batch)", "tokens_per_s", (l) => valued(l.tokens_per_s, rate(l.tokens_per_s))],
    [`decode tokens/s per GPU (tp ${tp})`, "tokens_per_s_per_gpu", (l) => valued(l.tokens_per_s_per_gpu, rate(l.tokens_per_s_per_gpu))],
    ["output tokens/s per GPU over the request", "throughput_per_gpu", (l) => valued(l.throughput_per_gpu, rate(l.throughput_per_gpu))],
    ["prefill bound by", "prefill_bound", (l) => l.prefill.bound],
    ["decode bound by", "decode_bound", (l) => l.decode_step.bound],
    ["decode turns compute bound at batch", "ridge_batch", (l) => l.ridge_batch === null ? "never" : valued(l.ridge_batch, num(l.ridge_batch))],
  ]);
  if (models.length) $("speed-table").insertAdjacentHTML("afterbegin", `<caption>batch ${num(models[0][2].inputs.batch)} users × prompt ${num(models[0][2].inputs.ctx)} tokens, ${num(models[0][2].inputs.gen)} generated; roofline bounds at full efficiency</caption>`);
  // the same roofline at 1, 2, 4 … users up to the largest batch that fits at the context
  const users = models.filter(([r]) => r.latency_by_batch.length);
  $("users-table").innerHTML = users.length ? `<caption>each row as llmcalc latency … --batch N prints it, up to the largest batch that fits at ${num(models[0][2].inputs.ctx)} tokens</caption>` +
    `<thead><tr><th scope="col">model</th><th scope="col">users (batch)</th><th scope="col">first token</th><th scope="col">time per output token</th><th scope="col">tokens/s each</th><th scope="col">tokens/s in all</th></tr></thead><tbody>` +
    users.flatMap(([r, i]) => r.latency_by_batch.map((u) => `<tr data-model="${i}" data-batch="${u.batch}"><th scope="row" style="color:${COLORS[i]}">${esc(r.label)}</th><td class="n">${num(u.batch)}</td>` +
      `<td class="n" data-key="ttft_s">${valued(u.ttft_s, secs(u.ttft_s))}</td><td class="n" data-key="tpot_s">${valued(u.tpot_s, secs(u.tpot_s))}</td>` +
      `<td class="n" data-key="tokens_per_s_per_request">${valued(u.tokens_per_s_per_request, rate(u.tokens_per_s_per_request))}</td><td class="n" data-key="tokens_per_s">${valued(u.tokens_per_s, rate(u.tokens_per_s))}</td></tr>`)).join("") + "</tbody>" : "";
  drawExpected(models);
  const rows = [["model", "figure", "value"]];
  for (const [r, , l] of models) {
    for (const k of ["ttft_s", "tpot_s", "e2e_s", "whole_s", "tokens_per_s_per_request", "tokens_per_s", "tokens_per_s_per_gpu", "throughput_per_gpu", "ridge_batch"]) rows.push([r.label, k, String(l[k])]);
    if (l.expected) for (const k of ["prefill_tokens_per_s", "decode_tokens_per_s", "throughput_tokens_per_s"]) rows.push([r.label, "expected/" + k, String(l.expected[k])]);
  }
  exportBar("speed", "latency", toJSON(models.map(([, , l]) => l)), csv(rows), models.map(([r]) => r.commands.latency));
}

// latency --engine E --backend B: the expected speed beside the bound, in the words the CLI prints
// (its title, rows and error column), then the fit's basis as `latency --json` gives it
function drawExpected(models) {
  const shown = models.filter(([r]) => r.latency_expected);
  const fig = (v, text) => `<span data-value="${v}">${esc(text)}</span>`;
  // the CLI's columns; with several models, each model's rows under its name
  $("expected-table").innerHTML = shown.length ? `<caption>${esc(shown[0][0].latency_expected.title)}</caption>` +
    `<thead><tr><th scope="col"><span class="sr">figure</span></th><th scope="col">expected</th><th scope="col">bound</th><th scope="col" class="why">error</th></tr></thead>` +
    shown.map(([r, i]) => "<tbody>" + (shown.length > 1 ? `<tr><th scope="colgroup" colspan="4" style="color:${COLORS[i]}">${esc(r.label)}</th></tr>` : "") +
      r.latency_expected.rows.map((x) => `<tr data-model="${i}" data-key="${esc(x.key)}"><th scope="row">${esc(x.label)}</th>` +
      `<td class="n" data-key="expected">${fig(x.expected, x.expected_text)}</td><td class="n" data-key="bound">${fig(x.bound, x.bound_text)}</td><td class="why" data-key="error">${esc(x.error)}</td></tr>`).join("") +
      // the CLI's rows after the figures, each where it applies, in its order (render.latency's
      // NOTE_KEYS: a stand-in's rows, a card assumed, the card's rows, these weights, a clock
      // assumed, a batch past the rows)
      r.latency_expected.note_keys.filter((k) => r.latency_expected[k]).map((k) => `<tr data-model="${i}" data-key="${k}"><th scope="row">${esc(r.latency_expected[k].label)}</th><td data-key="expected"></td><td data-key="bound"></td><td class="why" data-key="error">${esc(r.latency_expected[k].error)}</td></tr>`).join("") +
      "</tbody>").join("") : "";
  $("expected-basis-box").hidden = !shown.length;
  $("expected-basis").innerHTML = shown.map(([r, i]) => {
    const e = r.latency.expected, terms = r.latency_expected.terms;
    const stage = (s) => `<li data-model="${i}" data-stage="${s}">${s}: ${esc(e.basis[s].model)}; fitted on ${num(e.basis[s].rows)} ${s} rows and ${num(r.latency_expected.throughput_rows)} whole-request rows of ${esc(e.basis.rows)}: ` +
      e.basis[s].coefficients.map((c, j) => `${esc(terms[s][j])} = <span data-value="${c}" title="${c}">${Number(c.toPrecision(4))}</span>`).join(", ") + "</li>";
    return `<p style="color:${COLORS[i]}">${esc(r.label)} on ${esc(e.engine)} (${esc(e.backend)})</p><ul>${stage("prefill")}${stage("decode")}</ul>`;
  }).join("");
}

// fit --engine NAME at the context and GPUs chosen: each engine's budget per GPU, as its log shows it
function drawEngines() {
  const rows = [["model", "engine", "kv_cache_bytes", "kv_cache_tokens", "max_concurrency", "starts"]];
  let html = `<thead><tr><th scope="col">model</th><th scope="col">engine</th><th scope="col">memory CUDA reports</th><th scope="col">KV cache per GPU</th><th scope="col">KV cache tokens</th><th scope="col">requests at the context</th><th scope="col">starts</th></tr></thead><tbody>`;
  const found = [], commands = [];
  for (const [r, i] of ok()) for (const [key, name] of Object.entries(ENGINES)) {
    const e = r[key];
    if (!e) continue;
    found.push(e);
    if (r.commands[key]) commands.push(r.commands[key]);
    rows.push([r.label, e.engine, String(e.kv_cache_bytes), String(e.kv_cache_tokens), String(e.max_concurrency), String(e.starts)]);
    html += `<tr data-model="${i}" data-engine="${e.engine}"><th scope="row" style="color:${COLORS[i]}">${esc(r.label)}</th><td>${name} ${esc(e.engine_version)}</td>` +
      `<td class="n">${size(e.cuda_memory_bytes)}</td><td class="n" data-key="kv_cache_bytes">${valued(e.kv_cache_bytes, size(e.kv_cache_bytes))}</td>` +
      `<td class="n" data-key="kv_cache_tokens">${valued(e.kv_cache_tokens, num(e.kv_cache_tokens))}</td><td class="n" data-key="max_concurrency">${e.max_concurrency.toFixed(2)}×</td>` +
      `<td class="why">${e.starts ? "yes" : "no: " + esc(e.refusal)}</td></tr>`;
  }
  $("engines-table").innerHTML = found.length ? html + "</tbody>" : "";
  exportBar("engines", "engines", toJSON(found), csv(rows), commands);
}

// fit --offload at the context chosen: llama.cpp's -ngl split, as the CLI prints it
function drawOffload() {
  const models = ok().filter(([r]) => r.offload).map(([r, i]) => [r, i, r.offload]);
  const rows = [["model", "ngl", "gpu_layers", "layers", "output_on_gpu", "gpu_bytes", "cpu_bytes", "tokens_per_sec"]];
  let html = `<caption>as llmcalc fit --offload prints it: -ngl counts the output layer as one and places it first; token embeddings stay in system memory</caption>` +
    `<thead><tr><th scope="col">model</th><th scope="col">layers on the GPU (-ngl)</th><th scope="col">output layer on the GPU</th><th scope="col">on the GPU (weights + KV cache)</th><th scope="col">in system memory</th><th scope="col">tokens/s ≤</th></tr></thead><tbody>`;
  for (const [r, i, o] of models) {
    rows.push([r.label, String(o.ngl), String(o.gpu_layers), String(o.layers), String(o.output_on_gpu), String(o.gpu_bytes), String(o.cpu_bytes), String(o.tokens_per_sec)]);
    html += `<tr data-model="${i}"><th scope="row" style="color:${COLORS[i]}">${esc(r.label)}</th>` +
      `<td class="n" data-key="ngl">${num(o.gpu_layers)} of ${num(o.layers)} (-ngl ${num(o.ngl)})</td><td>${o.output_on_gpu ? "yes" : "no"}</td>` +
      `<td class="n" data-key="gpu_bytes">${size(o.gpu_bytes)}</td><td class="n" data-key="cpu_bytes">${size(o.cpu_bytes)}</td>` +
      `<td class="n" data-key="tokens_per_sec">${rate(o.tokens_per_sec)}</td></tr>`;
  }
  $("offload-table").innerHTML = models.length ? html + "</tbody>" : "";
  exportBar("offload", "offload", toJSON(models.map(([, , o]) => o)), csv(rows), models.map(([r]) => r.commands.offload).filter(Boolean));
}

function drawFinetune() {
  // the plan at the chosen micro-batch (train --method), else the one at the largest that fits
  const models = ok().filter(([r]) => r.finetune_fit).map(([r, i]) => [r, i, r.finetune || r.finetune_fit.plan]);
  const planned = models.filter(([, , p]) => p);
  const keys = [...new Set(planned.flatMap(([, , p]) => Object.keys(p.memory_per_gpu)))];
  const method = {lora: "LoRA", qlora: "QLoRA", full: "full fine-tune"}[state.settings.method] || state.settings.method;
  const plan = (f) => (p) => p ? f(p) : "—";
  figureTable("finetune-table", models.map(([r, i, p]) => [r, i, p]), [
    ["micro-batch", "micro_batch", plan((p) => valued(p.inputs.micro_batch, num(p.inputs.micro_batch) + (p.inputs.micro_batch === Number(state.settings.micro_batch) ? "" : " (the largest that fits)")))],
    ["trainable parameters", "trainable", plan((p) => valued(p.trainable, num(p.trainable)))],
    ...keys.map((k) => [`memory per GPU: ${esc(k)}`, "memory/" + esc(k), plan((p) => p.memory_per_gpu[k] === undefined ? "—" : valued(p.memory_per_gpu[k], size(p.memory_per_gpu[k])))]),
    ["memory per GPU", "memory_per_gpu_bytes", plan((p) => `<b>${valued(p.memory_per_gpu_bytes, size(p.memory_per_gpu_bytes))}</b>`)],
    ["usable per GPU", "usable_memory_bytes", plan((p) => valued(p.usable_memory_bytes, size(p.usable_memory_bytes)))],
    ["fits", "fits", plan((p) => p.fits ? "yes" : "no")],
  ].concat([[`largest micro-batch at context ${models.length ? num(models[0][0].memory.ctx) : ""}`, "max_micro_batch", () => ""]]));
  // the last row reads the fit, not the plan
  for (const [r, i] of models) {
    const cell = document.querySelector(`#finetune-table td[data-model="${i}"][data-key="max_micro_batch"]`);
    const mb = r.finetune_fit.micro_batch;
    if (cell) cell.innerHTML = mb === null ? "none" : valued(mb, num(mb));
  }
  if (models.length) $("finetune-table").insertAdjacentHTML("afterbegin", `<caption>${esc(method)} at context ${num(models[0][0].memory.ctx)} on ${num(models[0][0].fit.gpus)} × ${esc(models[0][0].fit.accelerator.name)}, the micro-batch from the training panel</caption>`);
  if (models.length && !models.every(([r]) => r.finetune) && !$("finetune-note").textContent)
    $("finetune-note").textContent = state.settings.method === "full" ? "full fine-tune: shown at the largest micro-batch that fits; the training panel plans a full run with its options" : "memory at the chosen micro-batch needs a FLOP rate for this card (FLOP/s per GPU): shown at the largest micro-batch that fits";
  const rows = [["model", "figure", "value"]];
  for (const [r, , p] of models) {
    if (p) { rows.push([r.label, "micro_batch", String(p.inputs.micro_batch)]); for (const [k, v] of Object.entries(p.memory_per_gpu)) rows.push([r.label, "memory_per_gpu/" + k, String(v)]); rows.push([r.label, "memory_per_gpu_bytes", String(p.memory_per_gpu_bytes)]); }
    rows.push([r.label, "max_micro_batch", String(r.finetune_fit.micro_batch)]);
  }
  exportBar("finetune", "finetune", toJSON(models.map(([r]) => ({plan: r.finetune, fit: r.finetune_fit}))), csv(rows),
    models.flatMap(([r]) => [r.commands.finetune, r.commands.finetune_fit].filter(Boolean)));
}

function drawTrain() {
  const models = ok().filter(([r]) => r.train).map(([r, i]) => [r, i, r.train]);
  const t0 = models.length ? models[0][2] : null;
  const par = t0 ? t0.parallelism : null;
  const how = t0 ? `ZeRO ${par.zero}, tp ${par.tp}, pp ${par.pp}, dp ${par.dp}, micro-batch ${t0.micro_batch}, recompute ${t0.recompute}${t0.flash_attention ? ", FlashAttention" : ""}` : "";
  figureTable("train-table", models, [
    ["tokens", "tokens", (t) => exactShort(t.tokens)],
    ["compute-optimal tokens (20 per parameter)", "compute_optimal_tokens", (t) => exactShort(t.compute_optimal_tokens)],
    ["training FLOPs (6·N·D + attention)", "training_flops", (t) => exactShort(t.training_flops)],
    ["6·N·D", "six_n_d", (t) => exactShort(t.six_n_d)],
    ["GPU-hours at " + (t0 ? Math.round(t0.mfu * 100) : 40) + "% MFU", "gpu_hours", (t) => valued(t.gpu_hours, num(Math.round(t.gpu_hours)))],
    ["GPU-days", "gpu_days", (t) => (t.gpu_hours / 24).toLocaleString("en-US", {maximumFractionDigits: 1})],
    ["wall-clock days on the GPUs", "wall_clock_days", (t) => valued(t.wall_clock_days, t.wall_clock_days.toLocaleString("en-US", {maximumFractionDigits: 1}))],
    [`memory per GPU (AdamW; ${how})`, "memory_per_gpu_bytes", (t) => `<b>${valued(t.memory_per_gpu_bytes, size(t.memory_per_gpu_bytes))}</b>`],
    ["usable per GPU", "usable_memory_bytes", (t) => valued(t.usable_memory_bytes, size(t.usable_memory_bytes))],
    ["fits", "fits", (t) => t.fits ? "yes" : "no"],
  ]);
  const csvRows = [["model", "figure", "value"]];
  for (const [r] of models) for (const k of ["tokens", "compute_optimal_tokens", "training_flops", "six_n_d", "gpu_hours", "wall_clock_days", "memory_per_gpu_bytes", "fits"]) csvRows.push([r.label, k, String(r.train[k])]);
  exportBar("train", "train", toJSON(models.map(([r]) => r.train)), csv(csvRows), models.map(([r]) => r.commands.train));
}

// ---- what fits this machine: `llmcalc fit --gpu NAME` without a model, sorted and filtered here ----
const FIT_ORDER = {
  params: (a, b) => cmpBig(b.params, a.params) || cmpName(a, b),
  name: (a, b) => cmpName(a, b),
  ctx: (a, b) => (Number(b.largest_ctx || 0) - Number(a.largest_ctx || 0)) || cmpName(a, b),
  speed: (a, b) => ((b.decode_tokens_per_sec || 0) - (a.decode_tokens_per_sec || 0)) || cmpName(a, b),
};
function cmpBig(a, b) { return BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0; }
function cmpName(a, b) { return a.model < b.model ? -1 : a.model > b.model ? 1 : 0; }
// the filter as `--match` takes it: a glob (fnmatch, either case); plain text matches anywhere
function globOf(text) { const t = text.trim(); return !t ? "" : /[*?[]/.test(t) ? t : `*${t}*`; }
function globRegExp(glob) {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*") out += ".*";
    else if (c === "?") out += ".";
    else if (c === "[") {
      const j = glob.indexOf("]", i + 2);
      if (j < 0) out += "\\[";
      else { let set = glob.slice(i + 1, j).replace(/\\/g, "\\\\"); if (set[0] === "!") set = "^" + set.slice(1); out += `[${set}]`; i = j; }
    } else out += c.replace(/[.+^${}()|\\\]]/g, "\\$&");
  }
  return new RegExp("^" + out + "$", "s");
}
async function runFits() {
  const mine = ++fitsSeq;
  const body = {gpu: state.settings.gpu || null, gpu_mem: state.settings.gpu_mem || null,
    gpu_bandwidth: state.settings.gpu_bandwidth || null, ctx: state.settings.ctx || null,
    gpus: /^\d+$/.test(String(state.settings.gpus).trim()) ? Number(state.settings.gpus) : String(state.settings.gpus)};
  let answer;
  try {
    const resp = await fetch("/api/fits", {method: "POST", headers: {"Content-Type": "application/json", ...AUTH}, body: JSON.stringify(body)});
    const data = parseExact(await resp.text());
    answer = resp.ok ? data : {error: data.error || `HTTP ${resp.status}`};
  } catch (e) { answer = {error: String(e)}; }
  if (mine !== fitsSeq) return;
  fits = answer;
  drawFits();
  if (!dirty) document.body.dataset.idle = "1";
}
function drawFits() {
  const table = $("fits-table"), box = $("fits-export");
  const [field, words] = fits && fits.error ? placeError(fits.error) : [null, ""];
  for (const k of ["ctx", "gpu", "gpu_mem", "gpu_bandwidth", "gpus"]) {
    $("err-" + k).textContent = k === field ? words : "";
    if (k === field) $(k).setAttribute("aria-invalid", "true"); else $(k).removeAttribute("aria-invalid");
  }
  if (!fits || fits.error) {
    table.innerHTML = ""; box.innerHTML = "";
    $("fits-summary").textContent = fits ? (field ? "" : "error: " + pageWords(fits.error)) : "…";
    return;
  }
  const glob = globOf(state.fits.match);
  const re = glob ? globRegExp(glob.toLowerCase()) : null;
  const rows = fits.models.filter((m) => (state.fits.all || m.format !== null) && (!re || re.test(m.model.toLowerCase())))
    .sort(FIT_ORDER[state.fits.sort]);
  const a = fits.accelerator;
  $("fits-head").textContent = `What fits ${fits.gpus > 1 ? fits.gpus + " × " : ""}${a.name} (${size(BigInt(a.memory_bytes) * BigInt(fits.gpus)).replace(".00", "")})`;
  const fitting = fits.models.filter((m) => m.format !== null).length;
  $("fits-summary").textContent = `${num(rows.length)} shown; ${num(fitting)} of ${num(fits.models.length)} bundled and locally cached models fit ${num(fits.min_ctx)} tokens at batch 1 in their own format or the first of fp16, q8_0, q4_k_m, q4_0 that fits` +
    (fits.skipped.length ? `; not planned: ${fits.skipped.join(", ")}` : "");
  const cols = [["model", "model", "name"], ["parameters", "params", "params"], ["format", "format", null],
    ["weights", "weights_bytes", null], ["largest context at batch 1", "largest_ctx", "ctx"], ["tokens/s ≤ (decode)", "decode_tokens_per_sec", "speed"]];
  const head = cols.map(([label, , sort]) => {
    if (!sort) return `<th scope="col">${label}</th>`;
    const on = state.fits.sort === sort;
    return `<th scope="col" ${on ? `aria-sort="${sort === "name" ? "ascending" : "descending"}"` : ""}><button type="button" class="sort" data-sort="${sort}">${label}${on ? (sort === "name" ? " ▲" : " ▼") : ""}</button></th>`;
  }).join("");
  table.innerHTML = `<thead><tr>${head}</tr></thead><tbody>` + rows.map((m) =>
    `<tr data-model="${esc(m.model)}"><th scope="row"><button type="button" class="open" data-model="${esc(m.model)}" aria-label="open ${esc(m.model)}">${esc(m.model)}</button></th>` +
    `<td class="n" data-key="params" data-value="${m.params}">${num(m.params)}</td>` +
    `<td data-key="format">${m.format === null ? "does not fit" : esc(m.format)}</td>` +
    `<td class="n" data-key="weights_bytes" data-value="${m.weights_bytes ?? ""}">${m.weights_bytes === null ? "—" : size(m.weights_bytes)}</td>` +
    `<td class="n" data-key="largest_ctx" data-value="${m.largest_ctx ?? ""}">${m.largest_ctx === null ? "—" : num(m.largest_ctx)}</td>` +
    `<td class="n" data-key="decode_tokens_per_sec" data-value="${m.decode_tokens_per_sec ?? ""}">${m.decode_tokens_per_sec === null ? "—" : rate(m.decode_tokens_per_sec)}</td></tr>`).join("") + "</tbody>";
  for (const b of table.querySelectorAll("button.sort")) b.onclick = () => {
    state.fits.sort = b.dataset.sort; writeURL(); drawFits();
    table.querySelector(`button.sort[data-sort="${b.dataset.sort}"]`).focus();
  };
  for (const b of table.querySelectorAll("button.open")) b.onclick = () => openModel(b.dataset.model);
  // the same list from the CLI
  const command = fits.command.split(" ").filter((w) => state.fits.all || w !== "--all");
  const at = command.indexOf("--json");
  const extra = [...(state.fits.sort !== "params" ? ["--sort", state.fits.sort] : []), ...(glob ? ["--match", shellQuote(glob)] : [])];
  command.splice(at, 0, ...extra);
  box.innerHTML = "";
  const dl = document.createElement("a");
  dl.textContent = "JSON"; dl.className = "button"; dl.download = "llmcalc-fits.json";
  dl.href = URL.createObjectURL(new Blob([toJSON({...fits, models: rows, command: undefined})], {type: "application/json"}));
  box.appendChild(dl);
  const code = document.createElement("code");
  code.className = "cli"; code.id = "fits-command"; code.textContent = command.join(" ");
  box.appendChild(code);
}
function shellQuote(w) { return /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'"'"'`)}'`; }
function openModel(name) {
  // a row of the what-fits list opens as the one model shown, in the format the list chose
  const row = fits && !fits.error ? fits.models.find((m) => m.model === name) : null;
  state.models = [{name, set: []}]; state.active = 0; results = []; stash = [];
  if (row && row.format) { state.settings.dtype = row.format; $("dtype").value = row.format; }
  showView("model");
  fillEditor(); update();
}
function showView(view) {
  state.view = view;
  const fitsView = view === "fits";
  $("fits").hidden = !fitsView;
  for (const id of ["verdict", "models"]) $(id).hidden = fitsView;
  document.querySelector("main").hidden = fitsView;
  // what fits reads only the hardware and the least context; the rest of the settings stand by
  for (const k of SETTINGS) if ($(k).closest("#settings")) $(k).closest("label").hidden = fitsView && !["ctx", "gpu", "gpu_mem", "gpu_bandwidth", "gpus"].includes(k);
  $("ctx").previousSibling.textContent = fitsView ? "least context " : "context ";
  $("view-model").setAttribute("aria-pressed", String(!fitsView));
  $("view-fits").setAttribute("aria-pressed", String(fitsView));
  $("fits-match").value = state.fits.match;
  $("fits-all").checked = state.fits.all;
  writeURL();
}

// ---- wiring ----
function fillSelect(id, options) {
  $(id).innerHTML = options.map(([v, l]) => `<option value="${esc(v)}">${esc(l)}</option>`).join("");
}
async function main() {
  const resp = await fetch("/api/catalog", {headers: AUTH});
  catalog = parseExact(await resp.text());
  if (!resp.ok) {  // e.g. a server that wants its token: say so, and draw nothing
    setEditor(true);
    $("error").textContent = "error: " + (catalog.error || `HTTP ${resp.status}`);
    $("error").hidden = false;
    return;
  }
  $("model-names").innerHTML = [...catalog.models, ...catalog.model_types].map((n) => `<option value="${esc(n)}">`).join("");
  fillSelect("dtype", [["", "the checkpoint's own"], ...catalog.weight_formats.map((d) => [d, d])]);
  fillSelect("kv_dtype", [["", "as the weights"], ...catalog.dtypes.map((d) => [d, d])]);
  // latency --engine/--backend: "none" is the bound alone; a blank backend is the card's own
  fillSelect("engine", [...catalog.engines.map((e) => [e, e]), ["none", "none (the bound alone)"]]);
  fillSelect("backend", [["", "the card's (Apple: metal, else cuda)"], ...catalog.backends.map((b) => [b, b])]);
  const kinds = {datacenter: "data centre", workstation: "workstation", consumer: "consumer", apple: "Apple silicon (GPU share of unified memory)"};
  $("gpu").innerHTML = Object.entries(kinds).map(([kind, title]) => `<optgroup label="${title}">` +
    catalog.gpus.filter((g) => g.kind === kind).map((g) => `<option value="${esc(g.key)}">${esc(g.name)} (${size(g.memory_bytes).replace(".00", "")})</option>`).join("") + "</optgroup>").join("") +
    `<option value="">custom (memory, FLOP/s, bandwidth)</option>`;
  fillSelect("start", Object.keys(catalog.scratch).map((k) => [k, `${k} defaults`]));
  state = readURL();
  for (const k of SETTINGS) {
    setField(k, state.settings[k]);
    if ($(k).tagName === "SELECT" && $(k).value !== String(state.settings[k] ?? "")) {
      linkProblems.push(`${LABELS[k]}: ${JSON.stringify(state.settings[k])} is not one of the choices`);
      state.settings[k] = catalog.defaults[k] ?? ""; setField(k, state.settings[k]);
    }
  }
  $("link-problems").hidden = !linkProblems.length;
  $("link-problems").textContent = linkProblems.length ? "This link held what the page could not read: " + linkProblems.join("; ") : "";
  fillEditor();
  drawTabs();
  $("add-model").onclick = addModel;
  $("edit-model").onclick = () => setEditor($("editor").hidden);
  $("view-model").onclick = () => { showView("model"); update(); };
  $("view-fits").onclick = () => { showView("fits"); update(); };
  $("fits-match").addEventListener("input", () => { state.fits.match = $("fits-match").value; writeURL(); if (fits) drawFits(); });
  $("fits-all").addEventListener("change", () => { state.fits.all = $("fits-all").checked; writeURL(); if (fits) drawFits(); });
  showView(state.view);
  $("remove-model").onclick = () => removeModel(state.active);
  for (const k of SETTINGS) $(k).addEventListener("input", () => { state.settings[k] = fieldValue(k); update(); });
  for (const k of SETTINGS) $(k).addEventListener("change", () => { state.settings[k] = fieldValue(k); update(); });
  for (const el of document.querySelectorAll("input[name=mode]")) el.addEventListener("change", () => switchMode(el.value));
  for (const el of document.querySelectorAll("#editor input:not([name=mode]), #editor textarea, #editor select:not(#start)"))
    el.addEventListener("input", () => { readEditor(el.id); update(); });
  $("start").addEventListener("change", () => {
    const m = state.models[state.active];
    m.scratch = scratchStart($("start").value); m.from = $("start").value;
    fillEditor(); update();
  });
  // a config.json / YAML dropped anywhere on the page becomes the active model's pasted config
  document.addEventListener("dragover", (e) => e.preventDefault());
  document.addEventListener("drop", async (e) => {
    e.preventDefault();
    const file = e.dataTransfer && e.dataTransfer.files[0];
    if (!file) return;
    const text = await file.text();
    state.models[state.active] = {text, format: /\.ya?ml$/i.test(file.name) ? "yaml" : "json", set: []};
    fillEditor(); update();
  });
  let width = innerWidth;
  addEventListener("resize", () => { if (innerWidth !== width) { width = innerWidth; render(); } });
  run();
}
main().catch((e) => {  // never a blank page: say what went wrong
  setEditor(true);
  $("error").textContent = "error: the page could not start: " + e;
  $("error").hidden = false;
});
