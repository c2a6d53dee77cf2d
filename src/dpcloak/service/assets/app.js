"use strict";
// dpcloak dashboard: plain JavaScript, no external assets, no inline script (the page's CSP forbids it).
// The analyst token is pasted into the page (or handed over once in the URL fragment, #token=..., which
// the browser never sends to the server); it is kept in this tab's sessionStorage and sent in a header.
(function () {
  const TOKEN_KEY = "dpcloak-analyst-token";
  const POLL_MS = 2000;
  const PAGE = 120;
  const COUNT_EVERY = 30;  // polls between two checks of the number of closed windows (a minute)  // windows per listing request (summaries without maps: well under 100 kB)
  const state = { deployment: null, windows: [], summaries: new Map(), current: null, extent: null, scaleMax: 0,
                  timer: null, cursor: null, counted: 0, earlier: false, polls: 0, latest: null };
  const el = (id) => document.getElementById(id);
  const slider = el("window-slider");
  const follow = el("follow");

  function takeToken() {
    const fromUrl = new URLSearchParams(window.location.hash.slice(1)).get("token");
    if (fromUrl) {
      sessionStorage.setItem(TOKEN_KEY, fromUrl);
      history.replaceState(null, "", window.location.pathname + window.location.search);  // out of the history
    }
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }
  let token = takeToken();

  class Unauthorized extends Error {}

  async function api(path) {
    const resp = await fetch(path, { headers: { Authorization: "Bearer " + token }, cache: "no-store" });
    if (resp.status === 401) throw new Unauthorized(path);
    if (!resp.ok) {
      const body = await resp.json().catch(() => ({}));
      throw new Error(path + ": " + resp.status + " " + (body.message || resp.statusText));
    }
    return resp.json();
  }

  function askForToken(wrong) {
    if (state.timer !== null) { window.clearTimeout(state.timer); state.timer = null; }
    el("dashboard").hidden = true;
    el("token-panel").hidden = false;
    el("deployment-line").textContent = wrong ? "analyst token not accepted" : "analyst token needed";
    el("token-title").textContent = wrong ? "This token is not valid for this deployment"
                                          : "This dashboard needs the analyst token";
    if (wrong) {
      el("token-reason").textContent = "The collector refused the token you gave: this token is not valid for this " +
        "deployment. Check that it is the content of analyst.token in the directory of the deployment this collector " +
        "serves (dpcloak serve prints its path), without spaces, and paste it again.";
      sessionStorage.removeItem(TOKEN_KEY);
    }
    el("token-input").value = "";
    el("token-input").focus();
  }

  el("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const pasted = el("token-input").value.trim();
    if (!pasted) return;
    token = pasted;
    sessionStorage.setItem(TOKEN_KEY, token);
    el("token-panel").hidden = true;
    el("dashboard").hidden = false;
    init();
  });

  function showError(err) {
    if (err instanceof Unauthorized) { askForToken(token !== ""); return; }
    const box = el("error");
    box.hidden = false;
    box.textContent = String(err && err.message ? err.message : err);
  }

  // Perceptually ordered colour ramp (white -> yellow -> orange -> red -> dark purple).
  const STOPS = [[255, 255, 255], [255, 237, 160], [254, 178, 76], [240, 59, 32], [128, 0, 38], [45, 0, 75]];
  function colour(t) {
    const x = Math.max(0, Math.min(1, t)) * (STOPS.length - 1);
    const i = Math.min(STOPS.length - 2, Math.floor(x));
    const f = x - i;
    const c = STOPS[i].map((v, k) => Math.round(v + f * (STOPS[i + 1][k] - v)));
    return "rgb(" + c.join(",") + ")";
  }

  // The smallest 1, 2 or 5 x 10^k at least x: the colour scale's top, a round number that rarely moves.
  function niceCeil(x) {
    if (!(x > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(x)));
    for (const m of [1, 2, 5, 10]) if (m * p >= x * (1 - 1e-12)) return m * p;
    return 10 * p;
  }

  function xy(p) { return p.length >= 2 ? [p[0], p[1]] : [p[0], 0]; }  // metres: x east, y north

  function computeExtent(dep) {
    const pts = dep.source_positions.concat(dep.sensor_positions).map(xy);
    const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
    const step = (vals) => {
      const u = Array.from(new Set(vals)).sort((a, b) => a - b);
      let best = Infinity;
      for (let i = 1; i < u.length; i++) best = Math.min(best, u[i] - u[i - 1]);
      return isFinite(best) ? best : 1;
    };
    const srcs = dep.source_positions.map(xy);
    const sx = step(srcs.map((p) => p[0])), sy = step(srcs.map((p) => p[1]));
    return { x0: Math.min(...xs) - sx / 2, x1: Math.max(...xs) + sx / 2, y0: Math.min(...ys) - sy / 2,
             y1: Math.max(...ys) + sy / 2, sx: sx, sy: sy, oneD: dep.source_positions[0].length < 2 };
  }

  // Size a canvas's backing store to its box in CSS pixels times devicePixelRatio; draw in CSS pixels.
  function fitCanvas(canvas, cssWidth, cssHeight) {
    const dpr = window.devicePixelRatio || 1;
    canvas.style.width = cssWidth + "px";
    canvas.style.height = cssHeight + "px";
    canvas.width = Math.max(1, Math.round(cssWidth * dpr));
    canvas.height = Math.max(1, Math.round(cssHeight * dpr));
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }

  function draw(record) {
    const canvas = el("map"), dep = state.deployment, ext = state.extent, pad = 24;
    const W = Math.max(120, canvas.parentElement.clientWidth);
    const aspect = ext.oneD ? 0.4 : (ext.y1 - ext.y0) / (ext.x1 - ext.x0);
    const H = Math.round(Math.max(140, Math.min((W - 2 * pad) * aspect + 2 * pad, window.innerHeight * 0.7)));
    const ctx = fitCanvas(canvas, W, H);
    const h = ext.oneD ? 1 : ext.y1 - ext.y0;
    const scale = Math.min((W - 2 * pad) / (ext.x1 - ext.x0), ext.oneD ? Infinity : (H - 2 * pad) / h);
    const X = (x) => pad + (x - ext.x0) * scale;
    const Y = (y) => ext.oneD ? H / 2 : pad + (ext.y1 - y) * scale;  // north up
    ctx.clearRect(0, 0, W, H);
    const values = record ? record.source_map : dep.source_positions.map(() => 0);
    const vmax = state.scaleMax > 0 ? state.scaleMax : 1;
    dep.source_positions.forEach((p, i) => {
      const [x, y] = xy(p);
      ctx.fillStyle = colour(values[i] / vmax);
      if (ext.oneD) {
        const bh = (H / 2 - pad) * Math.min(1, values[i] / vmax);
        ctx.fillRect(X(x - ext.sx / 2), H / 2 - bh, Math.max(1, ext.sx * scale), bh + 2);
      } else {
        ctx.fillRect(X(x - ext.sx / 2), Y(y + ext.sy / 2), Math.ceil(ext.sx * scale), Math.ceil(ext.sy * scale));
      }
    });
    ctx.strokeStyle = "#1d2330";
    ctx.lineWidth = 1;
    ctx.strokeRect(X(ext.x0), ext.oneD ? H / 2 : Y(ext.y1), (ext.x1 - ext.x0) * scale, ext.oneD ? 1 : h * scale);
    const reporting = new Set(record ? record.reporting : []);
    const outliers = new Set(record && record.outliers ? record.outliers.map((o) => o.sensor) : []);
    dep.sensor_positions.forEach((p, j) => {
      const [x, y] = xy(p);
      ctx.beginPath();
      ctx.arc(X(x), Y(y), outliers.has(j) ? 6 : 4, 0, 2 * Math.PI);
      ctx.lineWidth = 1.5;
      ctx.strokeStyle = outliers.has(j) ? "#c0392b" : "#0b5cad";
      ctx.fillStyle = outliers.has(j) ? "#c0392b" : reporting.has(j) ? "#0b5cad" : "#ffffff";
      ctx.fill();
      ctx.stroke();
    });
    drawScaleBar(ctx, X(ext.x0), H - 9, scale, ext.x1 - ext.x0);
    canvas.dataset.window = record ? String(record.window) : "";
    canvas.dataset.outliers = Array.from(outliers).join(",");
    canvas.dataset.scaleMax = String(vmax);
  }

  // A scale bar of a round length (1, 2 or 5 x 10^k m) near a fifth of the map's width, under the map.
  function drawScaleBar(ctx, x, y, pixelsPerMetre, widthMetres) {
    const target = widthMetres / 5, p = Math.pow(10, Math.floor(Math.log10(target))), m = target / p;
    const metres = (m >= 5 ? 5 : m >= 2 ? 2 : 1) * p, len = metres * pixelsPerMetre;
    ctx.strokeStyle = "#1d2330";
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(x, y - 4); ctx.lineTo(x, y); ctx.lineTo(x + len, y); ctx.lineTo(x + len, y - 4);
    ctx.stroke();
    ctx.fillStyle = "#1d2330";
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    ctx.fillText(metres.toPrecision(3).replace(/\.?0+$/, "") + " m", x + len + 6, y - 2);
    ctx.canvas.dataset.scaleMetres = String(metres);
  }

  function drawLegend() {
    const c = el("scale"), w = Math.max(40, c.clientWidth), ctx = fitCanvas(c, w, 12);
    for (let i = 0; i < w; i++) { ctx.fillStyle = colour(i / (w - 1)); ctx.fillRect(i, 0, 1, 12); }
    el("scale-max").textContent = state.scaleMax > 0 ? fmt(state.scaleMax) : "–";
    el("scale-note").textContent = state.summaries.size === 0 ? "" :
      "fixed scale: the largest cell over the " + state.summaries.size + " window(s) loaded, rounded up";
  }

  // The colour scale only grows (to the round number above the largest cell seen): colours stay comparable.
  function updateScale() {
    let peak = 0;
    state.summaries.forEach((s) => { peak = Math.max(peak, s.peak); });
    const top = niceCeil(peak);
    if (top > state.scaleMax) state.scaleMax = top;
    drawLegend();
  }

  function fmt(x) { return x !== 0 && Math.abs(x) < 1e-3 ? x.toExponential(1) : Number(x.toPrecision(3)).toString(); }

  function span(text, cls, title) {
    const s = document.createElement("span");
    s.textContent = text;
    if (cls) s.className = cls;
    if (title) s.title = title;
    return s;
  }

  // How the map was obtained, in words: a least-residual map says the model does not explain the readings.
  const STATUS_WORDS = {
    "fit": "the map fits the readings within the noise",
    "least-residual": "no map of the model comes within the noise of the readings: the model does not explain " +
      "them, the map is the closest one and its uncertainty is not stated",
    "empty": "the readings are within the noise of nothing: an empty map",
    "private counts": "the private counts of each site (no model)",
  };

  function describe(r) {
    const dep = state.deployment, unit = dep.reading_unit, source = dep.source_unit;
    const when = new Date((dep.start + r.window * dep.window_seconds) * 1000);
    const stated = r.uncertainty !== null && r.uncertainty_90 !== null;
    const unc = stated ? fmt(r.uncertainty) + " m (median), " + fmt(r.uncertainty_90) + " m (90th percentile)"
      : r.uncertainty_text;
    const status = r.status === null ? "status not recorded" : r.status;
    el("window-total").replaceChildren(
      span("window " + r.window + ": "), span(fmt(r.total) + " " + source, "total"),
      span(" in total · location uncertainty (bootstrap EMD) "), span(unc, stated ? "uncertainty" : "uncertainty flagged"),
      span(" · "), span(status, r.status === "least-residual" ? "status flagged" : "status"));
    const info = el("window-info");
    info.replaceChildren(span("window " + r.window + " (from " + when.toLocaleString() + "): "));
    if (r.status !== null) {
      let fit = STATUS_WORDS[r.status] || r.status;
      const model = r.status !== "private counts";  // a counts map has no model: nothing to misfit
      if (model && r.misfit !== null) fit += " (misfit " + fmt(100 * r.misfit) + " % of the readings' energy";
      if (model && r.residual !== null && r.radius !== null) {
        fit += (r.misfit !== null ? "; " : " (") + "residual " + fmt(r.residual) + " " + unit + " against " +
          fmt(r.radius) + " " + unit + " the noise allows";
      }
      if (model && (r.misfit !== null || (r.residual !== null && r.radius !== null))) fit += ")";
      info.append(span(fit, r.status === "least-residual" ? "flagged misfit" : "fit"), span("; "));
    }
    info.append(r.missing > 0 ? span(r.missing + " sensor(s) missing: recovered from the " + r.reporting.length +
                                     " that reported", "flagged") : span("all sensors reported"));
    (r.outliers || []).forEach((o) => {
      info.append(span("; "));
      info.append(span("sensor " + o.sensor + " flagged: its reading is " + fmt(o.z) + " σ from what the other " +
                       "sensors predict (a faulty sensor or a stolen key), left out of the map", "flagged outlier"));
    });
    const noise = dep.continual ? " of each sensor's count of this window, decoded from its continual counter (a " +
      "sensor whose stream has a gap before this window is missing)" : " per reading";
    info.append(span("; noise σ " + fmt(r.sigma) + " " + unit + noise + "; privacy spent in this period ε = " +
      fmt(r.epsilon_period) + " at δ = " + fmt(r.delta_period) + " (" + r.releases_in_period + " release(s) so far)"));
    if (!r.converged) { info.append(span("; ")); info.append(span("recovery not certified optimal", "", r.message)); }
  }

  async function showWindow(w) {
    show(await api("/api/v1/windows/" + w));
  }

  function show(record) {
    state.current = record;
    draw(record);
    describe(record);
  }

  function addSummaries(list) {
    list.forEach((s) => state.summaries.set(s.window, s));
    state.windows = Array.from(state.summaries.keys()).sort((a, b) => a - b);
  }

  // The newest page of windows, the number closed in all and the cursor to poll from (also the resync).
  async function loadLatest() {
    const data = await api("/api/v1/windows?limit=" + PAGE);
    state.summaries = new Map();
    addSummaries(data.windows);
    state.cursor = data.cursor;
    state.counted = data.total;
    state.earlier = data.more;
  }

  // Only the windows closed since the last poll (the cursor), with the newest of them and its map (latest: no
  // request of its own to show it). Every COUNT_EVERY-th poll the collector also
  // counts the closed windows, a check: a window closed out of order (two collectors on one database, a
  // clock stepped back) makes the count differ, and the page is reloaded.
  async function pollWindows() {
    if (state.cursor === null) { await loadLatest(); return; }
    state.polls += 1;
    const count = state.polls % COUNT_EVERY === 0 ? "&count=true" : "";
    for (let pages = 0; pages < 5; pages++) {
      const data = await api("/api/v1/windows?limit=" + PAGE + "&since=" + encodeURIComponent(state.cursor) + count +
                             "&latest=true");
      addSummaries(data.windows);
      if (data.latest !== null && (state.latest === null || data.latest.window >= state.latest.window)) {
        state.latest = data.latest;
      }
      state.counted += data.windows.length;
      state.cursor = data.cursor;
      if (data.more) continue;
      if (data.total !== null && state.counted !== data.total) await loadLatest();
      return;
    }
  }

  async function loadEarlier() {
    const shown = state.windows[Number(slider.value)];
    const data = await api("/api/v1/windows?limit=" + PAGE + "&before=" + state.windows[0]);
    addSummaries(data.windows);
    state.earlier = data.more;
    updateSlider(shown);
  }

  // The slider covers the windows loaded; it keeps showing ``shown`` (its index moves when earlier ones arrive).
  function updateSlider(shown) {
    updateScale();
    const n = state.windows.length;
    el("earlier").hidden = !state.earlier;
    el("history-note").textContent = n === 0 ? "" : (n < state.counted ? "windows " + state.windows[0] + "–" +
      state.windows[n - 1] + " loaded (" + n + " of " + state.counted + " closed)" : n + " window(s) closed");
    if (n === 0) return;
    slider.disabled = false;
    slider.max = String(n - 1);
    const at = state.windows.indexOf(shown);
    if (at >= 0) slider.value = String(at);
  }

  async function refreshWindows() {
    await pollWindows();
    const shown = state.current ? state.current.window : null;
    updateSlider(shown);
    if (state.windows.length === 0) return;
    if (follow.checked || state.current === null) {
      slider.value = slider.max;
      const latest = state.windows[state.windows.length - 1];
      if (state.current && state.current.window === latest) return;
      if (state.latest !== null && state.latest.window === latest) show(state.latest);  // came with the poll
      else await showWindow(latest);
    }
  }

  // The sensors' table and the health (the policy banner), fetched side by side.
  async function refreshSensors() {
    const [data, health] = await Promise.all([api("/api/v1/sensors"), api("/api/v1/health")]);
    const now = Date.now() / 1000;
    const body = el("sensors").querySelector("tbody");
    body.replaceChildren(...data.sensors.map((s) => {
      const tr = document.createElement("tr");
      [String(s.sensor),
       s.last_seen === null ? (data.seen_since_window > 0 ? "not since window " + data.seen_since_window : "never")
         : Math.max(0, now - s.last_seen).toFixed(0) + " s ago (window " + s.last_window + ")",
       runningTotal(s, s.readings_in_period), fmt(s.epsilon_spent),
       s.releases_left + " / " + data.releases_per_period].forEach((t) => {
        const td = document.createElement("td");
        td.textContent = t;
        tr.append(td);
      });
      return tr;
    }));
    el("totals").textContent = "all sensors, this sliding window: " +
      runningTotal(data.all_sensors, data.all_sensors.readings_in_period) +
      (data.all_sensors.total === null ? " releases" : " readings summed");
    // the release policy, always: release or skip now, the budget left and when it renews; a warning while
    // sensors skip release windows the policy lets them use (health "degraded")
    const banner = el("policy-banner");
    banner.dataset.status = health.status;
    banner.classList.toggle("degraded", health.status === "degraded");
    banner.textContent = (health.status === "degraded" ? "degraded: " : "") + health.policy.message + " · " +
      data.release_windows_charged + " of " + data.releases_per_period +
      " release windows used in the sliding window" +
      (data.renews_at === null ? "" : "; the budget renews from window " + data.renews_at_window + " (" +
       new Date(data.renews_at * 1000).toLocaleTimeString() + ")");
    banner.dataset.renewsAtWindow = data.renews_at_window === null ? "" : String(data.renews_at_window);
  }

  // A sum of released readings with its 95 % error bar (±1.96 σ√n, from the collector) and how many were summed.
  function runningTotal(t, n) {
    if (t.total === null) return "see running totals below (" + n + ")";  // a continual counter's outputs
    return fmt(t.total) + " ± " + fmt(t.interval_95[1] - t.total) + " (" + n + ")";
  }

  slider.addEventListener("input", () => {
    const w = state.windows[Number(slider.value)];
    follow.checked = Number(slider.value) === state.windows.length - 1;
    showWindow(w).catch(showError);
  });

  el("earlier").addEventListener("click", () => { loadEarlier().catch(showError); });

  let resizeFrame = 0;
  window.addEventListener("resize", () => {
    if (!state.deployment) return;
    window.cancelAnimationFrame(resizeFrame);
    resizeFrame = window.requestAnimationFrame(() => { drawLegend(); draw(state.current); });
  });

  // One poll at a time: the next is scheduled when this one has finished (never overlapping). Within a poll
  // the windows, the sensors and the health are fetched side by side: the poll takes the longest, not their sum.
  async function tick() {
    state.timer = null;
    try {
      await Promise.all([refreshWindows(), refreshSensors()]);
      el("error").hidden = true;
    } catch (err) {
      showError(err);
      if (err instanceof Unauthorized) return;
    }
    state.timer = window.setTimeout(tick, POLL_MS);
  }

  async function init() {
    if (!token) { askForToken(false); return; }
    try {
      const dep = await api("/api/v1/deployment");
      state.deployment = dep;
      state.extent = computeExtent(dep);
      el("deployment-line").textContent = "deployment " + dep.deployment_id + " · " + dep.n_sensors + " sensors · windows of " +
        dep.window_seconds + " s · configuration " + dep.fingerprint.slice(0, 16) + "…";
      el("guarantee").textContent = dep.guarantee_text;
      el("scale-unit").textContent = dep.source_unit + " per cell";
      el("policy").textContent = dep.policy.words;
      drawLegend();
      draw(null);
      await tick();
    } catch (err) {
      showError(err);
    }
  }
  init();
})();
