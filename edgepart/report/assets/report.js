/* edgepart report renderer: plain JS and SVG, no libraries, no network.
 *
 * Reads the document from the JSON script element "edgepart-data" and draws every
 * section. The op graph uses a layered DAG layout: partitions are stacked as horizontal bands in
 * plan order (a dependency order), nodes are layered by longest path inside their band, ordered
 * in each layer by barycenter sweeps and placed near the mean of their neighbours. Big graphs
 * start collapsed (partitions split into blocks of consecutive ops); clicking a group expands it,
 * clicking a band label collapses its partition. Everything is deterministic.
 * When done, window.edgepartReport = {ready: true, ...} (used by the browser tests).
 */
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("edgepart-data").textContent);
  const SVGNS = "http://www.w3.org/2000/svg";
  const N = D.ops.type.length;
  const P = D.processors.length;
  const AUTO_OPS = 300; // graphs up to this many ops start with one node per op
  const AUTO_NODES = 120; // more nodes than this in the first view: start with one per partition
  const BLOCK = 40; // ops per block when a big partition is collapsed into blocks

  // ------------------------------------------------------------------ helpers
  function h(tag, attrs, children) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    appendAll(e, children);
    return e;
  }
  function s(tag, attrs, children) {
    const e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    appendAll(e, children);
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    for (const k of Object.keys(attrs)) {
      const v = attrs[k];
      if (v === null || v === undefined) continue;
      if (k === "text") e.textContent = String(v);
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, String(v));
    }
  }
  function appendAll(e, children) {
    if (!children) return;
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
  }
  function esc(t) {
    return String(t).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  }
  function fmtTime(sec) {
    if (sec === null || sec === undefined) return "-";
    if (sec === 0) return "0";
    const a = Math.abs(sec);
    if (a >= 1) return sec.toFixed(3) + " s";
    if (a >= 1e-3) return (sec * 1e3).toFixed(3) + " ms";
    return (sec * 1e6).toFixed(1) + " \u00b5s";
  }
  function fmtUs(us) {
    if (us === null || us === undefined) return "-";
    if (us >= 1000) return (us / 1000).toFixed(2) + " ms";
    if (us >= 10) return us.toFixed(1);
    return us.toFixed(2);
  }
  function fmtBytes(b) {
    if (b === null || b === undefined) return "-";
    if (b >= 1 << 20) return (b / (1 << 20)).toFixed(2) + " MiB";
    if (b >= 1 << 10) return (b / (1 << 10)).toFixed(1) + " KiB";
    return b + " B";
  }
  function fmtRate(x) {
    for (const [u, sc] of [["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]]) if (x >= sc) return (x / sc).toPrecision(3) + " " + u;
    return x.toPrecision(3) + " ";
  }
  const procColor = (k) => (k >= 0 && k < P ? D.processors[k].color : "#9ca3af");
  const procName = (k) => (k >= 0 && k < P ? D.processors[k].name : "host");
  function textColor(hex) {
    const v = parseInt(hex.slice(1), 16);
    const r = (v >> 16) & 255, g = (v >> 8) & 255, b = v & 255;
    return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? "#111" : "#fff";
  }
  const tip = h("div", { class: "tip" });
  document.body.appendChild(tip);
  window.addEventListener("scroll", () => (tip.style.display = "none"), { passive: true });
  function hover(el, textFn) {
    el.addEventListener("mousemove", (ev) => {
      tip.textContent = textFn();
      tip.style.display = "block";
      tip.style.left = ev.clientX + 14 + "px";
      tip.style.top = ev.clientY + 12 + "px";
    });
    el.addEventListener("mouseleave", () => (tip.style.display = "none"));
  }
  const typeName = (i) => D.types[D.ops.type[i]];
  const partOf = (i) => D.ops.part[i];
  const partProc = (k) => D.partitions[k].proc;

  // ------------------------------------------------------------------ header
  function header() {
    const m = D.meta;
    const figs = [
      ["model", m.model],
      ["device", m.profile_title + " (" + m.profile + ")"],
      ["ops", m.num_ops],
      ["partitions", m.num_partitions],
      ["predicted latency", fmtTime(m.latency_s)],
      ["TFLite default", fmtTime(m.baseline_latency_s)],
    ];
    if (m.latency_s && m.baseline_latency_s) figs.push(["speedup", (m.baseline_latency_s / m.latency_s).toFixed(3) + "x"]);
    if (m.objective === "throughput") figs.push(["period", fmtTime(m.period_s)]);
    if (m.transferred_bytes !== null && m.transferred_bytes !== undefined) figs.push(["transferred", fmtBytes(m.transferred_bytes)]);
    const hd = document.getElementById("top");
    hd.appendChild(h("h1", { text: "edgepart report: " + m.model + " on " + m.profile }));
    hd.appendChild(h("div", { class: "figures" }, figs.map(([k, v]) => h("div", { class: "figure" }, [h("span", { text: k }), h("b", { text: String(v) })]))));
    if (m.notes.length) hd.appendChild(h("ul", { class: "notes" }, m.notes.map((n) => h("li", { text: n }))));
  }

  // ------------------------------------------------------------------ graph model
  const G = {
    colorBy: "edgepart",
    mode: "auto",
    expanded: new Set(), // group keys shown as their ops
    collapsed: new Set(), // partition indices shown as one node
    selected: null,
    scale: 1, tx: 0, ty: 0,
    bbox: null,
  };
  // ops of each partition in topological order, and their block index
  const partOps = D.partitions.map(() => []);
  for (let i = 0; i < N; i++) if (partOf(i) >= 0) partOps[partOf(i)].push(i);
  for (const list of partOps) list.sort((a, b) => D.ops.topo[a] - D.ops.topo[b]);
  const blockOf = new Int32Array(N);
  for (const list of partOps) list.forEach((op, k) => (blockOf[op] = Math.floor(k / BLOCK)));
  const groupSize = new Map();
  for (let i = 0; i < N; i++) groupSize.set(D.ops.group[i], (groupSize.get(D.ops.group[i]) || 0) + 1);

  function keyOf(i) {
    const p = partOf(i);
    if (G.collapsed.has(p)) return "p" + p;
    let key = "o" + i;
    if (G.mode === "partitions") key = "p" + p;
    else if (G.mode === "fused") key = groupSize.get(D.ops.group[i]) > 1 ? "f" + D.ops.group[i] : "o" + i;
    else if (G.mode === "auto" && N > AUTO_OPS && partOps[p].length > BLOCK) key = "b" + p + "_" + blockOf[i];
    return G.expanded.has(key) ? "o" + i : key;
  }

  // true when partition k is drawn as one node
  const asOne = (k) => partOps[k].length > 0 && keyOf(partOps[k][0]) === "p" + k;

  function buildGraph() {
    const nodes = new Map(); // key -> node
    const opKey = new Array(N);
    for (let i = 0; i < N; i++) {
      const k = keyOf(i);
      opKey[i] = k;
      let nd = nodes.get(k);
      if (!nd) {
        nd = { key: k, ops: [], band: partOf(i), minTopo: D.ops.topo[i], io: null };
        nodes.set(k, nd);
      }
      nd.ops.push(i);
      if (D.ops.topo[i] < nd.minTopo) nd.minTopo = D.ops.topo[i];
    }
    const nPart = D.partitions.length;
    D.io.forEach((io, k) => {
      const key = "i" + k;
      nodes.set(key, { key, ops: [], band: io.kind === "input" ? -1 : nPart, minTopo: io.kind === "input" ? -1 : N + k, io });
    });
    const nodeKey = (id) => (id < N ? opKey[id] : "i" + (id - N));
    const emap = new Map();
    for (const [a, b, t, bytes] of D.edges) {
      const ka = nodeKey(a), kb = nodeKey(b);
      if (ka === kb) continue;
      const id = ka + ">" + kb;
      let e = emap.get(id);
      if (!e) {
        e = { a: ka, b: kb, tensors: new Set(), bytes: 0 };
        emap.set(id, e);
      }
      if (!e.tensors.has(t)) {
        e.tensors.add(t);
        e.bytes += bytes;
      }
    }
    const list = [...nodes.values()];
    for (const nd of list) {
      nd.preds = [];
      nd.succs = [];
    }
    const edges = [...emap.values()];
    for (const e of edges) {
      const A = nodes.get(e.a), B = nodes.get(e.b);
      A.succs.push(B);
      B.preds.push(A);
      e.cross = A.band !== B.band;
      e.A = A;
      e.B = B;
    }
    return { nodes: list, edges, byKey: nodes };
  }

  function nodeLabel(nd) {
    if (nd.io) return (nd.io.kind === "input" ? "in: " : "out: ") + nd.io.name;
    const k = nd.key;
    if (k[0] === "o") return typeName(nd.ops[0]) + " #" + nd.ops[0];
    const counts = new Map();
    for (const op of nd.ops) counts.set(typeName(op), (counts.get(typeName(op)) || 0) + 1);
    const top = [...counts.entries()].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1));
    if (k[0] === "f") return top.map(([t]) => t).join("+");
    const head = k[0] === "p" ? D.partitions[nd.band].id : "block " + k.split("_")[1];
    return head + ": " + nd.ops.length + " ops (" + top.slice(0, 2).map(([t, c]) => t + "\u00d7" + c).join(", ") + (top.length > 2 ? ", \u2026" : "") + ")";
  }
  function nodeProc(nd) {
    if (nd.io) return -1;
    if (G.colorBy === "default") {
      const first = D.ops.dproc[nd.ops[0]];
      return nd.ops.every((op) => D.ops.dproc[op] === first) ? first : -2;
    }
    return D.ops.proc[nd.ops[0]];
  }

  // ------------------------------------------------------------------ layout
  const NODE_H = 24, LAYER_GAP = 58, BAND_GAP = 34, X_GAP = 18, CHAR_W = 7.0, LEFT = 290;

  function layout(gr) {
    const nodes = gr.nodes;
    for (const nd of nodes) {
      nd.label = nodeLabel(nd);
      nd.w = Math.max(48, Math.min(320, 14 + nd.label.length * CHAR_W));
    }
    // topological order of the quotient graph, ties by smallest op position
    const order = [];
    const indeg = new Map(nodes.map((nd) => [nd, nd.preds.length]));
    const ready = nodes.filter((nd) => nd.preds.length === 0);
    const cmp = (a, b) => a.band - b.band || a.minTopo - b.minTopo;
    ready.sort(cmp);
    while (ready.length) {
      const nd = ready.shift();
      order.push(nd);
      for (const s2 of nd.succs) {
        indeg.set(s2, indeg.get(s2) - 1);
        if (indeg.get(s2) === 0) {
          let lo = 0, hi = ready.length;
          while (lo < hi) { const mid = (lo + hi) >> 1; if (cmp(ready[mid], s2) < 0) lo = mid + 1; else hi = mid; }
          ready.splice(lo, 0, s2);
        }
      }
    }
    if (order.length !== nodes.length) throw new Error("graph has a cycle after grouping");
    order.forEach((nd, k) => (nd.ord = k));
    // layers: bands stacked in plan order, longest path inside a band
    const bands = [...new Set(nodes.map((nd) => nd.band))].sort((a, b) => a - b);
    const byBand = new Map(bands.map((b) => [b, []]));
    for (const nd of order) byBand.get(nd.band).push(nd);
    let start = 0;
    const bandLayers = new Map();
    for (const b of bands) {
      let top = start;
      for (const nd of byBand.get(b)) {
        let L = start;
        for (const p of nd.preds) if (p.layer + 1 > L) L = p.layer + 1;
        nd.layer = L;
        if (L > top) top = L;
      }
      bandLayers.set(b, [start, top]);
      start = top + 1;
    }
    const nLayers = start;
    const layers = Array.from({ length: nLayers }, () => []);
    for (const nd of order) layers[nd.layer].push(nd);
    // an edge spanning several layers gets a thin virtual node on each layer it passes, so the
    // ordering and placement route it beside the nodes in between instead of through them
    for (const nd of nodes) { nd.up = []; nd.down = []; }
    for (const e of gr.edges) {
      e.path = [e.A];
      let prev = e.A;
      for (let L = e.A.layer + 1; L < e.B.layer; L++) {
        const d = { dummy: true, w: 6, layer: L, up: [prev], down: [], ord: e.A.ord + 0.5 };
        prev.down.push(d);
        layers[L].push(d);
        e.path.push(d);
        prev = d;
      }
      prev.down.push(e.B);
      e.B.up.push(prev);
      e.path.push(e.B);
    }
    layers.forEach((Ls) => Ls.forEach((nd, k) => (nd.pos = k)));
    // barycenter sweeps
    const bary = (nd, side) => {
      const nb = side === "up" ? nd.up : nd.down;
      if (!nb.length) return nd.pos;
      let sum = 0;
      for (const m of nb) sum += m.pos;
      return sum / nb.length;
    };
    for (let it = 0; it < 4; it++) {
      const down = it % 2 === 0;
      const seq = down ? layers : [...layers].reverse();
      for (const Ls of seq) {
        const key = new Map(Ls.map((nd) => [nd, bary(nd, down ? "up" : "down")]));
        Ls.sort((a, b) => key.get(a) - key.get(b) || a.ord - b.ord);
        Ls.forEach((nd, k) => (nd.pos = k));
      }
    }
    // x: each layer packed left to right, then pulled towards its neighbours' mean
    for (const Ls of layers) {
      let x = 0;
      for (const nd of Ls) { nd.x = x + nd.w / 2; x += nd.w + X_GAP; }
    }
    for (let it = 0; it < 6; it++) {
      const down = it % 2 === 0;
      const seq = down ? layers : [...layers].reverse();
      for (const Ls of seq) {
        const want = Ls.map((nd) => {
          const nb = down ? nd.up : nd.down;
          let sum = 0, wt = 0;
          for (const m of nb) {
            const w = m.dummy ? 0.05 : 1;
            sum += w * m.x;
            wt += w;
          }
          return wt ? sum / wt : nd.x;
        });
        placeLayer(Ls, want);
      }
    }
    let minX = Infinity, maxX = -Infinity;
    for (const Ls of layers) for (const nd of Ls) { minX = Math.min(minX, nd.x - nd.w / 2); maxX = Math.max(maxX, nd.x + nd.w / 2); }
    for (const Ls of layers) for (const nd of Ls) nd.x -= minX - LEFT; // room for band labels
    // y: layers, with a gap between bands
    let y = 20;
    const layerY = [];
    let prevBand = null;
    for (let L = 0; L < nLayers; L++) {
      const b = layers[L].length ? layers[L][0].band : prevBand;
      if (prevBand !== null && b !== prevBand) y += BAND_GAP;
      layerY.push(y);
      y += LAYER_GAP;
      prevBand = b;
    }
    for (const Ls of layers) for (const nd of Ls) nd.y = layerY[nd.layer];
    const width = maxX - minX + LEFT + 40;
    const bandBoxes = [];
    for (const b of bands) {
      const [l0, l1] = bandLayers.get(b);
      bandBoxes.push({ band: b, y0: layerY[l0] - 14, y1: layerY[l1] + NODE_H + 14 });
    }
    return { width, height: y + 20, bandBoxes };
  }

  // Positions for one layer's nodes (in their order) as close as possible to ``want`` in the
  // least-squares sense while keeping neighbours X_GAP apart: with c_k the smallest offset of
  // node k from node 0, x_k - c_k must be non-decreasing, which is isotonic regression (pool
  // adjacent violators) of want_k - c_k.
  // Virtual nodes weigh little, so the ops keep their places and the edges make way.
  function placeLayer(Ls, want) {
    const c = [0];
    for (let k = 1; k < Ls.length; k++) c.push(c[k - 1] + Ls[k - 1].w / 2 + X_GAP + Ls[k].w / 2);
    const stack = [];
    for (let k = 0; k < Ls.length; k++) {
      const wt = Ls[k].dummy ? 0.05 : 1;
      stack.push({ sum: wt * (want[k] - c[k]), wt, n: 1 });
      while (stack.length > 1) {
        const a = stack[stack.length - 2], b = stack[stack.length - 1];
        if (a.sum / a.wt <= b.sum / b.wt) break;
        stack.pop();
        a.sum += b.sum;
        a.wt += b.wt;
        a.n += b.n;
      }
    }
    let k = 0;
    for (const blk of stack) for (let j = 0; j < blk.n; j++, k++) Ls[k].x = blk.sum / blk.wt + c[k];
  }

  // ------------------------------------------------------------------ graph rendering
  let graphSvg, viewport;
  function renderGraph() {
    tip.style.display = "none"; // its node may be gone
    const gr = buildGraph();
    const lay = layout(gr);
    G.current = gr;
    while (viewport.firstChild) viewport.removeChild(viewport.firstChild);
    const bandsG = s("g", { class: "bands" });
    for (const bb of lay.bandBoxes) {
      if (bb.band < 0 || bb.band >= D.partitions.length) continue;
      const p = D.partitions[bb.band];
      const col = procColor(p.proc);
      const g = s("g", { class: "band", "data-partition": p.id }, [
        s("rect", { x: 0, y: bb.y0, width: lay.width, height: bb.y1 - bb.y0, fill: col, "fill-opacity": 0.07 }),
        s("rect", { x: 0, y: bb.y0, width: 5, height: bb.y1 - bb.y0, fill: col }),
        s("text", { x: 12, y: bb.y0 + 16, text: p.id + " \u00b7 " + p.unit + " \u00b7 " + p.delegate }),
        s("text", { x: 12, y: bb.y0 + 31, class: "sub", text: p.ops + " ops \u00b7 " + fmtTime(p.duration_s) + (asOne(bb.band) ? " \u00b7 click to expand" : " \u00b7 click to collapse") }),
      ]);
      g.style.cursor = "pointer";
      g.addEventListener("click", () => {
        if (asOne(bb.band)) {
          G.collapsed.delete(bb.band);
          G.expanded.add("p" + bb.band);
        } else {
          G.collapsed.add(bb.band);
          G.expanded.delete("p" + bb.band);
        }
        renderGraph();
      });
      bandsG.appendChild(g);
    }
    viewport.appendChild(bandsG);
    const edgesG = s("g", { class: "edges" });
    const labelsG = s("g", { class: "edge-labels" });
    for (const e of gr.edges) {
      // vertical Bezier segments from each point's bottom to the next one's top; virtual
      // nodes are passed straight through
      let d = "";
      let x1 = 0;
      for (let k = 0; k + 1 < e.path.length; k++) {
        const a = e.path[k], b = e.path[k + 1];
        const ya = a.y + NODE_H, yb = b.y;
        if (k === 0) d += "M" + a.x.toFixed(1) + "," + ya;
        else if (a.dummy) d += " L" + a.x.toFixed(1) + "," + ya;
        const my = (ya + yb) / 2;
        d += " C" + a.x.toFixed(1) + "," + my + " " + b.x.toFixed(1) + "," + my + " " + b.x.toFixed(1) + "," + yb;
        x1 = a.x;
      }
      const x2 = e.B.x, y2 = e.B.y;
      const path = s("path", { class: "edge" + (e.cross ? " cross" : ""), d });
      edgesG.appendChild(path);
      if (e.cross) {
        path.setAttribute("data-bytes", e.bytes);
        const label = fmtBytes(e.bytes);
        const lx = (x1 + x2) / 2, ly = y2 - 16;
        const w = 8 + label.length * 5.6;
        const lg = s("g", { class: "edge-label" }, [
          s("rect", { x: lx - w / 2, y: ly - 9, width: w, height: 14, rx: 3 }),
          s("text", { x: lx, y: ly + 2, "text-anchor": "middle", text: label }),
        ]);
        hover(lg, () => e.tensors.size + " tensor(s) cross from " + bandName(e.A) + " to " + bandName(e.B) + ": " + fmtBytes(e.bytes) + " per inference");
        labelsG.appendChild(lg);
      }
    }
    viewport.appendChild(edgesG);
    const nodesG = s("g", { class: "nodes" });
    for (const nd of gr.nodes) {
      const pk = nodeProc(nd);
      const fill = pk === -2 ? "#e5e7eb" : nd.io ? "#fff" : procColor(pk);
      const cls = "node " + (nd.io ? "io" : nd.key[0] === "o" ? "op" : "group");
      const attrs = { class: cls, transform: "translate(" + (nd.x - nd.w / 2).toFixed(1) + "," + nd.y + ")", "data-key": nd.key, "data-proc": nd.io ? "" : pk === -2 ? "mixed" : procName(pk), "data-color": fill };
      if (nd.key[0] === "o") attrs["data-op"] = nd.ops[0];
      else if (!nd.io) { attrs["data-group"] = nd.key; attrs["data-ops"] = nd.ops.length; }
      const g = s("g", attrs, [
        s("rect", { width: nd.w, height: NODE_H, rx: nd.io ? 12 : 4, fill }),
        s("text", { x: nd.w / 2, y: 16, "text-anchor": "middle", fill: nd.io ? "#111" : textColor(pk === -2 ? "#e5e7eb" : fill), text: nd.label.length > 48 ? nd.label.slice(0, 47) + "\u2026" : nd.label }),
      ]);
      g.addEventListener("click", (ev) => {
        ev.stopPropagation();
        if (G.dragMoved) return;
        if (!nd.io && nd.key[0] !== "o") {
          G.expanded.add(nd.key);
          if (nd.key[0] === "p") G.collapsed.delete(nd.band);
          renderGraph();
        } else {
          select(nd);
        }
      });
      hover(g, () => nodeTip(nd));
      nodesG.appendChild(g);
    }
    viewport.appendChild(nodesG);
    viewport.appendChild(labelsG);
    G.bbox = { w: lay.width, h: lay.height };
    graphSvg.classList.toggle("lod-low", G.scale < 0.45);
    document.getElementById("graph-count").textContent = gr.nodes.filter((n) => !n.io).length + " nodes for " + N + " ops, " + gr.edges.filter((e) => e.cross).length + " edges cross a partition boundary";
    if (!G.placed) { fit(); G.placed = true; } else applyView();
    window.edgepartReport && (window.edgepartReport.graphNodes = gr.nodes.filter((n) => !n.io).length);
  }
  function bandName(nd) {
    if (nd.io) return nd.io.kind === "input" ? "the model input" : "the model output";
    return D.partitions[nd.band].id;
  }
  function nodeTip(nd) {
    if (nd.io) return nd.io.kind + " " + nd.io.name + " (tensor " + nd.io.tensor + ")";
    if (nd.key[0] === "o") {
      const i = nd.ops[0];
      return "op " + i + " " + typeName(i) + "\n" + D.ops.name[i] + "\npartition " + D.partitions[partOf(i)].id + " on " + procName(D.ops.proc[i]) + "; TFLite default: " + procName(D.ops.dproc[i]);
    }
    return nodeLabel(nd) + "\nclick to expand";
  }
  function select(nd) {
    G.selected = nd;
    for (const el of viewport.querySelectorAll(".node.selected")) el.classList.remove("selected");
    const el = viewport.querySelector('[data-key="' + nd.key + '"]');
    if (el) el.classList.add("selected");
    const box = document.getElementById("details");
    if (nd.io) { box.innerHTML = "<b>" + esc(nd.io.kind) + "</b> " + esc(nd.io.name); return; }
    box.innerHTML = opDetails(nd.ops[0]);
  }
  function opDetails(i) {
    const rows = [];
    for (let p = 0; p < P; p++) {
      const ok = D.ops.ok[p][i];
      const why = ok ? "" : D.reasons[D.ops.why[p][String(i)]] || "refused";
      rows.push("<tr><td><span class=swatch style='background:" + procColor(p) + "'></span>" + esc(procName(p)) + (D.ops.proc[i] === p ? " \u2713" : "") + "</td><td class=num>" + (ok ? fmtUs(D.ops.lat[p][i]) + " \u00b5s <span class=src>" + D.sources[D.ops.src[p][i]] + "</span>" : "-") + "</td><td class=why>" + esc(why) + "</td></tr>");
    }
    return "<b>op " + i + " " + esc(typeName(i)) + "</b><br><span class=muted>" + esc(D.ops.name[i]) + "</span><br>partition <b>" + esc(D.partitions[partOf(i)].id) + "</b> on <b>" + esc(procName(D.ops.proc[i])) + "</b>; TFLite default: <b>" + esc(procName(D.ops.dproc[i])) + "</b><br>" + fmtRate(D.ops.flops[i] || 0) + "FLOP, " + fmtBytes(D.ops.bytes[i]) + " moved<table>" + rows.join("") + "</table>";
  }

  // pan and zoom
  function applyView() {
    viewport.setAttribute("transform", "translate(" + G.tx.toFixed(2) + "," + G.ty.toFixed(2) + ") scale(" + G.scale.toFixed(4) + ")");
    graphSvg.classList.toggle("lod-low", G.scale < 0.45);
  }
  function fit() {
    const r = graphSvg.getBoundingClientRect();
    const W = r.width || 900, H = r.height || 600;
    let sc = Math.min(W / G.bbox.w, H / G.bbox.h, 1.2);
    // a graph that would shrink past readable text is fitted to the width and shown from its
    // top (zoom out with the wheel or "-" for the overview)
    if (sc < 0.55) sc = Math.min(W / G.bbox.w, 1.0);
    G.scale = Math.max(sc, 0.02);
    G.tx = (W - G.bbox.w * G.scale) / 2;
    G.ty = G.bbox.h * G.scale < H ? (H - G.bbox.h * G.scale) / 2 : 10;
    applyView();
  }
  function zoomAt(factor, cx, cy) {
    const ns = Math.max(0.02, Math.min(4, G.scale * factor));
    G.tx = cx - (cx - G.tx) * (ns / G.scale);
    G.ty = cy - (cy - G.ty) * (ns / G.scale);
    G.scale = ns;
    applyView();
  }
  function graphSection() {
    const sec = document.getElementById("graph");
    const colorSel = h("select", { id: "color-by", onchange: (e) => { G.colorBy = e.target.value; renderGraph(); legend(); } }, [
      h("option", { value: "edgepart", text: "edgepart's placement" }),
      h("option", { value: "default", text: "TFLite's default placement" }),
    ]);
    const modeSel = h("select", { id: "view-mode", onchange: (e) => { G.mode = e.target.value; G.expanded.clear(); G.collapsed.clear(); G.placed = false; renderGraph(); } }, [
      h("option", { value: "auto", text: N > AUTO_OPS ? "blocks of " + BLOCK + " ops" : "every op" }),
      h("option", { value: "ops", text: "every op" }),
      h("option", { value: "fused", text: "fused groups" }),
      h("option", { value: "partitions", text: "one node per partition" }),
    ]);
    const rect = () => graphSvg.getBoundingClientRect();
    sec.appendChild(h("div", { class: "toolbar" }, [
      h("label", { text: "color by" }), colorSel,
      h("label", { text: "show" }), modeSel,
      h("button", { id: "expand-all", text: "expand all", onclick: () => { G.mode = "ops"; modeSel.value = "ops"; G.expanded.clear(); G.collapsed.clear(); renderGraph(); fit(); } }),
      h("button", { text: "fit", onclick: fit }),
      h("button", { text: "+", onclick: () => { const r = rect(); zoomAt(1.25, r.width / 2, r.height / 2); } }),
      h("button", { text: "\u2212", onclick: () => { const r = rect(); zoomAt(0.8, r.width / 2, r.height / 2); } }),
      h("span", { id: "graph-count", class: "muted" }),
    ]));
    sec.appendChild(h("div", { id: "graph-legend", class: "legend" }));
    const wrap = h("div", { class: "graph-wrap", id: "graph-wrap" });
    graphSvg = s("svg", { id: "graph-svg", role: "img", "aria-label": "op graph colored by processor" });
    viewport = s("g", { id: "viewport" });
    graphSvg.appendChild(viewport);
    wrap.appendChild(graphSvg);
    const details = h("div", { class: "details", id: "details" }, [h("span", { class: "muted", text: "Click an op for its latency on each processor and why other processors refuse it; click a group to expand it, a partition band to collapse it." })]);
    sec.appendChild(h("div", { class: "graph-box" }, [wrap, details]));
    wrap.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = rect();
      zoomAt(ev.deltaY < 0 ? 1.15 : 1 / 1.15, ev.clientX - r.left, ev.clientY - r.top);
    }, { passive: false });
    let drag = null;
    wrap.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, y: ev.clientY, tx: G.tx, ty: G.ty }; G.dragMoved = false; wrap.classList.add("dragging"); });
    window.addEventListener("mousemove", (ev) => {
      if (!drag) return;
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) G.dragMoved = true;
      G.tx = drag.tx + dx; G.ty = drag.ty + dy; applyView();
    });
    window.addEventListener("mouseup", () => { drag = null; wrap.classList.remove("dragging"); setTimeout(() => (G.dragMoved = false), 0); });
    legend();
    if (N > AUTO_OPS && D.partitions.length > 1) {
      const keys = new Set();
      for (let i = 0; i < N; i++) keys.add(keyOf(i));
      if (keys.size > AUTO_NODES) D.partitions.forEach((_, k) => G.collapsed.add(k));
    }
    renderGraph();
  }
  function legend() {
    const box = document.getElementById("graph-legend");
    box.textContent = "";
    const field = G.colorBy === "default" ? D.ops.dproc : D.ops.proc;
    for (let p = 0; p < P; p++) {
      let c = 0;
      for (let i = 0; i < N; i++) if (field[i] === p) c++;
      box.appendChild(h("span", { class: "legend-item", "data-proc": procName(p) }, [h("span", { class: "swatch", style: "background:" + procColor(p) }), procName(p) + " (" + D.processors[p].delegate + "): " + c + " ops"]));
    }
    box.appendChild(h("span", { class: "muted" }, [h("span", { class: "swatch", style: "background:#fff7ed;border-color:" + "#c2410c" }), "bytes crossing a partition boundary per inference"]));
  }

  // ------------------------------------------------------------------ Gantt charts
  function gantt(sched, opts) {
    opts = opts || {};
    const bars = sched.bars.filter((b) => b.start !== null && b.end !== null);
    const rows = [];
    const addRow = (r) => { if (!rows.includes(r)) rows.push(r); };
    for (const u of D.units) addRow(u);
    for (const b of bars) if (b.kind === "transfer") addRow(b.row);
    const tmax = Math.max(1e-9, ...bars.map((b) => b.end), opts.tmax || 0);
    const W = 1000, left = 175, right = 20, rowH = 26, top = 8;
    const H = top + rows.length * rowH + 30;
    const x = (t) => left + (t / tmax) * (W - left - right);
    const svg = s("svg", { class: "chart gantt", viewBox: "0 0 " + W + " " + H, "data-schedule": sched.name });
    const axis = s("g", { class: "axis" });
    const step = niceStep(tmax / 8);
    for (let t = 0; t <= tmax * 1.0001; t += step) {
      axis.appendChild(s("line", { x1: x(t), x2: x(t), y1: top, y2: top + rows.length * rowH }));
      axis.appendChild(s("text", { x: x(t), y: H - 12, "text-anchor": "middle", text: fmtTime(t) }));
    }
    svg.appendChild(axis);
    rows.forEach((r, k) => svg.appendChild(s("text", { x: left - 8, y: top + k * rowH + 17, "text-anchor": "end", text: r })));
    for (const b of bars) {
      const k = rows.indexOf(b.row);
      const x0 = x(b.start), x1 = Math.max(x(b.end), x0 + 1.5);
      const fill = b.kind === "transfer" ? null : procColor(b.proc);
      const g = s("g", { class: "bar " + b.kind + (b.conflict ? " conflict" : ""), "data-label": b.label, "data-proc": b.kind === "transfer" ? "" : procName(b.proc) }, [
        s("rect", { x: x0, y: top + k * rowH + 3, width: x1 - x0, height: rowH - 6, rx: 2, fill }),
      ]);
      if (x1 - x0 > 26) g.appendChild(s("text", { x: (x0 + x1) / 2, y: top + k * rowH + 17, "text-anchor": "middle", fill: fill ? textColor(fill) : "#111", text: b.label }));
      hover(g, () => (b.kind === "transfer" ? "transfer of tensor " + b.label.slice(1) + " (" + fmtBytes(b.bytes) + ")" + (b.from ? " from " + b.from : " (model input)") : "partition " + b.label + " on " + b.row) + "\n" + fmtTime(b.start) + " \u2192 " + fmtTime(b.end) + " (" + fmtTime(b.end - b.start) + ")");
      svg.appendChild(g);
    }
    return svg;
  }
  function niceStep(x) {
    const p = Math.pow(10, Math.floor(Math.log10(x)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x) return m * p;
    return 10 * p;
  }
  function scheduleSection() {
    const sec = document.getElementById("schedule");
    // the predicted charts share one time axis, so edgepart's plan and TFLite's default compare
    // at a glance; each measured chart has its own (a host run is not on the device's scale)
    const predicted = D.schedules.filter((sc) => sc.kind === "predicted");
    const tmax = Math.max(...predicted.flatMap((sc) => sc.bars.map((b) => b.end || 0)));
    for (const sc of D.schedules) {
      sec.appendChild(h("h3", { text: sc.label + (sc.latency_s ? ": " + fmtTime(sc.latency_s) : "") }));
      for (const n of sc.notes || []) sec.appendChild(h("div", { class: "muted", text: n }));
      sec.appendChild(gantt(sc, sc.kind === "predicted" ? { tmax } : {}));
    }
    if (!D.schedules.some((sc) => sc.kind === "host" || sc.kind === "phone")) {
      sec.appendChild(h("p", { class: "muted", text: "No measured schedule: run the bundle with `edgepart run BUNDLE --benchmark --json run.json` (this host) or bench it with `edgepart bench BUNDLE --adb --json > bench.json` (phones), then pass the file with --measured." }));
    }
  }
  function stagesSection() {
    const sec = document.getElementById("stages");
    const tp = D.throughput;
    if (!tp) {
      sec.appendChild(h("p", { class: "muted", text: "This plan minimizes the latency of one input (objective " + D.meta.objective + "); partition with --objective throughput for a pipelined plan and its stage timeline." }));
      return;
    }
    const base = D.schedules[0].bars.filter((b) => b.kind === "partition");
    const bars = [];
    for (let k = 0; k < tp.inputs; k++) for (const b of base) bars.push({ row: b.row, label: b.label + "#" + (k + 1), proc: b.proc, start: b.start + k * tp.period_s, end: b.end + k * tp.period_s, kind: "partition" });
    const byRow = new Map();
    for (const b of bars) { if (!byRow.has(b.row)) byRow.set(b.row, []); byRow.get(b.row).push(b); }
    let conflicts = 0;
    for (const list of byRow.values()) {
      list.sort((a, b) => a.start - b.start);
      for (let i = 1; i < list.length; i++) if (list[i].start < list[i - 1].end - 1e-3 * tp.period_s) { list[i].conflict = list[i - 1].conflict = true; conflicts++; }
    }
    sec.appendChild(h("p", { text: tp.inputs + " consecutive inputs, one every predicted period of " + fmtTime(tp.period_s) + " (" + (1 / tp.period_s).toFixed(1) + " inputs/s); each input takes " + fmtTime(tp.latency_s) + " end to end. Bar label: partition#input." + (conflicts ? " Red outlines: " + conflicts + " overlaps on one unit, where the runtime would delay the later input." : "") }));
    sec.appendChild(gantt({ name: "stages", bars }));
  }

  // ------------------------------------------------------------------ TFLite default beside edgepart
  function defaultSection() {
    const sec = document.getElementById("default");
    const e = D.schedules[0], d = D.schedules[1];
    const countE = new Array(P).fill(0), countD = new Array(P).fill(0);
    let moved = 0;
    for (let i = 0; i < N; i++) { countE[D.ops.proc[i]]++; countD[D.ops.dproc[i]]++; if (D.ops.proc[i] !== D.ops.dproc[i]) moved++; }
    const rows = [h("tr", {}, [h("th", { text: "" }), h("th", { text: "edgepart" }), h("th", { text: "TFLite default" })])];
    rows.push(h("tr", {}, [h("td", { text: "predicted latency" }), h("td", { text: fmtTime(e.latency_s) }), h("td", { text: fmtTime(d.latency_s) + " (serially " + fmtTime(d.serial_latency_s) + ")" })]));
    rows.push(h("tr", {}, [h("td", { text: "partitions" }), h("td", { text: String(D.partitions.length) }), h("td", { text: String(d.bars.filter((b) => b.kind === "partition").length) })]));
    for (let p = 0; p < P; p++) rows.push(h("tr", {}, [h("td", {}, [h("span", { class: "swatch", style: "background:" + procColor(p) }), "ops on " + procName(p)]), h("td", { text: String(countE[p]) }), h("td", { text: String(countD[p]) })]));
    sec.appendChild(h("table", { class: "compare" }, rows));
    sec.appendChild(h("p", { class: "muted", text: moved + " of " + N + " ops run elsewhere than TFLite would put them. Each op below in execution order: edgepart's processor on the top strip, TFLite's default under it." }));
    const order = [...Array(N).keys()].sort((a, b) => D.ops.topo[a] - D.ops.topo[b]);
    const W = 1000, left = 110, top = 4, hgt = 22;
    const svg = s("svg", { class: "chart strip", viewBox: "0 0 " + W + " " + (top + 2 * hgt + 16) });
    [["edgepart", D.ops.proc], ["TFLite default", D.ops.dproc]].forEach(([name, field], r) => {
      svg.appendChild(s("text", { x: left - 8, y: top + r * hgt + 15, "text-anchor": "end", text: name }));
      const cw = (W - left - 10) / Math.max(1, N);
      let k0 = 0;
      for (let k = 1; k <= N; k++) {
        if (k === N || field[order[k]] !== field[order[k0]]) {
          const p = field[order[k0]];
          const rect = s("rect", { x: left + k0 * cw, y: top + r * hgt + 2, width: Math.max(0.6, (k - k0) * cw), height: hgt - 4, fill: procColor(p), "data-proc": procName(p) });
          const a = k0, b = k;
          hover(rect, () => name + ": ops " + order[a] + "\u2026" + order[b - 1] + " (" + (b - a) + " in execution order) on " + procName(p));
          svg.appendChild(rect);
          k0 = k;
        }
      }
    });
    sec.appendChild(svg);
  }

  // ------------------------------------------------------------------ per-op table
  function opsSection() {
    const sec = document.getElementById("ops");
    const filter = h("input", { id: "ops-filter", type: "search", placeholder: "filter: op type, index, processor, reason\u2026", size: 44 });
    const only = h("select", { id: "ops-only" }, [
      h("option", { value: "all", text: "all ops" }),
      h("option", { value: "refused", text: "refused by some processor" }),
      h("option", { value: "moved", text: "placed elsewhere than TFLite's default" }),
    ]);
    const count = h("span", { class: "muted" });
    sec.appendChild(h("div", { class: "toolbar" }, [filter, only, count]));
    const head = ["#", "type", "partition", "edgepart", "TFLite default"].concat(D.processors.map((p) => p.name + " \u00b5s")).concat(["why other processors refuse it"]);
    const wrap = h("div", { class: "ops-wrap" });
    const table = h("table", { class: "ops", id: "ops-table" });
    table.appendChild(h("thead", {}, [h("tr", {}, head.map((t) => h("th", { text: t })))]));
    const tbody = h("tbody");
    table.appendChild(tbody);
    wrap.appendChild(table);
    sec.appendChild(wrap);
    const rowsHtml = [];
    const searchText = [];
    const refusedAny = [];
    for (let i = 0; i < N; i++) {
      const cells = [];
      cells.push("<td class=num>" + i + "</td><td>" + esc(typeName(i)) + "</td><td>" + esc(D.partitions[partOf(i)].id) + "</td>");
      cells.push("<td><span class=swatch style='background:" + procColor(D.ops.proc[i]) + "'></span>" + esc(procName(D.ops.proc[i])) + "</td>");
      cells.push("<td><span class=swatch style='background:" + procColor(D.ops.dproc[i]) + "'></span>" + esc(procName(D.ops.dproc[i])) + "</td>");
      const whys = [];
      for (let p = 0; p < P; p++) {
        if (D.ops.ok[p][i]) {
          cells.push("<td class='num" + (D.ops.proc[i] === p ? " chosen" : "") + "'>" + fmtUs(D.ops.lat[p][i]) + "<span class=src>" + D.sources[D.ops.src[p][i]][0] + "</span></td>");
        } else {
          cells.push("<td class='num refused'>-</td>");
          whys.push("<b>" + esc(procName(p)) + "</b>: " + esc(D.reasons[D.ops.why[p][String(i)]] || "refused"));
        }
      }
      refusedAny.push(whys.length > 0);
      cells.push("<td class=why>" + whys.join("<br>") + "</td>");
      rowsHtml.push("<tr data-op=" + i + ">" + cells.join("") + "</tr>");
      searchText.push((i + " " + typeName(i) + " " + D.partitions[partOf(i)].id + " " + procName(D.ops.proc[i]) + " " + whys.join(" ")).toLowerCase());
    }
    tbody.innerHTML = rowsHtml.join("");
    const trs = tbody.children;
    function apply() {
      const q = filter.value.trim().toLowerCase();
      const mode = only.value;
      let shown = 0;
      for (let i = 0; i < N; i++) {
        let ok = !q || searchText[i].includes(q);
        if (mode === "refused") ok = ok && refusedAny[i];
        if (mode === "moved") ok = ok && D.ops.proc[i] !== D.ops.dproc[i];
        trs[i].style.display = ok ? "" : "none";
        if (ok) shown++;
      }
      count.textContent = shown + " of " + N + " ops; latency sources: m measured, i interpolated, p predicted, r roofline, u unknown; bold: the chosen processor";
    }
    filter.addEventListener("input", apply);
    only.addEventListener("change", apply);
    tbody.addEventListener("click", (ev) => {
      const tr = ev.target.closest("tr");
      if (!tr) return;
      document.getElementById("details").innerHTML = opDetails(Number(tr.dataset.op));
    });
    apply();
  }

  // ------------------------------------------------------------------ roofline
  function rooflineSection() {
    const sec = document.getElementById("roofline");
    sec.appendChild(h("p", { class: "muted", text: "Per processor: its roofs (peak per dtype, and memory bandwidth \u00d7 intensity) on log-log axes, and every op with work at (FLOPs per byte, FLOPs over its latency there). Colored: ops placed on that processor; grey: the others." }));
    const box = h("div", { style: "display:grid;grid-template-columns:repeat(auto-fill,minmax(430px,1fr));gap:12px" });
    const pts = [];
    for (let i = 0; i < N; i++) if (D.ops.flops[i] > 0 && D.ops.bytes[i] > 0) pts.push(i);
    let xlo = Infinity, xhi = 0;
    for (const i of pts) { const oi = D.ops.flops[i] / D.ops.bytes[i]; xlo = Math.min(xlo, oi); xhi = Math.max(xhi, oi); }
    if (!pts.length) { xlo = 0.01; xhi = 100; }
    xlo = Math.max(1e-3, xlo / 3); xhi = Math.max(xhi * 3, xlo * 100);
    for (let p = 0; p < P; p++) {
      const pr = D.processors[p];
      const peaks = Object.entries(pr.peaks).filter(([, v]) => v > 0);
      const ridges = peaks.map(([, v]) => v / pr.bandwidth);
      const xh = Math.max(xhi, ...ridges.map((r) => r * 3));
      const att = pts.filter((i) => D.ops.ok[p][i] && D.ops.lat[p][i] > 0).map((i) => [i, D.ops.flops[i] / D.ops.bytes[i], D.ops.flops[i] / (D.ops.lat[p][i] * 1e-6)]);
      const ys = att.map((a) => a[2]).concat(peaks.map(([, v]) => v));
      let ylo = Math.min(...ys, pr.bandwidth * xlo) / 3, yhi = Math.max(...ys, 1) * 3;
      const W = 440, H = 300, l = 58, r = 12, t = 30, b = 34;
      const lx = (v) => l + ((Math.log10(v) - Math.log10(xlo)) / (Math.log10(xh) - Math.log10(xlo))) * (W - l - r);
      const ly = (v) => H - b - ((Math.log10(v) - Math.log10(ylo)) / (Math.log10(yhi) - Math.log10(ylo))) * (H - t - b);
      const svg = s("svg", { class: "chart roofline", viewBox: "0 0 " + W + " " + H, "data-proc": pr.name });
      svg.appendChild(s("text", { x: l, y: 10, "font-weight": 600, text: pr.name + " (" + pr.delegate + ")" }));
      const short = (k) => k.replace("FLOAT", "fp").replace("INT", "int");
      svg.appendChild(s("text", { x: l, y: 22, "font-size": 10, text: "peak " + peaks.map(([k, v]) => short(k) + " " + fmtRate(v).trim()).join(", ") + " op/s; memory " + fmtRate(pr.bandwidth) + "B/s" }));
      const ax = s("g", { class: "axis" });
      for (let e = Math.ceil(Math.log10(xlo)); e <= Math.floor(Math.log10(xh)); e++) {
        ax.appendChild(s("line", { x1: lx(10 ** e), x2: lx(10 ** e), y1: t, y2: H - b }));
        ax.appendChild(s("text", { x: lx(10 ** e), y: H - b + 14, "text-anchor": "middle", text: "1e" + e }));
      }
      for (let e = Math.ceil(Math.log10(ylo)); e <= Math.floor(Math.log10(yhi)); e++) {
        ax.appendChild(s("line", { x1: l, x2: W - r, y1: ly(10 ** e), y2: ly(10 ** e) }));
        ax.appendChild(s("text", { x: l - 4, y: ly(10 ** e) + 4, "text-anchor": "end", text: "1e" + e }));
      }
      ax.appendChild(s("text", { x: (W + l) / 2, y: H - 4, "text-anchor": "middle", text: "FLOPs per byte" }));
      ax.appendChild(s("text", { x: 12, y: (H - b + t) / 2, "text-anchor": "middle", transform: "rotate(-90 12 " + (H - b + t) / 2 + ")", text: "FLOP/s" }));
      svg.appendChild(ax);
      for (const [k, v] of peaks) {
        const ridge = v / pr.bandwidth;
        const x0 = xlo, x1 = Math.min(ridge, xh);
        const dpath = "M" + lx(x0) + "," + ly(Math.max(ylo, pr.bandwidth * x0)) + " L" + lx(x1) + "," + ly(pr.bandwidth * x1) + " L" + lx(xh) + "," + ly(v);
        svg.appendChild(s("path", { d: dpath, fill: "none", stroke: pr.color, "stroke-width": 2, "data-dtype": k }));
        svg.appendChild(s("text", { x: W - r - 2, y: ly(v) - 4, "text-anchor": "end", text: k }));
      }
      const dots = s("g", {});
      for (const [i, oi, a] of att) {
        if (a < ylo || a > yhi) continue;
        const here = D.ops.proc[i] === p;
        const c = s("circle", { cx: lx(oi).toFixed(1), cy: ly(a).toFixed(1), r: here ? 3 : 2.5, fill: here ? pr.color : "#8b95a3", "fill-opacity": here ? 0.9 : 0.55, "data-op": i });
        hover(c, () => "op " + i + " " + typeName(i) + "\n" + oi.toPrecision(3) + " FLOP/B, " + fmtRate(a) + "FLOP/s on " + pr.name + " (" + D.sources[D.ops.src[p][i]] + ")");
        dots.appendChild(c);
      }
      svg.appendChild(dots);
      box.appendChild(svg);
    }
    sec.appendChild(box);
  }

  // ------------------------------------------------------------------ arena
  function arenaSection() {
    const sec = document.getElementById("arena");
    const A = D.arena;
    if (!A) { sec.appendChild(h("p", { class: "muted", text: "The bundle has no arena.json (partitioned with --no-arena)." })); return; }
    sec.appendChild(h("p", { class: "muted", text: "Each rectangle is a buffer: x is its lifetime on the plan's shared timeline (partition blocks in plan order), y its offset in the memory. Colored by the partition that owns it (its processor's color); dark grey: boundary buffers handed between partitions or model inputs. Strategy: " + (A.strategy || "-") + "." }));
    // one time axis for every memory: steps are positions on the plan's shared timeline
    const tmax = Math.max(1, ...A.buffers.map((b) => b[4] + 1));
    A.memories.forEach((m, mi) => {
      const bufs = A.buffers.filter((b) => b[0] === mi);
      const W = 1000, H = 240, l = 70, r = 14, t = 22, bt = 28;
      const ymax = Math.max(1, m.size, ...bufs.map((b) => b[1] + b[2]));
      const x = (v) => l + (v / tmax) * (W - l - r);
      const y = (v) => H - bt - (v / ymax) * (H - t - bt);
      const svg = s("svg", { class: "chart arena", viewBox: "0 0 " + W + " " + H, "data-memory": m.name });
      const lb = m.lower_bound;
      svg.appendChild(s("text", { x: l, y: 14, text: m.name + ": " + fmtBytes(m.size) + (lb ? " (lower bound " + fmtBytes(lb) + ", " + (m.size / lb).toFixed(3) + "x)" : "") + (m.naive ? "; one buffer per tensor would take " + fmtBytes(m.naive) : "") + "; " + bufs.length + " buffers" }));
      const ax = s("g", { class: "axis" }, [
        s("line", { x1: l, x2: W - r, y1: y(0), y2: y(0) }),
        s("line", { x1: l, x2: l, y1: y(0), y2: y(ymax) }),
        s("text", { x: l - 4, y: y(ymax) + 4, "text-anchor": "end", text: fmtBytes(ymax) }),
        s("text", { x: l - 4, y: y(0) + 4, "text-anchor": "end", text: "0" }),
        s("text", { x: (W + l) / 2, y: H - 6, "text-anchor": "middle", text: "timeline step (0\u2026" + tmax + ")" }),
      ]);
      svg.appendChild(ax);
      for (const b of bufs) {
        const [, off, size, a, e, part, tensor] = b;
        const col = part >= 0 ? procColor(partProc(part)) : "#4b5563";
        const rect = s("rect", { x: x(a), y: y(off + size), width: Math.max(1, x(e + 1) - x(a)), height: Math.max(0.8, y(off) - y(off + size)), fill: col, "fill-opacity": 0.75, stroke: "#fff", "stroke-width": 0.4, "data-tensor": tensor });
        hover(rect, () => "tensor " + tensor + (part >= 0 ? " in " + D.partitions[part].id : " (boundary)") + "\n" + fmtBytes(size) + " at offset " + off + "\nsteps " + a + "\u2026" + e);
        svg.appendChild(rect);
      }
      if (lb) svg.appendChild(s("line", { x1: l, x2: W - r, y1: y(lb), y2: y(lb), stroke: "#dc2626", "stroke-dasharray": "4 3" }));
      sec.appendChild(svg);
    });
  }

  // ------------------------------------------------------------------ main
  const errors = [];
  window.edgepartReport = { ready: false, errors };
  const parts = [header, graphSection, scheduleSection, stagesSection, defaultSection, opsSection, rooflineSection, arenaSection];
  for (const f of parts) {
    try { f(); } catch (err) { errors.push(f.name + ": " + err); console.error("edgepart report: " + f.name + ": " + err); }
  }
  window.edgepartReport.ready = true;
  window.edgepartReport.ops = N;
})();
