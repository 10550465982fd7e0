/* The page script of `sandcell batch report` (embedded by batch/report.c).
 * It reads the JSON blocks the generator wrote (sc-index: runs and one
 * entry per attempt; sc-d-N: attempt N's details; sc-detail on a side page)
 * and builds everything with createElement/createElementNS and textContent:
 * no text from a run is ever parsed as markup. No network, no eval. */
(function () {
	'use strict';
	var SVGNS = 'http://www.w3.org/2000/svg';
	var COLORS = ['#3b6fb6', '#d9822b', '#3a9a5b', '#b64a6d', '#7a5fb0', '#8a8a3a'];

	function el(tag, cls, text) {
		var e = document.createElement(tag);
		if (cls) e.className = cls;
		if (text !== undefined && text !== null) e.textContent = String(text);
		return e;
	}
	function add(parent, child) { parent.appendChild(child); return child; }
	function sv(tag, attrs, text) {
		var e = document.createElementNS(SVGNS, tag);
		for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, String(attrs[k]));
		if (text !== undefined) e.textContent = String(text);
		return e;
	}
	function block(id) {
		var s = document.getElementById(id);
		if (!s) return null;
		try { return JSON.parse(s.textContent); } catch (e) { return null; }
	}
	function num(v, digits) {
		if (v === null || v === undefined || typeof v !== 'number' || !isFinite(v)) return '–';
		return digits === undefined ? String(v) : v.toFixed(digits);
	}
	function count(v) {
		if (typeof v !== 'number') return '–';
		if (v >= 1e7) return (v / 1e6).toFixed(1) + 'M';
		if (v >= 1e4) return (v / 1e3).toFixed(1) + 'k';
		return String(v);
	}
	function secs(v) {
		if (typeof v !== 'number' || !isFinite(v)) return '–';
		if (v >= 3600) return (v / 3600).toFixed(2) + ' h';
		if (v >= 120) return (v / 60).toFixed(1) + ' min';
		return v.toFixed(v < 10 ? 2 : 1) + ' s';
	}
	function bytes(v) {
		if (typeof v !== 'number') return '–';
		if (v >= 1 << 20) return (v / 1048576).toFixed(1) + ' MiB';
		if (v >= 1024) return (v / 1024).toFixed(1) + ' KiB';
		return v + ' B';
	}
	function str(v) { return typeof v === 'string' ? v : (v === null || v === undefined ? '' : String(v)); }

	/* ---- charts: inline SVG ---- */

	var W = 560, H = 230, L = 48, R = 12, T = 26, B = 40;

	function figure(key, title, legend) {
		var fig = el('figure', 'chart-box');
		fig.setAttribute('data-chart', key);
		var svg = sv('svg', { 'class': 'chart', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img' });
		svg.setAttribute('data-chart', key);
		add(svg, sv('title', {}, title));
		add(svg, sv('text', { x: L, y: 16, 'class': 'ctitle' }, title));
		add(fig, svg);
		if (legend && legend.length > 1) {
			var lg = add(fig, el('figcaption', 'legend'));
			legend.forEach(function (name, i) {
				var sw = add(lg, el('span', 'swatch'));
				sw.style.backgroundColor = COLORS[i % COLORS.length];
				add(lg, el('span', null, name + '  '));
			});
		}
		return { fig: fig, svg: svg };
	}
	function axes(svg, ymax, yfmt, xlabels) {
		add(svg, sv('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, 'class': 'axis' }));
		add(svg, sv('line', { x1: L, y1: T, x2: L, y2: H - B, 'class': 'axis' }));
		[0, 0.5, 1].forEach(function (f) {
			var y = H - B - f * (H - B - T);
			add(svg, sv('line', { x1: L - 3, y1: y, x2: W - R, y2: y, 'class': f ? 'grid' : 'axis' }));
			add(svg, sv('text', { x: L - 5, y: y + 4, 'class': 'tick', 'text-anchor': 'end' }, yfmt(ymax * f)));
		});
		(xlabels || []).forEach(function (xl) {
			add(svg, sv('text', { x: xl[0], y: H - B + 14, 'class': 'tick', 'text-anchor': xl[2] || 'middle' }, xl[1]));
		});
	}
	function empty(svg, why) {
		add(svg, sv('text', { x: W / 2, y: H / 2, 'class': 'tick', 'text-anchor': 'middle' }, why));
	}

	/* A histogram of several series over common bins. */
	function histogram(key, title, series, names, fmt, integer) {
		var f = figure(key, title, names), svg = f.svg;
		var all = [];
		series.forEach(function (s) { s.forEach(function (v) { if (typeof v === 'number' && isFinite(v)) all.push(v); }); });
		if (!all.length) { empty(svg, 'no data'); return f.fig; }
		var lo = Math.min.apply(null, all.slice(0, 100000)), hi = Math.max.apply(null, all.slice(0, 100000));
		all.forEach(function (v) { if (v < lo) lo = v; if (v > hi) hi = v; });
		var nb = 20;
		if (integer) { lo = Math.floor(lo); hi = Math.floor(hi) + 1; nb = Math.min(nb, hi - lo); }
		if (hi <= lo) hi = lo + 1;
		var width = (hi - lo) / nb, counts = series.map(function () { var a = []; for (var i = 0; i < nb; i++) a.push(0); return a; });
		series.forEach(function (s, k) {
			s.forEach(function (v) {
				if (typeof v !== 'number' || !isFinite(v)) return;
				var b = Math.floor((v - lo) / width);
				if (b >= nb) b = nb - 1;
				if (b < 0) b = 0;
				counts[k][b]++;
			});
		});
		var ymax = 1;
		counts.forEach(function (c) { c.forEach(function (v) { if (v > ymax) ymax = v; }); });
		var pw = (W - L - R) / nb, bw = pw / series.length;
		axes(svg, ymax, function (v) { return v === Math.round(v) ? String(v) : v.toFixed(1); },
			[[L, fmt(lo), 'start'], [(L + W - R) / 2, fmt(lo + (hi - lo) / 2)], [W - R, fmt(hi), 'end']]);
		counts.forEach(function (c, k) {
			c.forEach(function (v, i) {
				if (!v) return;
				var h = v / ymax * (H - B - T);
				var r = add(svg, sv('rect', { x: L + i * pw + k * bw + 0.5, y: H - B - h, width: Math.max(bw - 1, 0.5), height: h, fill: COLORS[k % COLORS.length], 'class': 'bar' }));
				add(r, sv('title', {}, (names[k] ? names[k] + ': ' : '') + fmt(lo + i * width) + '–' + fmt(lo + (i + 1) * width) + ': ' + v));
			});
		});
		add(svg, sv('text', { x: W - R, y: H - 6, 'class': 'tick', 'text-anchor': 'end' }, all.length + ' values'));
		return f.fig;
	}

	/* Bars per label, one per series (values in [0, 1] or NaN). */
	function bars(key, title, labels, series, names, ymin) {
		var f = figure(key, title, names), svg = f.svg;
		if (!labels.length) { empty(svg, 'no scored attempts'); return f.fig; }
		var max = 300, shown = labels.slice(0, max);
		var lo = ymin === undefined ? 0 : ymin, hi = 1;
		var pw = (W - L - R) / shown.length, bw = pw / series.length;
		var y0 = function (v) { return H - B - (v - lo) / (hi - lo) * (H - B - T); };
		axes(svg, hi, function (v) { return (lo + (v / hi) * (hi - lo)).toFixed(1); },
			shown.length <= 12 ? shown.map(function (l, i) { return [L + (i + 0.5) * pw, l.length > 10 ? l.slice(0, 9) + '…' : l]; }) : []);
		if (lo < 0) add(svg, sv('line', { x1: L, y1: y0(0), x2: W - R, y2: y0(0), 'class': 'axis' }));
		series.forEach(function (s, k) {
			shown.forEach(function (label, i) {
				var v = s[i];
				if (typeof v !== 'number' || !isFinite(v)) return;
				var a = y0(Math.max(v, lo)), z = y0(Math.max(0, lo));
				var top = Math.min(a, z), h = Math.max(Math.abs(z - a), 1);
				var fill = lo < 0 ? (v >= 0 ? COLORS[2] : COLORS[3]) : COLORS[k % COLORS.length];
				var r = add(svg, sv('rect', { x: L + i * pw + k * bw + (pw > 4 ? 0.5 : 0), y: top, width: Math.max(bw - (pw > 4 ? 1 : 0), 0.3), height: h, fill: fill, 'class': 'bar' }));
				add(r, sv('title', {}, label + (names[k] ? ' (' + names[k] + ')' : '') + ': ' + v.toFixed(3)));
			});
		});
		var note = labels.length > max ? 'first ' + max + ' of ' + labels.length + ' tasks' : labels.length + ' tasks';
		add(svg, sv('text', { x: W - R, y: H - 6, 'class': 'tick', 'text-anchor': 'end' }, note));
		return f.fig;
	}

	function scatter(key, title, series, names, xname, yname) {
		var f = figure(key, title, names), svg = f.svg;
		var xmax = 1, ymax = 1, n = 0;
		series.forEach(function (s) { s.forEach(function (p) { if (p[0] > xmax) xmax = p[0]; if (p[1] > ymax) ymax = p[1]; n++; }); });
		if (!n) { empty(svg, 'no data'); return f.fig; }
		axes(svg, ymax, count, [[L, '0', 'start'], [W - R, count(xmax) + ' ' + xname, 'end']]);
		add(svg, sv('text', { x: L + 4, y: T + 10, 'class': 'tick' }, yname));
		series.forEach(function (s, k) {
			s.slice(0, 5000).forEach(function (p) {
				add(svg, sv('circle', { cx: L + p[0] / xmax * (W - L - R), cy: H - B - p[1] / ymax * (H - B - T), r: 2.5, fill: COLORS[k % COLORS.length], 'class': 'dot' }));
			});
		});
		return f.fig;
	}

	/* ---- header ---- */

	function runName(run, k) {
		var d = (run.dirs || []).join(', ');
		return 'run ' + (k + 1) + (run.mode ? ' · ' + run.mode : '') + (run.model ? ' · ' + run.model : '') + (d ? ' · ' + d : '');
	}
	function runLabel(run, k) { return (k + 1) + ': ' + (run.mode || 'run') + (run.model ? ' ' + run.model : ''); }

	function header(app, idx) {
		add(app, el('h1', null, 'sandcell batch report'));
		add(app, el('p', 'muted', (idx.attempts.length) + ' attempts in ' + idx.runs.length + (idx.runs.length === 1 ? ' run' : ' runs') + ' · generated ' + str(idx.generated)));
		var wrap = add(app, el('div', 'runs'));
		idx.runs.forEach(function (run, k) {
			var s = run.summary || {}, sec = add(wrap, el('section', 'run'));
			sec.setAttribute('data-run', String(k));
			var h = add(sec, el('h2', null, runName(run, k)));
			h.title = (run.dirs || []).join('\n');
			var dl = add(sec, el('dl'));
			function row(k2, v) { add(dl, el('dt', null, k2)); add(dl, el('dd', null, v)); }
			row('model', run.model || '–');
			row('mode', run.mode || '–');
			row('task file', run.tasks_file || '–');
			row('attempts', num(s.attempts) + ' of ' + num(s.tasks) + ' tasks' + (s.expected_attempts ? ' (' + s.expected_attempts + ' expected)' : ''));
			var st = s.status || {}, parts = [];
			Object.keys(st).forEach(function (k3) { parts.push(k3 + ' ' + st[k3]); });
			row('status', parts.join(', '));
			row('mean score', s.mean_score === null || s.mean_score === undefined ? 'not scored' : s.mean_score.toFixed(4) + ' over ' + s.scored + ' scored (' + s.correct + ' scored 1)');
			if (s.pass_at_k && Object.keys(s.pass_at_k).length) {
				row('pass@k', Object.keys(s.pass_at_k).map(function (k4) { return 'pass@' + k4 + ' ' + s.pass_at_k[k4].toFixed(4); }).join(', '));
			}
			row('wall time', secs(s.total_wall_s) + ' in all; per episode p50 ' + secs(s.p50_s) + ', p95 ' + secs(s.p95_s));
			if (s.setups) row('setup', num(s.setups) + ' setups for ' + num(s.grouped_attempts) + ' attempts in groups: ' + secs(s.setup_s) + ' in all, at most ' + secs(s.setup_max_s) + ' (once per group)');
			row('tokens', 'in ' + count(s.input_tokens) + ', out ' + count(s.output_tokens));
		});
	}

	/* ---- charts of the index ---- */

	function taskMeans(atts, runIdx) {
		var m = {};
		atts.forEach(function (a) {
			if (a.r !== runIdx || typeof a.sc !== 'number') return;
			var t = m[a.id] || (m[a.id] = [0, 0]);
			t[0] += a.sc; t[1]++;
		});
		var out = {};
		Object.keys(m).forEach(function (k) { out[k] = m[k][0] / m[k][1]; });
		return out;
	}

	function charts(app, idx) {
		var atts = idx.attempts, runs = idx.runs;
		var names = runs.map(runLabel);
		add(app, el('h2', null, 'Charts'));
		var box = add(app, el('div', 'charts'));
		box.id = 'charts';
		var per = runs.map(function (_, k) { return taskMeans(atts, k); });
		var ids = {};
		per.forEach(function (m) { Object.keys(m).forEach(function (k) { ids[k] = 1; }); });
		var labels = Object.keys(ids).sort();
		add(box, bars('score', 'Mean score per task', labels, per.map(function (m) { return labels.map(function (l) { return m[l]; }); }), names));
		function byRun(f) { return runs.map(function (_, k) { return atts.filter(function (a) { return a.r === k; }).map(f); }); }
		add(box, histogram('steps', 'Steps per episode', byRun(function (a) { return a.steps; }), names, function (v) { return String(Math.round(v)); }, true));
		add(box, histogram('wall', 'Episode wall time', byRun(function (a) { return a.wall; }), names, secs));
		add(box, scatter('tokens', 'Tokens per episode: in (x) and out (y)', byRun(function (a) { return [a.in || 0, a.out || 0]; }), names, 'in', 'out'));
		var lat = runs.map(function (_, k) {
			var v = [];
			atts.forEach(function (a) { if (a.r === k && a.lat) a.lat.forEach(function (x) { v.push(x); }); });
			return v;
		});
		add(box, histogram('latency', 'Model-call latency', lat, names, secs));
		if (runs.length >= 2) {
			var shared = labels.filter(function (l) { return typeof per[0][l] === 'number' && typeof per[1][l] === 'number'; });
			var cmp = add(app, el('div', 'compare'));
			cmp.id = 'compare';
			if (!shared.length) {
				add(cmp, el('p', 'muted', 'Runs 1 and 2 have no scored task in common: no comparison.'));
				return;
			}
			var d = 0;
			shared.forEach(function (l) { d += per[1][l] - per[0][l]; });
			d /= shared.length;
			var m0 = 0, m1 = 0;
			shared.forEach(function (l) { m0 += per[0][l]; m1 += per[1][l]; });
			add(cmp, el('p', 'delta', 'Over the ' + shared.length + ' tasks both runs scored: mean score ' + (m0 / shared.length).toFixed(4) + ' (' + names[0] + ') vs ' + (m1 / shared.length).toFixed(4) + ' (' + names[1] + '); difference (2 − 1) ' + (d >= 0 ? '+' : '') + d.toFixed(4)));
			var sorted = shared.slice().sort(function (a, b) { return (per[1][a] - per[0][a]) - (per[1][b] - per[0][b]); });
			var cbox = add(cmp, el('div', 'charts'));
			add(cbox, bars('compare', 'Per task, side by side (sorted by difference)', sorted, [0, 1].map(function (k) { return sorted.map(function (l) { return per[k][l]; }); }), [names[0], names[1]]));
			add(cbox, bars('difference', 'Score difference per task (2 − 1)', sorted, [sorted.map(function (l) { return per[1][l] - per[0][l]; })], [''], -1));
		}
	}

	/* ---- the table ---- */

	var COLS = [
		{ k: 'r', t: 'run', n: true, multi: true },
		{ k: 'id', t: 'id' }, { k: 'rep', t: 'repeat', n: true }, { k: 'st', t: 'status' },
		{ k: 'sc', t: 'score', n: true }, { k: 'exp', t: 'expected' }, { k: 'ans', t: 'answer' },
		{ k: 'steps', t: 'steps', n: true }, { k: 'in', t: 'tokens in', n: true },
		{ k: 'out', t: 'tokens out', n: true }, { k: 'wall', t: 'time', n: true }, { k: 'err', t: 'error' }
	];

	function table(app, idx) {
		var atts = idx.attempts, multi = idx.runs.length > 1;
		var cols = COLS.filter(function (c) { return !c.multi || multi; });
		add(app, el('h2', null, 'Attempts'));
		var bar = add(app, el('div', 'filters'));
		var q = add(bar, el('input'));
		q.type = 'search'; q.id = 'filter'; q.placeholder = 'filter: id, answer, expected, error';
		var sel = add(bar, el('select'));
		sel.id = 'status-filter';
		var statuses = {};
		atts.forEach(function (a) { statuses[a.st] = (statuses[a.st] || 0) + 1; });
		add(sel, el('option', null, 'all statuses')).value = '';
		Object.keys(statuses).sort().forEach(function (s) { var o = add(sel, el('option', null, s + ' (' + statuses[s] + ')')); o.value = s; });
		var sel2 = add(bar, el('select'));
		sel2.id = 'score-filter';
		[['', 'any score'], ['1', 'scored 1'], ['<1', 'scored below 1'], ['none', 'not scored']].forEach(function (p) { add(sel2, el('option', null, p[1])).value = p[0]; });
		var shown = add(bar, el('span', 'muted'));
		var tbl = add(app, el('table', 'attempts'));
		tbl.id = 'attempts';
		var thead = add(tbl, el('thead')), tr = add(thead, el('tr'));
		var tbody = add(tbl, el('tbody'));
		var rows = atts.map(function (a, i) {
			var row = el('tr', 'attempt ' + (typeof a.sc === 'number' ? (a.sc >= 1 - 1e-9 ? 'pass' : 'fail') : 'unscored'));
			row.setAttribute('data-i', String(i));
			cols.forEach(function (c) {
				var v = a[c.k], td;
				if (c.k === 'id') {
					td = el('td', 'id');
					var link = add(td, el('a', null, a.id));
					link.href = a.f ? a.f : '#a-' + i;
					if (a.f) link.title = 'details in ' + a.f;
				} else if (c.k === 'r') td = el('td', 'num', v + 1);
				else if (c.k === 'sc') td = el('td', 'num', typeof v === 'number' ? v.toFixed(3) : '–');
				else if (c.k === 'wall') td = el('td', 'num', secs(v));
				else if (c.k === 'in' || c.k === 'out') td = el('td', 'num', count(v));
				else if (c.n) td = el('td', 'num', num(v));
				else td = el('td', c.k === 'st' ? 'st st-' + str(v).replace(/[^a-z_]/g, '') : 'text', str(v) + (a[c.k + '_len'] ? '…' : ''));
				row.appendChild(td);
			});
			return { row: row, a: a, text: (str(a.id) + '\n' + str(a.ans) + '\n' + str(a.exp) + '\n' + str(a.err)).toLowerCase() };
		});
		var frag = document.createDocumentFragment();
		rows.forEach(function (r) { frag.appendChild(r.row); });
		tbody.appendChild(frag);
		var sortKey = null, sortDir = 1;
		cols.forEach(function (c) {
			var th = add(tr, el('th', c.n ? 'num sortable' : 'sortable', c.t));
			th.setAttribute('data-key', c.k);
			th.addEventListener('click', function () {
				sortDir = sortKey === c.k ? -sortDir : 1;
				sortKey = c.k;
				Array.prototype.forEach.call(tr.children, function (x) { x.removeAttribute('data-sort'); });
				th.setAttribute('data-sort', sortDir > 0 ? 'asc' : 'desc');
				rows.sort(function (x, y) {
					var a = x.a[c.k], b = y.a[c.k];
					if (c.n) {
						a = typeof a === 'number' ? a : -Infinity; b = typeof b === 'number' ? b : -Infinity;
						return (a - b) * sortDir;
					}
					return str(a).localeCompare(str(b)) * sortDir;
				});
				var f2 = document.createDocumentFragment();
				rows.forEach(function (r) { f2.appendChild(r.row); });
				tbody.appendChild(f2);
			});
		});
		function apply() {
			var t = q.value.toLowerCase(), s = sel.value, sc = sel2.value, n = 0;
			rows.forEach(function (r) {
				var v = r.a.sc, ok = (!t || r.text.indexOf(t) >= 0) && (!s || r.a.st === s) &&
					(!sc || (sc === '1' ? typeof v === 'number' && v >= 1 - 1e-9 : sc === '<1' ? typeof v === 'number' && v < 1 - 1e-9 : typeof v !== 'number'));
				r.row.hidden = !ok;
				if (ok) n++;
			});
			shown.textContent = n + ' of ' + rows.length + ' attempts shown';
		}
		q.addEventListener('input', apply);
		sel.addEventListener('change', apply);
		sel2.addEventListener('change', apply);
		apply();
	}

	/* ---- one episode ---- */

	function pre(cls, text) { return el('pre', cls, text); }
	function folded(summary, body, open) {
		var d = el('details');
		if (open) d.open = true;
		add(d, el('summary', null, summary));
		add(d, body);
		return d;
	}
	function cutNote(o, key) {
		var n = o[key + '_len'];
		return n ? el('p', 'note', 'cut by the report: ' + bytes(str(o[key]).length) + ' of ' + bytes(n) + ' shown') : null;
	}
	function diffBlock(oldText, newText) {
		var p = el('pre', 'diff');
		function lines(t, sign, cls) {
			var ls = str(t).split('\n');
			if (ls.length > 1 && ls[ls.length - 1] === '') ls.pop();
			ls.forEach(function (l) { add(p, el('span', cls, sign + l + '\n')); });
		}
		if (oldText !== null && oldText !== undefined) lines(oldText, '-', 'del');
		if (newText !== null && newText !== undefined) lines(newText, '+', 'ins');
		return p;
	}
	function toolCall(box, s) {
		var args = s.args || {}, fn = str(s.fn);
		var head = add(box, el('div', 'call-head'));
		add(head, el('span', 'fn', fn || '(no tool)'));
		if (fn === 'execute_bash' && typeof args.command === 'string') {
			var c = args.command, n = c.split('\n').length;
			if (c.length > 1500 || n > 25) add(box, folded('command: ' + n + ' lines, ' + bytes(c.length) + ' — ' + c.slice(0, 80).replace(/\s+/g, ' '), pre('cmd', c)));
			else add(box, pre('cmd', c));
			return;
		}
		if (fn === 'str_replace_editor' && typeof args.command === 'string') {
			add(head, el('span', 'sub', ' ' + args.command + ' ' + str(args.path)));
			if (args.command === 'create') add(box, diffBlock(null, args.file_text));
			else if (args.command === 'str_replace') add(box, diffBlock(args.old_str, args.new_str));
			else if (args.command === 'insert') { add(box, el('p', 'muted', 'after line ' + str(args.insert_line))); add(box, diffBlock(null, args.new_str)); }
			else if (args.view_range) add(box, el('p', 'muted', 'lines ' + JSON.stringify(args.view_range)));
			return;
		}
		if (Object.keys(args).length) add(box, pre('args', JSON.stringify(args, null, 2)));
	}
	function observation(box, s) {
		if (s.obs === null || s.obs === undefined) return;
		var text = str(s.obs), lines = text.split('\n').length;
		var p = pre('obs', text);
		if (text.length > 1500 || lines > 25) {
			var d = add(box, folded('observation: ' + lines + ' lines, ' + bytes(text.length) + (s.obs_len ? ' (of ' + bytes(s.obs_len) + ')' : '') + ' — ' + text.slice(0, 80).replace(/\s+/g, ' '), p));
			d.className = 'obs-fold';
		} else {
			add(box, p);
		}
		var n = cutNote(s, 'obs');
		if (n) add(box, n);
	}
	function fileEntry(list, f) {
		var li = add(list, el('li', 'file'));
		add(li, el('span', 'fname', f.name));
		add(li, el('span', 'muted', ' ' + bytes(f.size) + ' · ' + str(f.kind)));
		if (f.kind === 'symlink') add(li, el('span', 'muted', ' → ' + str(f.target) + ' (not followed)'));
		if ((f.kind === 'image' || f.kind === 'svg') && typeof f.data === 'string' && /^[A-Za-z0-9+\/=]*$/.test(f.data)) {
			var mime = f.kind === 'svg' ? 'image/svg+xml' : str(f.mime);
			if (/^image\/(png|jpeg|gif|webp|svg\+xml)$/.test(mime)) {
				var img = add(li, el('img', 'shot'));
				img.alt = f.name;
				img.src = 'data:' + mime + ';base64,' + f.data;
			}
		} else if (f.kind === 'image' && f.too_large) {
			add(li, el('p', 'note', 'image larger than the report\'s limit: not shown'));
		}
		if (typeof f.text === 'string') {
			var body = pre('filetext', f.text);
			add(li, folded(f.kind === 'svg' ? 'SVG source' : 'contents' + (f.cut ? ' (cut by the report)' : ''), body, f.kind !== 'svg' && f.text.length < 4000));
		}
	}

	function renderDetail(box, d) {
		box.textContent = '';
		box.setAttribute('data-attempt', String(d.i));
		var h = add(box, el('h2', null, 'Attempt ' + d.i + ': ' + str(d.id) + ' (repeat ' + d.repeat + ')'));
		h.id = 'episode-title';
		var meta = add(box, el('p', 'meta'));
		add(meta, el('span', 'st st-' + str(d.status).replace(/[^a-z_]/g, ''), d.status));
		add(meta, el('span', null, ' · score ' + (typeof d.score === 'number' ? d.score.toFixed(3) : 'none') + (d.scorer ? ' (' + d.scorer + ')' : '') + ' · ' + d.steps_n + ' steps · ' + secs(d.wall_s) + ' · tokens in ' + count(d.input_tokens) + ', out ' + count(d.output_tokens)));
		if (typeof d.group === 'number') add(box, el('p', 'muted', 'group ' + d.group + ' of ' + d.group_size + ' attempts, forked from setup ' + str(d.setup_run) + ' (' + secs(d.setup_s) + ', once for the group)'));
		if (d.run) add(box, el('p', 'muted', str(d.run) + '/' + str(d.dir)));
		(d.notes || []).forEach(function (n) { add(box, el('p', 'note', n)); });
		if (d.error) add(box, pre('error', d.error));
		if (d.system) add(box, folded('system prompt (' + bytes(str(d.system).length) + ')', pre('prompt', d.system)));
		if (d.user) add(box, folded('user prompt: ' + str(d.user).slice(0, 100).replace(/\s+/g, ' '), pre('prompt', d.user)));
		var conv = add(box, el('ol', 'conversation'));
		(d.steps || []).forEach(function (s) {
			var li = add(conv, el('li', 'step'));
			add(li, el('div', 'step-head', 'step ' + s.step + (typeof s.llm === 'number' ? ' · model ' + secs(s.llm) : '') + (typeof s.exec === 'number' ? ' · tool ' + secs(s.exec) : '')));
			if (s.reasoning) add(li, folded('reasoning', pre('reasoning', s.reasoning)));
			if (s.thought) add(li, el('div', 'thought', s.thought));
			toolCall(add(li, el('div', 'call')), s);
			observation(li, s);
		});
		if (d.steps_not_shown) add(box, el('p', 'note', d.steps_not_shown + ' more steps not shown'));
		var ans = add(box, el('div', 'answer'));
		add(ans, el('h3', null, 'Answer'));
		var answer = typeof d.answer_file === 'string' ? d.answer_file : d.answer;
		add(ans, pre('answer-text', answer === null || answer === undefined ? '(none)' : answer));
		var n1 = cutNote(d, typeof d.answer_file === 'string' ? 'answer_file' : 'answer');
		if (n1) add(ans, n1);
		add(ans, el('p', null, 'expected: ' + (d.expected === null || d.expected === undefined ? '(none)' : d.expected)));
		add(ans, el('p', 'score', 'score ' + (typeof d.score === 'number' ? d.score.toFixed(3) : 'none') + (d.scorer ? ' by ' + d.scorer : '')));
		if (typeof d.reason === 'string') add(ans, folded('the scorer\'s output (checker.log)', pre('reason', d.reason), true));
		if (d.files) {
			add(box, el('h3', null, 'Files left in /testbed/output (' + d.files.length + ')'));
			var ul = add(box, el('ul', 'files'));
			d.files.forEach(function (f) { fileEntry(ul, f); });
		}
	}

	function openFromHash(idx, panel) {
		var m = /^#a-(\d+)$/.exec(location.hash);
		if (!m) return;
		var i = Number(m[1]), a = idx.attempts[i];
		if (!a) return;
		if (a.f) { location.href = a.f; return; }
		var d = block('sc-d-' + i);
		panel.hidden = false;
		var body = panel.querySelector('.episode-body');
		if (!d) { body.textContent = 'no details for attempt ' + i; return; }
		renderDetail(body, d);
		panel.scrollIntoView();
	}

	function main() {
		var app = document.getElementById('app');
		var single = block('sc-detail');
		if (single) {
			var back = add(app, el('a', 'back', '← the report'));
			back.href = typeof single.back === 'string' ? single.back : '#';
			renderDetail(add(app, el('section', 'episode')), single);
			document.title = 'attempt ' + single.i + ' · ' + str(single.id);
			return;
		}
		var idx = block('sc-index');
		if (!idx) { app.textContent = 'This report has no data.'; return; }
		header(app, idx);
		charts(app, idx);
		table(app, idx);
		var panel = add(app, el('section', 'episode'));
		panel.id = 'episode';
		panel.hidden = true;
		var close = add(panel, el('a', 'close', 'close ✕'));
		close.href = '#attempts';
		close.addEventListener('click', function () { panel.hidden = true; });
		add(panel, el('div', 'episode-body'));
		window.addEventListener('hashchange', function () { openFromHash(idx, panel); });
		openFromHash(idx, panel);
	}

	try {
		var t0 = Date.now();
		main();
		document.documentElement.setAttribute('data-draw-ms', String(Date.now() - t0));
		document.documentElement.setAttribute('data-report', 'ready');
	} catch (e) {
		document.documentElement.setAttribute('data-report', 'error');
		document.getElementById('app').appendChild(el('pre', 'error', 'the report failed to draw: ' + e));
	}
})();
