//! Drawing only. Plain data in (`i64` nanosecond series, `f64` values, histogram bins), PNG or
//! SVG out. No analysis happens here: callers compute the series and distributions; this crate
//! turns them into pictures. It is the only crate of the workspace that depends on `plotters`.
//!
//! Text is drawn with an embedded font (DejaVu Sans, see `assets/fonts/`), registered with
//! plotters' `ab_glyph` backend, so PNGs render the same on a machine without any system fonts.
//!
//! # In the workspace
//!
//! Line charts and histograms as PNG / SVG from plain `i64`-ns series (long lines decimated to
//! per-bucket min/max; `drawn_points` gives a caller those points up front, so a long series is
//! never copied whole); embedded DejaVu Sans font (`assets/fonts/`) so PNGs render without
//! system fonts; no analysis.
//!
//! Notable dependencies: `plotters` (only crate allowed to use it).

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};
use serde::Serialize;

/// DejaVu Sans (Bitstream Vera licence, `assets/fonts/DejaVuSans.LICENSE`).
static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

/// Why a figure could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The embedded font could not be registered with plotters.
    #[error("the embedded font could not be loaded")]
    Font,
    /// plotters failed while drawing.
    #[error("cannot draw {what}: {msg}")]
    Draw {
        /// Title of the figure being drawn.
        what: String,
        /// plotters' message.
        msg: String,
    },
    /// The output file name ends in neither `.png` nor `.svg` (the name given).
    #[error("unknown plot format for {0}: use a .png or .svg file name")]
    Format(String),
    /// The output file could not be written.
    #[error("cannot write {path}: {msg}")]
    Io {
        /// The output file.
        path: String,
        /// The cause.
        msg: String,
    },
}

fn font() -> Result<(), PlotError> {
    // Registration is global in plotters: do it once, remember the outcome.
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

/// How a nanosecond quantity (or a plain value) is shown on an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// ns shown as seconds.
    Seconds,
    /// ns shown as milliseconds.
    Millis,
    /// The value as given.
    Raw,
}

impl Scale {
    fn ns(self, v: i64) -> f64 {
        self.f(v as f64)
    }
    fn f(self, v: f64) -> f64 {
        match self {
            Scale::Seconds => v / 1e9,
            Scale::Millis => v / 1e6,
            Scale::Raw => v,
        }
    }
    fn unit(self) -> &'static str {
        match self {
            Scale::Seconds => " [s]",
            Scale::Millis => " [ms]",
            Scale::Raw => "",
        }
    }
}

/// One polyline: `x_ns[i]` against `y[i]`; non-finite points are skipped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    /// Legend entry; empty for no legend entry.
    pub label: String,
    /// x of each point, ns (any axis: log time, time since start, a shift); shown in the chart's `x_scale`.
    pub x_ns: Vec<i64>,
    /// y of each point, in the unit `y_scale` converts from (ns for `Seconds` / `Millis`).
    pub y: Vec<f64>,
    /// Draw points only (for scattered samples such as per-message lag).
    pub points: bool,
}

/// A vertical marker line at `x_ns` with a label (a chosen delay, a mode).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Marker {
    /// Where the line is drawn, ns on the chart's x axis.
    pub x_ns: i64,
    /// Its legend entry.
    pub label: String,
}

/// A chart of one or more lines against a nanosecond x axis, with optional vertical markers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineChart {
    /// Title drawn above the chart.
    pub title: String,
    /// x axis caption; the scale's unit (`[s]`, `[ms]`) is appended.
    pub x_label: String,
    /// y axis caption; the scale's unit is appended.
    pub y_label: String,
    /// How x values are shown.
    pub x_scale: Scale,
    /// How y values are shown.
    pub y_scale: Scale,
    /// The lines, drawn in order with a colour each.
    pub lines: Vec<Line>,
    /// Vertical marker lines.
    pub markers: Vec<Marker>,
}

/// Fixed-width bins: bin `i` covers `[start_ns + i·w, start_ns + (i+1)·w)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistChart {
    /// Title drawn above the chart.
    pub title: String,
    /// x axis caption; the scale's unit is appended.
    pub x_label: String,
    /// How bin edges are shown.
    pub x_scale: Scale,
    /// Left edge of the first bin, ns.
    pub start_ns: i64,
    /// Width of every bin, ns.
    pub bin_width_ns: i64,
    /// Values in each bin, from the first bin upward.
    pub counts: Vec<u64>,
    /// Mode centres, drawn as labelled vertical lines.
    pub modes_ns: Vec<i64>,
    /// Shown under the title (e.g. how many values fell outside the bins).
    pub note: Option<String>,
}

/// A picture to draw: one chart, or a grid of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Figure {
    /// A line chart.
    Line(LineChart),
    /// A histogram.
    Hist(HistChart),
    /// Panels laid out row by row, `cols` wide. Nested grids are drawn as empty panels.
    Grid {
        /// Title drawn above the whole grid.
        title: String,
        /// Panels per row (clamped to 1 ..= the number of panels).
        cols: usize,
        /// The panels, row by row.
        panels: Vec<Figure>,
    },
}

/// Output image format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// PNG raster image.
    Png,
    /// SVG vector image.
    Svg,
}

impl Format {
    /// From the file extension (case-insensitive).
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "png" => Some(Format::Png),
            "svg" => Some(Format::Svg),
            _ => None,
        }
    }
}

const PANEL_W: u32 = 900;
const PANEL_H: u32 = 420;
/// Lines longer than this are decimated (min/max per bucket) to keep SVGs small.
const MAX_POINTS: usize = 2000;
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];
const MARK: RGBColor = RGBColor(200, 0, 0);

impl Figure {
    /// Pixel size that fits the figure: one panel, or a grid of panels.
    pub fn size(&self) -> (u32, u32) {
        match self {
            Figure::Grid { cols, panels, .. } => {
                let (c, r) = grid_shape(*cols, panels.len());
                let w = if c == 1 { PANEL_W } else { 560 * c as u32 };
                (w, 40 + 340 * r as u32)
            }
            _ => (PANEL_W, PANEL_H),
        }
    }

    fn title(&self) -> &str {
        match self {
            Figure::Line(c) => &c.title,
            Figure::Hist(h) => &h.title,
            Figure::Grid { title, .. } => title,
        }
    }

    /// The figure as an SVG document (no XML declaration, so it can be inlined in HTML).
    pub fn to_svg(&self) -> Result<String, PlotError> {
        font()?;
        let mut s = String::new();
        {
            let root = SVGBackend::with_string(&mut s, self.size()).into_drawing_area();
            self.draw_on(&root)?;
            root.present().map_err(|e| self.err(e))?;
        }
        Ok(s.trim_start_matches(|c| c != '<').to_string())
    }

    /// RGB pixels (PNG encoding is done by [`Figure::write`]).
    fn write_png(&self, path: &Path) -> Result<(), PlotError> {
        font()?;
        let root = BitMapBackend::new(path, self.size()).into_drawing_area();
        self.draw_on(&root)?;
        root.present().map_err(|e| PlotError::Io {
            path: path.display().to_string(),
            msg: e.to_string(),
        })
    }

    /// Writes a `.png` or `.svg` file, chosen by the extension.
    pub fn write(&self, path: &Path) -> Result<(), PlotError> {
        match Format::of(path) {
            Some(Format::Png) => self.write_png(path),
            Some(Format::Svg) => {
                let s = self.to_svg()?;
                std::fs::write(path, s).map_err(|e| PlotError::Io {
                    path: path.display().to_string(),
                    msg: e.to_string(),
                })
            }
            None => Err(PlotError::Format(path.display().to_string())),
        }
    }

    fn err<E: std::fmt::Display>(&self, e: E) -> PlotError {
        PlotError::Draw {
            what: self.title().to_string(),
            msg: e.to_string(),
        }
    }

    fn draw_on<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        area.fill(&WHITE).map_err(|e| self.err(e))?;
        match self {
            Figure::Line(c) => draw_line(area, c).map_err(|e| self.err(e)),
            Figure::Hist(h) => draw_hist(area, h).map_err(|e| self.err(e)),
            Figure::Grid {
                title,
                cols,
                panels,
            } => {
                let inner = area
                    .titled(title, (FAMILY, 22).into_font())
                    .map_err(|e| self.err(e))?;
                let (c, r) = grid_shape(*cols, panels.len());
                let cells = inner.split_evenly((r, c));
                for (p, cell) in panels.iter().zip(cells.iter()) {
                    match p {
                        Figure::Line(lc) => draw_line(cell, lc).map_err(|e| p.err(e))?,
                        Figure::Hist(h) => draw_hist(cell, h).map_err(|e| p.err(e))?,
                        Figure::Grid { .. } => {}
                    }
                }
                Ok(())
            }
        }
    }
}

fn grid_shape(cols: usize, n: usize) -> (usize, usize) {
    let c = cols.clamp(1, n.max(1));
    (c, n.max(1).div_ceil(c))
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Range with some air; a degenerate or non-finite range becomes a unit interval.
fn padded(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    if !lo.is_finite() || !hi.is_finite() || lo > hi {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        let d = if lo.abs() > 1e-9 {
            lo.abs() * 0.05
        } else {
            1.0
        };
        return (lo - d, hi + d);
    }
    let d = (hi - lo) * pad;
    (lo - d, hi + d)
}

/// At most ~MAX_POINTS points: per bucket of consecutive points, the min and the max (in
/// their original order), so spikes survive decimation.
fn decimate(pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if pts.len() <= MAX_POINTS {
        return pts;
    }
    decimated_indices(pts.len(), |i| pts[i].1)
        .into_iter()
        .map(|i| pts[i])
        .collect()
}

/// Which of `n` points (y of point `i`: `y(i)`) [`decimate`] keeps, in order.
fn decimated_indices(n: usize, y: impl Fn(usize) -> f64) -> Vec<usize> {
    if n <= MAX_POINTS {
        return (0..n).collect();
    }
    let buckets = MAX_POINTS / 2;
    let per = n.div_ceil(buckets);
    let mut out = Vec::with_capacity(2 * buckets);
    let mut start = 0;
    while start < n {
        let end = (start + per).min(n);
        let (mut lo, mut hi) = (start, start);
        let (mut ylo, mut yhi) = (y(start), y(start));
        for i in start..end {
            let v = y(i);
            if v < ylo {
                (lo, ylo) = (i, v);
            }
            if v > yhi {
                (hi, yhi) = (i, v);
            }
        }
        let (a, b) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        out.push(a);
        if b != a {
            out.push(b);
        }
        start = end;
    }
    out
}

/// The points of a long series of whole numbers (`x_ns[i]`, `y[i]`) that a [`LineChart`] on
/// these scales draws: at most ~2000 (per bucket of consecutive points, the min and the max),
/// chosen exactly as the chart chooses them from the whole series. A caller that hands the
/// chart only these gets the same picture without a copy of every point.
pub fn drawn_points(x_ns: &[i64], y: &[i64], y_scale: Scale) -> (Vec<i64>, Vec<f64>) {
    let n = x_ns.len().min(y.len());
    // Whole numbers are finite on every scale: none is skipped.
    decimated_indices(n, |i| y_scale.f(y[i] as f64))
        .into_iter()
        .map(|i| (x_ns[i], y[i] as f64))
        .unzip()
}

fn draw_line<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, c: &LineChart) -> DrawResult<DB> {
    let lines: Vec<Vec<(f64, f64)>> = c
        .lines
        .iter()
        .map(|l| {
            let pts: Vec<(f64, f64)> = l
                .x_ns
                .iter()
                .zip(&l.y)
                .map(|(&x, &y)| (c.x_scale.ns(x), c.y_scale.f(y)))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            decimate(pts)
        })
        .collect();
    let all = lines.iter().flatten();
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    for m in &c.markers {
        let x = c.x_scale.ns(m.x_ns);
        x0 = x0.min(x);
        x1 = x1.max(x);
    }
    let (x0, x1) = padded(x0, x1, 0.0);
    let (y0, y1) = padded(y0, y1, 0.08);
    let mut chart = ChartBuilder::on(area)
        .caption(&c.title, (FAMILY, 18))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .light_line_style(RGBColor(235, 235, 235))
        .x_desc(format!("{}{}", c.x_label, c.x_scale.unit()))
        .y_desc(format!("{}{}", c.y_label, c.y_scale.unit()))
        .label_style((FAMILY, 12))
        .axis_desc_style((FAMILY, 13))
        .draw()?;
    for (k, (l, pts)) in c.lines.iter().zip(lines).enumerate() {
        let col = PALETTE[k % PALETTE.len()];
        let anno = if l.points {
            chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 1, col.filled())))?
        } else {
            chart.draw_series(LineSeries::new(pts, col.stroke_width(1)))?
        };
        if !l.label.is_empty() {
            anno.label(l.label.clone()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], col.stroke_width(2))
            });
        }
    }
    for m in &c.markers {
        let x = c.x_scale.ns(m.x_ns);
        chart
            .draw_series(LineSeries::new(
                vec![(x, y0), (x, y1)],
                MARK.stroke_width(2),
            ))?
            .label(m.label.clone())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], MARK.stroke_width(2)));
    }
    if c.lines.iter().any(|l| !l.label.is_empty()) || !c.markers.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font((FAMILY, 12))
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;
    }
    Ok(())
}

fn draw_hist<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, h: &HistChart) -> DrawResult<DB> {
    let w = h.bin_width_ns.max(1);
    let n = h.counts.len() as i64;
    let left = |i: i64| h.start_ns.saturating_add(w.saturating_mul(i));
    let (mut x0, mut x1) = (h.x_scale.ns(left(0)), h.x_scale.ns(left(n)));
    for &m in &h.modes_ns {
        x0 = x0.min(h.x_scale.ns(m));
        x1 = x1.max(h.x_scale.ns(m));
    }
    let (mut x0, mut x1) = padded(x0, x1, 0.02);
    if x1 - x0 < 1e-3 {
        // All values (nearly) equal: show one display unit around them, not nanoseconds.
        let c = (x0 + x1) / 2.0;
        (x0, x1) = (c - 0.5, c + 0.5);
    }
    let ymax = h.counts.iter().copied().max().unwrap_or(0).max(1) as f64 * 1.12;
    let caption = match &h.note {
        Some(n) => format!("{} ({n})", h.title),
        None => h.title.clone(),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FAMILY, 16))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x0..x1, 0.0..ymax)?;
    chart
        .configure_mesh()
        .light_line_style(RGBColor(235, 235, 235))
        .x_desc(format!("{}{}", h.x_label, h.x_scale.unit()))
        .y_desc("count")
        // Counts are whole numbers: at most one tick per count, fractional ticks left blank.
        .y_labels((ymax.floor() as usize + 1).clamp(2, 10))
        .y_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-6 {
                format!("{v:.0}")
            } else {
                String::new()
            }
        })
        .label_style((FAMILY, 12))
        .axis_desc_style((FAMILY, 13))
        .draw()?;
    // Very narrow bins (e.g. all values equal, 1 ns bins) still get a visible bar.
    let min_w = (x1 - x0) / 200.0;
    chart.draw_series(
        h.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| {
                let i = i as i64;
                let (mut a, mut b) = (h.x_scale.ns(left(i)), h.x_scale.ns(left(i + 1)));
                if b - a < min_w {
                    let m = (a + b) / 2.0;
                    (a, b) = (m - min_w / 2.0, m + min_w / 2.0);
                }
                Rectangle::new([(a, 0.0), (b, c as f64)], PALETTE[0].mix(0.75).filled())
            }),
    )?;
    for &m in &h.modes_ns {
        let x = h.x_scale.ns(m);
        chart.draw_series(LineSeries::new(
            vec![(x, 0.0), (x, ymax)],
            MARK.stroke_width(2),
        ))?;
        // Labels in the right part of the plot go left of their line, so they stay inside.
        let right = x > x0 + 0.75 * (x1 - x0);
        let anchor = if right {
            Pos::new(HPos::Right, VPos::Top)
        } else {
            Pos::new(HPos::Left, VPos::Top)
        };
        chart.draw_series(std::iter::once(Text::new(
            format!(" mode {} ", short(x)),
            (x, ymax * 0.98),
            (FAMILY, 12).into_font().color(&MARK).pos(anchor),
        )))?;
    }
    Ok(())
}

/// A compact number for labels: 3 significant decimals at most.
fn short(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line() -> Figure {
        Figure::Line(LineChart {
            title: "lag over time".into(),
            x_label: "time".into(),
            y_label: "lag".into(),
            x_scale: Scale::Seconds,
            y_scale: Scale::Millis,
            lines: vec![Line {
                label: "/camera/image_raw".into(),
                x_ns: (0..5000).map(|i| i * 10_000_000).collect(),
                y: (0..5000)
                    .map(|i| 10e6 + 2e6 * ((i as f64) * 0.05).sin())
                    .collect(),
                points: false,
            }],
            markers: vec![Marker {
                x_ns: 20_000_000_000,
                label: "marker".into(),
            }],
        })
    }

    fn hist() -> Figure {
        Figure::Hist(HistChart {
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
        })
    }

    /// A chart given only the points [`drawn_points`] picks is the same picture as one given
    /// every point: scattered lags with spikes, ties and a long run on every scale.
    #[test]
    fn drawn_points_draw_the_same_picture() {
        let n = 250_007i64;
        let x: Vec<i64> = (0..n)
            .map(|i| 1_700_000_000_000_000_000 + i * 4_000_000)
            .collect();
        let y: Vec<i64> = (0..n)
            .map(|i| match i % 9973 {
                0 => 900_000_000,
                1 => -3_000_000,
                _ => 2_000_000 + (i * 7919 % 1000) * 1000 - (i / 50_000) * 10,
            })
            .collect();
        for scale in [Scale::Millis, Scale::Seconds, Scale::Raw] {
            let chart = |x_ns: Vec<i64>, y: Vec<f64>| {
                Figure::Line(LineChart {
                    title: "lag".into(),
                    x_label: "t".into(),
                    y_label: "lag".into(),
                    x_scale: Scale::Seconds,
                    y_scale: scale,
                    lines: vec![Line {
                        label: String::new(),
                        x_ns,
                        y,
                        points: true,
                    }],
                    markers: Vec::new(),
                })
            };
            let full = chart(x.clone(), y.iter().map(|&v| v as f64).collect());
            let (dx, dy) = drawn_points(&x, &y, scale);
            assert!(dx.len() <= MAX_POINTS && dx.len() > 1000, "{}", dx.len());
            let few = chart(dx, dy);
            assert_eq!(full.to_svg().unwrap(), few.to_svg().unwrap(), "{scale:?}");
        }
        // Short series are kept whole.
        let (dx, dy) = drawn_points(&x[..10], &y[..10], Scale::Millis);
        assert_eq!(dx, x[..10].to_vec());
        assert_eq!(dy, y[..10].iter().map(|&v| v as f64).collect::<Vec<_>>());
    }

    #[test]
    fn png_renders_with_embedded_font() {
        let dir = std::env::temp_dir().join(format!("bagscope-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("grid.png");
        let g = Figure::Grid {
            title: "test grid".into(),
            cols: 2,
            panels: vec![line(), hist()],
        };
        g.write(&p).unwrap();
        let img = image::open(&p).unwrap().to_rgb8();
        assert_eq!((img.width(), img.height()), g.size());
        // Non-trivial: a good share of pixels are not white, and several colours appear.
        let non_white = img.pixels().filter(|p| p.0 != [255, 255, 255]).count();
        assert!(non_white > 5_000, "{non_white}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn svg_is_inlineable_and_deterministic() {
        let a = line().to_svg().unwrap();
        let b = line().to_svg().unwrap();
        assert_eq!(a, b);
        assert!(a.starts_with("<svg"));
        assert!(a.contains("lag over time"));
        assert!(hist().to_svg().unwrap().contains("mode 10.0"));
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let empty = Figure::Line(LineChart {
            title: "empty".into(),
            x_label: String::new(),
            y_label: String::new(),
            x_scale: Scale::Raw,
            y_scale: Scale::Raw,
            lines: vec![Line {
                label: "nan".into(),
                x_ns: vec![i64::MIN, i64::MAX, 0],
                y: vec![f64::NAN, f64::INFINITY, 1.0],
                points: true,
            }],
            markers: vec![],
        });
        empty.to_svg().unwrap();
        let h = Figure::Hist(HistChart {
            title: "none".into(),
            x_label: String::new(),
            x_scale: Scale::Raw,
            start_ns: i64::MAX - 5,
            bin_width_ns: 0,
            counts: vec![],
            modes_ns: vec![],
            note: None,
        });
        h.to_svg().unwrap();
        let g = Figure::Grid {
            title: "empty".into(),
            cols: 0,
            panels: vec![],
        };
        g.to_svg().unwrap();
        assert!(Figure::Line(LineChart {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            x_scale: Scale::Raw,
            y_scale: Scale::Raw,
            lines: vec![],
            markers: vec![]
        })
        .write(Path::new("/tmp/x.txt"))
        .is_err());
    }
}
