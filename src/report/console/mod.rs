//! The console of `agentproxy test`: one block per finished case, then the summary.
//!
//! Formatting is pure (`format`: [`case_block`], [`summary_block`], a report and a
//! [`Style`] in, a string out) and snapshot-tested; [`Console`], here, is the thin glue that
//! writes those strings.
//! On a terminal it shows an `indicatif` spinner per running case and prints each finished
//! block above the spinners in one piece, so cases run in parallel never interleave
//! mid-case. Anywhere else (a CI log, a pipe) there is no animation, no colour, just lines.
//! Either way blocks come out in case order: a case that ends before an earlier one waits
//! for it, so two runs of one suite print the same log.
//!
//! The last line of a run is the summary line, `N passed, N failed` followed by `, N error(s)`
//! when there are errors and `, N skipped` when cases were skipped (see
//! [`summary_block`]); the line above it gives the case count and the duration.

use std::collections::HashMap;
use std::io::{self, IsTerminal, Write};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

mod format;

pub(crate) use format::transcript;
pub use format::{case_block, summary_block, Style};

use super::text::clean;
use super::{CaseReport, RunReport};

/// What the user asked for on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsoleOptions {
    /// `-q`: one line per case, then the summary.
    pub quiet: bool,
    /// `-v` (1): each turn's input, tool calls with arguments, reply, usage and every
    /// assertion; `-vv` (2): also tool results and the program's output.
    pub verbose: u8,
}

/// The live console: shared by the tasks that run cases (`&self` everywhere, `Sync`).
///
/// Writing to the console is best effort: a closed pipe must not fail a test run whose
/// results also go to report files and the exit code, so write errors are ignored.
pub struct Console {
    style: Style,
    out: Out,
    /// Finished blocks not yet printed, waiting for an earlier case.
    order: Mutex<InOrder>,
}

/// Blocks released in case order: `next` is the first case not printed yet.
#[derive(Default)]
struct InOrder {
    next: usize,
    held: std::collections::BTreeMap<usize, String>,
}

impl InOrder {
    /// Hold the block of case `order`; the blocks that can now be printed, in order.
    fn finished(&mut self, order: usize, block: String) -> String {
        self.held.insert(order, block);
        let mut out = String::new();
        while let Some(block) = self.held.remove(&self.next) {
            out.push_str(&block);
            self.next += 1;
        }
        out
    }
}

enum Out {
    /// A terminal: spinners, blocks printed above them.
    Live(Live),
    /// Anything else: whole blocks written under a lock.
    Plain(Mutex<Box<dyn Write + Send>>),
}

struct Live {
    multi: MultiProgress,
    /// Running cases' spinners by label.
    running: Mutex<HashMap<String, ProgressBar>>,
    /// `[done/total]` under the spinners, when there is more than one case.
    overall: Option<ProgressBar>,
}

impl Console {
    /// A console on stderr (stdout is left to `--json` and to `-o -` reports): live with
    /// spinners on a terminal (unless quiet), plain lines otherwise; coloured on a terminal
    /// unless `NO_COLOR` is set (or `CLICOLOR=0`, `TERM=dumb`), and wherever
    /// `CLICOLOR_FORCE` is set.
    pub fn new(opts: ConsoleOptions, total_cases: usize) -> Console {
        let tty = io::stderr().is_terminal();
        let color = anstream::AutoStream::choice(&io::stderr()) != anstream::ColorChoice::Never;
        let style = Style {
            color,
            quiet: opts.quiet,
            verbose: opts.verbose,
        };
        if !tty || opts.quiet {
            return Console {
                style,
                out: Out::Plain(Mutex::new(Box::new(io::stderr()))),
                order: Mutex::default(),
            };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let overall = (total_cases > 1).then(|| {
            let template = if color {
                "{pos}/{len} cases done {elapsed:.dim}"
            } else {
                "{pos}/{len} cases done {elapsed}"
            };
            let pb = multi.add(ProgressBar::new(total_cases as u64));
            pb.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            pb.tick();
            pb
        });
        Console {
            style,
            out: Out::Live(Live {
                multi,
                running: Mutex::new(HashMap::new()),
                overall,
            }),
            order: Mutex::default(),
        }
    }

    /// A plain console writing to `w`, uncoloured: for tests.
    #[cfg(test)]
    fn with_writer(opts: ConsoleOptions, w: Box<dyn Write + Send>) -> Console {
        let style = Style {
            color: false,
            quiet: opts.quiet,
            verbose: opts.verbose,
        };
        Console {
            style,
            out: Out::Plain(Mutex::new(w)),
            order: Mutex::default(),
        }
    }

    /// The style blocks are rendered in.
    #[cfg(test)]
    fn style(&self) -> Style {
        self.style
    }

    /// A case starts: on a terminal a spinner line with its label and elapsed time; nothing
    /// otherwise (a plain log gets the case's block when it finishes).
    pub fn case_started(&self, spec: &str, name: &str) {
        let Out::Live(live) = &self.out else { return };
        let label = format!("{spec}::{name}");
        let template = if self.style.color {
            "{spinner:.cyan} {msg} {elapsed:.dim}"
        } else {
            "{spinner} {msg} {elapsed}"
        };
        let pb = ProgressBar::new_spinner()
            .with_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            )
            .with_message(clean(&label));
        let pb = match &live.overall {
            Some(overall) => live.multi.insert_before(overall, pb),
            None => live.multi.add(pb),
        };
        pb.enable_steady_tick(Duration::from_millis(100));
        let mut running = live.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = running.insert(label, pb) {
            old.finish_and_clear();
            live.multi.remove(&old);
        }
    }

    /// Case number `order` (from 0, in file order) finished: its spinner goes, and its
    /// whole block, with the runner's `note` under it, is printed at once when every
    /// earlier case's has been.
    pub fn case_finished(&self, order: usize, case: &CaseReport, note: Option<&str>) {
        let mut block = case_block(case, &self.style);
        if let Some(note) = note {
            block.push_str(&clean(note));
            block.push('\n');
        }
        // Released under the lock, so two blocks that became printable together cannot
        // be printed out of order by their two tasks.
        let mut order_lock = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        let ready = order_lock.finished(order, block);
        match &self.out {
            Out::Plain(w) => write_locked(w, &ready),
            Out::Live(live) => {
                let label = format!("{}::{}", case.spec, case.name);
                let pb = live
                    .running
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&label);
                if let Some(pb) = pb {
                    pb.finish_and_clear();
                    live.multi.remove(&pb);
                }
                if !ready.is_empty() {
                    live.print(&ready);
                }
                if let Some(overall) = &live.overall {
                    overall.inc(1);
                }
            }
        }
    }

    /// The run is over: spinners cleared, the summary printed (see [`summary_block`]).
    pub fn finish(&self, report: &RunReport) {
        let block = summary_block(report, &self.style);
        match &self.out {
            Out::Plain(w) => write_locked(w, &block),
            Out::Live(live) => {
                for (_, pb) in live
                    .running
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .drain()
                {
                    pb.finish_and_clear();
                    live.multi.remove(&pb);
                }
                if let Some(overall) = &live.overall {
                    overall.finish_and_clear();
                }
                let _ = live.multi.clear();
                live.print(&block);
            }
        }
    }
}

impl Live {
    /// Print above the spinners. `suspend` holds indicatif's lock while `f` runs, so two
    /// cases finishing together print one block after the other.
    fn print(&self, text: &str) {
        self.multi.suspend(|| {
            let _ = write_all_flush(&mut io::stderr().lock(), text);
        });
    }
}

fn write_all_flush(w: &mut dyn Write, text: &str) -> io::Result<()> {
    w.write_all(text.as_bytes())?;
    w.flush()
}

fn write_locked(w: &Mutex<Box<dyn Write + Send>>, text: &str) {
    let mut w = w.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = write_all_flush(&mut **w, text);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::report::{sample, Status};

    fn styled(quiet: bool, verbose: u8) -> Style {
        Style {
            color: false,
            quiet,
            verbose,
        }
    }

    fn all_blocks(report: &RunReport, style: &Style) -> String {
        let mut s: String = report.cases.iter().map(|c| case_block(c, style)).collect();
        s.push_str(&summary_block(report, style));
        s
    }

    #[test]
    fn default_console_output() {
        insta::assert_snapshot!(all_blocks(&sample::run(), &Style::plain()));
    }

    #[test]
    fn quiet_is_one_line_per_case_then_the_summary() {
        let report = sample::run();
        let out = all_blocks(&report, &styled(true, 0));
        insta::assert_snapshot!(out);
        assert_eq!(out.lines().count(), report.cases.len() + 2);
    }

    #[test]
    fn a_case_failed_only_by_a_problem_says_so_quiet_or_not() {
        let case = sample::failed_by_a_problem();
        let problem = "fault request 1: malformed_tool_args did not fire: the answer has no tool call; the program got the answer as it was";
        let quiet = case_block(&case, &styled(true, 0));
        assert_eq!(
            quiet,
            format!("FAIL  specs/faults.yaml::retries (0.41s, replay): 1 problem: {problem}\n")
        );
        let full = case_block(&case, &Style::plain());
        assert!(
            full.contains(&format!("\n    problem: {problem}\n")),
            "{full}"
        );
        assert!(
            full.contains("\n    warning: mocked tool `get_time` was never called\n"),
            "{full}"
        );
    }

    #[test]
    fn verbose_shows_turns_calls_and_usage() {
        insta::assert_snapshot!(all_blocks(&sample::run(), &styled(false, 1)));
    }

    #[test]
    fn very_verbose_adds_tool_results_and_output() {
        let report = sample::run();
        insta::assert_snapshot!(case_block(&report.cases[3], &styled(false, 2)));
    }

    #[test]
    fn summary_line_is_last_and_starts_with_passed_failed() {
        let mut report = sample::run();
        let out = summary_block(&report, &Style::plain());
        assert_eq!(
            out.lines().last(),
            Some("1 passed, 2 failed, 1 error, 1 skipped, 2 turns not reached")
        );
        assert_eq!(
            out.lines().rev().nth(1),
            Some("ran 5 cases from 2 specs in 5.23s; egress: contained (network namespace)")
        );

        report
            .cases
            .retain(|c| matches!(c.status, Status::Passed | Status::Failed));
        report.summary = crate::report::Summary::of(&report.cases);
        let out = summary_block(&report, &styled(true, 0));
        assert_eq!(
            out,
            "ran 3 cases from 2 specs in 5.23s; egress: contained (network namespace)\n1 passed, 2 failed\n"
        );
    }

    #[test]
    fn colour_only_wraps_our_own_words_and_strips_the_programs_escapes() {
        let report = sample::run();
        let style = Style {
            color: true,
            quiet: false,
            verbose: 0,
        };
        let coloured = all_blocks(&report, &style);
        assert!(coloured.contains('\u{1b}'));
        assert!(!coloured.contains("\u{1b}[31mKeyError"), "{coloured}");
        let stripped = anstream::adapter::strip_str(&coloured).to_string();
        assert_eq!(stripped, all_blocks(&report, &Style::plain()));
        assert!(!all_blocks(&report, &Style::plain()).contains('\u{1b}'));
    }

    /// A `Write` into a shared buffer, to read back what a console printed.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            // Byte by byte, so an unlocked writer would interleave visibly.
            let mut v = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            v.extend_from_slice(&b[..1.min(b.len())]);
            Ok(1.min(b.len()))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn parallel_cases_never_interleave_mid_case() {
        let report = sample::run();
        let buf = Buf::default();
        let console = Arc::new(Console::with_writer(
            ConsoleOptions {
                verbose: 1,
                ..Default::default()
            },
            Box::new(buf.clone()),
        ));
        let cases: Vec<_> = (0..4).flat_map(|_| report.cases.clone()).collect();
        let threads: Vec<_> = (cases.iter().cloned().enumerate())
            .map(|(order, case)| {
                let console = Arc::clone(&console);
                std::thread::spawn(move || {
                    console.case_started(&case.spec, &case.name);
                    console.case_finished(order, &case, None);
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        console.finish(&report);
        let out = String::from_utf8(buf.0.lock().expect("lock").clone()).expect("utf-8");
        let style = console.style();
        let mut rest = out.as_str();
        // Peel whole blocks off the front: any interleaving would leave a prefix that is
        // no case's block.
        // Whichever thread ran first, the blocks come out in case order.
        for case in &cases {
            let block = case_block(case, &style);
            assert!(rest.starts_with(&block), "{out}");
            rest = &rest[block.len()..];
        }
        assert_eq!(rest, summary_block(&report, &style));
    }

    #[test]
    fn plain_console_prints_nothing_when_a_case_starts_and_a_later_case_waits() {
        let cases = sample::run().cases;
        let buf = Buf::default();
        let console = Console::with_writer(ConsoleOptions::default(), Box::new(buf.clone()));
        let printed = || String::from_utf8(buf.0.lock().expect("lock").clone()).expect("utf-8");
        console.case_started("a.yaml", "x");
        assert_eq!(printed(), "");
        console.case_finished(1, &cases[1], Some("note\u{1b}]52;c;aGk=\u{7}"));
        assert_eq!(printed(), "", "case 1 waits for case 0");
        console.case_finished(0, &cases[0], None);
        let style = console.style();
        let want = format!(
            "{}{}note\n",
            case_block(&cases[0], &style),
            case_block(&cases[1], &style)
        );
        assert_eq!(printed(), want);
    }
}
