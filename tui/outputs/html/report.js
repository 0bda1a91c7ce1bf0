// platoon's HTML report: draws the data `platoon report --format html` inlined in the page
// (report_data.hpp says what it holds) with the helpers of charts.js.
(function () {
  'use strict';

  const DATA = JSON.parse(document.getElementById('platoon-data').textContent);
  const RECS = DATA.recordings;
  const VS = RECS.length > 1;
  const SIDE = ['A', 'B'];
  // Where each finding's evidence is drawn: the element a finding links to, by doctor's check
  // id (docs/doctor.md); a finding not listed links to the %wait chart.
  const FINDING_EVIDENCE = {
    carrier_waiting: 'chart-wait', carrier_migrating: 'placement', platoon_effect: 'batches',
    poller_competing: 'chart-wait', oversubscribed: 'chart-cpu', cpu_throttled: 'wait-causes', vm_steal: 'wait-causes',
    irq_pressure: 'wait-causes', lost_events: 'cost', requests_waiting_in_sockets: 'requests',
  };
  const MAX_TABLE_ROWS = 1000;
  const main = document.getElementById('report');
  const { el, fmt, section, absent, table, lineChart, stackChart, heatmap, spectrumChart, build } = platoonCharts(main);

  // ---- what the recordings hold ----
  const sideName = (i, name) => (VS ? SIDE[i] + ' · ' + name : name);
  const threadsOf = (rec) => rec.charted;
  const seriesOf = (rec) => rec.series;
  const maxT = Math.max(...RECS.map((r) => Math.max(0, ...r.series.t)));

  function header() {
    const p = DATA.page;
    main.append(el('h1', {}, p.title));
    main.append(el('p', { class: 'note' }, 'Made by ', el('code', {}, p.command), ' (platoon ' + p.version + ').'));
    RECS.forEach((rec, i) => {
      const r = rec.report;
      const dl = el('dl', { class: 'meta' });
      const row = (k, v) => dl.append(el('dt', {}, k), el('dd', {}, v));
      if (VS) main.append(el('h3', {}, SIDE[i] + ': ' + rec.label));
      row('recording', rec.label);
      row('source', r.source + (r.attach_mode ? ', attached by ' + r.attach_mode : '') + (r.target ? ' (' + r.target + ')' : ''));
      row('duration', fmt(r.duration_s, 2) + ' s, ' + rec.series.intervals + ' intervals' +
        (rec.series.per_point > 1 ? ', drawn ' + rec.series.per_point + ' to a point' : ''));
      const lost = (r.losses && r.losses.lost_events) || r.lost_events || 0;
      row('platoon itself', el('span', {}, (r.observer_cost ? r.observer_cost.text : 'observer cost: unknown') + '; ' +
        fmt(lost, 0) + ' events lost' + ((rec.reader_notes || []).length ? '; the reader\'s caps cut part of the file' : '') + ' (',
        el('a', { href: '#cost' }, 'details'), ')'));
      row('threads', rec.threads_total + (rec.threads_total > rec.charted.length ? ' (the ' + rec.charted.length +
        ' charted: carriers and pollers first, then the busiest; all are in the tables)' : ''));
      main.append(dl);
    });
  }

  function costBox() {
    const s = section('cost', "platoon's own cost and losses",
      'What recording cost the machine, and what it could not keep. Losses are never hidden: lost events leave gaps in the raw-event charts.');
    RECS.forEach((rec, i) => {
      const r = rec.report;
      const lost = r.lost_events || 0;
      const l = r.losses || {};
      const anyLoss = lost > 0 || (rec.reader_notes || []).length > 0 || Object.values(l).some((v) => typeof v === 'number' && v > 0);
      const box = el('div', { class: 'box' + (anyLoss ? ' bad' : '') });
      if (VS) box.append(el('strong', {}, SIDE[i] + ': '));
      box.append(el('p', {}, r.observer_cost ? r.observer_cost.text : 'observer cost: unknown'));
      box.append(el('p', {}, 'lost events: ' + fmt(lost, 0) +
        Object.entries(l).filter(([k]) => k !== 'lost_events').map(([k, v]) => ', ' + k.replace(/_/g, ' ') + ': ' + fmt(v, 0)).join('')));
      for (const n of r.notes || []) box.append(el('p', { class: 'note' }, n));
      for (const n of rec.reader_notes || []) box.append(el('p', { class: 'error' }, 'reading the file: ' + n));
      if (r.fields_missing && r.fields_missing.length)
        box.append(el('p', { class: 'note' }, 'not in this recording: ' + r.fields_missing.join(', ')));
      s.append(box);
    });
    lineChart(s, 'lost', 'Events lost per interval', { xTitle: 'time (s)', yTitle: 'events lost', xDomain: [0, maxT] },
      RECS.map((rec, i) => ({ name: sideName(i, 'lost events'), points: rec.series.t.map((t, k) => [t, rec.series.lost_events[k]]) })));
  }

  function findings() {
    const s = section('findings', 'Findings', 'What platoon doctor says of the recording, most severe first; each links to the chart that shows its evidence.');
    if (VS && DATA.compare) {
      const d = DATA.compare.doctor;
      const box = el('div', { class: 'box', id: 'verdict' });
      const h = d.healthier === 'a' || d.healthier === 'b'
        ? 'Healthier: ' + d.healthier.toUpperCase() + ' (' + d.healthier_file + ')' : 'Neither is clearly healthier';
      box.append(el('strong', {}, 'platoon doctor --vs: ' + h));
      for (const r of d.why || []) box.append(el('p', {}, r));
      s.append(box);
    }
    RECS.forEach((rec, i) => {
      const f = rec.doctor.findings || [];
      if (VS) s.append(el('h3', {}, SIDE[i] + ': ' + f.length + ' finding' + (f.length === 1 ? '' : 's')));
      if (!f.length) s.append(el('p', {}, 'No findings: nothing doctor checks for was wrong.'));
      for (const x of f) {
        const target = FINDING_EVIDENCE[x.id] || 'chart-wait';
        const ev = Object.entries(x.evidence || {}).filter(([, v]) => typeof v !== 'object' || v === null)
          .map(([k, v]) => k + ' ' + fmt(v)).join(', ');
        s.append(el('div', { class: 'finding ' + x.severity, 'data-finding': x.id },
          el('p', {}, el('span', { class: 'sev' }, x.severity), el('strong', {}, x.title || x.id)),
          (x.threads || []).length ? el('p', { class: 'note' }, 'threads: ' + x.threads.join(', ')) : null,
          ev ? el('p', { class: 'evidence' }, ev) : null,
          x.remedy ? el('p', {}, 'Remedy: ' + x.remedy) : null,
          el('p', {}, el('a', { href: '#' + target }, 'see the evidence')) ));
      }
      for (const n of rec.doctor.not_evaluated || [])
        s.append(el('p', { class: 'note' }, 'not evaluated: ' + n.id + ': ' + n.reason));
    });
  }

  function perThread(rec, i, field) {
    const s = seriesOf(rec);
    return threadsOf(rec).map((t, k) => ({ name: sideName(i, t.label), points: s.t.map((x, j) => [x, s.threads[k][field][j]]) }));
  }

  function cpuWait() {
    const s = section('threads', 'CPU, wait and migrations over time',
      '%CPU: time on a CPU; %wait: time runnable but not running (pidstat\'s %wait), each in % of the interval, as top shows them.');
    const o = { xTitle: 'time (s)', xDomain: [0, maxT], legend: 'thread' };
    lineChart(s, 'cpu', '%CPU per thread', Object.assign({ yTitle: '%CPU' }, o), RECS.flatMap((r, i) => perThread(r, i, 'cpu_pct')));
    lineChart(s, 'wait', '%wait per thread', Object.assign({ yTitle: '%wait' }, o), RECS.flatMap((r, i) => perThread(r, i, 'wait_pct')));
    lineChart(s, 'migrations', 'Migrations per interval', Object.assign({ yTitle: 'migrations' }, o), RECS.flatMap((r, i) => perThread(r, i, 'migrations')));
  }

  function waitCauses() {
    const s = section('wait-causes', 'The wait by cause',
      DATA.wait_causes.map((c) => c.label + ': ' + c.help).join('; ') + '.');
    const why = RECS.map((r) => r.absent.wait_causes).filter(Boolean);
    if (why.length) s.append(el('p', { class: 'absent' }, why[0]));
    // Same axes for every panel, A and B alike.
    let ymax = 1;
    RECS.forEach((rec) => rec.series.threads.forEach((th) => th.wait_pct.forEach((v) => { if (v > ymax) ymax = v; })));
    const shown = Math.min(8, Math.max(...RECS.map((r) => r.charted.length)));
    for (let k = 0; k < shown; ++k) {
      const row = el('div', { class: VS ? 'pair' : '' });
      s.append(row);
      RECS.forEach((rec, i) => {
        const t = rec.charted[k];
        if (!t) return;
        const th = rec.series.threads[k];
        const layers = DATA.wait_causes.map((c) => ({ name: c.label, points: rec.series.t.map((x, j) => [x, th.wait_by_cause[c.key][j]]) }));
        stackChart(row, 'wait-causes-' + (VS ? SIDE[i] + '-' : '') + t.tid, sideName(i, t.label) + ': %wait by cause',
          { xTitle: 'time (s)', yTitle: '%wait', legend: 'cause', xDomain: [0, maxT], yDomain: [0, ymax],
            width: VS ? 300 : undefined }, layers);
      });
    }
    if (shown < Math.max(...RECS.map((r) => r.charted.length)))
      s.append(el('p', { class: 'note' }, 'The first ' + shown + ' charted threads are shown; the report JSON has every thread\'s split.'));
  }

  function placement() {
    const s = section('placement', 'Where each thread ran',
      'Per interval, the share of the thread\'s switch-ins onto each CPU (the per-CPU distribution perf sched shows): a thread that keeps its CPU is one bright row.');
    RECS.forEach((rec, i) => {
      const id = VS ? 'placement-' + SIDE[i] : 'placement';
      const title = sideName(i, 'placement of each thread on each CPU');
      if (rec.absent.placement) return absent(s, id, title, rec.absent.placement);
      const rows = [], cells = [], capped = [];
      let groups = 0;
      rec.charted.forEach((t, k) => {
        const th = rec.series.threads[k];
        let any = false;
        th.placement_pct.forEach(({ cpu, pct: vals }) => {
          const row = t.label + ' · cpu ' + cpu;
          rows.push(row);
          any = true;
          vals.forEach((v, j) => { if (v !== null) cells.push({ row, col: j, v, tid: t.tid, cpu }); });
        });
        if (any) groups += 1;
        if (th.cpus_run_on > th.placement_pct.length) capped.push(t.label + ' ran on ' + th.cpus_run_on + ' CPUs');
      });
      heatmap(s, id, title, { xTitle: 'time (s)', yTitle: 'thread · CPU', vTitle: '% of switch-ins', vDomain: [0, 100] },
        rows, rec.series.t.map((t) => fmt(t, 2)), cells, groups,
        capped.length ? capped.join('; ') + ': the ' + DATA.page.max_placement_cpus + ' it ran on most are shown.' : '');
    });
    const runqTitle = 'Run-queue latency per thread (waits for a CPU, whole recording)';
    if (RECS.every((r) => r.absent.runq)) return absent(s, 'runq', runqTitle, RECS[0].absent.runq);
    lineChart(s, 'runq', runqTitle,
      { xTitle: 'latency (µs, upper edge of a log2 bucket)', yTitle: '% of waits', xLog: true, legend: 'thread',
        note: 'Each point is one log2 bucket of the kernel\'s histogram: the share of the thread\'s waits that lasted up to that long.' },
      RECS.flatMap((rec, i) => rec.charted.map((t, k) => {
        const slots = rec.runq[k].slots;
        const total = slots.reduce((a, x) => a + x[2], 0) || 1;
        return { name: sideName(i, t.label), points: slots.map(([, hi, n]) => [hi, 100 * n / total]) };
      })).filter((x) => x.points.length));
    RECS.forEach((r, i) => { if (r.absent.runq) s.append(el('p', { class: 'absent' }, sideName(i, r.absent.runq))); });
  }

  function batches() {
    const s = section('batches', 'The platoon effect: batches against the wait before them',
      'Each cell counts a thread\'s batches (ready events per epoll return, or fibers queued at a runtime drain) by the run-queue wait the thread had since its previous batch. When the batches grow with the wait, readiness piled up while the thread could not run.');
    RECS.forEach((rec, i) => {
      if (!rec.batches) return absent(s, VS ? 'batches-' + SIDE[i] : 'batches', sideName(i, 'batches'), rec.absent.batches);
      const b = rec.batches;
      const waitLabel = (w) => (w === 0 ? '<1' : fmt(b.wait_bin_low_us[w], 0)) + (w === b.wait_bin_low_us.length - 1 ? '+' : '');
      const batchLabel = (k) => {
        const lo = b.batch_bin_low[k], hi = k + 1 < b.batch_bin_low.length ? b.batch_bin_low[k + 1] - 1 : null;
        return hi === null ? lo + '+' : hi > lo ? lo + '-' + hi : String(lo);
      };
      if (!b.threads.length) return absent(s, VS ? 'batches-' + SIDE[i] : 'batches', sideName(i, 'batches'), 'no charted thread made epoll wait calls or drained');
      for (const bt of b.threads) {
        const t = rec.charted.find((x) => x.tid === bt.tid);
        for (const kind of ['epoll', 'drain']) {
          const g = bt[kind];
          if (!g) continue;
          const rows = b.batch_bin_low.map((_, k) => batchLabel(k)).reverse();
          const cols = b.wait_bin_low_us.map((_, w) => waitLabel(w));
          const cells = g.cells.map(([w, k, n]) => ({ row: batchLabel(k), col: w, v: n }));
          heatmap(s, 'batches-' + (VS ? SIDE[i] + '-' : '') + bt.tid + '-' + kind,
            sideName(i, t.label) + (kind === 'epoll' ? ': ready events per epoll return' : ': fibers queued per drain') +
            ' (' + fmt(g.samples, 0) + ')',
            { xTitle: 'run-queue wait before it (µs, log2 bins)', yTitle: kind === 'epoll' ? 'events per return' : 'queue depth',
              vTitle: 'batches', logColor: true, xAngle: -45 }, rows, cols, cells, 1);
        }
      }
    });
  }

  function requests() {
    const s = section('requests', 'Requests: latency from the kernel',
      'Per request on the target\'s TCP connections: socket wait (data in the socket, not yet read), service (read to response) and server time (their sum), as percentile spectra. The last point of each line is the maximum.');
    const present = RECS.filter((r) => r.requests && r.requests.server.length + r.requests.client.length > 0);
    if (!present.length) {
      const why = RECS.map((r) => r.absent.requests).find(Boolean) || 'the target served no request while it was recorded';
      return absent(s, 'requests', 'Request latency spectra', why);
    }
    const series = [];
    RECS.forEach((rec, i) => {
      if (!rec.requests) return;
      for (const row of rec.requests.server) {
        for (const [key, label] of [['socket_wait_us', 'socket wait'], ['service_us', 'service'], ['server_time_us', 'server time']])
          series.push({ name: sideName(i, row.endpoint + ' ' + label), spectrum: row[key], count: row.count });
      }
      for (const row of rec.requests.client)
        series.push({ name: sideName(i, '→ ' + row.endpoint + ' round trip'), spectrum: row.round_trip_us, count: row.count });
    });
    spectrumChart(s, 'requests', 'Request latency spectra', { yTitle: 'latency (µs)', legend: 'requests' }, series);
    // Attribution: what the reading thread did while each request waited in its socket.
    const parts = Object.keys((present[0].requests.server[0] || present[0].requests.client[0]).socket_wait_by_state_pct);
    const layersRows = [];
    RECS.forEach((rec, i) => {
      if (!rec.requests) return;
      for (const row of rec.requests.server.concat(rec.requests.client)) layersRows.push({ name: sideName(i, row.endpoint), row });
    });
    const cells = [];
    layersRows.forEach(({ name, row }) => parts.forEach((p, k) => cells.push({ row: name, col: k, v: row.socket_wait_by_state_pct[p] })));
    heatmap(s, 'requests-states', 'Socket wait by what the reader was doing (% of the socket wait)',
      { xTitle: 'the reading thread was', yTitle: 'requests', vTitle: '% of socket wait', vDomain: [0, 100],
        note: 'runnable: waiting for a CPU (the scheduling share); throttled: its cgroup\'s quota; running: busy with other work; blocked: asleep until woken; unattributed: another thread read it.' },
      layersRows.map((x) => x.name), parts, cells, layersRows.length);
    s.append(table(['requests', 'count', 'rate (/s)'].concat(parts.map((p) => p + ' %')),
      layersRows.map(({ name, row }) => [name, row.count, row.rate].concat(parts.map((p) => row.socket_wait_by_state_pct[p])))));
  }

  function threadTable() {
    const s = section('table', 'Every thread, whole recording', 'The numbers of platoon report, for every thread (not only the charted ones).');
    const cols = ['thread', 'tid', 'pid', '%CPU', '%wait', 'migrations', 'runq p50 (µs)', 'runq p99 (µs)', 'events/epoll'];
    RECS.forEach((rec, i) => {
      if (VS) s.append(el('h3', {}, SIDE[i] + ': ' + rec.label));
      // A page stays quick with thousands of threads: the busiest MAX_TABLE_ROWS, the rest counted.
      const all = rec.report.threads.slice().sort((x, y) => (y.run_ns + y.wait_ns) - (x.run_ns + x.wait_ns));
      const rows = all.slice(0, MAX_TABLE_ROWS);
      s.append(table(cols, rows.map((t) => [t.comm, t.tid, t.pid, t.cpu_pct, t.wait_pct, t.migrations,
        t.runq_latency_us ? t.runq_latency_us.p50 : null, t.runq_latency_us ? t.runq_latency_us.p99 : null,
        t.io ? t.io.events_per_cycle : null])));
      if (all.length > rows.length)
        s.append(el('p', { class: 'note' }, 'The busiest ' + rows.length + ' of ' + all.length +
          ' threads; platoon report --format json has them all.'));
    });
  }

  build([header, findings, cpuWait, waitCauses, placement, batches, requests, costBox, threadTable]);
})();
