//! The report as a page a person reads at a glance: one self-contained
//! HTML file (inline SVG and script, nothing fetched) that draws the
//! dataflow, scopes nested, each operator coloured by its busiest worker
//! over the mean and each edge as wide as its records, with the costliest
//! operators and the sampled keys beside it; a click on an operator shows
//! its workers' bars and its series over time.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::edges::Origin;
use super::layout::{self, Placed, NODE};
use super::report::{OperatorReport, Report};

/// Rows of the costliest table.
const COSTLIEST: usize = 12;

/// Characters of a name the picture shows.
const NAME: usize = 24;

impl Report {
    /// The report as a self-contained HTML page (see the module's docs):
    /// write it to a file and open it in a browser.
    ///
    /// ```
    /// use differential_dataflow::input::Input;
    /// use equipoise::doctor;
    ///
    /// timely::execute(timely::Config::process(2), |worker| {
    ///     let doctor = doctor::register(worker);
    ///     worker.dataflow::<u64, _, _>(|scope| {
    ///         let keys = (0..10_000u64).map(|i| if i % 2 == 0 { 0 } else { i });
    ///         scope.new_collection_from(keys).1.count();
    ///     });
    ///     while worker.step() {}
    ///     if let Some(report) = doctor.report(worker) {
    ///         let page = report.html();
    ///         assert!(page.contains("Arrange: Count"));
    ///         // std::fs::write("skew.html", page).unwrap();
    ///     }
    /// })
    /// .unwrap();
    /// ```
    pub fn html(&self) -> String {
        let mut page = String::new();
        let title = format!("Skew over {} workers", self.workers);
        let _ = write!(
            page,
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\n<style>{STYLE}</style></head>\n<body>\n<header><h1>{title}</h1><p>Each operator is coloured by its busiest worker's records over the mean (green even, red twice the mean or more); a thick red border marks skew made at the operator's own exchange. Edges are as wide as their records. Click an operator for its workers and its series over time.</p></header>\n<main>\n"
        );
        page.push_str(&self.graph());
        page.push_str(
            "<aside>\n<section id=\"detail\"><h2>Operator</h2><p>Click an operator in the picture.</p></section>\n",
        );
        page.push_str(&self.costliest());
        page.push_str(&self.keys_tables());
        page.push_str(&self.hot_keys_list());
        page.push_str(&self.heads_tables());
        page.push_str("</aside>\n</main>\n<script>\nconst REPORT = ");
        let json = serde_json::to_string(self).expect("reports serialize");
        // No string may end the script or open a comment in it: JSON
        // outside its strings holds no `<`, and `\u003c` is one inside.
        page.push_str(&json.replace('<', "\\u003c"));
        page.push_str(";\n");
        page.push_str(SCRIPT);
        page.push_str("</script>\n</body></html>\n");
        page
    }

    /// The dataflow as inline SVG.
    fn graph(&self) -> String {
        let mut nodes: BTreeSet<Vec<usize>> = self.operators.iter().map(|op| op.address.clone()).collect();
        nodes.extend(self.scopes.iter().map(|(address, _)| address.clone()));
        for address in nodes.clone() {
            nodes.extend((1..address.len()).map(|len| address[..len].to_vec()));
        }
        let edges: Vec<(Vec<usize>, Vec<usize>)> = self
            .channels
            .iter()
            .map(|c| (c.source.0.clone(), c.target.0.clone()))
            .collect();
        let placed = layout::place(&nodes, &edges);
        let width = placed.values().map(|p| p.x + p.width).fold(0.0, f64::max) + 2.0;
        let height = placed.values().map(|p| p.y + p.height).fold(0.0, f64::max) + 2.0;
        let mut svg = format!(
            "<section id=\"graph\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"-1 -1 {width:.0} {height:.0}\">\n<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"9\" markerHeight=\"9\" markerUnits=\"userSpaceOnUse\" orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#667\"/></marker></defs>\n"
        );
        let names: BTreeMap<&Vec<usize>, &String> = self.scopes.iter().map(|(a, n)| (a, n)).collect();
        for (address, at) in placed.iter().filter(|(address, _)| names.contains_key(address)) {
            let _ = writeln!(
                svg,
                "<g class=\"scope\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"6\"/><text x=\"{:.1}\" y=\"{:.1}\">{} {:?}</text></g>",
                at.x,
                at.y,
                at.width,
                at.height,
                at.x + 8.0,
                at.y + 16.0,
                escape(names[address]),
                address
            );
        }
        svg.push_str(&self.edges(&placed));
        for (index, op) in self.operators.iter().enumerate() {
            if let Some(at) = placed.get(&op.address) {
                svg.push_str(&operator(index, op, at));
            }
        }
        svg.push_str("</svg></section>\n");
        svg
    }

    /// The channels as arrows between the boxes they join.
    fn edges(&self, placed: &BTreeMap<Vec<usize>, Placed>) -> String {
        let most = self.channels.iter().map(|c| c.records).max().unwrap_or(1).max(2) as f64;
        let mut svg = String::new();
        for channel in &self.channels {
            let (Some(from), Some(to)) = (placed.get(&channel.source.0), placed.get(&channel.target.0)) else {
                continue;
            };
            // A scope's own input leaves from its left edge, its output
            // enters its right edge.
            let inside_from = channel.target.0.starts_with(&channel.source.0);
            let inside_to = channel.source.0.starts_with(&channel.target.0);
            let (x1, y1) = (
                if inside_from { from.x } else { from.x + from.width },
                from.y + from.height / 2.0,
            );
            let (x2, y2) = (if inside_to { to.x + to.width } else { to.x }, to.y + to.height / 2.0);
            let bend = ((x2 - x1).abs() / 2.0).max(30.0);
            let width = 1.0 + 7.0 * (channel.records.max(1) as f64).ln() / most.ln();
            let crossed: u64 = channel.between.iter().filter(|(a, b, _)| a != b).map(|e| e.2).sum();
            let _ = writeln!(
                svg,
                "<path class=\"edge\" d=\"M{x1:.1},{y1:.1} C{:.1},{y1:.1} {:.1},{y2:.1} {x2:.1},{y2:.1}\" stroke-width=\"{width:.1}\" marker-end=\"url(#arrow)\"><title>{} records ({} between workers); sent {:?}, received {:?}</title></path>",
                x1 + bend,
                x2 - bend,
                channel.records,
                crossed,
                channel.sent,
                channel.received
            );
        }
        svg
    }

    /// The costliest operators, as the text report's table.
    fn costliest(&self) -> String {
        let mut table = String::from(
            "<section><h2>Costliest skew</h2><table><tr><th>operator</th><th>records busiest ÷ mean (worker)</th><th>busy busiest ÷ mean</th><th>excess s</th><th>origin</th></tr>\n",
        );
        for (index, op) in self.operators.iter().enumerate().take(COSTLIEST) {
            let _ = writeln!(
                table,
                "<tr class=\"row\" data-op=\"{index}\"><td>{} {:?}</td><td>{:.2}× ({})</td><td>{:.2}×</td><td>{:.4}</td><td>{}</td></tr>",
                escape(&op.name),
                op.address,
                op.records_spread.busiest_over_mean,
                op.records_spread.busiest,
                op.busy_spread.busiest_over_mean,
                op.busy_spread.excess,
                origin(op)
            );
        }
        table.push_str("</table>\n");
        for op in self.operators.iter().filter(|op| op.hint.is_some()) {
            let _ = writeln!(
                table,
                "<p class=\"hint\"><b>{} {:?}</b>: {}</p>",
                escape(&op.name),
                op.address,
                escape(op.hint.as_deref().unwrap_or_default())
            );
        }
        table.push_str("</section>\n");
        table
    }

    /// Each sampled place's heaviest keys.
    fn keys_tables(&self) -> String {
        let mut tables = String::new();
        for place in &self.keys {
            let _ = writeln!(
                tables,
                "<section class=\"keys\"><h2>Keys at “{}” {:?}</h2><p>{} records; they land {:.2}× the mean on worker {}.</p><table><tr><th>key</th><th>share</th><th>lands on</th></tr>",
                escape(&place.place),
                place.address,
                place.records,
                place.landed_spread.busiest_over_mean,
                place.landed_spread.busiest
            );
            for key in &place.keys {
                let busiest = if key.worker == place.landed_spread.busiest {
                    " class=\"busiest\""
                } else {
                    ""
                };
                let _ = writeln!(
                    tables,
                    "<tr{busiest}><td><code>{}</code></td><td>{:.3}</td><td>worker {}</td></tr>",
                    escape(&key.key),
                    key.share,
                    key.worker
                );
            }
            tables.push_str("</table></section>\n");
        }
        tables
    }
}

impl Report {
    /// The keys equipoise's own operators split or combined.
    fn hot_keys_list(&self) -> String {
        if self.hot_keys.is_empty() {
            return String::new();
        }
        let names: BTreeMap<u64, &String> = self.hot_key_names.iter().map(|(hash, name)| (*hash, name)).collect();
        let mut list = format!(
            "<section><h2>Hot keys equipoise's operators split</h2><p>{} keys.</p><table><tr><th>key</th><th>over workers</th></tr>\n",
            self.hot_keys.len()
        );
        for (hash, workers) in self.hot_keys.iter().take(COSTLIEST) {
            let key = names
                .get(hash)
                .map_or_else(|| format!("hash {hash:#x}"), |name| escape(name));
            let _ = writeln!(list, "<tr><td><code>{key}</code></td><td>{workers:?}</td></tr>");
        }
        list.push_str("</table></section>\n");
        list
    }

    /// The heads PKG's D-/W-Choices pacts spread wider.
    fn heads_tables(&self) -> String {
        let mut tables = String::new();
        for head in &self.heads {
            let _ = writeln!(
                tables,
                "<section class=\"heads\"><h2>PKG head into “{}” {:?}</h2><p>{} keys, each over up to {} workers.</p><table><tr><th>key</th><th>over workers</th><th>senders</th></tr>",
                escape(&head.operator),
                head.target.0,
                head.keys.len(),
                head.choices
            );
            for key in head.keys.iter().take(COSTLIEST) {
                let name = key
                    .name
                    .as_deref()
                    .map_or_else(|| format!("fingerprint {:#x}", key.key), escape);
                let _ = writeln!(
                    tables,
                    "<tr><td><code>{name}</code></td><td>{}</td><td>{}</td></tr>",
                    key.workers, key.senders
                );
            }
            tables.push_str("</table></section>\n");
        }
        tables
    }
}

/// One operator's box: coloured by its ratio, marked where skew is made
/// at its exchange.
fn operator(index: usize, op: &OperatorReport, at: &Placed) -> String {
    let skewed = if op.origin == Some(Origin::Exchange) {
        " skewed"
    } else {
        ""
    };
    // An operator that received no records reads its time's ratio: grey,
    // as its colour would speak of records.
    let received = op.records.iter().any(|&r| r > 0);
    let (fill, what) = if received {
        (colour(op.busiest_over_mean), "")
    } else {
        ("#e4e4e8".to_owned(), "busy ")
    };
    let mut name: String = op.name.chars().take(NAME).collect();
    if op.name.chars().count() > NAME {
        name.push('…');
    }
    format!(
        "<g class=\"op{skewed}\" data-op=\"{index}\"><title>{} {:?}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"4\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text><text class=\"ratio\" x=\"{:.1}\" y=\"{:.1}\">{what}{:.2}× on worker {}{}</text></g>\n",
        escape(&op.name),
        op.address,
        at.x,
        at.y,
        NODE.0,
        NODE.1,
        fill,
        at.x + 6.0,
        at.y + 18.0,
        escape(&name),
        at.x + 6.0,
        at.y + 36.0,
        op.busiest_over_mean,
        if received { op.records_spread.busiest } else { op.busy_spread.busiest },
        match op.origin {
            Some(Origin::Exchange) => " · made here",
            Some(Origin::Inherited) => " · inherited",
            Some(Origin::Gather) => " · a gather",
            None => "",
        }
    )
}

/// Where an operator's skew comes from, in words.
fn origin(op: &OperatorReport) -> &'static str {
    match op.origin {
        Some(Origin::Exchange) => "its exchange",
        Some(Origin::Inherited) => "inherited",
        Some(Origin::Gather) => "a gather",
        None => "",
    }
}

/// Green at the mean, yellow at 1.5×, red at twice the mean or more.
fn colour(ratio: f64) -> String {
    let hue = 120.0 * (1.0 - (ratio - 1.0).clamp(0.0, 1.0));
    format!("hsl({hue:.0},70%,72%)")
}

/// `text` safe inside HTML and SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:0;color:#222}header{padding:8px 16px;background:#f4f4f6;border-bottom:1px solid #ddd}h1{font-size:18px;margin:4px 0}h2{font-size:15px;margin:8px 0 4px}header p{margin:4px 0;color:#555}main{display:flex;gap:16px;padding:12px 16px;align-items:flex-start}#graph{flex:1 1 auto;overflow:auto;max-height:88vh;border:1px solid #ddd}aside{flex:0 0 460px}.scope rect{fill:#fafafc;stroke:#99a;stroke-dasharray:4 3}.scope text{font-size:12px;fill:#667}.op{cursor:pointer}.op rect{stroke:#556;stroke-width:1}.op.skewed rect{stroke:#c00;stroke-width:4}.op text{font-size:12px}.op .ratio{font-size:11px;fill:#333}.op.selected rect{stroke:#06c;stroke-width:4}.edge{fill:none;stroke:#889;opacity:.75}table{border-collapse:collapse;width:100%;font-size:12px}td,th{border-bottom:1px solid #e3e3e8;padding:3px 5px;text-align:left}tr.row{cursor:pointer}tr.busiest td{background:#fde4e4}.hint{font-size:12px;background:#fff6dd;padding:4px 6px;margin:4px 0}#detail svg{display:block;margin:4px 0}code{font-size:12px}";

const SCRIPT: &str = r##"
function bars(title, values, unit) {
  const max = Math.max(...values, 1e-12), mean = values.reduce((a, b) => a + b, 0) / Math.max(values.length, 1);
  const h = 14, w = 300;
  let s = `<h3>${title}</h3><svg width="${w + 120}" height="${values.length * h + 4}">`;
  values.forEach((v, i) => {
    const len = w * v / max;
    s += `<rect x="40" y="${i * h}" width="${len.toFixed(1)}" height="${h - 3}" fill="${v > 1.2 * mean ? '#e66' : '#8ab'}"/>`;
    s += `<text x="0" y="${i * h + 10}" font-size="10">w${i}</text><text x="${44 + len}" y="${i * h + 10}" font-size="10">${unit(v)}</text>`;
  });
  const m = 40 + w * mean / max;
  return s + `<line x1="${m}" x2="${m}" y1="0" y2="${values.length * h}" stroke="#333" stroke-dasharray="3 2"/></svg>`;
}
function series(op) {
  if (!op.series.length) return '<p>No windows.</p>';
  const w = 400, h = 90, ratios = op.series.map(p => p.busiest_over_mean), top = Math.max(2, ...ratios);
  const t0 = REPORT.windows[0].start_s, t1 = REPORT.windows[REPORT.windows.length - 1].end_s;
  const x = i => 30 + (w - 40) * ((REPORT.windows[i].start_s + REPORT.windows[i].end_s) / 2 - t0) / Math.max(t1 - t0, 1e-9);
  const y = r => h - 15 - (h - 25) * (r - 1) / (top - 1);
  const points = ratios.map((r, i) => `${x(i).toFixed(1)},${y(r).toFixed(1)}`).join(' ');
  const receives = op.series.some(p => p.records.some(r => r > 0));
  const busiest = op.series.map(p => receives ? p.records.indexOf(Math.max(...p.records)) : p.busy_s.indexOf(Math.max(...p.busy_s)));
  const labels = busiest.map((b, i) => (i == 0 || busiest[i - 1] != b) ? `<text x="${x(i).toFixed(1)}" y="${h + 10}" font-size="10" text-anchor="middle">w${b}</text>` : '').join('');
  return `<h3>Busiest ÷ mean per window (and the busiest worker, where it changes)</h3><svg width="${w}" height="${h + 14}">${labels}<line x1="30" x2="${w}" y1="${y(1)}" y2="${y(1)}" stroke="#aaa"/><line x1="30" x2="${w}" y1="${y(1.2)}" y2="${y(1.2)}" stroke="#d99" stroke-dasharray="3 2"/><text x="0" y="${y(1) + 4}" font-size="10">1.0</text><text x="0" y="${y(top) + 8}" font-size="10">${top.toFixed(1)}</text><polyline fill="none" stroke="#c33" stroke-width="2" points="${points}"/>${ratios.map((r, i) => `<circle cx="${x(i).toFixed(1)}" cy="${y(r).toFixed(1)}" r="2.5" fill="#c33"><title>${REPORT.windows[i].start_s.toFixed(1)}-${REPORT.windows[i].end_s.toFixed(1)} s: ${r.toFixed(2)}</title></circle>`).join('')}<text x="30" y="${h - 2}" font-size="10">${t0.toFixed(1)} s</text><text x="${w - 40}" y="${h - 2}" font-size="10">${t1.toFixed(1)} s</text></svg>`;
}
function show(index) {
  const op = REPORT.operators[index];
  document.querySelectorAll('.op').forEach(g => g.classList.toggle('selected', g.dataset.op == index));
  let s = `<h2>${op.name.replace(/</g, '&lt;')} [${op.address}]</h2>`;
  s += `<p>records busiest ÷ mean ${op.records_spread.busiest_over_mean.toFixed(2)} on worker ${op.records_spread.busiest}` + (op.origin ? `; skew ${{Exchange: 'made at its exchange', Inherited: 'inherited from upstream', Gather: 'of a gather by design'}[op.origin]}` : '') + '</p>';
  if (op.hint) s += `<p class="hint">${op.hint.replace(/</g, '&lt;')}</p>`;
  s += bars('Records per worker', op.records, v => v.toFixed(0));
  s += bars('Busy seconds per worker', op.busy_s, v => v.toFixed(3));
  if (op.arranged) s += bars('Most records arranged per worker', op.arranged, v => v.toFixed(0));
  s += series(op);
  document.getElementById('detail').innerHTML = s;
}
document.querySelectorAll('[data-op]').forEach(el => el.addEventListener('click', () => show(+el.dataset.op)));
const first = REPORT.operators.findIndex(op => op.origin == 'Exchange');
if (REPORT.operators.length) show(Math.max(first, 0));
"##;
