//! Traces of a shedding run: CSV, and an SVG plot of delay, target and drop
//! fraction over time.

use std::fmt::Write as _;
use std::path::Path;

use crate::common::Error;

use super::job::TraceRow;

fn write(path: &Path, text: String) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

/// Writes the trace as CSV: time, arrival rate, admitted rate, processed
/// rate, drop fraction, mean measured delay, the delay the controller saw.
pub fn write_trace_csv(path: &Path, trace: &[TraceRow]) -> Result<(), Error> {
    let mut text = String::from(
        "time_s,arrival_rate,admitted_rate,processed_rate,drop_fraction,mean_delay_ms,controlled_delay_ms\n",
    );
    for row in trace {
        writeln!(
            text,
            "{:.3},{:.1},{:.1},{:.1},{:.4},{:.2},{:.2}",
            row.time_s,
            row.arrival_rate,
            row.admitted_rate,
            row.processed_rate,
            row.drop_fraction,
            row.mean_delay_ms,
            row.controlled_delay_ms
        )
        .expect("writing to a String");
    }
    write(path, text)
}

/// Writes an SVG plot: mean delay (left axis, ms) with the target as a
/// dashed line, and the drop fraction (right axis, 0–1), over time.
pub fn write_trace_svg(path: &Path, trace: &[TraceRow], target_ms: f64, title: &str) -> Result<(), Error> {
    let (width, height, margin) = (800.0, 360.0, 50.0);
    let t_max = trace.last().map_or(1.0, |row| row.time_s).max(1e-9);
    let d_max = trace
        .iter()
        .map(|row| row.mean_delay_ms)
        .fold(target_ms * 2.0, f64::max);
    let x = |t: f64| margin + (width - 2.0 * margin) * t / t_max;
    let y = |fraction: f64| height - margin - (height - 2.0 * margin) * fraction;
    let line = |value: &dyn Fn(&TraceRow) -> f64| -> String {
        trace
            .iter()
            .map(|row| format!("{:.1},{:.1}", x(row.time_s), y(value(row))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{margin}\" y=\"20\">{title}</text>\n\
         <line x1=\"{margin}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <line x1=\"{margin}\" y1=\"{margin}\" x2=\"{margin}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"{margin}\" y=\"{below}\">0 s</text><text x=\"{r}\" y=\"{below}\" text-anchor=\"end\">{t_max:.0} s</text>\n\
         <text x=\"5\" y=\"{margin}\">{d_max:.0} ms</text><text x=\"{right}\" y=\"{margin}\">drop 1.0</text>\n",
        b = height - margin,
        r = width - margin,
        below = height - margin + 15.0,
        right = width - margin + 5.0,
    );
    let target_y = y(target_ms / d_max);
    writeln!(svg, "<line x1=\"{margin}\" y1=\"{target_y:.1}\" x2=\"{}\" y2=\"{target_y:.1}\" stroke=\"gray\" stroke-dasharray=\"6 4\"/>", width - margin)
        .expect("writing to a String");
    writeln!(
        svg,
        "<polyline fill=\"none\" stroke=\"crimson\" stroke-width=\"1.5\" points=\"{}\"/>",
        line(&|row| row.mean_delay_ms / d_max)
    )
    .expect("writing to a String");
    writeln!(
        svg,
        "<polyline fill=\"none\" stroke=\"steelblue\" stroke-width=\"1.5\" points=\"{}\"/>",
        line(&|row| row.drop_fraction)
    )
    .expect("writing to a String");
    writeln!(
        svg,
        "<text x=\"{}\" y=\"35\" fill=\"crimson\">delay (ms)</text><text x=\"{}\" y=\"35\" fill=\"gray\">target {target_ms} ms</text><text x=\"{}\" y=\"35\" fill=\"steelblue\">drop fraction</text>\n</svg>",
        margin + 150.0,
        margin + 250.0,
        margin + 370.0
    )
    .expect("writing to a String");
    write(path, svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_svg_hold_every_period() {
        let trace: Vec<TraceRow> = (1..=5)
            .map(|k| TraceRow {
                time_s: k as f64 * 0.1,
                arrival_rate: 1000.0,
                admitted_rate: 800.0,
                processed_rate: 790.0,
                drop_fraction: 0.2,
                mean_delay_ms: 100.0 * k as f64,
                controlled_delay_ms: 110.0 * k as f64,
            })
            .collect();
        let dir = std::env::temp_dir().join(format!("equipoise-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (csv, svg) = (dir.join("trace.csv"), dir.join("trace.svg"));
        write_trace_csv(&csv, &trace).unwrap();
        let text = std::fs::read_to_string(&csv).unwrap();
        assert_eq!(text.lines().count(), 6);
        assert_eq!(
            text.lines().nth(5).unwrap(),
            "0.500,1000.0,800.0,790.0,0.2000,500.00,550.00"
        );
        write_trace_svg(&svg, &trace, 300.0, "pi").unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
        // One point per period on both lines.
        for line in text.lines().filter(|l| l.starts_with("<polyline")) {
            assert_eq!(line.matches(',').count(), 5, "{line}");
        }
        assert_eq!(text.matches("<polyline").count(), 2);
    }
}
