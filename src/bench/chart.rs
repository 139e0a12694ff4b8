//! Benchmark results as SVG charts: requests per second as grouped bars, latency
//! percentiles on a "nines" scale, memory over time.
//!
//! Each function writes one self-contained SVG file and nothing else; the numbers come
//! already reduced (medians, percentiles, megabytes), this module does no statistics.
//! Output is deterministic: the same input gives the same bytes.  Series take their colour
//! from their index in a small palette (Apache first is red, lighttpd second is blue), so
//! one server keeps its colour across the charts of a report.
//!
//! Degenerate input never fails: non-finite values are skipped, an empty or all-zero input
//! still gives a chart with its title, axes and legend, and says "no data" in the middle
//! when there is nothing to draw.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::io;
use std::ops::Range;
use std::path::Path;

/// A figure measured over repeats: the bar shows the median, the whisker min..max.
#[derive(Clone, Copy, Debug)]
pub struct Range3 {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

const SIZE: (u32, u32) = (900, 500);
const FONT: &str = "sans-serif";

/// Series colours, by index: red and blue first for the usual Apache and lighttpd pair.
const PALETTE: [RGBColor; 6] = [
    RGBColor(204, 51, 51),
    RGBColor(38, 102, 204),
    RGBColor(51, 153, 77),
    RGBColor(230, 140, 20),
    RGBColor(128, 77, 179),
    RGBColor(100, 100, 100),
];

fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<io::Error>>;

/// Grouped bars: for each group (e.g. a URL path, or "n=1000 c=5"), one bar per server with its median
/// requests/s and a whisker for the range (min..max over repeats).  The `i`-th [`Range3`] of a group
/// belongs to `servers[i]`; ranges beyond the servers are not drawn, a missing one leaves a gap.
pub fn rps_bars(
    path: &Path,
    title: &str,
    servers: &[String],
    groups: &[(String, Vec<Range3>)],
) -> io::Result<()> {
    let values = groups.iter().flat_map(|(_, rs)| rs.iter().take(servers.len()));
    let top =
        values.clone().flat_map(|r| [r.median, r.min, r.max]).filter(|v| v.is_finite()).fold(0.0, f64::max);
    let any_bar = values.clone().any(|r| r.median.is_finite());
    let width = groups.len().max(1) as f64;
    // One tick in the middle of each group, labelled with the group's name.
    let centres: Vec<f64> = (0..groups.len()).map(|i| i as f64 + 0.5).collect();
    let bar = 0.8 / servers.len().max(1) as f64;
    let bar_x = |group: usize, server: usize| group as f64 + 0.1 + server as f64 * bar;

    render(path, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 22))
            .margin(20)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(Ticked::new(0.0..width, centres), 0.0..headroom(top, 1.25))?;
        let label = |x: &f64| groups.get(x.floor() as usize).map(|g| g.0.clone()).unwrap_or_default();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&label)
            .y_label_formatter(&number)
            .y_desc("requests/s (bar: median, whisker: min-max)")
            .label_style((FONT, 14))
            .draw()?;
        for (s, name) in servers.iter().enumerate() {
            let c = colour(s);
            let bars = groups.iter().enumerate().filter_map(|(g, (_, rs))| {
                let r = rs.get(s).filter(|r| r.median.is_finite())?;
                // A sliver of space between neighbouring bars keeps them apart.
                let x0 = bar_x(g, s) + bar * 0.05;
                Some(Rectangle::new([(x0, 0.0), (x0 + bar * 0.9, r.median.max(0.0))], c.filled()))
            });
            chart
                .draw_series(bars)?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()));
        }
        for (g, (_, rs)) in groups.iter().enumerate() {
            for (s, r) in rs.iter().take(servers.len()).enumerate() {
                if !(r.min.is_finite() && r.max.is_finite()) {
                    continue;
                }
                let (lo, hi) = (r.min.min(r.max).max(0.0), r.min.max(r.max).max(0.0));
                let x = bar_x(g, s) + bar / 2.0;
                let cap = bar * 0.2;
                let style = BLACK.stroke_width(1);
                chart.draw_series([
                    PathElement::new(vec![(x, lo), (x, hi)], style),
                    PathElement::new(vec![(x - cap, lo), (x + cap, lo)], style),
                    PathElement::new(vec![(x - cap, hi), (x + cap, hi)], style),
                ])?;
            }
        }
        if !any_bar {
            no_data(&mut chart, width / 2.0, headroom(top, 1.25) / 2.0)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight, !servers.is_empty())
    })
}

/// Latency percentile curves: x = percentile on a "nines" scale (50, 90, 99, 99.9, 99.99, 100: plot
/// x = -log10(1 - p/100) clamped for 100%, with tick labels "50%", "90%", "99%", "99.9%"...), y = latency in ms.
/// One curve per (label, points) where points are (percentile 0..=100, milliseconds).
///
/// 100% has no place on the scale; it is drawn one decade past the highest integer number
/// of nines the other points need (so after 99.9% comes 99.99%, then 100%).  Scales stop
/// at six nines: finer percentiles are drawn there.
pub fn latency_curves(path: &Path, title: &str, curves: &[(String, Vec<(f64, f64)>)]) -> io::Result<()> {
    const MAX_NINES: f64 = 6.0;
    let nines = |p: f64| -(1.0 - p / 100.0).log10();
    let all = || {
        curves.iter().flat_map(|(_, ps)| ps.iter().copied()).filter(|(p, ms)| p.is_finite() && ms.is_finite())
    };
    let has_full = all().any(|(p, _)| p >= 100.0);
    let below = all().filter(|&(p, _)| p < 100.0).map(|(p, _)| nines(p.max(0.0))).fold(0.0, f64::max);
    // The tolerance keeps 99.9% (2.9999999999999996 nines in floating point) at three.
    let whole = (below - 1e-9).ceil().clamp(1.0, MAX_NINES);
    let right = if has_full { whole + 1.0 } else { whole };
    let left = if all().any(|(p, _)| p < 50.0) { 0.0 } else { 2f64.log10() };
    let x_of = |p: f64| if p >= 100.0 { right } else { nines(p.max(0.0)).min(whole) };
    let top = all().map(|(_, ms)| ms).fold(0.0, f64::max);
    let ticks: Vec<f64> = [0.0, 2f64.log10()]
        .into_iter()
        .chain((1..=right as u32).map(f64::from))
        .filter(|x| *x >= left)
        .collect();

    render(path, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 22))
            .margin(20)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(Ticked::new(left..right, ticks), 0.0..headroom(top, 1.15))?;
        let label = |x: &f64| nines_label(*x, has_full.then_some(right));
        chart
            .configure_mesh()
            .x_label_formatter(&label)
            .y_label_formatter(&number)
            .x_desc("percentile")
            .y_desc("latency (ms)")
            .label_style((FONT, 14))
            .draw()?;
        for (i, (name, points)) in curves.iter().enumerate() {
            let c = colour(i);
            let mut xy: Vec<(f64, f64)> = points
                .iter()
                .filter(|(p, ms)| p.is_finite() && ms.is_finite())
                .map(|&(p, ms)| (x_of(p), ms))
                .collect();
            xy.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
            chart
                .draw_series(LineSeries::new(xy.iter().copied(), c.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
            chart.draw_series(xy.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        if all().next().is_none() {
            no_data(&mut chart, (left + right) / 2.0, headroom(top, 1.15) / 2.0)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft, !curves.is_empty())
    })
}

/// The tick label at `x` nines: "50%", "90%", "99%", "99.9%"...; `full` is where 100% is.
fn nines_label(x: f64, full: Option<f64>) -> String {
    if full == Some(x) {
        return "100%".into();
    }
    if x == 0.0 {
        return "0%".into();
    }
    if (x - 2f64.log10()).abs() < 1e-9 {
        return "50%".into();
    }
    // Whole numbers of nines, written out rather than formatted from 100 - 10^(2-k),
    // which would print 99.90000000000001.
    match x as usize {
        1 => "90%".into(),
        2 => "99%".into(),
        k => format!("99.{}%", "9".repeat(k - 2)),
    }
}

/// Memory over time: one line per series, x = seconds, y = MB.  Points are (seconds,
/// megabytes); the caller chooses what a megabyte is.
pub fn memory_over_time(path: &Path, title: &str, series: &[(String, Vec<(f64, f64)>)]) -> io::Result<()> {
    /// Above this many points a line shows the shape better than markers would.
    const MARKED: usize = 50;
    let all = || {
        series.iter().flat_map(|(_, ps)| ps.iter().copied()).filter(|(t, mb)| t.is_finite() && mb.is_finite())
    };
    let left = all().map(|(t, _)| t).fold(0.0, f64::min);
    let mut right = all().map(|(t, _)| t).fold(left, f64::max);
    if right <= left {
        right = left + 1.0;
    }
    let bottom = all().map(|(_, mb)| mb).fold(0.0, f64::min);
    let top = headroom(all().map(|(_, mb)| mb).fold(0.0, f64::max), 1.3);

    render(path, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 22))
            .margin(20)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(left..right, bottom..top)?;
        chart
            .configure_mesh()
            .x_label_formatter(&number)
            .y_label_formatter(&number)
            .x_desc("time (s)")
            .y_desc("memory (MB)")
            .label_style((FONT, 14))
            .draw()?;
        for (i, (name, points)) in series.iter().enumerate() {
            let c = colour(i);
            let xy: Vec<(f64, f64)> =
                points.iter().copied().filter(|(t, mb)| t.is_finite() && mb.is_finite()).collect();
            chart
                .draw_series(LineSeries::new(xy.iter().copied(), c.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
            if xy.len() <= MARKED {
                chart.draw_series(xy.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
            }
        }
        if all().next().is_none() {
            no_data(&mut chart, (left + right) / 2.0, (bottom + top) / 2.0)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft, !series.is_empty())
    })
}

/// Draws into an SVG in memory, then writes the file: plotters' own file writing happens on
/// drop, where its errors are lost.
fn render(path: &Path, draw: impl FnOnce(&Area) -> DrawResult) -> io::Result<()> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(io::Error::other)?;
        draw(&root).map_err(io::Error::other)?;
        root.present().map_err(io::Error::other)?;
    }
    std::fs::write(path, svg)
}

/// A tick label: at most three decimals, none when the value is whole ("25000", "0.5"),
/// where plotters would print "25000.0".
fn number(v: &f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// The top of a value axis: `max` with room above it for the legend, 1 when there is no
/// positive value (an axis from 0 to 0 cannot be drawn).
fn headroom(max: f64, factor: f64) -> f64 {
    if max > 0.0 && max.is_finite() { max * factor } else { 1.0 }
}

fn no_data<X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<SVGBackend, Cartesian2d<X, Y>>,
    x: f64,
    y: f64,
) -> DrawResult {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let style =
        TextStyle::from((FONT, 20)).color(&RGBColor(128, 128, 128)).pos(Pos::new(HPos::Center, VPos::Center));
    chart.draw_series([Text::new("no data", (x, y), style)])?;
    Ok(())
}

/// The legend box, unless there are no series (an empty box would be all it showed).
fn legend<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
    any_series: bool,
) -> DrawResult {
    if !any_series {
        return Ok(());
    }
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
}

/// A linear f64 axis whose ticks sit exactly where the chart wants them (group centres,
/// whole numbers of nines).  plotters' own `with_key_points` does the same but cannot take a
/// label formatter on an f64 axis.
struct Ticked {
    linear: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(range: Range<f64>, ticks: Vec<f64>) -> Ticked {
        Ticked { linear: range.into(), ticks }
    }
}

impl Ranged for Ticked {
    // Labels always come from the chart's formatter; Debug is only the fallback plotters asks for.
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.linear.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // The ticks are the bold mesh lines; there are no light ones between them.
        if hint.weight().allow_light_points() { Vec::new() } else { self.ticks.clone() }
    }

    fn range(&self) -> Range<f64> {
        self.linear.range()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).expect("svg written")
    }

    fn assert_svg(svg: &str, words: &[&str]) {
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        assert!(svg.trim_end().ends_with("</svg>"));
        for w in words {
            assert!(svg.contains(w), "{w:?} missing");
        }
    }

    fn servers() -> Vec<String> {
        vec!["Apache".into(), "lighttpd".into()]
    }

    fn r(median: f64, min: f64, max: f64) -> Range3 {
        Range3 { median, min, max }
    }

    #[test]
    fn rps_bars_names_groups_and_servers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rps.svg");
        let groups = vec![
            ("/index.html".to_string(), vec![r(9000.0, 8500.0, 9400.0), r(15000.0, 14000.0, 15500.0)]),
            ("/info.php".to_string(), vec![r(1200.0, 1100.0, 1300.0), r(f64::NAN, f64::NAN, 1.0)]),
        ];
        rps_bars(&path, "Requests per second", &servers(), &groups).unwrap();
        let svg = read(&path);
        assert_svg(
            &svg,
            &["Requests per second", "Apache", "lighttpd", "/index.html", "/info.php", "requests/s"],
        );
        // The same input gives the same bytes.
        rps_bars(&path, "Requests per second", &servers(), &groups).unwrap();
        assert_eq!(read(&path), svg);
    }

    #[test]
    fn rps_bars_of_nothing_is_still_a_chart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rps.svg");
        rps_bars(&path, "Empty", &[], &[]).unwrap();
        assert_svg(&read(&path), &["Empty", "no data"]);
        rps_bars(&path, "Zeros", &servers(), &[("/".into(), vec![r(0.0, 0.0, 0.0)])]).unwrap();
        assert_svg(&read(&path), &["Zeros", "Apache", "lighttpd"]);
    }

    #[test]
    fn latency_curves_label_the_nines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latency.svg");
        let curve = |scale: f64| {
            [(50.0, 1.0), (90.0, 2.0), (99.0, 5.0), (99.9, 12.0), (100.0, 40.0)]
                .into_iter()
                .map(|(p, ms)| (p, ms * scale))
                .collect::<Vec<_>>()
        };
        let curves = vec![("Apache".to_string(), curve(2.0)), ("lighttpd".to_string(), curve(1.0))];
        latency_curves(&path, "Latency", &curves).unwrap();
        assert_svg(
            &read(&path),
            &["Latency", "Apache", "lighttpd", "50%", "90%", "99%", "99.9%", "100%", "ms"],
        );
        assert!(!read(&path).contains("99.99%"), "100% comes right after 99.9%");
    }

    #[test]
    fn latency_curves_survive_odd_points() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latency.svg");
        let curves = vec![
            ("one".to_string(), vec![(99.0, 3.0)]),
            ("nan".to_string(), vec![(f64::NAN, 1.0), (50.0, f64::NAN)]),
            ("zero".to_string(), vec![(0.0, 0.0), (100.0, 0.0), (100.0, 0.0)]),
            ("none".to_string(), vec![]),
        ];
        latency_curves(&path, "Odd", &curves).unwrap();
        assert_svg(&read(&path), &["Odd", "one", "nan", "zero", "none"]);
        latency_curves(&path, "Empty", &[]).unwrap();
        assert_svg(&read(&path), &["Empty", "no data"]);
    }

    #[test]
    fn tick_numbers() {
        let labels: Vec<String> =
            [25000.0, 0.5, 0.30000000000000004, 0.0, -0.0, 12.25].iter().map(number).collect();
        assert_eq!(labels, ["25000", "0.5", "0.3", "0", "0", "12.25"]);
    }

    #[test]
    fn nines_labels() {
        let full = Some(4.0);
        let labels: Vec<String> =
            [0.0, 2f64.log10(), 1.0, 2.0, 3.0, 4.0].iter().map(|x| nines_label(*x, full)).collect();
        assert_eq!(labels, ["0%", "50%", "90%", "99%", "99.9%", "100%"]);
        assert_eq!(nines_label(4.0, None), "99.99%");
    }

    #[test]
    fn memory_over_time_draws_each_series() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.svg");
        let series = vec![
            ("Apache".to_string(), (0..200).map(|i| (i as f64 * 0.1, 40.0 + (i % 7) as f64)).collect()),
            ("lighttpd".to_string(), vec![(0.0, 3.0), (f64::NAN, 4.0), (19.9, 3.5)]),
            ("single".to_string(), vec![(5.0, 0.0)]),
        ];
        memory_over_time(&path, "Memory", &series).unwrap();
        assert_svg(&read(&path), &["Memory", "Apache", "lighttpd", "single", "time (s)", "memory (MB)"]);
        memory_over_time(&path, "Empty", &[]).unwrap();
        assert_svg(&read(&path), &["Empty", "no data"]);
    }

    #[test]
    fn unwritable_path_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing/dir/chart.svg");
        assert!(memory_over_time(&path, "x", &[]).is_err());
    }
}
