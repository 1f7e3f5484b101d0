//! `bagscope`: timing answers for ROS 2 bags. This crate only parses arguments, calls one
//! library function per subcommand and renders the result.
//!
//! # In the workspace
//!
//! The facade's options types flattened into clap commands (`#[command(flatten)]`), one
//! `commands/<verb>.rs` per subcommand (`match` and `compare` share `matching.rs`), text/JSON
//! rendering, one exit-code rule (`render::finish` / `render::exit_code` over `CommandReport`;
//! a library parameter error spelled with the command's own flags), Ctrl-C (`interrupt.rs`:
//! first stops cleanly, second aborts), `play`'s keyboard (`keys.rs`) and progress bars;
//! `anyhow` lives only here.
//!
//! Notable dependencies: `bagscope`, `bagscope-report`, `bagscope-synth`, `bagscope-replay`
//! (feature `play`); `clap`, `anyhow`, `indicatif`, `ctrlc`; features `export` (polars) and
//! `play` (RustDDS), both default.

mod commands;
mod interrupt;
#[cfg(feature = "play")]
mod keys;
mod progress;
mod render;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Exit codes, as documented in the README: 0 ok, 1 error, 2 usage, 3 finished with warnings
/// about lost or suspect data.
pub const EXIT_WARN: u8 = 3;

#[derive(Parser)]
#[command(
    name = "bagscope",
    version,
    about = "Timing answers for ROS 2 bags (rosbag2 folders, .mcap and .db3 files), no ROS install needed"
)]
struct Cli {
    /// Print every warning on its own line (default: one line per warning code).
    #[arg(long, short = 'v', global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Summary of a bag: duration, per-topic type, count, own-span rate, gaps, warnings.
    Info(commands::info::Args),
    /// Which clock each topic is stamped on, lag, stamp health, /clock, split clock axes.
    Clocks(commands::clocks::Args),
    /// Emulate message_filters synchronizers on the bag; recommend slop and queue_size.
    Sync(commands::sync::Args),
    /// Command -> response delay and latency-corrected tracking error.
    Match(commands::matching::Args),
    /// Compare runs of the same command bag (sim vs real): delay and corrected error side by side.
    Compare(commands::matching::CompareArgs),
    /// Message contract checks (images, camera info, joints, point clouds, stamps).
    Check(commands::check::Args),
    /// Rewrite a bag (e.g. a Humble-era .db3 sqlite3 bag) as one rosbag2-compatible MCAP file.
    Convert(commands::convert::Args),
    /// Write synthetic bags with known ground truth (*.truth.json beside each bag).
    Synth(commands::synth::Args),
    /// What tf2_ros::MessageFilter would have done: per message, was the transform to the target
    /// frame available at its stamp, after how long, or why not; TF edges' rates and gaps.
    Tf(commands::tf::Args),
    /// Histograms of stamp differences to the nearest partner, periods and lag, modes marked.
    Hist(commands::hist::Args),
    /// A topic's messages decoded, as `ros2 topic echo` prints them (YAML, or JSON lines), with
    /// their times; some fields, a time window, a count.
    Echo(commands::echo::Args),
    /// Run every analysis that applies and write index.html, report.md (+ PNGs) and report.json.
    Report(commands::report::Args),
    /// Messages as Parquet / CSV tables (one per topic, fields flattened), or with
    /// --timing-only one table of every message's times.
    #[cfg(feature = "export")]
    Export(commands::export::Args),
    /// info + clocks (+ report) over many bags in parallel: per-bag JSON, a hive-partitioned
    /// timing table and a summary table; resumable.
    #[cfg(feature = "export")]
    Batch(commands::batch::Args),
    /// Observations for learning: at each anchor message the member topics joined by
    /// message_filters policies, state sampled at its stamp, freshness and TF gates; every row
    /// with its pairing evidence, every rejected message with its reason (Parquet).
    #[cfg(feature = "export")]
    Observe(commands::observe::Args),
    /// Publish a bag onto a live ROS 2 graph (pure-Rust DDS, no ROS install) at the recorded
    /// intervals, paced by the monotonic clock or a simulator's /clock; reports its timing error.
    #[cfg(feature = "play")]
    Play(commands::play::Args),
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    // The subcommand run, whose flags spell the parameters its errors name.
    let sub = matches
        .subcommand_name()
        .and_then(|n| Cli::command().find_subcommand(n).cloned());
    render::set_verbose(cli.verbose);
    let cli_verbose = cli.verbose;
    // A second Ctrl-C, or the first one for commands that cannot stop half-way, ends the
    // process at once: the temporary files being written (`OUT.partial`, `NAME.tmp`, a
    // report's stage) are removed first.
    interrupt::before_forced_exit(bagscope::outfile::remove_live);
    #[cfg(feature = "export")]
    let stops_cleanly = matches!(cli.command, Command::Batch(_));
    #[cfg(not(feature = "export"))]
    let stops_cleanly = false;
    #[cfg(feature = "play")]
    let stops_cleanly = stops_cleanly || matches!(cli.command, Command::Play(_));
    if !stops_cleanly {
        interrupt::on_interrupt(|| {
            bagscope::outfile::remove_live();
            std::process::exit(130);
        });
    }
    // Commands that draw their own progress (batch, play) do without this one.
    let own_bar = stops_cleanly;
    let json = std::env::args_os().any(|a| a == "--json");
    let bar = (!own_bar).then(|| progress::RemoteProgress::start(json));
    let res = match cli.command {
        Command::Info(a) => commands::info::run(a),
        Command::Synth(a) => commands::synth::run(a),
        Command::Tf(a) => commands::tf::run(a),
        Command::Hist(a) => commands::hist::run(a),
        Command::Echo(a) => commands::echo::run(a),
        Command::Report(a) => commands::report::run(a),
        #[cfg(feature = "export")]
        Command::Export(a) => commands::export::run(a),
        #[cfg(feature = "export")]
        Command::Batch(a) => commands::batch::run(a),
        #[cfg(feature = "export")]
        Command::Observe(a) => commands::observe::run(a),
        Command::Convert(a) => commands::convert::run(a),
        #[cfg(feature = "play")]
        Command::Play(a) => commands::play::run(a),
        Command::Sync(a) => commands::sync::run(a),
        Command::Clocks(a) => commands::clocks::run(a),
        Command::Check(a) => commands::check::run(a),
        Command::Match(a) => commands::matching::run(a),
        Command::Compare(a) => commands::matching::run_compare(a),
    };
    drop(bar);
    // What was read from object storage, with -v (users' own accounting, bench/remote.sh).
    let io = bagscope::io::io_counters();
    if cli_verbose && io.requests > 0 {
        eprintln!(
            "object storage: {} request(s), {} byte(s) read",
            io.requests, io.bytes
        );
    }
    // A remote bag whose read failed for good part-way (the object replaced, the network
    // gone after every retry): the answer printed is not the whole bag's.
    if let Some(failure) = bagscope::io::take_process_read_failure() {
        if res.is_ok() {
            eprintln!("bagscope: error: {}", render::terminal_text(&failure));
            return ExitCode::from(1);
        }
    }
    match res {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // A closed pipe (`bagscope info … | head`) is not an error.
            for cause in err.chain() {
                if let Some(io) = cause.downcast_ref::<std::io::Error>() {
                    if io.kind() == std::io::ErrorKind::BrokenPipe {
                        return ExitCode::from(0);
                    }
                }
            }
            eprintln!(
                "bagscope: error: {}",
                render::terminal_text(&message(&err, sub.as_ref()))
            );
            ExitCode::from(if is_usage(&err) { 2 } else { 1 })
        }
    }
}

/// The library error in `err`'s chain, if any (also inside the report page's error).
fn facade_error(err: &anyhow::Error) -> Option<&bagscope::Error> {
    err.chain().find_map(|c| {
        c.downcast_ref::<bagscope::Error>()
            .or(match c.downcast_ref::<bagscope_report::Error>() {
                Some(bagscope_report::Error::Bag(e)) => Some(e),
                _ => None,
            })
    })
}

/// Whether the error is about how the command was asked (the library's one rule,
/// [`bagscope::Error::is_usage`]; for `play` and `synth`, which are not the library's, their
/// parameter errors): exit 2, as clap's own usage errors.
fn is_usage(err: &anyhow::Error) -> bool {
    if facade_error(err).is_some_and(bagscope::Error::is_usage) {
        return true;
    }
    err.chain().any(|c| {
        #[cfg(feature = "play")]
        if let Some(bagscope_replay::ReplayError::Usage(_)) = c.downcast_ref() {
            return true;
        }
        matches!(
            c.downcast_ref::<bagscope_synth::SynthError>(),
            Some(
                bagscope_synth::SynthError::Param(_)
                    | bagscope_synth::SynthError::UnknownScenario(..)
            )
        )
    })
}

/// A parameter as the command's flag: `lower_bounds` → `--lower-bound`, `bag` → `BAG`.
fn flag(cmd: Option<&clap::Command>, name: &str) -> String {
    let arg = cmd.and_then(|c| c.get_arguments().find(|a| a.get_id() == name));
    match arg {
        Some(a) => match a.get_long() {
            Some(l) => format!("--{l}"),
            None => a
                .get_value_names()
                .and_then(|v| v.first())
                .map_or_else(|| name.to_uppercase(), |v| v.to_string()),
        },
        None => format!("--{}", name.replace('_', "-")),
    }
}

/// The error on one line, the parameters the library names spelled as the command's flags:
/// the library says ``slop: applies to `policy` approx-py only``, the CLI `--slop: applies to
/// --policy approx-py only`.
fn message(err: &anyhow::Error, cmd: Option<&clap::Command>) -> String {
    let mut line = one_line(err);
    if let Some((name, reason)) = facade_error(err).and_then(bagscope::Error::parameter) {
        line = line.replacen(
            &format!("{name}: {reason}"),
            &format!("{}: {reason}", flag(cmd, name)),
            1,
        );
    }
    // `name` → --flag, for the names that are this command's arguments.
    let is_arg = |n: &str| cmd.is_some_and(|c| c.get_arguments().any(|a| a.get_id() == n));
    let parts: Vec<&str> = line.split('`').collect();
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 && i + 1 < parts.len() && is_arg(part) {
            out.push_str(&flag(cmd, part));
        } else {
            if i % 2 == 1 {
                out.push('`');
            }
            out.push_str(part);
            if i % 2 == 1 && i + 1 < parts.len() {
                out.push('`');
            }
        }
    }
    out
}

/// The error and its causes on one line, each cause only where the text so far does not
/// already hold it: library errors often print their source inside their own message
/// ("cannot read PATH: No such file…"), and `{:#}` would then repeat it. A short cause is
/// always printed: its text could be part of a path or a word.
fn one_line(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let c = cause.to_string();
        if c.len() < 12 || !line.contains(&c) {
            line.push_str(": ");
            line.push_str(&c);
        }
    }
    line
}
