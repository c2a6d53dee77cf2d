"use strict";
// dpcloak dashboard: running totals of a continual deployment's count sensors (GET /api/v1/counters...).
// Asked on demand (the form), never by the dashboard's poll: each answer decodes whole counter streams.
(function () {
  const TOKEN_KEY = "dpcloak-analyst-token";
  const Z95 = 1.959963984540054;
  const el = (id) => document.getElementById(id);

  async function api(path) {
    const token = sessionStorage.getItem(TOKEN_KEY) || "";
    const resp = await fetch(path, { headers: { Authorization: "Bearer " + token }, cache: "no-store" });
    const body = await resp.json().catch(() => ({}));
    if (!resp.ok) throw new Error(resp.status + " " + (body.message || resp.statusText));
    return body;
  }

  const fmt = (x) => Number(x.toPrecision(4)).toString();
  const pm = (t) => fmt(t.total) + " ± " + fmt(Z95 * t.std);
  const when = (t) => new Date(t * 1000).toLocaleString();

  function localInput(t) {  // a Unix time as a datetime-local value
    const d = new Date(t * 1000);
    return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
  }

  function drawChart(points) {
    const canvas = el("counters-chart");
    const width = canvas.parentElement.clientWidth, height = 140, ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio);
    canvas.style.width = width + "px"; canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    canvas.hidden = points.length === 0;
    if (points.length === 0) return;
    const lo = Math.min(0, ...points.map((p) => p.interval_95[0]));
    const hi = Math.max(1, ...points.map((p) => p.interval_95[1]));
    const pad = 28, n = points.length;
    const x = (i) => pad + (n === 1 ? 0 : i * (width - pad - 8) / (n - 1));
    const y = (v) => height - 16 - (v - lo) / (hi - lo) * (height - 26);
    ctx.fillStyle = "#c9d7f0";  // the 95 % band of the running total
    ctx.beginPath();
    points.forEach((p, i) => (i ? ctx.lineTo(x(i), y(p.interval_95[1])) : ctx.moveTo(x(i), y(p.interval_95[1]))));
    for (let i = n - 1; i >= 0; i--) ctx.lineTo(x(i), y(points[i].interval_95[0]));
    ctx.closePath(); ctx.fill();
    ctx.strokeStyle = "#1f4e9c"; ctx.lineWidth = 2;
    ctx.beginPath();
    points.forEach((p, i) => (i ? ctx.lineTo(x(i), y(p.total)) : ctx.moveTo(x(i), y(p.total))));
    ctx.stroke();
    ctx.fillStyle = "#5b6475"; ctx.font = "11px system-ui, sans-serif";
    ctx.fillText(fmt(hi), 2, 12); ctx.fillText(fmt(lo), 2, height - 18);
    ctx.fillText("window " + points[0].window, pad, height - 2);
    const last = "window " + points[n - 1].window;
    ctx.fillText(last, width - 8 - ctx.measureText(last).width, height - 2);
  }

  async function show(ev) {
    if (ev) ev.preventDefault();
    const of = el("counters-of").value, since = new Date(el("counters-since").value).getTime() / 1000;
    const period = el("counters-period").value;
    const path = (of.startsWith("area:") ? "/api/v1/counters/areas/" + encodeURIComponent(of.slice(5))
                                         : "/api/v1/counters/sensors/" + of.slice(7)) + "/totals?since=" + since +
      (period ? "&period=" + period : "");
    const out = el("counters-total");
    try {
      const r = await api(path);
      out.dataset.total = String(r.total);
      out.dataset.std = String(r.std);
      out.textContent = pm(r) + " " + r.unit + " (95 %) past " + (of.startsWith("area:") ? "area " + of.slice(5)
        : "counter " + of.slice(7)) + " since " + when(r.since) + " (windows " + r.first_window + "–" +
        r.last_window + (r.decoded_through_window !== null && r.decoded_through_window < r.last_window
          ? "; decoded through window " + r.decoded_through_window + " only: a report is missing after it" : "") + ")";
      const body = el("counters-periods").querySelector("tbody");
      body.replaceChildren(...(r.periods || []).map((p) => {
        const tr = document.createElement("tr");
        [when(p.since), when(p.until), p.positions ? pm(p) : "no release"].forEach((t) => {
          const td = document.createElement("td"); td.textContent = t; tr.append(td);
        });
        return tr;
      }));
      el("counters-periods").hidden = !(r.periods && r.periods.length);
      drawChart(r.running);
    } catch (err) {
      out.textContent = "running totals: " + err.message;
    }
  }

  async function setup() {
    let info;
    try { info = await api("/api/v1/counters"); } catch (err) { return; }  // no token yet: the form retries
    if (!info.continual) return;
    const panel = el("counters-panel");
    if (!panel.hidden) return;
    panel.hidden = false;
    el("counters-note").textContent = "Each count sensor releases its running total with correlated noise " +
      "(matrix factorisation): any running total's error is at most " + fmt(info.worst_std) + " (1 σ) over the " +
      info.continual.horizon + " windows, against " + fmt(info.independent_worst_std) + " with independent noise " +
      "per window. Totals between two times carry the factorisation's error bar (95 %).";
    const select = el("counters-of");
    const areas = Object.keys(info.areas).map((a) => ["area:" + a, "area " + a + " (sensors " +
                                                      info.areas[a].join(", ") + ")"]);
    const sensors = Array.from({ length: info.n_sensors }, (_, j) => ["sensor:" + j, "counter " + j]);
    select.replaceChildren(...areas.concat(sensors).map(([value, text]) => {
      const o = document.createElement("option"); o.value = value; o.textContent = text; return o;
    }));
    el("counters-since").value = localInput(Date.now() / 1000 - 86400);
    await show(null);
  }

  el("counters-form").addEventListener("submit", show);
  el("token-form").addEventListener("submit", () => { window.setTimeout(setup, 300); });
  setup();
})();
