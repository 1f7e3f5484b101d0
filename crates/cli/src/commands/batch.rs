use std::io::IsTerminal;
use std::path::PathBuf;

use bagscope::batch::{batch, BatchOptions, Progress, Status};

use crate::render;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Directories (searched recursively: a folder with metadata.yaml is one bag, a .mcap /
    /// .db3 outside one is one bag), bag paths, or quoted glob patterns ('runs/**/*.mcap').
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Output directory: bags/<name>/{info,clocks}.json, timing/bag=<name>/part-0.parquet,
    /// summary.parquet, batch.json.
    #[arg(short = 'o', long = "output", visible_alias = "out", value_parser = crate::render::output_path)]
    pub out: PathBuf,
    /// Bags processed at once (default: the number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Also write `bagscope report` per bag into bags/<name>/report/.
    #[arg(long)]
    pub report: bool,
    /// Redo bags whose outputs are newer than the bag (default: skip them).
    #[arg(long)]
    pub force: bool,
    /// Print batch.json's content at the end.
    #[arg(long)]
    pub json: bool,
}

/// A size for the progress lines; object-storage bags have none until they are opened.
fn size(b: u64) -> String {
    if b == 0 {
        "size unknown".into()
    } else {
        render::bytes(b as f64)
    }
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    // Ctrl-C: no new bag starts; those in progress finish and the tables are written.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::interrupt::on_interrupt({
        let stop = stop.clone();
        move || {
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            eprintln!("batch: interrupted: finishing the bags in progress (Ctrl-C again to abort)");
        }
    });
    let o = BatchOptions {
        inputs: a.inputs,
        out_dir: a.out,
        jobs: a
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        report: a
            .report
            .then_some(bagscope_report::batch_page as bagscope::batch::PageWriter),
        force: a.force,
        stop: Some(stop.clone()),
    };
    // A bar (bags, bytes, rate, ETA) on a terminal; one plain line per bag otherwise (logs).
    let tty = std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::hidden();
    let progress = |p: Progress<'_>| match p {
        Progress::Start { total, total_bytes } => {
            if tty {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                bar.set_length(total_bytes);
                if let Ok(st) = indicatif::ProgressStyle::with_template(
                    "{bar:30} {msg} bags  {bytes}/{total_bytes}  {bytes_per_sec}  ETA {eta}",
                ) {
                    bar.set_style(st);
                }
                bar.set_message(format!("0/{total}"));
            } else {
                eprintln!("batch: {total} bag(s), {}", size(total_bytes));
            }
        }
        Progress::Done {
            outcome,
            done,
            total,
            done_bytes,
            ..
        } => {
            let status = match outcome.status {
                Status::Ok if outcome.data_loss => "ok (data loss)",
                Status::Ok => "ok",
                Status::Skipped => "skipped (up to date)",
                Status::Failed => "FAILED",
            };
            let line = format!(
                "[{done}/{total}] {status} {} ({}, {:.2} s){}",
                outcome.name,
                size(outcome.size_bytes),
                outcome.seconds,
                outcome
                    .reason
                    .as_ref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            );
            if tty {
                if outcome.status == Status::Failed {
                    bar.println(crate::render::terminal_text(&line));
                }
                bar.set_position(done_bytes);
                bar.set_message(format!("{done}/{total}"));
            } else {
                eprintln!("{}", crate::render::terminal_text(&line));
            }
        }
    };
    let r = batch(&o, &progress)?;
    bar.finish_and_clear();
    let ok = r.bags.iter().filter(|b| b.status == Status::Ok).count();
    // Skipped with a reason: found but not a readable bag (broken link, FIFO, ...).
    let skipped = r
        .bags
        .iter()
        .filter(|b| b.status == Status::Skipped && b.reason.is_none())
        .count();
    let failed: Vec<_> = r.failed().collect();
    if a.json {
        render::json(&r)?;
    } else {
        let mut s = format!(
            "{} bag(s): {ok} done, {skipped} skipped (up to date), {} failed; summary.parquet: {} row(s) in {}\n",
            r.bags.len(),
            failed.len(),
            r.summary_rows,
            r.out_dir
        );
        if r.interrupted {
            s.push_str(&format!(
                "interrupted: {} bag(s) not started; run the same command again to resume\n",
                r.not_started
            ));
        }
        // Bags read as far as they go (truncated, bad chunks): done, but the user must know.
        for b in r.bags.iter().filter(|b| b.data_loss) {
            s.push_str(&format!(
                "data loss: {} ({}): {}\n",
                b.name,
                b.path,
                b.data_loss_warning.as_deref().unwrap_or("")
            ));
        }
        for b in r
            .bags
            .iter()
            .filter(|b| b.status == Status::Skipped && b.reason.is_some())
        {
            s.push_str(&format!(
                "not read: {}: {}\n",
                b.path,
                b.reason.as_deref().unwrap_or("")
            ));
        }
        for f in &failed {
            s.push_str(&format!(
                "failed: {} ({}): {}\n",
                f.name,
                f.path,
                f.reason.as_deref().unwrap_or("")
            ));
        }
        render::print(&s)?;
    }
    Ok(render::exit_code(&r))
}
