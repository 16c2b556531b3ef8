// pipedbn's status page: polls api/status every second and draws the run
// (or the sweep) it returns. Everything is built with DOM calls and
// textContent: names from the server are never parsed as HTML.
'use strict';

const SVG = 'http://www.w3.org/2000/svg';

// el makes an element: attrs are attributes (class, id, data-*, ...),
// kids are nodes or strings (text).
function el(tag, attrs, ...kids) { return make(document.createElement(tag), attrs, kids); }
function sv(tag, attrs, ...kids) { return make(document.createElementNS(SVG, tag), attrs, kids); }
function make(n, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null && v !== false) n.setAttribute(k, String(v));
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null || k === false) continue;
    n.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return n;
}

// Numbers for people.
function dur(s) {
  if (s === null || s === undefined || !isFinite(s)) return '–';
  s = Math.max(0, s);
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, sec = Math.floor(s) % 60;
  if (h > 0) return h + ' h ' + String(m).padStart(2, '0') + ' min';
  return m + ' min ' + String(sec).padStart(2, '0') + ' s';
}
function sig(x, n = 3) {
  if (x === null || x === undefined || !isFinite(x)) return '–';
  if (x === 0) return '0';
  const a = Math.abs(x);
  if (a >= 1e5 || a < 1e-3) return x.toExponential(n - 1);
  return Number(x.toPrecision(n)).toString();
}
function when(t) {
  const d = new Date(t);
  return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
}
function int(x) { return (x || 0).toLocaleString('en-US'); }
function pct(x) { return (100 * (x || 0)).toFixed(2) + ' %'; }

const STATE_WORDS = {
  idle: 'idle', training: 'training', waiting_input: 'waiting for input', waiting_credit: 'waiting for credit',
  waiting_average: 'waiting for the average', done: 'done', failed: 'failed', lost: 'lost', replaced: 'replaced',
};
function badge(state, words) {
  return el('span', { class: 'badge', 'data-state': state }, words || STATE_WORDS[state] || state);
}

// chart draws series ([{points: [[x, y], ...], cls}]) and dots ([[x, y]])
// as an inline SVG line chart with its axes' ranges written at the ends.
function chart(opt) {
  const W = 320, H = 150, L = 46, R = 8, T = 8, B = 24;
  const all = opt.series.flatMap((s) => s.points).concat(opt.dots || []);
  let x0 = opt.x0 ?? Math.min(...all.map((p) => p[0]));
  let x1 = opt.x1 ?? Math.max(...all.map((p) => p[0]));
  let y0 = opt.y0 ?? Math.min(...all.map((p) => p[1]));
  let y1 = opt.y1 ?? Math.max(...all.map((p) => p[1]));
  if (!(x1 > x0)) x1 = x0 + 1;
  if (!(y1 > y0)) { const d = Math.abs(y0) * 0.1 || 1; y0 -= d; y1 += d; }
  const X = (x) => L + (x - x0) / (x1 - x0) * (W - L - R);
  const Y = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  const g = sv('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': opt.label });
  g.append(sv('line', { class: 'axis', x1: L, y1: H - B, x2: W - R, y2: H - B }),
    sv('line', { class: 'axis', x1: L, y1: T, x2: L, y2: H - B }));
  for (const x of opt.xgrid || []) {
    g.append(sv('line', { class: 'grid', x1: X(x).toFixed(1), y1: T, x2: X(x).toFixed(1), y2: H - B }));
  }
  const yt = opt.yfmt || sig;
  g.append(sv('text', { x: L - 4, y: T + 8, 'text-anchor': 'end' }, yt(y1)),
    sv('text', { x: L - 4, y: H - B, 'text-anchor': 'end' }, yt(y0)),
    sv('text', { x: L, y: H - 8 }, sig(x0, 4)),
    sv('text', { x: W - R, y: H - 8, 'text-anchor': 'end' }, sig(x1, 4) + ' ' + (opt.xlabel || '')));
  for (const s of opt.series) {
    if (!s.points.length) continue;
    const pts = s.points.map((p) => X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1)).join(' ');
    g.append(sv('polyline', { class: 'curve ' + (s.cls || ''), points: pts, 'data-points': s.points.length, 'data-series': s.name },
      sv('title', {}, s.name)));
  }
  for (const p of opt.dots || []) {
    g.append(sv('circle', { class: 'dot', cx: X(p[0]).toFixed(1), cy: Y(p[1]).toFixed(1), r: 2.6 },
      sv('title', {}, (opt.dotLabel || '') + sig(p[1], 4))));
  }
  return g;
}

// facts is a list of [name, value, id] (falsy entries skipped); attrs
// are the list's own (its class beside facts).
function facts(pairs, attrs) {
  const cls = 'facts' + (attrs && attrs.class ? ' ' + attrs.class : '');
  return el('dl', { ...attrs, class: cls }, pairs.filter(Boolean).map(([k, v, id]) =>
    el('div', { id }, el('dt', {}, k), el('dd', { class: 'num' }, v))));
}

// ---- a run ---------------------------------------------------------------

function renderRun(s) {
  document.title = s.name + ' · ' + s.state + ' · pipedbn';
  const title = document.getElementById('title');
  title.replaceChildren('pipedbn run ', el('span', {}, s.name), ' ', badge(s.state, s.state));
  const rbms = s.rbms || [];
  const recoveries = s.recoveries || [];
  const shape = rbms.length ? [rbms[0].visible, ...rbms.map((r) => r.hidden)].join('–') : '–';
  const parts = [];

  const pretrainDone = s.state !== 'starting' && s.state !== 'pre-training';
  const head = el('section', { id: 'run' },
    facts([
      ['mode', s.mode, 'f-mode'],
      ['DBN', shape, 'f-shape'],
      ['elapsed', dur(s.elapsed_seconds), 'f-elapsed'],
      ['pre-training', dur(s.pretrain_seconds) + (pretrainDone ? '' : ' so far'), 'f-pretrain'],
      ['ETA (pre-training)', s.eta_seconds === null ? (pretrainDone ? 'done' : 'unknown yet') : dur(s.eta_seconds), 'f-eta'],
      ['mini-batches', int(s.batches) + ' / ' + int(s.batches_total), 'f-batches'],
      s.end_to_end_seconds ? ['end to end', dur(s.end_to_end_seconds), 'f-end-to-end'] : null,
      ['slaves', String((s.slaves || []).length), 'f-slaves'],
      ['started', when(s.started), 'f-started'],
    ]),
    el('div', { class: 'progress', title: 'mini-batches trained of planned, all RBMs' },
      el('span', { style: `width:${s.batches_total ? (100 * s.batches / s.batches_total).toFixed(1) : 0}%` })),
    s.pretrain_phases ? phaseList(s.pretrain_phases) : null,
    s.error ? el('p', { class: 'error' }, s.error) : null,
    s.plan ? el('details', { id: 'plan' }, el('summary', {}, 'plan of the slaves'), el('pre', {}, s.plan)) : null);
  parts.push(head);

  if (rbms.length) parts.push(rbmRows(rbms, recoveries), reconCharts(rbms));
  parts.push(recoveryTable(recoveries));
  if (s.finetuning || s.finetune) parts.push(finetune(s.finetuning, s.finetune));
  if ((s.slaves || []).length) parts.push(slaveTable(s.slaves));
  return parts;
}

// phaseList shows the phases of a pipelined run's pre-training passed so
// far, each with its seconds, and the current one (result.json's
// pretrain_phases, once pre-training ended).
function phaseList(ps) {
  const secs = (x) => (x < 10 ? Math.max(0, x).toFixed(2) + ' s' : dur(x));
  return el('ol', { id: 'phases', class: 'phases', title: 'phases of pre-training and their seconds' },
    ps.map((p) => el('li', { 'data-phase': p.name, class: p.current ? 'current' : null },
      el('span', { class: 'label' }, p.name), ' ', el('span', { class: 'num' }, secs(p.seconds)))));
}

function rbmRows(rbms, recoveries) {
  const maxTime = Math.max(1e-9, ...rbms.map((r) => r.busy_seconds + r.wait_seconds));
  const cell = (label, cls, ...kids) => el('div', { class: cls }, el('span', { class: 'label' }, label), ...kids);
  const rows = rbms.map((r) => {
    const rec = recoveries.filter((x) => x.rbm === r.index);
    const replaced = rec.filter((x) => x.replacement !== x.lost).length;
    const perEpoch = r.epochs ? Math.round(r.batches_total / r.epochs) : 0;
    const inEpoch = perEpoch ? Math.min(perEpoch, r.batches - (r.epoch - 1) * perEpoch) : r.batches;
    const total = r.busy_seconds + r.wait_seconds;
    const w = (x) => (100 * x / maxTime).toFixed(2) + '%';
    return el('div', { class: 'row rbm', id: 'rbm-' + r.index, 'data-state': r.state, 'data-rbm': r.index },
      cell('', '', el('b', {}, 'RBM ' + r.index), ' ', el('span', { class: 'muted' }, r.visible + '×' + r.hidden)),
      cell('slave', '', r.worker || '–'),
      cell('', '', badge(r.state), replaced && r.state !== 'lost' ? [' ', badge('replaced', replaced > 1 ? `replaced ×${replaced}` : 'replaced')] : null,
        r.rejected ? [' ', el('span', { class: 'muted', title: 'messages its slave dropped on its input' }, 'rejected ' + r.rejected)] : null),
      cell('epoch', 'num', r.epoch + ' / ' + r.epochs),
      cell('mini-batch', 'num', int(Math.max(0, inEpoch)) + ' / ' + int(perEpoch)),
      cell('samples/s', 'num', int(Math.round(r.samples_per_second))),
      cell('', 'wide', el('div', { class: 'bar', title: `busy ${sig(r.busy_seconds)} s, waiting for input ${sig(r.wait_input_seconds)} s, for credit ${sig(r.wait_credit_seconds)} s` },
        el('span', { class: 'busy', style: 'width:' + w(r.busy_seconds) }),
        el('span', { class: 'input', style: 'width:' + w(r.wait_input_seconds) }),
        el('span', { class: 'credit', style: 'width:' + w(r.wait_credit_seconds) })),
      el('div', { class: 'bartext num' }, `busy ${total > 0 ? Math.round(100 * r.busy_seconds / total) : 0} % of ${dur(total)}`)),
      cell('recon error', 'num', sig(r.last_recon_error, 4)));
  });
  return el('section', { id: 'rbms' }, el('h2', {}, 'RBMs'),
    el('div', { class: 'rows' },
      el('div', { class: 'row head' }, ['RBM', 'slave', 'state', 'epoch', 'mini-batch', 'samples/s', 'busy vs waiting', 'recon error'].map((h) => el('div', {}, h))),
      rows),
    el('div', { class: 'legend' }, el('i', { style: 'background:var(--busy)' }), 'busy',
      el('i', { style: 'background:var(--input)' }), 'waiting for input',
      el('i', { style: 'background:var(--credit)' }), 'waiting for credit'));
}

function reconCharts(rbms) {
  const figs = rbms.map((r) => {
    const perEpoch = r.epochs ? r.batches_total / r.epochs : 0;
    const trace = r.recon_trace || [];
    const epochs = (r.recon_error || []).map((e, i) => [(i + 1) * perEpoch, e]);
    const cap = el('figcaption', {}, el('b', {}, 'RBM ' + r.index), ' ',
      el('span', { class: 'muted' }, `reconstruction error by mini-batch; dots: per epoch (${epochs.length} of ${r.epochs})`));
    if (trace.length + epochs.length < 2) {
      return el('figure', { id: 'recon-' + r.index, 'data-rbm': r.index }, cap, el('p', { class: 'muted' }, 'no error reported yet'));
    }
    const xs = trace.map((p) => p[0]).concat(epochs.map((p) => p[0]));
    const grid = [];
    if (perEpoch > 0 && r.epochs <= 60) for (let e = 1; e * perEpoch < Math.max(...xs); e++) grid.push(e * perEpoch);
    return el('figure', { id: 'recon-' + r.index, 'data-rbm': r.index }, cap,
      chart({ label: `RBM ${r.index} reconstruction error`, series: [{ name: 'latest window', points: trace }],
        dots: epochs, dotLabel: 'epoch: ', xgrid: grid, x0: 0, xlabel: 'mini-batches' }));
  });
  return el('section', { id: 'curves' }, el('h2', {}, 'Reconstruction error'), el('div', { class: 'charts' }, figs));
}

function finetune(prog, ft) {
  const hist = (ft && ft.history && ft.history.length ? ft.history : (prog && prog.history)) || [];
  const planned = (prog && prog.epochs) || (ft && ft.epochs) || 0;
  const sec = el('section', { id: 'finetune' }, el('h2', {}, 'Fine-tuning'));
  const secs = hist.map((e) => e.seconds || 0).filter((x) => x > 0);
  const eta = !ft && secs.length && planned > hist.length ? secs.reduce((a, b) => a + b, 0) / secs.length * (planned - hist.length) : null;
  sec.append(facts([
    ['epochs', hist.length + ' / ' + planned + (ft && hist.length < planned ? ' (stopped early)' : '')],
    ft ? ['test accuracy', pct(ft.test_accuracy), 'f-test'] : ['ETA (fine-tuning)', eta === null ? 'unknown yet' : dur(eta)],
    ft ? ['validation accuracy', pct(ft.validation_accuracy)] : null,
    ft ? ['train accuracy', pct(ft.train_accuracy)] : null,
    ft ? ['time', dur(ft.seconds)] : null,
  ]));
  if (prog && prog.plan) sec.append(finetunePlan(prog.plan));
  if (prog && prog.workers && prog.workers.length) sec.append(workerTable(prog.workers));
  if (hist.length) {
    const ep = (f) => hist.map((e) => [e.epoch, e[f]]);
    const acc = [{ name: 'train accuracy', cls: 's2', points: ep('train_accuracy') }];
    if (hist.some((e) => e.validation_accuracy > 0)) acc.push({ name: 'validation accuracy', cls: 's1', points: ep('validation_accuracy') });
    sec.append(el('div', { class: 'charts', style: 'margin-top:12px' },
      el('figure', { id: 'ft-loss' }, el('figcaption', {}, 'loss (cross-entropy) per epoch'),
        chart({ label: 'fine-tuning loss', series: [{ name: 'loss', points: ep('loss') }], dots: ep('loss'), xlabel: 'epoch', x0: hist.length > 1 ? undefined : 0 })),
      el('figure', { id: 'ft-accuracy' }, el('figcaption', {}, 'accuracy per epoch: ',
        el('span', { style: 'color:var(--busy)' }, 'train'), acc.length > 1 ? [' · ', el('span', { style: 'color:var(--credit)' }, 'validation')] : null),
        chart({ label: 'fine-tuning accuracy', series: acc, xlabel: 'epoch', yfmt: (y) => (100 * y).toFixed(1) + '%', x0: hist.length > 1 ? undefined : 0 }))));
  } else {
    sec.append(el('p', { class: 'muted' }, 'the first epoch is training'));
  }
  if (ft && ft.confusion && ft.confusion.length) sec.append(confusion(ft));
  return sec;
}

// finetunePlan shows how fine-tuning is laid out (result.json's
// finetune.plan): its workers, each one's mini-batch, CPU cap and threads.
function finetunePlan(p) {
  return facts([
    ['workers', int(p.workers), 'f-ft-workers'],
    p.workers > 1 && p.sync_every !== undefined
      ? ['averaged every', p.sync_every > 0 ? int(p.sync_every) + ' mini-batches' : 'epoch', 'f-ft-sync'] : null,
    ['batch per worker', int(p.batch_per_worker), 'f-ft-batch'],
    ['CPUs per worker', p.cpus > 0 ? sig(p.cpus) : 'uncapped', 'f-ft-cpus'],
    ['threads per worker', int(p.threads), 'f-ft-threads'],
  ], { id: 'ft-plan', class: 'plan', title: 'how fine-tuning is laid out' });
}

// workerTable shows the workers of data-parallel fine-tuning, each as it
// last reported, its busy against waiting time as a bar (the longest
// worker's time full width, as the RBMs' bars).
function workerTable(workers) {
  const maxTime = Math.max(1e-9, ...workers.map((w) => w.busy_seconds + w.wait_seconds));
  const width = (x) => 'width:' + (100 * x / maxTime).toFixed(2) + '%';
  const th = (h, num) => el('th', { class: num ? 'num' : null }, h);
  const td = (label, cls, ...kids) => el('td', { class: cls, 'data-label': label }, ...kids);
  const rows = workers.map((w) => {
    const total = w.busy_seconds + w.wait_seconds;
    return el('tr', { class: 'ft-worker', 'data-worker': w.name, 'data-state': w.state },
      td('worker', null, w.name), td('state', null, badge(w.state)),
      td('epoch', 'num', w.epochs ? w.epoch + ' / ' + w.epochs : w.epoch), td('mini-batches', 'num', int(w.batches)),
      td('loss', 'num', sig(w.loss, 4)), td('samples/s', 'num', int(Math.round(w.samples_per_second))),
      td('busy vs waiting', 'wide bars',
        el('div', { class: 'bar', title: `busy ${sig(w.busy_seconds)} s, waiting for windows or the average ${sig(w.wait_seconds)} s` },
          el('span', { class: 'busy', style: width(w.busy_seconds) }), el('span', { class: 'input', style: width(w.wait_seconds) })),
        el('div', { class: 'bartext num' }, `busy ${total > 0 ? Math.round(100 * w.busy_seconds / total) : 0} % of ${dur(total)}`)));
  });
  return el('div', { id: 'ft-workers' }, el('h2', { style: 'margin-top:14px' }, 'Fine-tuning workers'),
    el('div', { class: 'scroll' }, el('table', { class: 'grid' },
      el('thead', {}, el('tr', {}, th('worker'), th('state'), th('epoch', 1), th('mini-batches', 1), th('loss', 1), th('samples/s', 1), th('busy vs waiting'))),
      el('tbody', {}, rows))),
    el('div', { class: 'legend' }, el('i', { style: 'background:var(--busy)' }), 'busy',
      el('i', { style: 'background:var(--input)' }), 'waiting for windows or the average'));
}

function confusion(ft) {
  const names = ft.confusion.map((_, i) => (ft.classes && ft.classes[i]) || String(i));
  const short = (n) => n.length > 8 ? n.slice(0, 7) + '…' : n;
  const rows = ft.confusion.map((row, t) => {
    const sum = row.reduce((a, b) => a + b, 0) || 1;
    return el('tr', {}, el('th', { title: names[t] }, short(names[t])),
      row.map((n, p) => {
        const a = n / sum;
        return el('td', { class: 'num', title: `${names[t]} predicted as ${names[p]}: ${n}`,
          style: `background:rgba(var(--heat),${a.toFixed(3)});${a > 0.5 ? 'color:#fff' : ''}` }, n);
      }),
      ft.per_class_accuracy ? el('td', { class: 'num' }, (100 * ft.per_class_accuracy[t]).toFixed(1)) : null);
  });
  return el('div', { id: 'confusion' }, el('h2', { style: 'margin-top:14px' }, 'Confusion matrix (test set)'),
    el('p', { class: 'muted' }, 'rows: true class, columns: predicted; shade: share of the row'),
    el('div', { class: 'scroll' }, el('table', { class: 'confusion' },
      el('thead', {}, el('tr', {}, el('th', {}, ''), names.map((n, i) => el('th', { title: n }, String(i))),
        ft.per_class_accuracy ? el('th', { title: 'accuracy on the class' }, 'recall %') : null)),
      el('tbody', {}, rows))));
}

function recoveryTable(recs) {
  const sec = el('section', { id: 'recoveries' }, el('h2', {}, 'Recoveries'));
  if (!recs.length) {
    sec.append(el('p', { class: 'muted' }, 'no slave lost'));
    return sec;
  }
  const th = (h, num) => el('th', { class: num ? 'num' : null }, h);
  sec.append(el('div', { class: 'scroll' }, el('table', { class: 'grid' },
    el('thead', {}, el('tr', {}, th('RBM'), th('lost'), th('replacement'), th('at', 1), th('silent', 1), th('lost at', 1), th('resumed at', 1), th('redone', 1))),
    el('tbody', {}, recs.map((r) => el('tr', {},
      el('td', { 'data-label': 'RBM' }, r.rbm), el('td', { 'data-label': 'lost' }, r.lost),
      el('td', { 'data-label': 'replacement' }, r.replacement === r.lost ? r.lost + ' (taken back)' : r.replacement),
      el('td', { class: 'num', 'data-label': 'at' }, dur(r.at_seconds)), el('td', { class: 'num', 'data-label': 'silent' }, dur(r.silent_seconds)),
      el('td', { class: 'num', 'data-label': 'lost at' }, int(r.lost_at_batch)), el('td', { class: 'num', 'data-label': 'resumed at' }, int(r.resumed_at_batch)),
      el('td', { class: 'num', 'data-label': 'redone' }, int(r.redone_batches))))))));
  return sec;
}

function slaveTable(slaves) {
  return el('section', { id: 'slaves' }, el('h2', {}, 'Slaves'),
    el('div', { class: 'scroll' }, el('table', { class: 'grid' },
      el('thead', {}, el('tr', {}, el('th', {}, 'name'), el('th', {}, 'host'), el('th', { class: 'num' }, 'CPUs'), el('th', { class: 'num' }, 'joined at'))),
      el('tbody', {}, slaves.map((s) => el('tr', {},
        el('td', { 'data-label': 'name' }, s.name), el('td', { 'data-label': 'host' }, s.host),
        el('td', { class: 'num', 'data-label': 'CPUs' }, s.cpus), el('td', { class: 'num', 'data-label': 'joined at' }, dur(s.at_seconds))))))));
}

// ---- a sweep -------------------------------------------------------------

function renderSweep(s) {
  document.title = s.name + ' · sweep ' + s.state + ' · pipedbn';
  document.getElementById('title').replaceChildren('pipedbn sweep ', el('span', {}, s.name), ' ', badge(s.state, s.state));
  const runs = s.runs || [];
  const count = (st) => runs.filter((r) => r.state === st).length;
  const th = (h, num) => el('th', { class: num ? 'num' : null }, h);
  return [
    el('section', { id: 'sweep' }, facts([
      ['runs', String(runs.length)],
      ['done', String(count('done'))], ['running', String(count('running'))], ['pending', String(count('pending'))],
      count('failed') ? ['failed', String(count('failed'))] : null,
      ['elapsed', dur(s.elapsed_seconds)],
      ['ETA', s.eta_seconds === null ? (s.state === 'running' ? 'unknown yet' : '–') : dur(s.eta_seconds)],
      ['folder', s.dir],
    ])),
    el('section', { id: 'runs' }, el('h2', {}, 'Runs'), el('div', { class: 'scroll' }, el('table', { class: 'grid' },
      el('thead', {}, el('tr', {}, th('#'), th('run'), th('overrides'), th('state'), th('wall', 1), th('pre-training', 1), th('test accuracy', 1), th('page'))),
      el('tbody', {}, runs.map((r) => el('tr', { id: 'run-' + r.index, 'data-state': r.state },
        el('td', { 'data-label': '#' }, r.index),
        el('td', { 'data-label': 'run' }, r.name),
        el('td', { class: 'wide', 'data-label': 'overrides' }, el('code', {}, (r.sets || []).join(' '))),
        el('td', { 'data-label': 'state' }, badge(r.state, r.state + (r.reused ? ' (earlier)' : '')), r.error ? el('div', { class: 'error' }, r.error) : null),
        el('td', { class: 'num', 'data-label': 'wall' }, r.state === 'pending' ? '–' : dur(r.wall_seconds)),
        el('td', { class: 'num', 'data-label': 'pre-training' }, r.pretrain_seconds ? dur(r.pretrain_seconds) : '–'),
        el('td', { class: 'num', 'data-label': 'test accuracy' }, r.test_accuracy ? pct(r.test_accuracy) : '–'),
        el('td', { 'data-label': 'page' },
          r.url ? el('a', { href: r.url }, 'live page')
            : (r.state === 'done' || r.state === 'failed') ? el('a', { href: 'api/runs/' + r.index + '/result' }, 'result.json') : '–'))))))),
  ];
}

// ---- polling -------------------------------------------------------------

let last = 0;
async function poll() {
  const conn = document.getElementById('conn');
  let wait = 1000;
  try {
    const resp = await fetch('api/status', { cache: 'no-store' });
    if (!resp.ok) throw new Error(resp.status + ' ' + resp.statusText);
    const s = await resp.json();
    const sweep = Array.isArray(s.runs);
    const main = document.getElementById('main');
    main.dataset.kind = sweep ? 'sweep' : 'run';
    main.replaceChildren(...(sweep ? renderSweep(s) : renderRun(s)));
    last = Date.now();
    conn.dataset.ok = 'yes';
    conn.textContent = 'live · ' + new Date(last).toLocaleTimeString();
    if (['done', 'failed', 'interrupted'].includes(s.state)) wait = 5000;
  } catch (e) {
    conn.dataset.ok = 'no';
    conn.textContent = (last ? 'the master no longer answers (the run may have ended); last update ' + new Date(last).toLocaleTimeString()
      : 'cannot reach the master: ' + e.message);
    wait = 3000;
  }
  setTimeout(poll, wait);
}
poll();
