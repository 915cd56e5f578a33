//! SVG line charts of the simulator's results: imbalance against workers
//! per dataset, and imbalance over time; log-scaled imbalance axes.

use std::fmt::Write as _;
use std::path::Path;

use crate::common::Error;

/// One chart: named lines of (x, y) points.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Title above the chart.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Whether x is log-scaled.
    pub log_x: bool,
    /// (name, points) per line.
    pub lines: Vec<(String, Vec<(f64, f64)>)>,
}

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 300.0;
const MARGIN: f64 = 60.0;
const COLORS: [&str; 9] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf",
];
/// Imbalance below this is drawn at it (log scale; zero happens).
const FLOOR: f64 = 1e-8;

/// Writes `panels` one under another into an SVG file at `path`.
pub fn write_panels(path: &Path, panels: &[Panel]) -> Result<(), Error> {
    let total = HEIGHT * panels.len() as f64;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{total}\" font-family=\"sans-serif\" font-size=\"11\">\n"
    );
    for (index, panel) in panels.iter().enumerate() {
        draw(&mut svg, panel, index as f64 * HEIGHT);
    }
    svg.push_str("</svg>\n");
    std::fs::write(path, svg).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

fn draw(svg: &mut String, panel: &Panel, top: f64) {
    let points = panel.lines.iter().flat_map(|(_, points)| points.iter());
    let xs: Vec<f64> = points.clone().map(|p| scale_x(panel, p.0)).collect();
    let ys: Vec<f64> = points.map(|p| p.1.max(FLOOR).log10()).collect();
    let (x0, x1) = bounds(&xs);
    let (y0, y1) = (
        bounds(&ys).0.floor(),
        bounds(&ys).1.ceil().max(bounds(&ys).0.floor() + 1.0),
    );
    let plot_w = WIDTH - 2.0 * MARGIN - 120.0;
    let plot_h = HEIGHT - 2.0 * MARGIN;
    let px = |x: f64| MARGIN + (scale_x(panel, x) - x0) / (x1 - x0).max(1e-12) * plot_w;
    let py = |y: f64| top + MARGIN + (1.0 - (y.max(FLOOR).log10() - y0) / (y1 - y0)) * plot_h;
    let _ = writeln!(
        svg,
        "<text x=\"{MARGIN}\" y=\"{}\" font-size=\"13\">{}</text>",
        top + 25.0,
        panel.title
    );
    let _ = writeln!(
        svg,
        "<rect x=\"{MARGIN}\" y=\"{}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"none\" stroke=\"#999\"/>",
        top + MARGIN
    );
    for decade in (y0 as i32)..=(y1 as i32) {
        let y = py(10f64.powi(decade));
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{y:.1}\" text-anchor=\"end\">1e{decade}</text>",
            MARGIN - 4.0
        );
    }
    let mut ticks: Vec<f64> = panel.lines.iter().flat_map(|(_, p)| p.iter().map(|p| p.0)).collect();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    if ticks.len() > 12 {
        let step = ticks.len().div_ceil(6);
        ticks = ticks.into_iter().step_by(step).collect();
    }
    for x in ticks {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{x}</text>",
            px(x),
            top + MARGIN + plot_h + 14.0
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        MARGIN + plot_w / 2.0,
        top + MARGIN + plot_h + 30.0,
        panel.x_label
    );
    for (index, (name, points)) in panel.lines.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        let coordinates: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>",
            coordinates.join(" ")
        );
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" fill=\"{color}\">{name}</text>",
            MARGIN + plot_w + 10.0,
            top + MARGIN + 14.0 * index as f64 + 10.0
        );
    }
}

fn scale_x(panel: &Panel, x: f64) -> f64 {
    if panel.log_x {
        x.max(1e-12).log10()
    } else {
        x
    }
}

fn bounds(values: &[f64]) -> (f64, f64) {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if low.is_finite() && high.is_finite() {
        (low, high.max(low + 1e-9))
    } else {
        (0.0, 1.0)
    }
}
