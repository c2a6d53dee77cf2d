"use strict";
// dpcloak dashboard: plain JavaScript, no external assets. The analyst token comes from the URL
// fragment (#token=...), which the browser never sends to the server in the URL.
(function () {
  const token = new URLSearchParams(window.location.hash.slice(1)).get("token") || "";
  const state = { deployment: null, windows: [], current: null, extent: null };
  const el = (id) => document.getElementById(id);
  const slider = el("window-slider");
  const follow = el("follow");

  async function api(path) {
    const resp = await fetch(path, { headers: { Authorization: "Bearer " + token } });
    if (!resp.ok) {
      const body = await resp.json().catch(() => ({}));
      throw new Error(path + ": " + resp.status + " " + (body.message || resp.statusText));
    }
    return resp.json();
  }

  function showError(err) {
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

  function draw(record) {
    const canvas = el("map"), ctx = canvas.getContext("2d");
    const dep = state.deployment, ext = state.extent;
    const W = canvas.width, H = canvas.height, pad = 24;
    const h = ext.oneD ? 1 : ext.y1 - ext.y0;
    const scale = Math.min((W - 2 * pad) / (ext.x1 - ext.x0), ext.oneD ? Infinity : (H - 2 * pad) / h);
    const X = (x) => pad + (x - ext.x0) * scale;
    const Y = (y) => ext.oneD ? H / 2 : pad + (ext.y1 - y) * scale;  // north up
    ctx.clearRect(0, 0, W, H);
    const values = record ? record.source_map : dep.source_positions.map(() => 0);
    const vmax = Math.max(1e-12, ...values);
    el("scale-max").textContent = vmax.toPrecision(3);
    dep.source_positions.forEach((p, i) => {
      const [x, y] = xy(p);
      ctx.fillStyle = colour(values[i] / vmax);
      if (ext.oneD) {
        const bh = (H / 2 - pad) * (values[i] / vmax);
        ctx.fillRect(X(x - ext.sx / 2), H / 2 - bh, Math.max(1, ext.sx * scale), bh + 2);
      } else {
        ctx.fillRect(X(x - ext.sx / 2), Y(y + ext.sy / 2), Math.ceil(ext.sx * scale), Math.ceil(ext.sy * scale));
      }
    });
    ctx.strokeStyle = "#1d2330";
    ctx.strokeRect(X(ext.x0), ext.oneD ? H / 2 : Y(ext.y1), (ext.x1 - ext.x0) * scale, ext.oneD ? 1 : h * scale);
    const reporting = new Set(record ? record.reporting : []);
    dep.sensor_positions.forEach((p, j) => {
      const [x, y] = xy(p);
      ctx.beginPath();
      ctx.arc(X(x), Y(y), 4, 0, 2 * Math.PI);
      ctx.lineWidth = 1.5;
      ctx.strokeStyle = "#0b5cad";
      ctx.fillStyle = reporting.has(j) ? "#0b5cad" : "#ffffff";
      ctx.fill();
      ctx.stroke();
    });
    drawScaleBar(ctx, X(ext.x0), H - 9, scale, ext.x1 - ext.x0);
    canvas.dataset.window = record ? String(record.window) : "";
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

  function drawScale() {
    const c = el("scale"), ctx = c.getContext("2d");
    for (let i = 0; i < c.width; i++) { ctx.fillStyle = colour(i / (c.width - 1)); ctx.fillRect(i, 0, 1, c.height); }
  }

  function fmt(x) { return x !== 0 && Math.abs(x) < 1e-3 ? x.toExponential(1) : x.toPrecision(3); }

  function describe(r) {
    const when = new Date((state.deployment.start + r.window * state.deployment.window_seconds) * 1000);
    const flag = r.missing > 0 ? '<span class="flagged">' + r.missing + " sensor(s) missing: recovered from the " +
      r.reporting.length + " that reported</span>" : "all sensors reported";
    return "window " + r.window + " (from " + when.toLocaleString() + "): " + flag + "; uncertainty (bootstrap EMD) " +
      (r.uncertainty === null ? "n/a" : fmt(r.uncertainty) + " m") + "; σ " + fmt(r.sigma) + " people" + "; privacy spent in this period ε = " +
      fmt(r.epsilon_period) + " at δ = " + fmt(r.delta_period) + " (" + r.releases_in_period + " release(s) so far)" +
      (r.converged ? "" : '; <span title="' + r.message.replace(/"/g, "&quot;") + '">recovery not certified optimal</span>');
  }

  async function showWindow(w) {
    const record = await api("/api/v1/windows/" + w);
    state.current = record;
    draw(record);
    el("window-info").innerHTML = describe(record);
  }

  async function refreshWindows() {
    const data = await api("/api/v1/windows");
    state.windows = data.windows.map((r) => r.window);
    if (state.windows.length === 0) return;
    slider.disabled = false;
    slider.max = String(state.windows.length - 1);
    const atEnd = follow.checked || state.current === null;
    if (atEnd) {
      slider.value = slider.max;
      const latest = state.windows[state.windows.length - 1];
      if (!state.current || state.current.window !== latest) await showWindow(latest);
    }
  }

  async function refreshSensors() {
    const data = await api("/api/v1/sensors");
    const now = Date.now() / 1000;
    const rows = data.sensors.map((s) => "<tr><td>" + s.sensor + "</td><td>" +
      (s.last_seen === null ? "never" : Math.max(0, now - s.last_seen).toFixed(0) + " s ago (window " + s.last_window + ")") +
      "</td><td>" + s.readings_in_period + " / " + data.releases_per_period + "</td><td>" + fmt(s.epsilon_spent) +
      "</td></tr>");
    el("sensors").querySelector("tbody").innerHTML = rows.join("");
  }

  slider.addEventListener("input", () => {
    const w = state.windows[Number(slider.value)];
    follow.checked = Number(slider.value) === state.windows.length - 1;
    showWindow(w).catch(showError);
  });

  async function tick() {
    try {
      await refreshWindows();
      await refreshSensors();
    } catch (err) {
      showError(err);
    }
  }

  async function init() {
    try {
      const dep = await api("/api/v1/deployment");
      state.deployment = dep;
      state.extent = computeExtent(dep);
      el("deployment-line").textContent = "deployment " + dep.deployment_id + " · " + dep.n_sensors + " sensors · windows of " +
        dep.window_seconds + " s · configuration " + dep.fingerprint.slice(0, 16) + "…";
      el("guarantee").textContent = dep.guarantee_text;
      drawScale();
      draw(null);
      await tick();
      window.setInterval(tick, 2000);
    } catch (err) {
      showError(err);
    }
  }
  init();
})();
