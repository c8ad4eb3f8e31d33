// The onceflow console page: draws the topology once (dagre lays it out, this file draws the SVG) and
// re-renders the live tables from each server-sent snapshot. No framework: the page must work from the
// package alone, with nothing fetched from the network.
'use strict';

const SVG = 'http://www.w3.org/2000/svg';
const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, text) {
  const node = tag === 'svg' || ['g', 'rect', 'text', 'path', 'polyline', 'title'].includes(tag) ? document.createElementNS(SVG, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

const time = (ms) => (ms ? new Date(ms).toLocaleTimeString() : '–');
const num = (v, digits = 0) => (v === undefined || v === null ? '–' : Number(v).toFixed(digits));

// ---- topology ----

function showDetails(node) {
  const box = $('details');
  const close = el('button', { type: 'button', class: 'close', 'aria-label': 'close' }, '×');
  close.addEventListener('click', () => {
    box.hidden = true;
    for (const g of document.querySelectorAll('#graph .node.selected')) g.classList.remove('selected');
  });
  box.replaceChildren(close, el('h3', {}, node.label));
  box.hidden = false;
  const dl = el('dl');
  for (const [k, v] of node.details) dl.append(el('dt', {}, k), el('dd', {}, v));
  box.append(dl);
  for (const g of document.querySelectorAll('#graph .node.selected')) g.classList.remove('selected');
  document.querySelector(`#graph .node[data-node-id="${CSS.escape(node.id)}"]`)?.classList.add('selected');
}

/** The space the graph may take: the panel's width, the window's height below the panel's top. */
function availableSpace() {
  const box = $('graph').getBoundingClientRect();
  return { width: Math.max(240, box.width - 4), height: Math.max(260, window.innerHeight - box.top - 16) };
}

/**
 * An edge between columns (a repartition topic and its reader): an S-curve from the topic's side into
 * the reader's side when the reader is beside it, from the topic's bottom into the reader's top when
 * the reader is in a row below.
 */
function acrossPath(from, to) {
  const f = (x, y) => `${x.toFixed(1)},${y.toFixed(1)}`;
  if (to.y > from.y + from.height) {
    const [sx, sy, ex, ey] = [from.x + from.width / 2, from.y + from.height, to.x + to.width / 2, to.y];
    const bend = (ey - sy) / 2;
    return `M${f(sx, sy)} C${f(sx, sy + bend)} ${f(ex, ey - bend)} ${f(ex, ey)}`;
  }
  const rightward = to.x >= from.x + from.width;
  const [sx, sy] = [rightward ? from.x + from.width : from.x, from.y + from.height / 2];
  const [ex, ey] = [rightward ? to.x : to.x + to.width, to.y + to.height / 2];
  const bend = (ex - sx) / 2;
  return `M${f(sx, sy)} C${f(sx + bend, sy)} ${f(ex - bend, ey)} ${f(ex, ey)}`;
}

function drawGraph(graph) {
  const layout = layoutTopology(graph, availableSpace());
  const width = Math.ceil(layout.width) + 4;
  const height = Math.ceil(layout.height) + 4;
  // Drawn at the scale that fits: the whole topology in view without scrolling, text as large as that allows.
  const svg = el('svg', { width: Math.floor(width * layout.scale), height: Math.floor(height * layout.scale), viewBox: `-2 -2 ${width} ${height}`, role: 'img', 'aria-label': 'topology graph', 'data-scale': layout.scale.toFixed(2) });
  const defs = el('defs');
  defs.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/></marker>';
  svg.append(defs);
  for (const f of layout.frames) {
    const frame = el('g', { class: 'cluster' });
    frame.append(el('rect', { x: f.x, y: f.y, width: f.width, height: f.height, rx: 6 }));
    svg.append(frame);
  }
  for (const t of layout.titles) svg.append(el('text', { class: 'column-title', x: t.x, y: t.y }, t.text));
  for (const p of layout.paths) {
    const d = p.points.map((q, i) => `${i === 0 ? 'M' : 'L'}${q.x.toFixed(1)},${q.y.toFixed(1)}`).join(' ');
    svg.append(el('path', { class: `edge ${p.style}`, d, 'marker-end': 'url(#arrow)', 'data-from': p.from, 'data-to': p.to }));
  }
  for (const e of layout.across) svg.append(el('path', { class: `edge ${e.style} across`, d: acrossPath(layout.boxes.get(e.from), layout.boxes.get(e.to)), 'marker-end': 'url(#arrow)', 'data-from': e.from, 'data-to': e.to }));
  for (const n of graph.nodes) {
    const box = layout.boxes.get(n.id);
    const boundary = n.kind === 'stage' ? (n.boundary === 'external' ? 'outside-txn' : 'inside-txn') : '';
    const group = el('g', { class: `node ${n.kind} ${boundary}`, 'data-node-id': n.id, 'data-kind': n.kind, 'data-boundary': n.boundary, tabindex: 0 });
    group.append(el('title', {}, `${n.name}\n${n.sublabel}`), el('rect', { x: box.x, y: box.y, width: box.width, height: box.height, rx: n.kind === 'topic' ? 14 : 4 }));
    box.lines.forEach((line, i) => group.append(el('text', { x: box.x + 10, y: box.y + 15 + i * 14 }, line)));
    group.append(el('text', { x: box.x + 10, y: box.y + 15 + box.lines.length * 14, class: 'sub' }, box.sublabel));
    group.addEventListener('click', () => showDetails(n));
    group.addEventListener('keydown', (ev) => ev.key === 'Enter' && showDetails(n));
    svg.append(group);
  }
  $('graph').replaceChildren(svg);
}

async function loadTopology() {
  const res = await fetch('/api/topology');
  const body = await res.json();
  if (!res.ok) {
    $('graph').replaceChildren(el('p', { class: 'muted', id: 'graph-empty' }, body.error));
    return;
  }
  $('app-id').textContent = body.appId;
  drawGraph(body);
  // Fitted again when the window changes size; once per change, nothing runs meanwhile.
  let pending = false;
  window.addEventListener('resize', () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      drawGraph(body);
    });
  });
}

// ---- live state ----

let dlqBaseline;

function sparkline(values) {
  const w = 80;
  const h = 18;
  const svg = el('svg', { class: 'spark', width: w, height: h, viewBox: `0 0 ${w} ${h}` });
  if (values.length > 1) {
    const max = Math.max(1, ...values);
    const points = values.map((v, i) => `${((i / (values.length - 1)) * (w - 2) + 1).toFixed(1)},${(h - 1 - (v / max) * (h - 2)).toFixed(1)}`).join(' ');
    svg.append(el('polyline', { points }));
  }
  return svg;
}

function row(cells, attrs = {}) {
  const tr = el('tr', attrs);
  for (const c of cells) {
    if (c instanceof Node) tr.append(el('td').appendChild(c).parentNode);
    else tr.append(typeof c === 'object' && c !== null ? el('td', { class: c.class, colspan: c.colspan }, c.text) : el('td', {}, c));
  }
  return tr;
}

/** `orders-0`, `orders-1`, `orders-totals-repartition-0` as `orders 0,1 · orders-totals-repartition 0`. */
function partitionList(keys) {
  const byTopic = new Map();
  for (const key of keys) {
    const cut = key.lastIndexOf('-');
    const topic = key.slice(0, cut);
    byTopic.set(topic, [...(byTopic.get(topic) ?? []), key.slice(cut + 1)]);
  }
  return [...byTopic].map(([topic, partitions]) => `${topic} ${partitions.join(',')}`).join(' · ') || '(none)';
}

function renderMembers(s) {
  const rows = s.members.map((m) => {
    const head = [m.clientId, m.host];
    const tail = [{ text: partitionList(m.partitions), class: 'partitions' }, time(m.lastCommitAt)];
    if (!m.metrics.reachable) {
      return row([...head, { text: 'unknown', class: 'unreachable' }, ...tail, { text: `metrics unreachable: ${m.metrics.reason}`, class: 'unreachable', colspan: 5 }], { 'data-client-id': m.clientId, 'data-reachable': 'false' });
    }
    const x = m.metrics;
    // A member restoring moved tasks says how much is left; one keeping others' tasks warm says how many.
    const state = [x.state ?? '–', x.restoreRemaining > 0 ? `restoring, ${x.restoreRemaining} records left` : '', x.standbyTasks > 0 ? `${x.standbyTasks} standby` : ''].filter(Boolean).join(' · ');
    return row(
      [...head, state, ...tail, { text: num(x.commitsPerSecond, 1), class: 'num' }, { text: x.aborts, class: 'num' }, { text: x.fencings, class: 'num' }, { text: num(x.recordsInPerSecond, 1), class: 'num' }, { text: num(x.recordsOutPerSecond, 1), class: 'num' }],
      { 'data-client-id': m.clientId, 'data-reachable': 'true' },
    );
  });
  document.querySelector('#members tbody').replaceChildren(...rows);
  $('members-empty').hidden = s.members.length > 0;
}

function renderPartitions(s) {
  const rows = s.partitions.map((p) =>
    row(
      [p.topic, { text: p.partition, class: 'num' }, { text: p.committed ?? '–', class: 'num committed' }, { text: p.end, class: 'num end' }, { text: p.lag ?? '–', class: 'num lag' }, sparkline(p.lagHistory), p.owner ?? '–', time(p.lastCommitAt)],
      { 'data-partition': `${p.topic}-${p.partition}` },
    ),
  );
  document.querySelector('#partitions tbody').replaceChildren(...rows);
}

function renderDeadLetters(s) {
  const d = s.deadLetters;
  $('dlq-topic').textContent = d.following ? d.topic : `${d.topic} (not created yet)`;
  $('dlq-total').textContent = d.total;
  $('dlq-rate').textContent = d.lastMinute;
  document.querySelector('#dlq-latest tbody').replaceChildren(...d.latest.map((x) => row([time(x.at), x.code, x.stage, x.source], { title: x.message })));
  // The first look sets the baseline: what was there before the page opened is history, growth is news.
  dlqBaseline ??= d.total;
  const grown = d.total - dlqBaseline;
  const alert = $('dlq-alert');
  alert.hidden = grown <= 0;
  if (grown > 0) {
    const last = d.latest[0];
    $('dlq-alert-text').textContent = `${grown} new dead letter${grown === 1 ? '' : 's'} since you opened the console (${d.lastMinute} in the last minute)${last ? `; latest: ${last.code} at stage ${last.stage}, source ${last.source}` : ''}`;
  }
  alert.dataset.count = String(Math.max(0, grown));
}

function render(s) {
  $('app-id').textContent = s.appId;
  $('refreshed').textContent = `refreshed ${time(s.at)}`;
  $('group-state').textContent = s.group.state;
  $('group-members').textContent = s.group.members;
  $('group-changes').textContent = s.group.assignmentChanges;
  $('eos-committed').textContent = num(s.eos.committedLastMinute);
  $('eos-aborted').textContent = num(s.eos.abortedLastMinute);
  $('eos-note').textContent = s.eos.membersCounted === s.members.length ? '' : `transactions counted over ${s.eos.membersCounted} of ${s.members.length} members (the others' metrics are unreachable)`;
  renderMembers(s);
  renderPartitions(s);
  renderDeadLetters(s);
  $('problems-card').hidden = s.problems.length === 0;
  $('problems').replaceChildren(...s.problems.map((p) => el('li', {}, p)));
}

// Asked for, one request at a time, rather than streamed: a page whose requests all end lets a
// headless browser with a virtual time budget (a screenshot in CI) finish, where an open event stream never would.
const REFRESH_MS = 1_000;

function setConnection(state, text) {
  $('connection').dataset.state = state;
  $('connection').textContent = text;
}

async function follow() {
  try {
    const res = await fetch('/api/state', { cache: 'no-store' });
    const snapshot = await res.json();
    if (snapshot) render(snapshot);
    setConnection('live', 'live');
  } catch {
    setConnection('reconnecting', 'reconnecting…');
  }
  setTimeout(follow, REFRESH_MS);
}

$('dlq-alert-dismiss').addEventListener('click', () => {
  dlqBaseline = Number($('dlq-total').textContent) || 0;
  $('dlq-alert').hidden = true;
});
loadTopology().catch((e) => $('graph').replaceChildren(el('p', { class: 'muted' }, `cannot load the topology: ${e}`)));
follow();
