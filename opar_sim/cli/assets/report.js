(function () {
  'use strict';
  const D = JSON.parse(document.getElementById('report-data').textContent);
  const S = D.strings;
  const str = (i) => (i === null || i === undefined ? '' : S[i]);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({'&': '&amp;', '<': '&lt;',
    '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
  const fmt = (x, d) => (x === null || x === undefined ? '–' : Number(x).toFixed(d));
  const pct = (x) => (x === null || x === undefined ? '–' : (100 * x).toFixed(1) + ' %');
  const tip = document.getElementById('tip');
  const hidden = new Set();

  // ---- controllers: toggled from the legend bar in every figure
  const byController = (name) => document.querySelectorAll(
    '[id*="-ctl--' + name + '--"], [id$="-raster--' + name + '"]');
  function applyHidden() {
    for (const name of D.controllers) {
      for (const el of byController(name)) el.style.opacity = hidden.has(name) ? '0.08' : '';
    }
    renderEpisodes();
  }
  const legend = document.getElementById('legend');
  for (const name of D.controllers) {
    const b = document.createElement('button');
    b.type = 'button';
    b.setAttribute('aria-pressed', 'true');
    b.dataset.controller = name;
    b.innerHTML = '<i style="background:' + D.colors[name] + '"></i>' + esc(name);
    b.addEventListener('click', () => {
      if (hidden.has(name)) hidden.delete(name); else hidden.add(name);
      b.setAttribute('aria-pressed', hidden.has(name) ? 'false' : 'true');
      applyHidden();
    });
    legend.appendChild(b);
  }

  // ---- tool tips over the figures
  function showTip(ev, text) {
    tip.innerHTML = text;
    tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 260) + 'px';
    tip.style.top = (ev.clientY + 12) + 'px';
  }
  const hideTip = () => { tip.style.display = 'none'; };
  function controllerTip(name) {
    const m = D.metrics[name];
    if (!m) return esc(name);
    return '<b>' + esc(name) + '</b><br>success ' + pct(m.success) + ' (' + pct(m.low) + '–' +
      pct(m.high) + ')<br>tokens/episode ' + fmt(m.tokens, 0) + '<br>steps ' + fmt(m.steps, 1) +
      ', REPLANs ' + fmt(m.replans, 2) + '<br>premature ' + pct(m.premature) +
      '<br>n = ' + m.n + ' episodes';
  }
  function figureFraction(svg, ev) {
    const r = svg.getBoundingClientRect();
    return [(ev.clientX - r.left) / r.width, 1 - (ev.clientY - r.top) / r.height];
  }
  function rasterHit(svg, ev) {
    const [fx, fy] = figureFraction(svg, ev);
    for (const [name, info] of Object.entries(D.raster)) {
      if (!info.box) continue;
      const [x0, y0, w, h] = info.box;
      if (fx >= x0 && fx <= x0 + w && fy >= y0 && fy <= y0 + h) {
        const row = Math.min(info.rows.length - 1, Math.floor((y0 + h - fy) / h * info.rows.length));
        const [e, t, a] = info.rows[row];
        return name + '|' + e + '|' + t + '|' + a;
      }
    }
    return null;
  }
  for (const svg of document.querySelectorAll('svg.fig')) {
    const raster = svg.dataset.fig === 'signals';
    svg.addEventListener('mousemove', (ev) => {
      if (raster) {
        const key = rasterHit(svg, ev);
        if (key) { showTip(ev, episodeTip(key) + '<br><i>click to open its trace</i>'); return; }
      }
      const el = ev.target.closest('[id*="-ctl--"]');
      if (el) {
        const name = el.id.split('-ctl--')[1].split('--')[0];
        showTip(ev, controllerTip(name));
        if (svg.dataset.fig === 'pareto') highlight(name);
        return;
      }
      hideTip();
    });
    svg.addEventListener('mouseleave', () => { hideTip(); highlight(null); });
    if (raster) {
      svg.style.cursor = 'pointer';
      svg.addEventListener('click', (ev) => { const key = rasterHit(svg, ev); if (key) openTrace(key); });
    }
  }

  // ---- the comparison table linked to the Pareto plot
  const comparison = document.querySelector('.table table');
  function highlight(name) {
    if (comparison) {
      for (const tr of comparison.tBodies[0].rows) {
        tr.classList.toggle('hl', name !== null && tr.cells[0].textContent.trim() === name);
      }
    }
    for (const el of document.querySelectorAll('#fig-pareto [id*="-ctl--"]')) {
      const mine = el.id.split('-ctl--')[1].split('--')[0];
      el.style.filter = name !== null && mine === name ? 'drop-shadow(0 0 3px #000)' : '';
    }
  }
  if (comparison) {
    for (const tr of comparison.tBodies[0].rows) {
      const name = tr.cells[0].textContent.trim();
      if (!(name in D.metrics)) continue;
      tr.style.cursor = 'pointer';
      tr.title = 'show ' + name + ' in the Pareto plot';
      tr.addEventListener('mouseenter', () => highlight(name));
      tr.addEventListener('mouseleave', () => highlight(null));
      tr.addEventListener('click', () => {
        const fig = document.getElementById('fig-pareto');
        if (fig) fig.scrollIntoView({behavior: 'smooth', block: 'center'});
        highlight(name);
      });
    }
  }

  // ---- episodes
  const episodes = D.episodes.map((r) => ({key: r[0], outcome: str(r[1]), success: r[2] === 1,
    steps: r[3], tokens: r[4], sim: r[5]}));
  const byKey = new Map(episodes.map((e) => [e.key, e]));
  const parts = (key) => { const p = key.split('|'); return {c: p[0], e: p[1], t: p[2], a: p[3]}; };
  function episodeTip(key) {
    const ep = byKey.get(key); const p = parts(key);
    return '<b>' + esc(p.c) + '</b>, episode ' + p.e + (p.t !== '1' ? ' trial ' + p.t : '') +
      (ep ? '<br>' + esc(ep.outcome) + ', ' + ep.steps + ' steps, ' + ep.tokens + ' tokens' : '');
  }
  const filter = document.getElementById('episode-filter');
  const outcomes = [...new Set(episodes.map((e) => e.outcome))].sort();
  filter.innerHTML = 'outcome <select id="outcome-filter"><option value="">all</option>' +
    outcomes.map((o) => '<option>' + esc(o) + '</option>').join('') + '</select> ' +
    '<span id="episode-count"></span>';
  filter.querySelector('select').addEventListener('change', renderEpisodes);
  function renderEpisodes() {
    const want = document.getElementById('outcome-filter').value;
    const shown = episodes.filter((e) => !hidden.has(parts(e.key).c) && (!want || e.outcome === want));
    document.getElementById('episode-count').textContent = shown.length + ' episodes';
    const rows = shown.map((e) => { const p = parts(e.key);
      return '<tr data-key="' + esc(e.key) + '"><td>' + esc(p.c) + '</td><td>' + p.e + '</td><td>' +
        p.t + '</td><td>' + esc(e.outcome) + '</td><td>' + e.steps + '</td><td>' + e.tokens +
        '</td><td>' + fmt(e.sim, 1) + '</td></tr>'; }).join('');
    document.getElementById('episode-list').innerHTML = '<table><thead><tr><th>controller</th>' +
      '<th>episode</th><th>trial</th><th>outcome</th><th>steps</th><th>tokens</th>' +
      '<th>simulated s</th></tr></thead><tbody>' + rows + '</tbody></table>';
  }
  document.getElementById('episode-list').addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr[data-key]');
    if (tr) openTrace(tr.dataset.key);
  });

  // ---- the trace viewer
  function chart(steps, series, yMax, marks, yMin = 0) {
    const W = 760, H = 170, L = 44, R = 10, T = 10, B = 28;
    const n = Math.max(1, steps.length);
    const x = (i) => L + (W - L - R) * (n === 1 ? 0.5 : i / (n - 1));
    const y = (v) => T + (H - T - B) * (1 - (Math.max(yMin, Math.min(v, yMax)) - yMin) / (yMax - yMin));
    let out = '<svg viewBox="0 0 ' + W + ' ' + H + '" role="img">';
    for (const [i, s] of marks) {
      out += '<rect x="' + (x(i) - 4) + '" y="' + T + '" width="8" height="' + (H - T - B) +
        '" fill="' + (s === 'replan' ? '#e6550d' : '#08519c') + '" opacity="0.25"/>';
    }
    const tick = (yMax - yMin) / 0.25 > 8 ? 0.5 : 0.25;  // round tick values
    for (let v = Math.ceil(yMin / tick) * tick; v <= yMax + 1e-9; v += tick) {
      out += '<line x1="' + L + '" x2="' + (W - R) + '" y1="' + y(v) + '" y2="' + y(v) +
        '" stroke="#ddd"/><text x="' + (L - 4) + '" y="' + (y(v) + 4) +
        '" font-size="10" text-anchor="end">' + v.toFixed(2) + '</text>';
    }
    steps.forEach((s, i) => { if (n <= 25 || i % Math.ceil(n / 20) === 0) out += '<text x="' + x(i) +
      '" y="' + (H - B + 14) + '" font-size="10" text-anchor="middle">' + s + '</text>'; });
    out += '<text x="' + (W / 2) + '" y="' + (H - 2) + '" font-size="10" text-anchor="middle">' +
      'loop iteration (step)</text>';
    let ly = T + 4;
    for (const s of series) {
      const pts = (s.values || []).map((v, i) => (v === null ? null : x(i) + ',' + y(v)))
        .filter((p) => p !== null);
      if (s.flat !== undefined) {
        out += '<line x1="' + L + '" x2="' + (W - R) + '" y1="' + y(s.flat) + '" y2="' + y(s.flat) +
          '" stroke="' + s.color + '" stroke-dasharray="6 3"/>';
      } else {
        out += '<polyline fill="none" stroke="' + s.color + '" stroke-width="2" points="' +
          pts.join(' ') + '"' + (s.dash ? ' stroke-dasharray="5 3"' : '') + '/>';
      }
      out += '<text x="' + (W - R - 4) + '" y="' + (ly + 8) + '" font-size="10" text-anchor="end" fill="' +
        s.color + '">' + esc(s.label) + '</text>';
      ly += 12;
    }
    return out + '</svg>';
  }
  function termsCell(tr, i, m) {
    const out = [];
    for (const [name, col] of Object.entries(tr.terms)) {
      const v = col[i];
      if (v === null || v === undefined) continue;
      let note = '';
      if (name === 'effort' && m.replan_threshold !== null) {
        const over = v >= m.replan_threshold;
        note = ' <span class="' + (over ? 'over' : '') + '">' + (over ? '≥' : '<') + ' ' +
          m.replan_threshold + ' replan</span>';
      } else if (name === 'error' && m.settle_band !== null) {
        const inside = v <= m.settle_band;
        note = ' <span class="' + (inside ? 'in' : '') + '">' + (inside ? '≤' : '>') + ' ' +
          m.settle_band + ' band</span>';
      }
      out.push(esc(name) + ' ' + fmt(v, 3) + note);
    }
    return out.join('<br>');
  }
  function counterfactual(replay, step) {
    if (replay.verdict === 'same' || replay.at_step === null || step < replay.at_step) return ['same', false];
    if (step > replay.at_step) return ['— (diverged)', false];
    const signal = replay.verdict === 'stop' ? 'TERMINATE' : String(replay.verdict).toUpperCase();
    return [signal + ' ← first divergence' + (replay.outcome ? ' (' + replay.outcome + ')' : ''), true];
  }
  function openTrace(key) {
    const tr = D.traces[key];
    const ep = byKey.get(key);
    const p = parts(key);
    const box = document.getElementById('trace');
    box.dataset.key = key;
    if (!tr) { box.innerHTML = '<p>No steps recorded for this episode.</p>'; return; }
    const m = D.metrics[p.c] || {replan_threshold: null, settle_band: null};
    const replays = D.replays[key] || [];
    const n = tr.st.length;
    // steps.jsonl holds the episode's tokens so far: the step's own are the difference
    const tokens = (i) => (tr.tok[i] === null ? '–' : (i > 0 && tr.ag[i] === tr.ag[i - 1] && tr.tok[i - 1] !== null
      ? tr.tok[i] - tr.tok[i - 1] : tr.tok[i]) + '<br><small>Σ ' + tr.tok[i] + '</small>');
    const marks = tr.sig.map((s, i) => [i, str(s)]).filter(([, s]) => s === 'replan' || s === 'terminate');
    let html = '<p class="kv"><b>' + esc(p.c) + '</b>, episode ' + p.e + ', trial ' + p.t +
      (p.a !== '1' ? ', attempt ' + p.a : '') + (ep ? ': <b>' + esc(ep.outcome) + '</b>, ' + ep.steps +
      ' steps, ' + ep.tokens + ' tokens, ' + fmt(ep.sim, 1) + ' simulated s' : '') + '</p>';
    html += chart(tr.st, [
      {label: 'hidden progress p', values: tr.p, color: '#555'},
      {label: "agent's estimate δ_task", values: tr.d, color: D.colors[p.c] || '#1f77b4', dash: true},
    ], 1.0, marks);
    const termSeries = [];
    const palette = {p: '#1f77b4', i: '#ff7f0e', d: '#9467bd', effort: '#000', error: '#d62728'};
    let yMax = 1.0, yMin = 0.0;
    for (const [name, col] of Object.entries(tr.terms)) {
      if (!(name in palette)) continue;
      termSeries.push({label: name, values: col, color: palette[name]});
      for (const v of col) if (v !== null) { yMax = Math.max(yMax, v); yMin = Math.min(yMin, v); }
    }
    if (m.replan_threshold !== null && 'effort' in tr.terms) {
      termSeries.push({label: 'REPLAN threshold ' + m.replan_threshold, flat: m.replan_threshold, color: '#b30000'});
      yMax = Math.max(yMax, m.replan_threshold * 1.1);
    }
    if (termSeries.length) {
      html += chart(tr.st, termSeries, Math.ceil(yMax * 4) / 4, marks, Math.floor(yMin * 4) / 4);
    }
    const cols = ['step', 'sim. s', 'action', 'observation', 'tool result', 'δ_task / hidden p',
      'controller terms', 'recorded decision: reason', 'tokens (Σ so far)',
      ...replays.map((r) => esc(r.controller) + ' (replay: counterfactual)')];
    const widths = [4, 5, 14, 12, 13, 7, 16, 13, 7, ...replays.map(() => 9)];
    html += '<div class="table"><table><colgroup>' + widths.map((w) => '<col style="width:' + w + '%">').join('') +
      '</colgroup><thead><tr>' + cols.map((c) => '<th>' + c + '</th>').join('') + '</tr></thead><tbody>';
    for (let i = 0; i < n; i++) {
      const sig = str(tr.sig[i]);
      let row = '';
      let diverge = false;
      for (const r of replays) {
        const [text, first] = counterfactual(r, tr.st[i]);
        diverge = diverge || first;
        row += '<td class="' + (first ? 'cf' : '') + '">' + esc(text) + '</td>';
      }
      const err = str(tr.err[i]);
      const agent = str(tr.ag[i]) !== str(tr.ag[0]) ? '[' + esc(str(tr.ag[i])) + '] ' : '';
      html += '<tr class="' + sig + (diverge ? ' diverge' : '') + '"><td class="n">' + tr.st[i] + '</td><td class="n">' +
        fmt(tr.t[i], 1) + '</td><td>' + agent + esc(str(tr.act[i])) + '</td><td>' + esc(str(tr.obs[i])) + '</td><td>' +
        esc(str(tr.res[i])) + (err ? ' <span class="over">[' + esc(err) + ']</span>' : '') + '</td><td class="n">' +
        fmt(tr.d[i], 3) + ' / ' + fmt(tr.p[i], 3) + '</td><td>' + termsCell(tr, i, m) + '</td><td><b>' +
        esc(sig.toUpperCase()) + '</b>: ' + esc(str(tr.rsn[i])) + '</td><td class="n">' + tokens(i) +
        '</td>' + row + '</tr>';
    }
    html += '</tbody></table></div>';
    if (replays.length) {
      html += '<p class="hint">Replay: the recorded decision against what each replayed controller would ' +
        'have decided on the same record; the framed row is the first divergence, after which the ' +
        'trajectory is unknown.</p>';
    }
    box.innerHTML = html;
    document.getElementById('trace-title').textContent = 'Episode trace: ' + p.c + ', episode ' + p.e;
    if (location.hash !== '#episode=' + encodeURIComponent(key)) {
      history.replaceState(null, '', '#episode=' + encodeURIComponent(key));
    }
    document.getElementById('trace-title').scrollIntoView({block: 'start'});
  }
  renderEpisodes();
  const m = /^#episode=(.+)$/.exec(location.hash);
  if (m) openTrace(decodeURIComponent(m[1]));
  window.oparOpenTrace = openTrace;
})();
