// The charts and tables of platoon's HTML pages (the recording report and the benchmark
// comparison), on Vega: each chart is a figure with a caption, a Vega view, a table of the same
// numbers and an entry in window.platoonReport.charts (its series and point counts and the
// values it drew), so a browser test can hold a page against its data.
// platoonCharts(main) gives the helpers for the page whose content goes into `main`;
// finish() says when every chart has been drawn.
function platoonCharts(main) {
  'use strict';
  // Okabe & Ito's palette: told apart with the common colour-vision deficiencies; dashes repeat
  // it for a ninth series and on, and tell A from B in a comparison.
  const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#000000', '#F0E442'];
  const DASHES = [[1, 0], [6, 3], [2, 2], [8, 3, 2, 3]];
  const charts = [];
  const rendering = [];

  // ---- DOM helpers: text always goes in as text, never as markup (thread names are anyone's) ----
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return '-';
    if (typeof v !== 'number') return String(v);
    const d = digits === undefined ? (Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2) : digits;
    return v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: 0 });
  }
  function section(id, title, intro) {
    const s = el('section', { id }, el('h2', {}, title));
    if (intro) s.append(el('p', { class: 'note' }, intro));
    main.append(s);
    return s;
  }
  function absent(parent, id, title, why) {
    parent.append(el('figure', { id: 'chart-' + id }, el('figcaption', {}, title), el('p', { class: 'absent' }, 'Not drawn: ' + why)));
    charts.push({ id, title, absent: why, series: 0, points: 0, values: [] });
  }
  function table(columns, rows) {
    const head = el('tr', {}, columns.map((c) => el('th', { scope: 'col' }, c)));
    const body = rows.map((r) => el('tr', {}, r.map((v) => el('td', {}, typeof v === 'number' ? fmt(v) : v ?? '-'))));
    return el('details', { class: 'table' }, el('summary', {}, 'Table (' + rows.length + ' rows)'),
      el('div', { class: 'table-wrap' }, el('table', {}, el('thead', {}, head), el('tbody', {}, body))));
  }
  function chartWidth(parent) {
    const w = (parent.clientWidth || main.clientWidth || 900) - 300;  // room for the axis and a legend
    return Math.max(260, Math.min(w, 900));
  }

  // ---- charts: each a Vega view, a caption, a table and an inventory entry ----
  function draw(parent, id, title, spec, inventory, tableNode, note) {
    const box = el('div', { class: 'chart' });
    const fig = el('figure', { id: 'chart-' + id }, el('figcaption', {}, title), box);
    if (note) fig.append(el('p', { class: 'note' }, note));
    if (tableNode) fig.append(tableNode);
    parent.append(fig);
    const entry = Object.assign({ id, title }, inventory);
    charts.push(entry);
    try {
      const view = new vega.View(vega.parse(spec), { renderer: 'svg', container: box, hover: false });
      entry.view = view;
      rendering.push(view.runAsync());
    } catch (e) {
      box.append(el('p', { class: 'error' }, 'This chart could not be drawn: ' + e.message));
      console.error('platoon report: chart ' + id + ': ' + e.message);
    }
    return fig;
  }
  function colours(names) {
    return {
      color: { name: 'color', type: 'ordinal', domain: names, range: names.map((_, i) => PALETTE[i % PALETTE.length]) },
      dash: { name: 'dash', type: 'ordinal', domain: names,
        range: names.map((n, i) => (n.startsWith('B · ') ? DASHES[1] : DASHES[Math.floor(i / PALETTE.length) % DASHES.length])) },
    };
  }
  // A table with a row per x and a column per series ([{name, points: [[x, y], ...]}]).
  function seriesTable(xTitle, series) {
    const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].filter((x) => x !== null).sort((p, q) => p - q);
    const at = series.map((s) => new Map(s.points.map((p) => [p[0], p[1]])));
    return table([xTitle].concat(series.map((s) => s.name)), xs.map((x) => [fmt(x, 3)].concat(at.map((m) => m.get(x) ?? null))));
  }
  // series: [{name, points: [[x, y], ...]}]; y null: a gap.
  function lineChart(parent, id, title, o, series) {
    const values = [];
    series.forEach((s, k) => s.points.forEach(([x, y]) => {
      if (x === null || x === undefined) return;
      if ((o.yLog && !(y > 0)) || (o.xLog && !(x > 0))) return;
      values.push({ s: s.name, k, x, y });
    }));
    const names = series.map((s) => s.name);
    const c = colours(names);
    const xs = { name: 'x', type: o.xLog ? 'log' : 'linear', range: 'width', zero: false, nice: !o.xLog,
      domain: o.xDomain || { data: 'points', field: 'x' } };
    const ys = { name: 'y', type: o.yLog ? 'log' : 'linear', range: 'height', nice: true, zero: !o.yLog,
      domain: o.yDomain || { data: 'points', field: 'y' } };
    const xAxis = { orient: 'bottom', scale: 'x', title: o.xTitle, labelOverlap: true, grid: !!o.xLog };
    if (o.xValues) xAxis.values = o.xValues;
    if (o.xLabel) xAxis.encode = { labels: { update: { text: { signal: o.xLabel } } } };
    const spec = {
      width: chartWidth(parent), height: o.height || 220, padding: 5, autosize: 'pad',
      data: [{ name: 'points', values }],
      scales: [xs, ys, c.color, c.dash],
      axes: [xAxis, { orient: 'left', scale: 'y', title: o.yTitle, grid: true, labelOverlap: true }],
      legends: [{ stroke: 'color', strokeDash: 'dash', symbolType: 'stroke', title: o.legend || '', orient: 'right', labelLimit: 240 }],
      marks: [{
        type: 'group', from: { facet: { name: 'one', data: 'points', groupby: 's' } },
        marks: [{
          type: 'line', from: { data: 'one' }, sort: { field: 'datum.x' },
          encode: { enter: {
            x: { scale: 'x', field: 'x' }, y: { scale: 'y', field: 'y' },
            stroke: { scale: 'color', field: 's' }, strokeDash: { scale: 'dash', field: 's' },
            strokeWidth: { value: 1.8 }, defined: { signal: 'isValid(datum.y)' } } },
        }],
      }],
    };
    // A null y is a gap: in the data (so that the line breaks there), not a point.
    const points = values.filter((v) => v.y !== null && v.y !== undefined).length;
    return draw(parent, id, title, spec, { kind: 'line', series: series.length, points, values },
      seriesTable(o.xTitle, series), o.note);
  }
  // Stacked areas: layers [{name, points: [[x, y], ...]}], drawn in order from the bottom.
  function stackChart(parent, id, title, o, layers) {
    const values = [];
    layers.forEach((l, k) => l.points.forEach(([x, y]) => {
      if (x !== null && y !== null && y !== undefined) values.push({ s: l.name, k, x, y });
    }));
    const names = layers.map((l) => l.name);
    const spec = {
      width: o.width || chartWidth(parent), height: o.height || 160, padding: 5, autosize: 'pad',
      data: [{ name: 'points', values, transform: [{ type: 'stack', groupby: ['x'], field: 'y', sort: { field: 'k' } }] }],
      scales: [
        { name: 'x', type: 'linear', range: 'width', zero: false, domain: o.xDomain || { data: 'points', field: 'x' } },
        { name: 'y', type: 'linear', range: 'height', nice: true, zero: true, domain: o.yDomain || { data: 'points', field: 'y1' } },
        { name: 'color', type: 'ordinal', domain: names, range: names.map((_, i) => PALETTE[i % PALETTE.length]) },
      ],
      axes: [{ orient: 'bottom', scale: 'x', title: o.xTitle, labelOverlap: true },
        { orient: 'left', scale: 'y', title: o.yTitle, grid: true }],
      legends: [{ fill: 'color', title: o.legend || '', orient: 'right' }],
      marks: [{
        type: 'group', from: { facet: { name: 'one', data: 'points', groupby: 's' } },
        marks: [{
          type: 'area', from: { data: 'one' }, sort: { field: 'datum.x' },
          encode: { enter: { x: { scale: 'x', field: 'x' }, y: { scale: 'y', field: 'y0' }, y2: { scale: 'y', field: 'y1' },
            fill: { scale: 'color', field: 's' }, fillOpacity: { value: 0.85 }, interpolate: { value: 'step-before' } } },
        }],
      }],
    };
    return draw(parent, id, title, spec, { kind: 'stack', series: layers.length, points: values.length, values },
      seriesTable(o.xTitle, layers), o.note);
  }
  // cells: [{row, col, v}], col an index into cols (the column labels, which need not be
  // unique: two intervals may print the same time); rows: their order. groups: rows per group
  // (for the count).
  function heatmap(parent, id, title, o, rows, cols, cells, groups, extraNote) {
    const vmax = Math.max(1e-9, ...cells.map((c) => c.v));
    const colKeys = cols.map((_, i) => String(i));
    const spec = {
      width: o.width || chartWidth(parent), height: Math.max(60, Math.min(22 * rows.length, 600)), padding: 5, autosize: 'pad',
      signals: [{ name: 'colLabels', value: cols.map(String) }],
      data: [{ name: 'points', values: cells.map((c) => ({ row: c.row, col: String(c.col), v: c.v })) }],
      scales: [
        { name: 'x', type: 'band', domain: colKeys, range: 'width', paddingInner: 0.02 },
        { name: 'y', type: 'band', domain: rows, range: 'height', paddingInner: 0.05 },
        { name: 'c', type: o.logColor ? 'log' : 'linear', scheme: 'viridis', reverse: true,
          domain: o.logColor ? [1, Math.max(2, vmax)] : o.vDomain || [0, vmax] },
      ],
      axes: [
        { orient: 'bottom', scale: 'x', title: o.xTitle, labelOverlap: true, labelAngle: o.xAngle || 0,
          values: colKeys.filter((_, i) => i % Math.max(1, Math.ceil(colKeys.length / 20)) === 0),
          encode: { labels: { update: { text: { signal: 'colLabels[+datum.value]' } } } } },
        { orient: 'left', scale: 'y', title: o.yTitle, labelLimit: 240 },
      ],
      legends: [{ fill: 'c', type: 'gradient', title: o.vTitle, orient: 'right' }],
      marks: [{
        type: 'rect', from: { data: 'points' },
        encode: { enter: { x: { scale: 'x', field: 'col' }, width: { scale: 'x', band: 1 }, y: { scale: 'y', field: 'row' },
          height: { scale: 'y', band: 1 }, fill: { scale: 'c', field: 'v' } } },
      }],
    };
    const tableRows = cells.map((c) => [c.row, String(cols[c.col]), c.v]);
    return draw(parent, id, title, spec, { kind: 'heatmap', series: groups, rows: rows.length, points: cells.length, values: cells },
      table([o.yTitle, o.xTitle, o.vTitle], tableRows), [o.note, extraNote].filter(Boolean).join(' '));
  }


  // Latency percentile spectra on HdrHistogram's axis: x = 1 / (1 - percentile), log, so the
  // tail gets the room. series: [{name, spectrum: [[percentile, value], ...], count}]; the 100th
  // percentile (the maximum) is drawn at half a sample beyond the last.
  const P_TICKS = [1, 2, 10, 100, 1000, 10000, 100000, 1000000];
  const P_LABEL = "datum.value <= 1 ? '0%' : format(100 - 100 / datum.value, '.5~f') + '%'";
  function spectrumChart(parent, id, title, o, series) {
    const lines = series.map((x) => ({ name: x.name,
      points: x.spectrum.map(([p, v]) => [p >= 100 ? 2 * Math.max(x.count || 1, 1) : 1 / (1 - p / 100), v]) }));
    const fig = lineChart(parent, id, title, Object.assign({ xTitle: 'percentile', xLog: true, yLog: true, xValues: P_TICKS,
      xLabel: P_LABEL, height: 300,
      note: 'The last point of each line is the maximum.' }, o), lines);
    charts[charts.length - 1].counts = Object.fromEntries(series.map((x) => [x.name, x.count]));
    return fig;
  }

  // Horizontal bars, one per item: [{name, value}] (value null: not measured, left out).
  function barChart(parent, id, title, o, items) {
    const values = items.filter((b) => b.value !== null && b.value !== undefined).map((b, k) => ({ s: b.name, k, y: b.value }));
    const names = values.map((v) => v.s);
    const spec = {
      width: o.width || Math.min(chartWidth(parent), 560), height: Math.max(40, 24 * names.length), padding: 5, autosize: 'pad',
      data: [{ name: 'points', values }],
      scales: [
        { name: 'x', type: 'linear', range: 'width', nice: true, zero: true, domain: { data: 'points', field: 'y' } },
        { name: 'y', type: 'band', range: 'height', domain: names, paddingInner: 0.2 },
      ],
      axes: [{ orient: 'bottom', scale: 'x', title: o.xTitle, grid: true, labelOverlap: true },
        { orient: 'left', scale: 'y', labelLimit: 220 }],
      marks: [
        { type: 'rect', from: { data: 'points' },
          encode: { enter: { y: { scale: 'y', field: 's' }, height: { scale: 'y', band: 1 }, x: { scale: 'x', value: 0 },
            x2: { scale: 'x', field: 'y' }, fill: { value: PALETTE[0] } } } },
        { type: 'text', from: { data: 'points' },
          encode: { enter: { y: { scale: 'y', field: 's', band: 0.5 }, x: { scale: 'x', field: 'y', offset: 4 },
            baseline: { value: 'middle' }, text: { signal: "format(datum.y, ',.4~g')" }, fontSize: { value: 11 } } } },
      ],
    };
    return draw(parent, id, title, spec, { kind: 'bar', series: 1, points: values.length, values },
      table(['', o.xTitle], items.map((b) => [b.name, b.value])), o.note);
  }

  // Runs each part of the page; a part that fails says so on the page and in the console
  // (where a test sees it) and the others still draw.
  function build(parts) {
    for (const part of parts) {
      try {
        part();
      } catch (e) {
        main.append(el('p', { class: 'error' }, 'Part of this page could not be drawn: ' + e.message));
        console.error('platoon: ' + (part.name || 'part') + ': ' + e.message);
      }
    }
    window.platoonReport = {
      charts,
      ready: Promise.all(rendering).then(() => { document.body.dataset.ready = 'yes'; return charts.length; },
        (e) => { console.error('platoon: ' + e.message); throw e; }),
    };
  }

  return { el, fmt, section, absent, table, draw, lineChart, stackChart, heatmap, spectrumChart, barChart, build, charts, PALETTE };
}
