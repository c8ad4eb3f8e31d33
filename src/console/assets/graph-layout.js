// Where each box of the topology goes, so that the whole graph fits the panel. Each sub-topology is
// a column laid out top to bottom by dagre (with the topics it writes); the columns are then packed
// in rows, as many rows as make the graph largest in the space there is. A topic read in another
// column (a repartition topic) joins the columns with an edge drawn across. The dead-letter topic,
// written by no stage in particular, gets a column of its own at the end.
'use strict';

const LINE = 14;
const MAX_LINE = 24;
const CHAR = 6.6;
const SUB_CHAR = 5.9;
const COLUMN_GAP = 36;
const ROW_GAP = 30;
const TITLE = 16;

/** A long name in two lines, cut after a `-`, `.` or `_` near its middle; longer still, clipped. */
function labelLines(label) {
  if (label.length <= MAX_LINE) return [label];
  const middle = label.length / 2;
  let cut = -1;
  for (let i = 1; i < label.length - 1; i++) if ('-._ '.includes(label[i]) && (cut < 0 || Math.abs(i + 1 - middle) < Math.abs(cut - middle))) cut = i + 1;
  const clip = (s) => (s.length > MAX_LINE ? `${s.slice(0, MAX_LINE - 1)}…` : s);
  return cut < 0 ? [clip(label)] : [clip(label.slice(0, cut)), clip(label.slice(cut))];
}

/** A node's column: its sub-topology; a topic that of the stage or store writing it, else of its first reader. */
function columnsOf(graph) {
  const column = new Map();
  for (const n of graph.nodes) if (n.kind !== 'topic' && n.subtopology !== undefined) column.set(n.id, n.subtopology);
  for (const e of graph.edges) if (!column.has(e.to) && column.has(e.from)) column.set(e.to, column.get(e.from));
  for (const e of graph.edges) if (!column.has(e.from) && column.has(e.to)) column.set(e.from, column.get(e.to));
  return column;
}

/** One column by dagre: boxes relative to the column's top-left corner, edges inside it, the sub-topology's frame. */
function layoutColumn(key, nodes, edges, title, framed) {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 14, ranksep: 24, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  const frame = `frame:${key}`;
  if (framed) g.setNode(frame, {});
  for (const n of nodes) {
    const lines = labelLines(n.label);
    const sublabel = n.sublabel.length > 44 ? `${n.sublabel.slice(0, 43)}…` : n.sublabel;
    const width = Math.ceil(Math.max(...lines.map((l) => l.length * CHAR), sublabel.length * SUB_CHAR)) + 20;
    g.setNode(n.id, { width, height: lines.length * LINE + LINE + 10, lines, sublabel });
    if (framed && n.kind !== 'topic') g.setParent(n.id, frame);
  }
  edges.forEach((e, i) => g.setEdge(e.from, e.to, { style: e.style }, `e${i}`));
  dagre.layout(g);
  const boxes = new Map(nodes.map((n) => {
    const b = g.node(n.id);
    return [n.id, { x: b.x - b.width / 2, y: b.y - b.height / 2 + TITLE, width: b.width, height: b.height, lines: b.lines, sublabel: b.sublabel }];
  }));
  const paths = g.edges().map((id) => ({ from: id.v, to: id.w, style: g.edge(id).style, points: g.edge(id).points.map((p) => ({ x: p.x, y: p.y + TITLE })) }));
  const f = framed ? g.node(frame) : undefined;
  const box = f && f.width !== undefined ? { x: f.x - f.width / 2, y: f.y - f.height / 2 + TITLE, width: f.width, height: f.height } : undefined;
  const { width, height } = g.graph();
  // The title sits above the column, over its frame when it has one.
  return { boxes, paths, frame: box, title, width: Math.max(width, title.length * SUB_CHAR), height: height + TITLE };
}

/** Columns split into `rows` rows, in order; the size of the whole. */
function pack(columns, rows) {
  const perRow = Math.ceil(columns.length / rows);
  const placed = [];
  let top = 0;
  let width = 0;
  for (let r = 0; r * perRow < columns.length; r++) {
    const row = columns.slice(r * perRow, (r + 1) * perRow);
    let left = 0;
    for (const c of row) {
      placed.push({ column: c, dx: left, dy: top });
      left += c.width + COLUMN_GAP;
    }
    width = Math.max(width, left - COLUMN_GAP);
    top += Math.max(...row.map((c) => c.height)) + ROW_GAP;
  }
  return { placed, width, height: top - ROW_GAP };
}

/**
 * The whole layout for a space of `available` {width, height} pixels: node boxes and frames in graph
 * coordinates, edges as point lists (inside a column) or as from/to boxes (across columns), the size,
 * and the scale that fits it (never above 1.2: a small topology is not blown up).
 */
function layoutTopology(graph, available) {
  const column = columnsOf(graph);
  const keys = [...graph.subtopologies.filter((s) => [...column.values()].includes(s)), 'apart'];
  const columns = [];
  for (const key of keys) {
    const nodes = graph.nodes.filter((n) => (column.has(n.id) ? column.get(n.id) === key : key === 'apart'));
    if (nodes.length === 0) continue;
    const ids = new Set(nodes.map((n) => n.id));
    const edges = graph.edges.filter((e) => ids.has(e.from) && ids.has(e.to));
    const title = key === 'apart' ? 'Dead letters: a record any stage cannot process' : `Sub-topology ${key}`;
    columns.push(layoutColumn(key, nodes, edges, title, key !== 'apart'));
  }
  let best;
  for (let rows = 1; rows <= columns.length; rows++) {
    const packed = pack(columns, rows);
    const scale = Math.min(1.2, available.width / packed.width, available.height / packed.height);
    if (!best || scale > best.scale + 0.01) best = { ...packed, scale };
  }
  const boxes = new Map();
  const frames = [];
  const titles = [];
  const paths = [];
  const move = (p, dx, dy) => ({ x: p.x + dx, y: p.y + dy });
  for (const { column: c, dx, dy } of best.placed) {
    for (const [id, b] of c.boxes) boxes.set(id, { ...b, ...move(b, dx, dy) });
    if (c.frame) frames.push({ ...c.frame, ...move(c.frame, dx, dy) });
    titles.push({ text: c.title, x: dx, y: dy + TITLE - 5 });
    for (const p of c.paths) paths.push({ ...p, points: p.points.map((q) => move(q, dx, dy)) });
  }
  const inside = new Set(paths.map((p) => `${p.from}→${p.to}`));
  const across = graph.edges.filter((e) => !inside.has(`${e.from}→${e.to}`) && boxes.has(e.from) && boxes.has(e.to));
  return { boxes, frames, titles, paths, across, width: best.width, height: best.height, scale: best.scale };
}
