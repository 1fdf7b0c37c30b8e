// NumericJev page script: sortable tables and the job viewer. Plain JavaScript, no library.
// Every text from a log is put into the page with textContent, never as markup.
"use strict";
(function () {
  const meta = JSON.parse(document.getElementById("meta").textContent);
  const PAGE = 100; // rows of the job list rendered at a time
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const SVGNS = "http://www.w3.org/2000/svg";
  const svgEl = (tag, attrs) => {
    const node = document.createElementNS(SVGNS, tag);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    return node;
  };
  const label = (kind, name) => (meta.labels[kind] && meta.labels[kind][name]) || name;

  // ---- sortable tables -----------------------------------------------------------------
  const sortKey = (text) => {
    const m = /^\s*([+\u2212-]?\d[\d,]*(?:\.\d+)?)/.exec(text);
    return m ? parseFloat(m[1].replace(/,/g, "").replace("\u2212", "-")) : null;
  };
  document.querySelectorAll("table.sortable").forEach((table) => {
    table.querySelectorAll("thead th").forEach((th, col) => {
      const sort = () => {
        const dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
        table.querySelectorAll("thead th").forEach((h) => h.setAttribute("aria-sort", "none"));
        th.setAttribute("aria-sort", dir);
        const body = table.tBodies[0];
        const rows = Array.from(body.rows);
        const sign = dir === "ascending" ? 1 : -1;
        rows.sort((a, b) => {
          const ta = a.cells[col].textContent, tb = b.cells[col].textContent;
          const na = sortKey(ta), nb = sortKey(tb);
          if (na !== null && nb !== null) return sign * (na - nb);
          if (na !== null) return -1; // numbers before "n/a", whatever the direction
          if (nb !== null) return 1;
          return sign * ta.localeCompare(tb);
        });
        rows.forEach((r) => body.appendChild(r));
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", (e) => { if (e.key === "Enter") sort(); });
    });
  });

  // ---- job data --------------------------------------------------------------------------
  const blocks = Array.from(document.querySelectorAll("script.rounds"));
  if (!blocks.length) return;

  function base64Bytes(text) {
    const binary = atob(text.trim());
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }
  const ARRAYS = { u8: Uint8Array, i16: Int16Array, u16: Uint16Array, u32: Uint32Array, f32: Float32Array };

  async function decode(block) {
    const stream = new Blob([base64Bytes(block.textContent)]).stream()
      .pipeThrough(new DecompressionStream("gzip"));
    const buffer = await new Response(stream).arrayBuffer();
    const view = new DataView(buffer);
    const magic = String.fromCharCode(...new Uint8Array(buffer, 0, 4));
    if (magic !== "NJV1") throw new Error("unknown job data format " + magic);
    const headerLength = view.getUint32(4, true);
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, headerLength)));
    const base = 8 + headerLength + ((8 - ((8 + headerLength) % 8)) % 8);
    const cols = {};
    for (const [name, dtype, offset, length] of header.columns) {
      cols[name] = new ARRAYS[dtype](buffer, base + offset, length);
    }
    const d = { key: block.dataset.key, h: header, c: cols, s: header.strings };
    d.failed = new Map(header.failed.map(([job, round, errors]) => [job * 65536 + round, errors]));
    return d;
  }

  const NONE = 0xffffffff;
  const str = (d, id) => (id === NONE ? null : d.s[id]);
  let sets = [];

  function jobIndex(d) {
    if (!d.jobs) {
      d.jobs = new Map();
      for (let j = 0; j < d.c.job_id.length; j++) d.jobs.set(d.s[d.c.job_id[j]], j);
      d.outs = new Map();
      for (let o = 0; o < d.c.out_job.length; o++) d.outs.set(d.c.out_job[o] * 256 + d.c.out_decoder[o], o);
    }
  }
  function findOutput(d, job, decoder) {
    jobIndex(d);
    const j = d.jobs.get(job), code = d.h.decoders.indexOf(decoder);
    if (j === undefined || code < 0) return -1;
    const o = d.outs.get(j * 256 + code);
    return o === undefined ? -1 : o;
  }

  // ---- the list and its filter -----------------------------------------------------------
  const $ = (id) => document.getElementById(id);
  const selects = { decoder: $("f-decoder"), domain: $("f-domain"), condition: $("f-condition"), order: $("f-order") };
  let matches = new Uint32Array(0), shown = 0, selected = -1;

  function fillSelects(d) {
    const add = (select, names, kind) => names.forEach((n) => {
      const o = el("option", null, kind ? label(kind, n) : n); o.value = n; select.appendChild(o);
    });
    add(selects.decoder, d.h.decoders, "decoder");
    add(selects.domain, d.h.domains, "domain");
    add(selects.condition, d.h.conditions, "condition");
    add(selects.order, d.h.orders, null);
  }

  function applyFilter() {
    const d = sets[0], c = d.c, n = c.out_job.length;
    const tokens = $("filter").value.toLowerCase().split(/\s+/).filter(Boolean);
    const code = (names, select) => (select.value ? names.indexOf(select.value) : -1);
    const fd = code(d.h.decoders, selects.decoder), fm = code(d.h.domains, selects.domain);
    const fc = code(d.h.conditions, selects.condition), fo = code(d.h.orders, selects.order);
    const status = $("f-status").value;
    // Each word must match the job (its id, case or family) or the output's decoder.
    if (!d.jobTexts) {
      d.jobTexts = Array.from(c.job_id, (id, j) => (d.s[id] + " " + d.s[c.job_case[j]] + " " + d.s[c.job_family[j]]).toLowerCase());
    }
    const wordHits = tokens.map((t) => ({
      jobs: Uint8Array.from(d.jobTexts, (text) => (text.includes(t) ? 1 : 0)),
      decoders: d.h.decoders.map((name) => name.toLowerCase().includes(t) || label("decoder", name).toLowerCase().includes(t)),
    }));
    const out = new Uint32Array(n);
    let k = 0;
    for (let o = 0; o < n; o++) {
      const j = c.out_job[o], dec = c.out_decoder[o];
      if (fd >= 0 && dec !== fd) continue;
      if (fm >= 0 && c.job_domain[j] !== fm) continue;
      if (fc >= 0 && c.job_condition[j] !== fc) continue;
      if (fo >= 0 && c.job_order[j] !== fo) continue;
      if (status && (c.out_ok[o] === 1) !== (status === "ok")) continue;
      let all = true;
      for (let w = 0; w < wordHits.length && all; w++) all = wordHits[w].jobs[j] === 1 || wordHits[w].decoders[dec];
      if (!all) continue;
      out[k++] = o;
    }
    matches = out.subarray(0, k);
    if ($("f-sort").value === "ape") {
      const ape = c.out_ape;
      matches = Uint32Array.from(matches).sort((a, b) => {
        const x = ape[a], y = ape[b];
        if (Number.isNaN(x)) return Number.isNaN(y) ? a - b : 1;
        if (Number.isNaN(y)) return -1;
        return y - x || a - b;
      });
    }
    const body = $("job-list").tBodies[0];
    body.textContent = "";
    shown = 0;
    showMore();
  }

  function fmt(x, digits) { return Number.isNaN(x) ? "n/a" : x.toFixed(digits); }

  function showMore() {
    const d = sets[0], c = d.c, body = $("job-list").tBodies[0];
    const end = Math.min(matches.length, shown + PAGE);
    for (let i = shown; i < end; i++) {
      const o = matches[i], j = c.out_job[o];
      const tr = el("tr");
      tr.dataset.output = o;
      const cells = [
        d.s[c.job_id[j]], label("decoder", d.h.decoders[c.out_decoder[o]]),
        label("domain", d.h.domains[c.job_domain[j]]), label("condition", d.h.conditions[c.job_condition[j]]),
        d.h.orders[c.job_order[j]], str(d, c.out_target[o]), str(d, c.out_value[o]) ?? "—",
        fmt(c.out_ape[o], 2), c.out_ok[o] ? "ok" : "failed",
      ];
      cells.forEach((text, col) => tr.appendChild(el("td", col >= 5 && col <= 7 ? "num" : null, text)));
      if (o === selected) tr.classList.add("selected");
      tr.tabIndex = 0;
      tr.addEventListener("click", () => openOutput(d.s[c.job_id[j]], d.h.decoders[c.out_decoder[o]], false));
      tr.addEventListener("keydown", (e) => { if (e.key === "Enter") tr.click(); });
      body.appendChild(tr);
    }
    shown = end;
    $("more").hidden = shown >= matches.length;
    $("job-count").textContent = `${matches.length.toLocaleString("en")} of ${c.out_job.length.toLocaleString("en")} outputs match` +
      (matches.length > shown ? ` · showing the first ${shown.toLocaleString("en")}` : "");
  }

  // ---- one output, round by round --------------------------------------------------------
  const INTERVAL = /^\s*(-?[\d.]+(?:[eE][+-]?\d+)?)\s*<=\s*x\s*<\s*(-?[\d.]+(?:[eE][+-]?\d+)?)\s*$/;

  function rounds(d, o) {
    const c = d.c, first = c.out_q_start[o], last = c.out_q_start[o + 1];
    let p = c.out_p_start[o];
    const byRound = new Map();
    for (let q = first; q < last; q++) {
      const spec = d.h.specs[c.q_spec[q]];
      const n = spec[2].length;
      const probs = Array.from(c.p.subarray(p, p + n), (v) => (v === 65535 ? null : v / d.h.probability_scale));
      p += n;
      const r = c.q_round[q];
      if (!byRound.has(r)) byRound.set(r, []);
      byRound.get(r).push({ spec, probs, step: d.s[c.q_step[q]], state: d.s[c.q_state[q]],
        choice: c.q_choice[q], target: c.q_target[q], attempt: c.q_attempt[q] });
    }
    return byRound;
  }

  function traceSteps(d, o) {
    const c = d.c, steps = new Map();
    for (let i = c.out_trace_start[o]; i < c.out_trace_start[o] + c.out_trace_len[o]; i++) {
      let step;
      try { step = JSON.parse(d.s[c.trace_step[i]]); } catch (e) { step = null; }
      if (step && typeof step === "object") {
        const r = step.round ?? 0;
        if (!steps.has(r)) steps.set(r, []);
        steps.get(r).push(step);
      }
    }
    return steps;
  }

  function stateText(state) {
    try {
      const v = JSON.parse(state);
      if (v && typeof v === "object") return Object.entries(v).map(([k, x]) => `${k}: ${typeof x === "string" ? x : JSON.stringify(x)}`).join("\n");
    } catch (e) { /* not JSON: shown as is */ }
    return state;
  }

  // Paper Figure 2 for one question: the options laid out on the number line they divide
  // (interval options only), probability as fill height, chosen and target marked.
  function intervalStrip(q) {
    const parts = q.spec[3].map((text, i) => {
      const m = INTERVAL.exec(text);
      return m ? { lo: parseFloat(m[1]), hi: parseFloat(m[2]), i } : null;
    });
    if (parts.some((x) => x === null) || parts.length < 2) return null;
    parts.sort((a, b) => a.lo - b.lo);
    const W = 720, H = 64, left = 4, width = W - 8, n = parts.length;
    const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
    svg.appendChild(svgEl("title", {})).textContent = "options on the number line; fill: probability; blue: chosen; orange: target";
    parts.forEach((part, slot) => {
      const x = left + (width * slot) / n, w = width / n;
      const prob = q.probs[part.i];
      svg.appendChild(svgEl("rect", { x, y: 6, width: w, height: 34, fill: "#ffffff", stroke: "#9aa5b1" }));
      if (prob !== null) svg.appendChild(svgEl("rect", { x: x + 1, y: 40 - 33 * prob, width: Math.max(w - 2, 0.5), height: 33 * prob, fill: "#9ecae1" }));
      if (part.i === q.target) svg.appendChild(svgEl("rect", { x: x + 1.5, y: 7.5, width: Math.max(w - 3, 0.5), height: 31, fill: "none", stroke: "#d55e00", "stroke-width": 3, "stroke-dasharray": "5 3" }));
      if (part.i === q.choice) svg.appendChild(svgEl("rect", { x, y: 6, width: w, height: 34, fill: "none", stroke: "#0072b2", "stroke-width": 3 }));
      if (w >= 46) {
        const t = svgEl("text", { x: x + w / 2, y: 54, "text-anchor": "middle", "font-size": 11, fill: "#1d2733" });
        t.textContent = `[${q.spec[3][part.i].split("<=")[0].trim()}, ${q.spec[3][part.i].split("<").pop().trim()})`;
        svg.appendChild(t);
      }
    });
    const div = el("div", "path");
    div.appendChild(svg);
    return div;
  }

  function optionsTable(q) {
    const table = el("table", "options");
    const head = el("tr");
    ["#", "label", "option as sent", "probability", ""].forEach((h) => head.appendChild(el("th", null, h)));
    table.appendChild(el("thead")).appendChild(head);
    const body = el("tbody");
    q.spec[2].forEach((lab, i) => {
      const tr = el("tr", [i === q.choice ? "chosen" : "", i === q.target ? "target" : ""].join(" ").trim());
      tr.appendChild(el("td", "num", i + 1));
      tr.appendChild(el("td", null, lab));
      tr.appendChild(el("td", null, q.spec[3][i]));
      const p = q.probs[i], cell = el("td", "num");
      if (p === null) cell.textContent = "—";
      else { const bar = el("span", "bar"); bar.style.width = `${Math.round(p * 80)}px`; cell.append(bar, p.toFixed(4)); }
      tr.appendChild(cell);
      const tags = el("td");
      if (i === q.choice) tags.appendChild(el("span", "tag chosen", "chosen"));
      if (i === q.target) tags.appendChild(el("span", "tag target", "target"));
      tr.appendChild(tags);
      body.appendChild(tr);
    });
    table.appendChild(body);
    // Direct choice sends up to 255 options: fold the long list, keep chosen/target visible.
    if (q.spec[2].length > 24) {
      const details = el("details");
      details.appendChild(el("summary", null, `all ${q.spec[2].length} options`));
      details.appendChild(table);
      const short = el("table", "options");
      const sb = el("tbody");
      q.spec[2].forEach((lab, i) => {
        if (i !== q.choice && i !== q.target) return;
        const tr = el("tr", i === q.choice ? "chosen" : "target");
        tr.append(el("td", "num", i + 1), el("td", null, lab), el("td", null, q.spec[3][i]),
          el("td", "num", q.probs[i] === null ? "—" : q.probs[i].toFixed(4)));
        const tags = el("td");
        if (i === q.choice) tags.appendChild(el("span", "tag chosen", "chosen"));
        if (i === q.target) tags.appendChild(el("span", "tag target", "target"));
        tr.appendChild(tags);
        sb.appendChild(tr);
      });
      short.appendChild(sb);
      const wrap = el("div");
      wrap.append(short, details);
      return wrap;
    }
    return table;
  }

  function describeStep(step) {
    const parts = [];
    if (step.interval) parts.push(`interval [${step.interval[0]}, ${step.interval[1]})`);
    for (const [k, v] of Object.entries(step)) {
      if (["round", "interval", "parent", "k", "choice"].includes(k)) continue;
      parts.push(`${k} ${typeof v === "string" ? v : JSON.stringify(v)}`);
    }
    return parts.join(" · ");
  }

  function panel(d, o) {
    const c = d.c, j = c.out_job[o], div = el("div", "side");
    const decoder = d.h.decoders[c.out_decoder[o]];
    const title = el("h3", null, `${meta.runs.length > 1 ? d.key + " · " : ""}${d.s[c.job_id[j]]} · ${label("decoder", decoder)}`);
    const run = meta.runs.find((r) => r.key === d.key);
    if (run && run.oracle) title.appendChild(el("span", "tag simulated", "ORACLE (exact labels)"));
    else if (run && run.simulated) title.appendChild(el("span", "tag simulated", "SIMULATED model"));
    div.appendChild(title);
    const kv = el("p", "kv");
    kv.textContent = `case ${d.s[c.job_case[j]]} · family ${d.s[c.job_family[j]]} · domain ${label("domain", d.h.domains[c.job_domain[j]])} · ` +
      `condition ${label("condition", d.h.conditions[c.job_condition[j]])} · order ${d.h.orders[c.job_order[j]]} · repeat ${c.job_repeat[j]} · ${d.s[c.out_grid[o]]}`;
    div.appendChild(kv);
    const verdict = el("p", "verdict");
    const value = str(d, c.out_value[o]), ape = c.out_ape[o];
    verdict.append("decoded ", el("b", ape <= 5 ? "good" : "bad", value ?? "no value (failed)"), " against target ",
      el("b", null, str(d, c.out_target[o])), ` · APE ${fmt(ape, 2)}%` +
      (str(d, c.out_cell[o]) ? ` · cell ${str(d, c.out_cell[o])}` : "") + ` · ${c.out_rounds[o]} round(s) · ${c.out_ok[o] ? "ok" : "failed"}`);
    div.appendChild(verdict);
    const byRound = rounds(d, o), steps = traceSteps(d, o);
    if (!byRound.size) div.appendChild(el("p", "note", d.h.requests_present ? "No request of this output is in requests.jsonl (imported or replayed)." : "This run has no requests.jsonl."));
    let lastState = null;
    const allRounds = Array.from(new Set([...byRound.keys(), ...steps.keys()])).sort((a, b) => a - b);
    for (const r of allRounds) {
      const box = el("div", "round");
      box.appendChild(el("h4", null, `Round ${r}`));
      const failed = d.failed.get(j * 65536 + r);
      if (failed) box.appendChild(el("p", "note", "failed attempts before the answer: " + failed.map(([a, k, m]) => `#${a} ${k}${m ? " (" + m + ")" : ""}`).join("; ")));
      for (const q of byRound.get(r) || []) {
        if (q.state !== lastState) { box.appendChild(el("pre", "state", stateText(q.state))); lastState = q.state; }
        box.appendChild(el("p", "question", `step ${q.step} · attempt ${q.attempt} · ${q.spec[1]}`));
        const strip = intervalStrip(q);
        if (strip) box.appendChild(strip);
        box.appendChild(optionsTable(q));
        if (q.target < 0) box.appendChild(el("p", "note", "target: no option holds it (outside this interval) or no rule marks it for this decoder"));
      }
      for (const step of steps.get(r) || []) {
        const line = describeStep(step);
        if (line) box.appendChild(el("p", "led", "led to: " + line));
      }
      div.appendChild(box);
    }
    return div;
  }

  function openOutput(job, decoder, scroll) {
    const detail = $("job-detail");
    detail.textContent = "";
    const grid = el("div", "sides");
    let any = false;
    for (const d of sets) {
      const o = findOutput(d, job, decoder);
      if (d === sets[0]) selected = o;
      if (o < 0) { const miss = el("div", "side"); miss.appendChild(el("p", "note", `${d.key}: no ${decoder} output for job ${job}`)); grid.appendChild(miss); continue; }
      grid.appendChild(panel(d, o));
      any = true;
    }
    detail.appendChild(grid);
    document.querySelectorAll("#job-list tr.selected").forEach((tr) => tr.classList.remove("selected"));
    document.querySelectorAll(`#job-list tr[data-output="${selected}"]`).forEach((tr) => tr.classList.add("selected"));
    const hash = "#job=" + encodeURIComponent(job) + "&decoder=" + encodeURIComponent(decoder);
    if (location.hash !== hash) history.replaceState(null, "", hash);
    if (scroll && any) detail.scrollIntoView();
  }

  function openFromHash() {
    const m = /^#job=([^&]*)&decoder=(.*)$/.exec(location.hash);
    if (m) openOutput(decodeURIComponent(m[1]), decodeURIComponent(m[2]), true);
  }

  document.querySelectorAll("tr.link").forEach((tr) => {
    const open = () => openOutput(tr.dataset.job, tr.dataset.decoder, true);
    tr.addEventListener("click", open);
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter") open(); });
  });

  const started = performance.now();
  Promise.all(blocks.map(decode)).then((decoded) => {
    sets = decoded;
    fillSelects(sets[0]);
    let timer = null;
    $("filter").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(applyFilter, 150); });
    Object.values(selects).concat([$("f-status"), $("f-sort")]).forEach((s) => s.addEventListener("change", applyFilter));
    $("more").addEventListener("click", showMore);
    window.addEventListener("hashchange", openFromHash);
    applyFilter();
    openFromHash();
    document.body.dataset.ready = String(Math.round(performance.now() - started));
  }).catch((err) => {
    $("job-count").textContent = "job data could not be read: " + err;
    document.body.dataset.ready = "error";
  });
})();
