//! Writes a sample grid of a line chart and a histogram: `cargo run -p bagscope-plot --example demo -- out.png`.
use bagscope_plot::{Figure, HistChart, Line, LineChart, Marker, Scale};

fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| "demo.png".into());
    let line = Figure::Line(LineChart {
        title: "lag over time".into(),
        x_label: "time".into(),
        y_label: "lag".into(),
        x_scale: Scale::Seconds,
        y_scale: Scale::Millis,
        lines: vec![Line {
            label: "/camera/image_raw".into(),
            x_ns: (0..500).map(|i| i * 50_000_000).collect(),
            y: (0..500)
                .map(|i| 10e6 + 2e6 * ((i as f64) * 0.05).sin())
                .collect(),
            points: false,
        }],
        markers: vec![Marker {
            x_ns: 12_000_000_000,
            label: "delay 55.0 ms".into(),
        }],
    });
    let hist = Figure::Hist(HistChart {
        title: "lag histogram".into(),
        x_label: "lag".into(),
        x_scale: Scale::Millis,
        start_ns: 5_000_000,
        bin_width_ns: 500_000,
        counts: (0..40)
            .map(|i| ((i as i64 - 10).abs() * 3) as u64)
            .collect(),
        modes_ns: vec![10_000_000, 22_000_000],
        note: Some("2 outside".into()),
    });
    let g = Figure::Grid {
        title: "demo".into(),
        cols: 2,
        panels: vec![line, hist],
    };
    if let Err(e) = g.write(std::path::Path::new(&out)) {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
