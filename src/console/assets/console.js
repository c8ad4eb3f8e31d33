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

const clip = (s, n) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const time = (ms) => (ms ? new Date(ms).toLocaleTimeString() : '–');
const num = (v, digits = 0) => (v === undefined || v === null ? '–' : Number(v).toFixed(digits));

// ---- topology ----

function showDetails(node) {
  const box = $('details');
  box.replaceChildren(el('h3', {}, node.label));
  const dl = el('dl');
  for (const [k, v] of node.details) dl.append(el('dt', {}, k), el('dd', {}, v));
  box.append(dl);
  for (const g of document.querySelectorAll('#graph .node.selected')) g.classList.remove('selected');
  document.querySelector(`#graph .node[data-node-id="${CSS.escape(node.id)}"]`)?.classList.add('selected');
}

function drawGraph(graph) {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 46, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const s of graph.subtopologies) g.setNode(`sub:${s}`, { label: `Sub-topology ${s}` });
  for (const n of graph.nodes) {
    const label = clip(n.label, 34);
    const sublabel = clip(n.sublabel, 44);
    g.setNode(n.id, { width: Math.max(label.length * 7, sublabel.length * 6) + 24, height: 40, node: n, label, sublabel });
    if (n.subtopology !== undefined && n.kind !== 'topic') g.setParent(n.id, `sub:${n.subtopology}`);
  }
  graph.edges.forEach((e, i) => g.setEdge(e.from, e.to, { style: e.style }, `e${i}`));
  dagre.layout(g);

  const { width, height } = g.graph();
  // Natural size, scaled down to the card's width (CSS max-width) so that a wide topology is seen whole.
  const svg = el('svg', { width: Math.ceil(width), height: Math.ceil(height), viewBox: `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`, role: 'img', 'aria-label': 'topology graph' });
  // Never below three quarters of its natural size: a wide topology scrolls rather than shrinking into unreadable text.
  svg.style.minWidth = `${Math.round(width * 0.75)}px`;
  for (const s of graph.subtopologies) {
    const c = g.node(`sub:${s}`);
    if (!c || c.width === undefined) continue;
    const group = el('g', { class: 'cluster', 'data-subtopology': s });
    group.append(el('rect', { x: c.x - c.width / 2, y: c.y - c.height / 2, width: c.width, height: c.height, rx: 6 }), el('text', { x: c.x - c.width / 2 + 6, y: c.y - c.height / 2 + 12 }, c.label));
    svg.append(group);
  }
  for (const id of g.edges()) {
    const e = g.edge(id);
    const d = e.points.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
    svg.append(el('path', { class: `edge ${e.style}`, d, 'marker-end': 'url(#arrow)', 'data-from': id.v, 'data-to': id.w }));
  }
  const defs = el('defs');
  defs.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/></marker>';
  svg.prepend(defs);
  for (const n of graph.nodes) {
    const box = g.node(n.id);
    const boundary = n.kind === 'stage' ? (n.boundary === 'external' ? 'outside-txn' : 'inside-txn') : '';
    const group = el('g', { class: `node ${n.kind} ${boundary}`, 'data-node-id': n.id, 'data-kind': n.kind, 'data-boundary': n.boundary, tabindex: 0 });
    const x = box.x - box.width / 2;
    const y = box.y - box.height / 2;
    group.append(
      el('title', {}, `${n.label}\n${n.sublabel}`),
      el('rect', { x, y, width: box.width, height: box.height, rx: n.kind === 'topic' ? 14 : 4 }),
      el('text', { x: x + 10, y: y + 16 }, box.label),
      el('text', { x: x + 10, y: y + 31, class: 'sub' }, box.sublabel),
    );
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

function renderMembers(s) {
  const rows = s.members.map((m) => {
    const head = [m.clientId, m.host];
    const tail = [m.partitions.join(', ') || '(none)', time(m.lastCommitAt)];
    if (!m.metrics.reachable) {
      return row([...head, { text: 'unknown', class: 'unreachable' }, ...tail, { text: `metrics unreachable: ${m.metrics.reason}`, class: 'unreachable', colspan: 5 }], { 'data-client-id': m.clientId, 'data-reachable': 'false' });
    }
    const x = m.metrics;
    return row(
      [...head, x.state ?? '–', ...tail, { text: num(x.commitsPerSecond, 1), class: 'num' }, { text: x.aborts, class: 'num' }, { text: x.fencings, class: 'num' }, { text: num(x.recordsInPerSecond, 1), class: 'num' }, { text: num(x.recordsOutPerSecond, 1), class: 'num' }],
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

function follow() {
  const source = new EventSource('/api/events');
  source.onopen = () => {
    $('connection').dataset.state = 'live';
    $('connection').textContent = 'live';
  };
  source.onmessage = (ev) => render(JSON.parse(ev.data));
  // EventSource reconnects by itself; say so meanwhile.
  source.onerror = () => {
    $('connection').dataset.state = 'reconnecting';
    $('connection').textContent = 'reconnecting…';
  };
}

$('dlq-alert-dismiss').addEventListener('click', () => {
  dlqBaseline = Number($('dlq-total').textContent) || 0;
  $('dlq-alert').hidden = true;
});
loadTopology().catch((e) => $('graph').replaceChildren(el('p', { class: 'muted' }, `cannot load the topology: ${e}`)));
follow();
