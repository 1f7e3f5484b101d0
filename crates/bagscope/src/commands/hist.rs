//! `bagscope hist`: distributions of stamp differences to the nearest partner, of inter-arrival
//! periods and of lag (log_time − stamp), binned and with their modes. Also the per-message lag
//! series that the clocks plots and the report draw.

use std::path::Path;

use serde::Serialize;

use bagscope_bag::Warning;
use bagscope_clocks::{
    lag_modes_ns, Axis, ClockMap, LagBasis, ModeOptions, TopicClock, TopicTimes,
};
use bagscope_stats::NsSummary;

use bagscope_bag::Bag;

use crate::clocks::ClocksData;
use crate::Error;

/// Which distributions `hist` computes (`Default`: 60 bins). The fields are the parameters'
/// names (Python's keywords, the CLI's flags).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct HistOptions {
    /// Topics; stamp differences go from the first to each other one (nearest partner).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_delimiter = ',', num_args = 1.., required = true)
    )]
    pub topics: Vec<String>,
    /// Number of bins (between the 0.1 % and 99.9 % quantiles; clamped to 1..=10 000).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = HistOptions::default().bins))]
    pub bins: usize,
}

impl Default for HistOptions {
    fn default() -> Self {
        HistOptions {
            topics: Vec::new(),
            bins: 60,
        }
    }
}

/// Fixed-width bins over the central 99.8 % of the values (`bagscope-stats`' histogram).
pub use bagscope_stats::Histogram as Bins;

/// What a [`Distribution`] is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DistKind {
    /// Partner's nearest stamp − this topic's stamp.
    StampDiff,
    /// Consecutive log-time differences.
    Period,
    /// log_time − stamp (stamps mapped to the recorder's axis where needed).
    Lag,
}

/// One distribution of nanosecond values, summarised and binned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    /// What the values are (stamp difference, period, lag).
    pub kind: DistKind,
    /// The topic the values are of (for a stamp difference: the reference topic).
    pub topic: String,
    /// The other topic of a stamp difference.
    pub partner: Option<String>,
    /// Count, extremes, mean and quantiles of the values; None when there are none.
    pub summary: Option<NsSummary>,
    /// Mode centres, ascending (one when unimodal).
    pub modes_ns: Vec<i64>,
    /// More than one mode.
    pub bimodal: bool,
    /// The histogram; None when there are no values.
    pub bins: Option<Bins>,
    /// Why the distribution is empty or what it was computed on.
    pub note: Option<String>,
}

impl Distribution {
    /// A figure title: what the values are and of which topics (`inter-arrival period /imu`).
    pub fn title(&self) -> String {
        match (self.kind, &self.partner) {
            (DistKind::StampDiff, Some(p)) => format!("stamp {} → nearest {}", self.topic, p),
            (DistKind::StampDiff, None) => format!("stamp {} → nearest partner", self.topic),
            (DistKind::Period, _) => format!("inter-arrival period {}", self.topic),
            (DistKind::Lag, _) => format!("lag (log_time − stamp) {}", self.topic),
        }
    }
}

/// `bagscope hist`: the distributions asked for (the CLI's `hist --json`).
#[derive(Debug, Clone, Serialize)]
pub struct HistReport {
    /// The path the bag was opened from.
    pub bag: String,
    /// The topics asked for, in the order given (the first is the stamp-difference reference).
    pub topics: Vec<String>,
    /// The stamp differences from the first topic to each other one, then each topic's period
    /// and lag distributions.
    pub distributions: Vec<Distribution>,
    /// The figure written, if any.
    pub plot: Option<String>,
    /// Warnings of the clocks analysis about the chosen topics or the whole bag, and every
    /// data-loss warning; sorted.
    pub warnings: Vec<Warning>,
}

/// The [`Distribution`] of `values`: summary, modes, `nbins` bins, with `note` attached.
pub fn distribution(
    kind: DistKind,
    topic: &str,
    partner: Option<&str>,
    values: &[i64],
    nbins: usize,
    note: Option<String>,
) -> Distribution {
    let modes = lag_modes_ns(values, &ModeOptions::default());
    Distribution {
        kind,
        topic: topic.to_string(),
        partner: partner.map(str::to_string),
        summary: NsSummary::of(values),
        bimodal: modes.len() > 1,
        modes_ns: modes,
        bins: Bins::central(values, nbins),
        note,
    }
}

/// For each stamp of `a`: the nearest stamp of `b` minus it (binary search on sorted `b`).
pub fn nearest_diffs(a: &[i64], b: &[i64]) -> Vec<i64> {
    let mut sb = b.to_vec();
    sb.sort_unstable();
    if sb.is_empty() {
        return Vec::new();
    }
    a.iter()
        .map(|&t| {
            let i = sb.partition_point(|&x| x < t);
            let after = sb.get(i).copied();
            let before = i.checked_sub(1).map(|j| sb[j]);
            let best = match (before, after) {
                (Some(p), Some(n)) => {
                    // Ties go to the earlier partner: deterministic.
                    if (t as i128 - p as i128) <= (n as i128 - t as i128) {
                        p
                    } else {
                        n
                    }
                }
                (Some(p), None) => p,
                (None, Some(n)) => n,
                (None, None) => t,
            };
            best.saturating_sub(t)
        })
        .collect()
}

/// Per-message (log_time, lag) of one topic, as the clocks analysis defines lag: stamps on the
/// recorder's axis are used directly, sim stamps of a wall-time recording are mapped through
/// `/clock`, anything else is left out.
pub fn lag_series(
    t: &TopicTimes,
    tc: &TopicClock,
    recorder: Axis,
    map: Option<&ClockMap>,
) -> (Vec<i64>, Vec<i64>) {
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    let Some(basis) = tc.lag_basis else {
        return (xs, ys);
    };
    for (&log, &s) in t.log_time_ns.iter().zip(&t.stamp_ns) {
        let wall = bagscope_types::is_wall_ns(s);
        let on_log = match (wall, recorder) {
            (true, Axis::Wall) => Some(s),
            (false, Axis::Sim) if s != 0 && tc.axis == Axis::Sim => Some(s),
            (false, Axis::Wall) if s != 0 && basis == LagBasis::MappedThroughClock => {
                map.and_then(|m| m.sim_to_log_ns(s, Some(log)))
            }
            _ => None,
        };
        if let Some(v) = on_log {
            xs.push(log);
            ys.push(log.saturating_sub(v));
        }
    }
    (xs, ys)
}

/// The lag distribution of every topic that has one, in the clocks report's topic order.
pub fn lag_distributions(d: &ClocksData, nbins: usize) -> Vec<(Distribution, Vec<i64>, Vec<i64>)> {
    let mut out = Vec::new();
    for tc in &d.report.topics {
        let Some(t) = d.times.iter().find(|t| t.topic == tc.topic) else {
            continue;
        };
        let (x, y) = lag_series(t, tc, d.report.recorder_axis, d.clock_map.as_ref());
        if y.is_empty() {
            continue;
        }
        // Stamps on a clock far from the recorder's (days, for a replay): the lags are shown
        // relative to their median, which the note gives, so axes read in ms, not 10¹¹ s.
        let (y, note) = match tc.clock_offset_ns {
            Some(_) => {
                let med = bagscope_stats::median_ns(&y).unwrap_or(0);
                (
                    y.iter()
                        .map(|v| v.saturating_sub(med))
                        .collect::<Vec<i64>>(),
                    Some(format!(
                        "relative to the median lag {:.3} s: the stamps' clock is offset",
                        med as f64 / 1e9
                    )),
                )
            }
            None => (y, None),
        };
        let dist = distribution(DistKind::Lag, &tc.topic, None, &y, nbins, note);
        out.push((dist, x, y));
    }
    out
}

/// `bagscope hist` of the bag at `path`. Errors when no topic is given or one is not in the
/// bag.
pub fn hist(path: &Path, o: &HistOptions) -> Result<HistReport, Error> {
    validate_hist(o)?;
    hist_of(&Bag::open(path)?, o)
}

fn validate_hist(o: &HistOptions) -> Result<(), Error> {
    if o.topics.is_empty() {
        return Err(Error::invalid("topics", "needs at least one topic"));
    }
    Ok(())
}

/// [`hist`] of an open bag.
pub fn hist_of(bag: &Bag, o: &HistOptions) -> Result<HistReport, Error> {
    validate_hist(o)?;
    for n in &o.topics {
        // An unknown topic: the bag's error lists the topics it has.
        bag.topic_index(n)?;
    }
    let path = bag.path.as_path();
    let d = crate::clocks::clocks_data_of(bag, &Default::default())?;
    let mut warnings = d.report.warnings.clone();
    warnings.retain(|w| w.data_loss || w.topic.as_ref().is_none_or(|t| o.topics.contains(t)));
    let find = |name: &str| {
        d.times
            .iter()
            .find(|t| t.topic == name)
            .ok_or_else(|| Error::invalid("topics", format!("topic {name} is not in the bag")))
    };
    let chosen: Vec<&TopicTimes> = o.topics.iter().map(|n| find(n)).collect::<Result<_, _>>()?;
    let mut dists = Vec::new();
    // Stamp differences: the first topic against each other one.
    if let Some((a, rest)) = chosen.split_first() {
        for b in rest {
            let (sa, na) = stamps_or_log(a);
            let (sb, nb) = stamps_or_log(b);
            let diffs = nearest_diffs(sa, sb);
            let mut notes: Vec<String> = Vec::new();
            for (t, used_log) in [(a, na), (b, nb)] {
                if used_log {
                    notes.push(format!("{} has no stamps: log time used", t.topic));
                }
            }
            let axis = bagscope_types::series_is_wall;
            if let (Some(x), Some(y)) = (axis(sa), axis(sb)) {
                if x != y {
                    notes.push("stamps on different clocks (wall vs sim/relative)".into());
                }
            }
            let note = (!notes.is_empty()).then(|| notes.join("; "));
            dists.push(distribution(
                DistKind::StampDiff,
                &a.topic,
                Some(&b.topic),
                &diffs,
                o.bins,
                note,
            ));
        }
    }
    let lags = lag_distributions(&d, o.bins);
    for t in &chosen {
        let periods = bagscope_stats::diffs(&t.log_time_ns);
        dists.push(distribution(
            DistKind::Period,
            &t.topic,
            None,
            &periods,
            o.bins,
            None,
        ));
        match lags.iter().find(|(l, _, _)| l.topic == t.topic) {
            Some((l, _, _)) => dists.push(l.clone()),
            None => {
                let tc = d.report.topics.iter().find(|c| c.topic == t.topic);
                let note = tc
                    .and_then(|c| c.lag_note.clone())
                    .unwrap_or_else(|| "no stamps on the recorder's axis".into());
                dists.push(distribution(
                    DistKind::Lag,
                    &t.topic,
                    None,
                    &[],
                    o.bins,
                    Some(note),
                ));
            }
        }
    }
    let r = HistReport {
        bag: path.display().to_string(),
        topics: o.topics.clone(),
        distributions: dists,
        plot: None,
        warnings,
    };
    Ok(r)
}

fn stamps_or_log(t: &TopicTimes) -> (&[i64], bool) {
    if t.stamp_ns.len() == t.log_time_ns.len() && !t.stamp_ns.is_empty() {
        (&t.stamp_ns, false)
    } else {
        (&t.log_time_ns, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_partner_by_binary_search() {
        let a = [0, 100, 200, 1000];
        let b = [90, 205, 150];
        assert_eq!(nearest_diffs(&a, &b), vec![90, -10, 5, -795]);
        assert!(nearest_diffs(&a, &[]).is_empty());
        assert_eq!(nearest_diffs(&[i64::MIN], &[i64::MAX]), vec![i64::MAX]);
    }

    #[test]
    fn bimodal_distribution_reports_both_modes() {
        let v: Vec<i64> = (0..400)
            .map(|i| if i % 3 == 0 { 22_000_000 } else { 10_000_000 } + (i % 7) * 100_000)
            .collect();
        let d = distribution(DistKind::Lag, "/cam", None, &v, 60, None);
        assert!(d.bimodal);
        assert_eq!(d.modes_ns.len(), 2);
        assert!((d.modes_ns[0] - 10_300_000).abs() < 500_000);
        assert!((d.modes_ns[1] - 22_300_000).abs() < 500_000);
    }
}
