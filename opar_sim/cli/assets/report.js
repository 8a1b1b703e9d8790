(function () {
  'use strict';
  // Every string below comes from a run directory someone may have shared: it is only ever
  // set as text (textContent, a text node, a property) or as the value of an attribute that
  // is not an address or a handler, never parsed as HTML.  No innerHTML with data.
  const D = JSON.parse(document.getElementById('report-data').textContent);
  const S = D.strings;
  const str = (i) => (i === null || i === undefined ? '' : String(S[i]));
  const fmt = (x, d) => (x === null || x === undefined ? '–' : Number(x).toFixed(d));
  const pct = (x) => (x === null || x === undefined ? '–' : (100 * x).toFixed(1) + ' %');
  const num = (x) => (typeof x === 'number' && isFinite(x) ? x : null);
  const own = (obj, key) => obj !== null && typeof obj === 'object' && Object.prototype.hasOwnProperty.call(obj, key);
  const get = (obj, key) => (own(obj, key) ? obj[key] : undefined);
  const COLOR = /^#[0-9a-fA-F]{3,8}$/;
  const color = (c, fallback) => (typeof c === 'string' && COLOR.test(c) ? c : fallback);
  const tip = document.getElementById('tip');
  const hidden = new Set();
  const controllers = (D.controllers || []).map(String);

  // an element: props set as properties or attributes, children appended as nodes or text
  function h(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'class') e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  const br = () => document.createElement('br');
  // text lines separated by <br>: each line is a list of nodes or strings
  const lines = (...ls) => ls.flatMap((l, i) => (i ? [br(), ...[].concat(l)] : [].concat(l)));

  // ---- controllers: toggled from the legend bar in every figure
  // an artist's id is <figure>-ctl--<controller>--<what>, a raster panel's <figure>-raster--<controller>
  const byController = (name) => document.querySelectorAll(
    '[id*="-ctl--' + CSS.escape(name) + '--"], [id$="-raster--' + CSS.escape(name) + '"]');
  function controllerOf(id) {
    const at = id.indexOf('-ctl--');
    if (at < 0) return null;
    const rest = id.slice(at + 6);
    let best = null;  // the longest name that fits: a name may hold "--"
    for (const name of controllers) {
      if (rest.startsWith(name + '--') && (best === null || name.length > best.length)) best = name;
    }
    return best;
  }
  function applyHidden() {
    for (const name of controllers) {
      for (const el of byController(name)) el.style.opacity = hidden.has(name) ? '0.08' : '';
    }
    renderEpisodes();
  }
  const legend = document.getElementById('legend');
  for (const name of controllers) {
    const dot = h('i');
    dot.style.background = color(get(D.colors, name), '#888');
    const b = h('button', {type: 'button', 'aria-pressed': 'true'}, dot, name);
    b.dataset.controller = name;
    b.addEventListener('click', () => {
      if (hidden.has(name)) hidden.delete(name); else hidden.add(name);
      b.setAttribute('aria-pressed', hidden.has(name) ? 'false' : 'true');
      applyHidden();
    });
    legend.appendChild(b);
  }

  // ---- tool tips over the figures
  function showTip(ev, nodes) {
    tip.replaceChildren(...nodes);
    tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 260) + 'px';
    tip.style.top = (ev.clientY + 12) + 'px';
  }
  const hideTip = () => { tip.style.display = 'none'; };
  function controllerTip(name) {
    const m = get(D.metrics, name);
    if (!m) return [name];
    return lines(h('b', null, name), 'success ' + pct(m.success) + ' (' + pct(m.low) + '–' + pct(m.high) + ')',
      'tokens/episode ' + fmt(m.tokens, 0), 'steps ' + fmt(m.steps, 1) + ', REPLANs ' + fmt(m.replans, 2),
      'premature ' + pct(m.premature), 'n = ' + m.n + ' episodes');
  }
  function figureFraction(svg, ev) {
    const r = svg.getBoundingClientRect();
    return [(ev.clientX - r.left) / r.width, 1 - (ev.clientY - r.top) / r.height];
  }
  function rasterHit(svg, ev) {
    const [fx, fy] = figureFraction(svg, ev);
    for (const [name, info] of Object.entries(D.raster || {})) {
      if (!info || !Array.isArray(info.box) || !Array.isArray(info.rows) || !info.rows.length) continue;
      const [x0, y0, w, h] = info.box.map(Number);
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
        if (key) { showTip(ev, lines(episodeTip(key), h('i', null, 'click to open its trace'))); return; }
      }
      const el = ev.target.closest('[id*="-ctl--"]');
      const name = el ? controllerOf(el.id) : null;
      if (name !== null) {
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
      el.style.filter = name !== null && controllerOf(el.id) === name ? 'drop-shadow(0 0 3px #000)' : '';
    }
  }
  if (comparison) {
    for (const tr of comparison.tBodies[0].rows) {
      const name = tr.cells[0].textContent.trim();
      if (!own(D.metrics, name)) continue;
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
  const episodes = D.episodes.map((r) => ({key: String(r[0]), outcome: str(r[1]), success: r[2] === 1,
    steps: r[3], tokens: r[4], sim: r[5]}));
  const byKey = new Map(episodes.map((e) => [e.key, e]));
  // a key is controller|episode|trial|attempt; the controller's name may itself hold "|"
  const parts = (key) => {
    const p = String(key).split('|');
    const tail = p.length >= 4 ? p.splice(p.length - 3, 3) : ['', '', ''];
    return {c: p.join('|'), e: tail[0], t: tail[1], a: tail[2]};
  };
  function episodeTip(key) {
    const ep = byKey.get(key); const p = parts(key);
    const head = [h('b', null, p.c), ', episode ' + p.e + (p.t !== '1' ? ' trial ' + p.t : '')];
    return ep ? lines(head, ep.outcome + ', ' + ep.steps + ' steps, ' + ep.tokens + ' tokens') : head;
  }
  const filter = document.getElementById('episode-filter');
  const outcomes = [...new Set(episodes.map((e) => e.outcome))].sort();
  const select = h('select', {id: 'outcome-filter'}, h('option', {value: ''}, 'all'),
    outcomes.map((o) => { const opt = h('option', null, o); opt.value = o; return opt; }));
  filter.replaceChildren('outcome ', select, ' ', h('span', {id: 'episode-count'}));
  select.addEventListener('change', renderEpisodes);
  const episodeHead = h('thead', null, h('tr', null, ['controller', 'episode', 'trial', 'outcome', 'steps',
    'tokens', 'simulated s'].map((c) => h('th', null, c))));
  function renderEpisodes() {
    const want = select.value;
    const shown = episodes.filter((e) => !hidden.has(parts(e.key).c) && (!want || e.outcome === want));
    document.getElementById('episode-count').textContent = shown.length + ' episodes';
    const body = h('tbody');
    for (const e of shown) {
      const p = parts(e.key);
      const tr = h('tr', null, [p.c, p.e, p.t, e.outcome, String(e.steps), String(e.tokens), fmt(e.sim, 1)]
        .map((c) => h('td', null, c)));
      tr.dataset.key = e.key;
      body.appendChild(tr);
    }
    document.getElementById('episode-list').replaceChildren(h('table', null, episodeHead, body));
  }
  document.getElementById('episode-list').addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr[data-key]');
    if (tr) openTrace(tr.dataset.key);
  });

  // ---- the trace viewer
  const SVG = 'http://www.w3.org/2000/svg';
  function s(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function chart(steps, series, yMax, marks, yMin = 0) {
    const W = 760, H = 170, L = 44, R = 10, T = 10, B = 28;
    const n = Math.max(1, steps.length);
    const x = (i) => L + (W - L - R) * (n === 1 ? 0.5 : i / (n - 1));
    const y = (v) => T + (H - T - B) * (1 - (Math.max(yMin, Math.min(v, yMax)) - yMin) / (yMax - yMin));
    const out = s('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img'});
    for (const [i, sig] of marks) {
      out.append(s('rect', {x: x(i) - 4, y: T, width: 8, height: H - T - B,
        fill: sig === 'replan' ? '#e6550d' : '#08519c', opacity: '0.25'}));
    }
    const tick = (yMax - yMin) / 0.25 > 8 ? 0.5 : 0.25;  // round tick values
    for (let v = Math.ceil(yMin / tick) * tick; v <= yMax + 1e-9; v += tick) {
      out.append(s('line', {x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#ddd'}),
        s('text', {x: L - 4, y: y(v) + 4, 'font-size': 10, 'text-anchor': 'end'}, v.toFixed(2)));
    }
    steps.forEach((st, i) => {
      if (n <= 25 || i % Math.ceil(n / 20) === 0) {
        out.append(s('text', {x: x(i), y: H - B + 14, 'font-size': 10, 'text-anchor': 'middle'}, String(st)));
      }
    });
    out.append(s('text', {x: W / 2, y: H - 2, 'font-size': 10, 'text-anchor': 'middle'}, 'loop iteration (step)'));
    let ly = T + 4;
    for (const se of series) {
      const stroke = color(se.color, '#555');
      if (se.flat !== undefined) {
        out.append(s('line', {x1: L, x2: W - R, y1: y(se.flat), y2: y(se.flat), stroke: stroke,
          'stroke-dasharray': '6 3'}));
      } else {
        const pts = (se.values || []).map((v, i) => (num(v) === null ? null : x(i) + ',' + y(v)))
          .filter((p) => p !== null);
        const line = s('polyline', {fill: 'none', stroke: stroke, 'stroke-width': 2, points: pts.join(' ')});
        if (se.dash) line.setAttribute('stroke-dasharray', '5 3');
        out.append(line);
      }
      out.append(s('text', {x: W - R - 4, y: ly + 8, 'font-size': 10, 'text-anchor': 'end', fill: stroke},
        se.label));
      ly += 12;
    }
    return out;
  }
  // the PID's terms as the glossary names them: 'p' is the P term, never a p-value
  const TERM_LABELS = new Map([['p', 'P term'], ['i', 'I term'], ['d', 'D term'], ['effort', 'effort'],
    ['error', 'task error'], ['lag', 'pace err'], ['accumulated', 'accumulated error']]);
  const termLabel = (name) => TERM_LABELS.get(name) || name;
  function termsCell(tr, i, m) {
    const out = [];
    for (const [name, col] of Object.entries(tr.terms || {})) {
      const v = Array.isArray(col) ? num(col[i]) : null;
      if (v === null) continue;
      const line = [termLabel(name) + ' ' + fmt(v, 3)];
      if (name === 'effort' && m.replan_threshold !== null) {
        const over = v >= m.replan_threshold;
        line.push(' ', h('span', {class: over ? 'over' : ''}, (over ? '≥' : '<') + ' ' + m.replan_threshold +
          ' replan'));
      } else if (name === 'error' && m.settle_band !== null) {
        const inside = v <= m.settle_band;
        line.push(' ', h('span', {class: inside ? 'in' : ''}, (inside ? '≤' : '>') + ' ' + m.settle_band +
          ' band'));
      }
      out.push(line);
    }
    return lines(...out);
  }
  function counterfactual(replay, step) {
    if (replay.verdict === 'same' || replay.at_step === null || step < replay.at_step) return ['same', false];
    if (step > replay.at_step) return ['— (diverged)', false];
    const signal = replay.verdict === 'stop' ? 'TERMINATE' : String(replay.verdict).toUpperCase();
    return [signal + ' ← first divergence' + (replay.outcome ? ' (' + replay.outcome + ')' : ''), true];
  }
  const ROW_CLASS = /^[a-z][a-z_]*$/;  // a signal becomes a row's class only when it is a plain word
  function openTrace(key) {
    key = String(key);
    const tr = get(D.traces, key);
    const ep = byKey.get(key);
    const p = parts(key);
    const box = document.getElementById('trace');
    box.dataset.key = key;
    if (!tr) {
      const beyond = ep && ep.steps > 0 && D.trace_limit;  // steps not embedded: past the first
      box.replaceChildren(h('p', null, beyond ? 'Steps not embedded: the report holds the steps ' +
        'of the first ' + D.trace_limit + ' episodes of each controller.' : 'No steps recorded for this episode.'));
      return;
    }
    const m = get(D.metrics, p.c) || {replan_threshold: null, settle_band: null};
    const replays = get(D.replays, key) || [];
    const n = tr.st.length;
    // steps.jsonl holds the episode's tokens so far: the step's own are the difference
    const tokens = (i) => (tr.tok[i] === null ? ['–'] : [String(i > 0 && tr.ag[i] === tr.ag[i - 1] &&
      tr.tok[i - 1] !== null ? tr.tok[i] - tr.tok[i - 1] : tr.tok[i]), br(), h('small', null, 'Σ ' + tr.tok[i])]);
    const marks = tr.sig.map((sg, i) => [i, str(sg)]).filter(([, sg]) => sg === 'replan' || sg === 'terminate');
    const content = [];
    content.push(h('p', {class: 'kv'}, h('b', null, p.c), ', episode ' + p.e + ', trial ' + p.t +
      (p.a !== '1' ? ', attempt ' + p.a : ''), ...(ep ? [': ', h('b', null, ep.outcome), ', ' + ep.steps +
      ' steps, ' + ep.tokens + ' tokens, ' + fmt(ep.sim, 1) + ' simulated s'] : [])));
    content.push(chart(tr.st, [
      {label: 'true progress (hidden)', values: tr.p, color: '#555'},
      {label: "agent's estimate δ_task", values: tr.d, color: color(get(D.colors, p.c), '#1f77b4'), dash: true},
    ], 1.0, marks));
    const termSeries = [];
    const palette = new Map([['p', '#1f77b4'], ['i', '#ff7f0e'], ['d', '#9467bd'], ['effort', '#000'],
      ['error', '#d62728'], ['lag', '#2ca02c']]);
    let yMax = 1.0, yMin = 0.0;
    for (const [name, col] of Object.entries(tr.terms || {})) {
      if (!palette.has(name) || !Array.isArray(col)) continue;
      termSeries.push({label: termLabel(name), values: col, color: palette.get(name)});
      for (const v of col) if (num(v) !== null) { yMax = Math.max(yMax, v); yMin = Math.min(yMin, v); }
    }
    if (m.replan_threshold !== null && own(tr.terms, 'effort')) {
      termSeries.push({label: 'REPLAN threshold ' + m.replan_threshold, flat: m.replan_threshold, color: '#b30000'});
      yMax = Math.max(yMax, m.replan_threshold * 1.1);
    }
    if (termSeries.length) {
      content.push(chart(tr.st, termSeries, Math.ceil(yMax * 4) / 4, marks, Math.floor(yMin * 4) / 4));
    }
    const cols = ['step', 'sim. s', 'action', 'observation', 'tool result', 'δ_task / hidden p',
      'controller terms', 'recorded decision: reason', 'tokens (Σ so far)',
      ...replays.map((r) => r.controller + ' (replay: counterfactual)')];
    const widths = [4, 5, 14, 12, 13, 7, 16, 13, 7, ...replays.map(() => 9)];
    const colgroup = h('colgroup', null, widths.map((w) => { const c = h('col'); c.style.width = w + '%'; return c; }));
    const body = h('tbody');
    for (let i = 0; i < n; i++) {
      const sig = str(tr.sig[i]);
      const cells = [];
      let diverge = false;
      for (const r of replays) {
        const [text, first] = counterfactual(r, tr.st[i]);
        diverge = diverge || first;
        cells.push(h('td', {class: first ? 'cf' : ''}, text));
      }
      const err = str(tr.err[i]);
      const agent = str(tr.ag[i]) !== str(tr.ag[0]) ? '[' + str(tr.ag[i]) + '] ' : '';
      const row = h('tr', null,
        h('td', {class: 'n'}, String(tr.st[i])),
        h('td', {class: 'n'}, fmt(tr.t[i], 1)),
        h('td', null, agent + str(tr.act[i])),
        h('td', null, str(tr.obs[i])),
        h('td', null, str(tr.res[i]), ...(err ? [' ', h('span', {class: 'over'}, '[' + err + ']')] : [])),
        h('td', {class: 'n'}, fmt(tr.d[i], 3) + ' / ' + fmt(tr.p[i], 3)),
        h('td', null, termsCell(tr, i, m)),
        h('td', null, h('b', null, sig.toUpperCase()), ': ' + str(tr.rsn[i])),
        h('td', {class: 'n'}, tokens(i)),
        cells);
      if (ROW_CLASS.test(sig)) row.classList.add(sig);
      if (diverge) row.classList.add('diverge');
      body.appendChild(row);
    }
    content.push(h('div', {class: 'table'}, h('table', null, colgroup,
      h('thead', null, h('tr', null, cols.map((c) => h('th', null, c)))), body)));
    if (replays.length) {
      content.push(h('p', {class: 'hint'}, 'Replay: the recorded decision against what each replayed ' +
        'controller would have decided on the same record; the framed row is the first divergence, after ' +
        'which the trajectory is unknown.'));
    }
    box.replaceChildren(...content);
    document.getElementById('trace-title').textContent = 'Episode trace: ' + p.c + ', episode ' + p.e;
    if (location.hash !== '#episode=' + encodeURIComponent(key)) {
      history.replaceState(null, '', '#episode=' + encodeURIComponent(key));
    }
    document.getElementById('trace-title').scrollIntoView({block: 'start'});
  }
  renderEpisodes();
  const m = /^#episode=(.+)$/.exec(location.hash);
  if (m) {
    let key = null;
    try { key = decodeURIComponent(m[1]); } catch (e) { key = null; }  // a malformed link opens nothing
    if (key !== null) openTrace(key);
  }
  window.oparOpenTrace = openTrace;
})();
