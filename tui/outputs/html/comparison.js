// The benchmark comparison page (scripts/comparison_page.py): every configuration of a
// run-quick-comparison.sh run on the same axes, from platoon-load's own histograms and the
// run's /proc figures, each chart with the commands that produced it.
(function () {
  'use strict';

  const DATA = JSON.parse(document.getElementById('platoon-data').textContent);
  const main = document.getElementById('report');
  const { el, section, absent, table, spectrumChart, barChart, build } = platoonCharts(main);
  const CONFIGS = DATA.configs;
  const fixed = CONFIGS.filter((c) => c.rate_run);
  const maxed = CONFIGS.filter((c) => c.max_run);

  function commands(parent, runs) {
    parent.append(el('details', { class: 'table' }, el('summary', {}, 'Commands'),
      el('div', { class: 'table-wrap' }, runs.map((r) => el('p', {}, el('code', {}, r.command || '(not recorded)'))))));
  }

  function header() {
    main.append(el('h1', {}, DATA.title));
    main.append(el('p', { class: 'note' }, 'Made by ', el('code', {}, DATA.made_by), ' from ', el('code', {}, DATA.dir), '.'));
    if (DATA.command) main.append(el('p', {}, 'The comparison: ', el('code', {}, DATA.command)));
    main.append(el('p', { class: 'note' }, 'Fixed-rate runs at ' + DATA.rate + ' req/s (latency corrected for coordinated omission: ' +
      'from each request\'s intended send time); max TPS from closed-loop runs. CPU and context switches are the server\'s, ' +
      'from /proc over the measured window.'));
  }

  function latency() {
    const s = section('latency', 'Latency percentile spectrum per configuration', 'platoon-load\'s corrected histogram, as wrk2 prints it.');
    if (!fixed.length) return absent(s, 'spectrum', 'Latency spectra', 'no fixed-rate run finished');
    spectrumChart(s, 'spectrum', 'Latency at ' + DATA.rate + ' req/s', { yTitle: 'latency (ms)', legend: 'configuration' },
      fixed.map((c) => ({ name: c.name, spectrum: c.rate_run.spectrum_ms, count: c.rate_run.requests })));
    const uncorrected = fixed.filter((c) => c.rate_run.uncorrected_spectrum_ms.length);
    if (uncorrected.length)
      spectrumChart(s, 'spectrum-uncorrected', 'Uncorrected latency (from each request\'s actual send)',
        { yTitle: 'latency (ms)', legend: 'configuration' },
        uncorrected.map((c) => ({ name: c.name, spectrum: c.rate_run.uncorrected_spectrum_ms, count: c.rate_run.requests })));
    commands(s, fixed.map((c) => c.rate_run));
  }

  function costs() {
    const s = section('cost', 'What a request costs the server', 'At the fixed rate, over the measured window.');
    barChart(s, 'cpu-per-request', 'CPU per request', { xTitle: 'CPU µs per request' },
      fixed.map((c) => ({ name: c.name, value: c.rate_run.cpu_us_per_request })));
    barChart(s, 'ctx-per-request', 'Context switches per request', { xTitle: 'context switches per request' },
      fixed.map((c) => ({ name: c.name, value: c.rate_run.context_switches_per_request })));
    barChart(s, 'carrier-wait', 'Highest %wait of a server thread', { xTitle: '%wait (runnable, not running)',
      note: 'The busiest-waiting thread of the server in each configuration: what pinning and cpusets cure.' },
      fixed.map((c) => ({ name: c.name, value: c.rate_run.max_wait_pct })));
    commands(s, fixed.map((c) => c.rate_run));
  }

  function throughput() {
    const s = section('max', 'Max throughput', 'Closed loop: as many requests as the server answers.');
    if (!maxed.length) return absent(s, 'max-tps', 'Max TPS', 'no max-TPS run (run with max TPS, not --no-max)');
    barChart(s, 'max-tps', 'Max TPS', { xTitle: 'requests per second' }, maxed.map((c) => ({ name: c.name, value: c.max_run.rate })));
    barChart(s, 'max-cpus', 'Server CPUs used at max TPS', { xTitle: 'CPUs' }, maxed.map((c) => ({ name: c.name, value: c.max_run.cpus_utilized })));
    commands(s, maxed.map((c) => c.max_run));
  }

  function summary() {
    const s = section('table', 'The numbers', 'The comparison table, as comparison.md has it.');
    s.append(table(['config', 'max TPS', 'p50 ms', 'p99 ms', 'p99.9 ms', 'errors', 'CPU µs/req', 'ctx sw/req', 'migrations/s'],
      CONFIGS.map((c) => {
        const r = c.rate_run || {}, lat = r.latency_ms || {};
        return [c.name, c.max_run ? c.max_run.rate : null, lat.p50, lat.p99, lat.p999, r.errors, r.cpu_us_per_request,
          r.context_switches_per_request, r.migrations_per_s];
      })));
  }

  build([header, latency, costs, throughput, summary]);
})();
