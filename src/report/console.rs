//! The console of `agentproxy test`: one block per finished case, then the summary.
//!
//! Formatting is pure ([`case_block`], [`summary_block`]: a report and a [`Style`] in, a
//! string out) and snapshot-tested; [`Console`] is the thin glue that writes those strings.
//! On a terminal it shows an `indicatif` spinner per running case and prints each finished
//! block above the spinners in one piece, so cases run with `--parallel` never interleave
//! mid-case. Anywhere else (a CI log, a pipe) there is no animation, no colour, just lines.
//!
//! The last line of a run is the summary line, `N passed, N failed` followed by `, N error(s)`
//! when there are errors and `, N skipped` when cases were skipped (see
//! [`summary_block`]); the line above it gives the case count and the duration.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use anstyle::{AnsiColor, Effects};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::text::{self, clean, secs};
use super::{AssertionResult, CaseReport, RunReport, Status, TurnReport};

/// When to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// Colour on a terminal, unless `NO_COLOR` is set (or `CLICOLOR=0`, `TERM=dumb`);
    /// `CLICOLOR_FORCE` forces it on.
    #[default]
    Auto,
    Always,
    Never,
}

/// Which standard stream the console writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stream {
    Stdout,
    /// The default: it leaves stdout to `--json` and to `-o -` reports.
    #[default]
    Stderr,
}

/// What the user asked for on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsoleOptions {
    /// `-q`: one line per case, then the summary.
    pub quiet: bool,
    /// `-v` (1): each turn's input, tool calls with arguments, reply, usage and every
    /// assertion; `-vv` (2): also tool results and the program's output.
    pub verbose: u8,
    pub color: ColorChoice,
    pub stream: Stream,
}

/// How a block is rendered; resolved once from [`ConsoleOptions`] and the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    pub color: bool,
    pub quiet: bool,
    pub verbose: u8,
}

impl Style {
    /// No colour, default detail: what a CI log gets.
    pub fn plain() -> Style {
        Style::default()
    }

    fn paint(&self, paint: anstyle::Style, text: &str) -> String {
        if self.color {
            format!("{paint}{text}{paint:#}")
        } else {
            text.to_owned()
        }
    }
}

fn fg(c: AnsiColor) -> anstyle::Style {
    anstyle::Style::new().fg_color(Some(c.into()))
}

fn bold(c: AnsiColor) -> anstyle::Style {
    fg(c).effects(Effects::BOLD)
}

fn dim() -> anstyle::Style {
    anstyle::Style::new().effects(Effects::DIMMED)
}

const INDENT: &str = "    ";

/// The status word, padded so names line up: `PASS `, `FAIL `, `ERROR`, `SKIP `.
fn status_word(status: Status, style: &Style) -> String {
    let (word, paint) = match status {
        Status::Passed => ("PASS ", bold(AnsiColor::Green)),
        Status::Failed => ("FAIL ", bold(AnsiColor::Red)),
        Status::Error => ("ERROR", bold(AnsiColor::Magenta)),
        Status::Skipped => ("SKIP ", bold(AnsiColor::Yellow)),
    };
    style.paint(paint, word)
}

/// `label: value`, where continuation lines of a multi-line value are indented under the
/// value's first line.
fn field(
    out: &mut String,
    indent: &str,
    label: (&str, anstyle::Style),
    value: &str,
    style: &Style,
) {
    let (label, paint) = label;
    let pad = format!("{indent}{}", " ".repeat(label.chars().count() + 1));
    let value = clean(value);
    let mut lines = value.lines();
    let first = lines.next().unwrap_or_default();
    let _ = writeln!(out, "{indent}{} {first}", style.paint(paint, label));
    for line in lines {
        let _ = writeln!(out, "{pad}{line}");
    }
}

/// A multi-line text under a heading, indented one step.
fn block(out: &mut String, indent: &str, heading: &str, body: &str) {
    let _ = writeln!(out, "{indent}{heading}");
    for line in clean(body).lines() {
        let _ = writeln!(out, "{indent}{INDENT}{line}");
    }
}

/// One assertion: `✓ what` or `✗ turn 2: what` and, when it failed, why and the values.
fn assertion(out: &mut String, indent: &str, scope: &str, a: &AssertionResult, style: &Style) {
    let what = clean(&a.what);
    if a.passed {
        let _ = writeln!(
            out,
            "{indent}{} {scope}{what}",
            style.paint(fg(AnsiColor::Green), "✓")
        );
        return;
    }
    let _ = writeln!(
        out,
        "{indent}{} {}",
        style.paint(bold(AnsiColor::Red), "✗"),
        style.paint(
            anstyle::Style::new().effects(Effects::BOLD),
            &format!("{scope}{what}")
        )
    );
    let inner = format!("{indent}{INDENT}");
    if !a.message.is_empty() {
        for line in clean(&a.message).lines() {
            let _ = writeln!(out, "{inner}{line}");
        }
    }
    let rows = [
        ("expected:", a.expected.as_deref(), fg(AnsiColor::Green)),
        ("actual:  ", a.actual.as_deref(), fg(AnsiColor::Red)),
        ("path:    ", a.path.as_deref(), anstyle::Style::new()),
        ("nearest: ", a.nearest.as_deref(), anstyle::Style::new()),
    ];
    for (label, value, paint) in rows {
        if let Some(v) = value {
            let pad = format!("{inner}{}", " ".repeat(label.len() + 1));
            let v = clean(v);
            let mut lines = v.lines();
            let first = lines.next().unwrap_or_default();
            let _ = writeln!(
                out,
                "{inner}{} {}",
                style.paint(dim(), label),
                style.paint(paint, first)
            );
            for line in lines {
                let _ = writeln!(out, "{pad}{}", style.paint(paint, line));
            }
        }
    }
}

/// `turn 1 (2 model calls, 0.73s, 412 prompt / 38 completion / 256 cached tokens)`.
fn turn_heading(t: &TurnReport) -> String {
    format!(
        "turn {} ({}, {}, {} tokens)",
        t.index,
        text::count(t.model_calls, "model call", "model calls"),
        secs(t.latency_ms),
        text::usage(&t.usage)
    )
}

/// The turns of a case as a transcript: input, tool calls, reply (and at `verbose >= 2`
/// tool results and output), with every assertion of the turn.
fn turns_section(out: &mut String, case: &CaseReport, style: &Style) {
    let inner = format!("{INDENT}{INDENT}");
    for t in &case.turns {
        let _ = writeln!(
            out,
            "{INDENT}{}",
            style.paint(
                anstyle::Style::new().effects(Effects::BOLD),
                &turn_heading(t)
            )
        );
        field(out, &inner, ("input: ", dim()), &t.input, style);
        for call in &t.tool_calls {
            let args = text::truncate(&text::compact(&call.arguments), 300).into_owned();
            let line = format!(
                "{} {args}",
                style.paint(fg(AnsiColor::Cyan), &clean(&call.name))
            );
            let _ = writeln!(out, "{inner}{} {line}", style.paint(dim(), "call:  "));
            if style.verbose >= 2 {
                if let Some(result) = &call.result {
                    let r = text::truncate(&text::compact(result), 300).into_owned();
                    let _ = writeln!(
                        out,
                        "{inner}        {} {}",
                        style.paint(dim(), "→"),
                        clean(&r)
                    );
                }
            }
        }
        match &t.reply {
            Some(reply) => field(out, &inner, ("reply: ", dim()), reply, style),
            None => {
                let _ = writeln!(
                    out,
                    "{inner}{} {}",
                    style.paint(dim(), "reply: "),
                    style.paint(dim(), "(none)")
                );
            }
        }
        let shows_output =
            style.verbose >= 2 || Some(t.output.trim()) != t.reply.as_deref().map(str::trim);
        if shows_output && !t.output.is_empty() {
            field(out, &inner, ("output:", dim()), &t.output, style);
        }
        for a in &t.assertions {
            assertion(out, &inner, "", a, style);
        }
    }
}

/// Everything under a case's header line, in the detail its style asks for.
fn case_body(out: &mut String, case: &CaseReport, style: &Style) {
    if style.verbose > 0 {
        turns_section(out, case, style);
        if !case.assertions.is_empty() {
            let _ = writeln!(
                out,
                "{INDENT}{}",
                style.paint(
                    anstyle::Style::new().effects(Effects::BOLD),
                    "whole conversation"
                )
            );
            for a in &case.assertions {
                assertion(out, &format!("{INDENT}{INDENT}"), "", a, style);
            }
        }
        if !case.turns.is_empty() {
            let total = format!(
                "total: {}, {}, {} tokens; cassette {}",
                text::count(text::model_calls(case), "model call", "model calls"),
                text::count(text::tool_calls(case), "tool call", "tool calls"),
                text::usage(&case.usage),
                clean(&case.cassette)
            );
            let _ = writeln!(out, "{INDENT}{}", style.paint(dim(), &total));
        }
    } else {
        for (turn, a) in case.failures() {
            let scope = match turn {
                Some(n) => format!("turn {n}: "),
                None => "case: ".to_owned(),
            };
            assertion(out, INDENT, &scope, a, style);
        }
    }
    for miss in &case.misses {
        block(
            out,
            INDENT,
            &style.paint(bold(AnsiColor::Red), "miss:"),
            miss,
        );
    }
    for w in &case.warnings {
        let _ = writeln!(
            out,
            "{INDENT}{} {}",
            style.paint(bold(AnsiColor::Yellow), "warning:"),
            clean(w)
        );
    }
    if let Some(e) = &case.error {
        field(out, INDENT, ("error:", bold(AnsiColor::Magenta)), e, style);
    }
    if let Some(d) = &case.diff {
        block(
            out,
            INDENT,
            &style.paint(bold(AnsiColor::Cyan), "trajectory changed:"),
            d,
        );
    }
}

/// The whole block of one finished case, ending with a newline.
///
/// First line: `PASS  specs/weather.yaml::paris (0.84s, replay)` (`FAIL `, `ERROR`,
/// `SKIP ` likewise). Quiet: that line only, with the reason appended for a case that did
/// not pass (`: 2 assertions failed, 1 cassette miss`). Otherwise the failed assertions
/// (turn, what, message, expected, actual, path, nearest), miss reports, warnings, error
/// text and trajectory diff follow, indented; verbose adds each turn's transcript.
pub fn case_block(case: &CaseReport, style: &Style) -> String {
    let mut out = String::new();
    let meta = format!("({}, {})", secs(case.duration_ms), clean(&case.mode));
    let _ = write!(
        out,
        "{} {} {}",
        status_word(case.status, style),
        clean(&text::label(case)),
        style.paint(dim(), &meta)
    );
    if style.quiet {
        let reason = text::reason(case);
        if case.status != Status::Passed && !reason.is_empty() {
            let _ = write!(out, ": {}", clean(&reason));
        }
        out.push('\n');
        return out;
    }
    out.push('\n');
    case_body(&mut out, case, style);
    out
}

/// The turns of a case as plain text, tool results and output included: the transcript
/// JUnit puts in `<system-out>`.
pub(crate) fn transcript(case: &CaseReport) -> String {
    let mut out = String::new();
    turns_section(
        &mut out,
        case,
        &Style {
            color: false,
            quiet: false,
            verbose: 2,
        },
    );
    // Without the console's indent under a case header: it stands alone there.
    out.lines()
        .map(|l| format!("{}\n", l.strip_prefix(INDENT).unwrap_or(l)))
        .collect()
}

/// The end of a run. Not quiet: the labels of the cases that did not pass (so a long log
/// need not be scrolled), a blank line. Then always two lines:
///
/// ```text
/// ran 5 cases from 2 specs in 5.23s
/// 1 passed, 2 failed, 1 error, 1 skipped
/// ```
///
/// The last line starts with `N passed, N failed`; `, N error(s)` and `, N skipped` follow
/// only when non-zero, so a run without errors or skips ends in exactly `N passed, N failed`.
pub fn summary_block(report: &RunReport, style: &Style) -> String {
    let mut out = String::new();
    if !style.quiet {
        let bad: Vec<&CaseReport> = report
            .cases
            .iter()
            .filter(|c| matches!(c.status, Status::Failed | Status::Error))
            .collect();
        if !bad.is_empty() {
            let _ = writeln!(
                out,
                "\n{}",
                style.paint(anstyle::Style::new().effects(Effects::BOLD), "failures:")
            );
            for c in bad {
                let what = if c.status == Status::Error {
                    " (error)"
                } else {
                    ""
                };
                let _ = writeln!(out, "{INDENT}{}{what}", clean(&text::label(c)));
            }
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", text::run_line(report));
    let parts: Vec<String> = text::counts(&report.summary)
        .into_iter()
        .map(|(n, word)| {
            let paint = match word {
                "passed" => bold(AnsiColor::Green),
                "skipped" => bold(AnsiColor::Yellow),
                _ => bold(AnsiColor::Red),
            };
            let s = format!("{n} {word}");
            if n > 0 {
                style.paint(paint, &s)
            } else {
                s
            }
        })
        .collect();
    let _ = writeln!(out, "{}", parts.join(", "));
    out
}

/// The live console: shared by the tasks that run cases (`&self` everywhere, `Sync`).
///
/// Writing to the console is best effort: a closed pipe must not fail a test run whose
/// results also go to report files and the exit code, so write errors are ignored.
pub struct Console {
    style: Style,
    out: Out,
}

enum Out {
    /// A terminal: spinners, blocks printed above them.
    Live(Live),
    /// Anything else: whole blocks written under a lock.
    Plain(Mutex<Box<dyn Write + Send>>),
}

struct Live {
    multi: MultiProgress,
    stream: Stream,
    /// Running cases' spinners by label.
    running: Mutex<HashMap<String, ProgressBar>>,
    /// `[done/total]` under the spinners, when there is more than one case.
    overall: Option<ProgressBar>,
}

impl Console {
    /// A console on stdout or stderr: live with spinners on a terminal (unless quiet), plain
    /// lines otherwise; colour per [`ColorChoice`].
    pub fn new(opts: ConsoleOptions, total_cases: usize) -> Console {
        let (tty, auto) = match opts.stream {
            Stream::Stdout => (
                io::stdout().is_terminal(),
                anstream::AutoStream::choice(&io::stdout()),
            ),
            Stream::Stderr => (
                io::stderr().is_terminal(),
                anstream::AutoStream::choice(&io::stderr()),
            ),
        };
        let color = match opts.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => auto != anstream::ColorChoice::Never,
        };
        let style = Style {
            color,
            quiet: opts.quiet,
            verbose: opts.verbose,
        };
        if !tty || opts.quiet {
            let w: Box<dyn Write + Send> = match opts.stream {
                Stream::Stdout => Box::new(io::stdout()),
                Stream::Stderr => Box::new(io::stderr()),
            };
            return Console {
                style,
                out: Out::Plain(Mutex::new(w)),
            };
        }
        let target = match opts.stream {
            Stream::Stdout => ProgressDrawTarget::stdout(),
            Stream::Stderr => ProgressDrawTarget::stderr(),
        };
        let multi = MultiProgress::with_draw_target(target);
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
                stream: opts.stream,
                running: Mutex::new(HashMap::new()),
                overall,
            }),
        }
    }

    /// A plain console writing to `w` (never live; coloured only with
    /// [`ColorChoice::Always`]): for tests and for callers that capture the output.
    pub fn with_writer(opts: ConsoleOptions, w: Box<dyn Write + Send>) -> Console {
        let style = Style {
            color: opts.color == ColorChoice::Always,
            quiet: opts.quiet,
            verbose: opts.verbose,
        };
        Console {
            style,
            out: Out::Plain(Mutex::new(w)),
        }
    }

    /// The style blocks are rendered in.
    pub fn style(&self) -> Style {
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

    /// A case finished: its spinner goes and its whole block is printed at once.
    pub fn case_finished(&self, case: &CaseReport) {
        let block = case_block(case, &self.style);
        match &self.out {
            Out::Plain(w) => write_locked(w, &block),
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
                live.print(&block);
                if let Some(overall) = &live.overall {
                    overall.inc(1);
                }
            }
        }
    }

    /// A line from the runner (e.g. `recording cassettes/paris.json`), printed whole and
    /// above the spinners.
    pub fn note(&self, line: &str) {
        let mut text = clean(line);
        text.push('\n');
        match &self.out {
            Out::Plain(w) => write_locked(w, &text),
            Out::Live(live) => live.print(&text),
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
            let _ = match self.stream {
                Stream::Stdout => write_all_flush(&mut io::stdout().lock(), text),
                Stream::Stderr => write_all_flush(&mut io::stderr().lock(), text),
            };
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
    use crate::report::sample;

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
            Some("1 passed, 2 failed, 1 error, 1 skipped")
        );
        assert_eq!(
            out.lines().rev().nth(1),
            Some("ran 5 cases from 2 specs in 5.23s")
        );

        report
            .cases
            .retain(|c| matches!(c.status, Status::Passed | Status::Failed));
        report.summary = crate::report::Summary::of(&report.cases);
        let out = summary_block(&report, &styled(true, 0));
        assert_eq!(
            out,
            "ran 3 cases from 2 specs in 5.23s\n1 passed, 2 failed\n"
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
        let threads: Vec<_> = (0..4)
            .flat_map(|_| report.cases.clone())
            .map(|case| {
                let console = Arc::clone(&console);
                std::thread::spawn(move || {
                    console.case_started(&case.spec, &case.name);
                    console.case_finished(&case);
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
        let blocks: Vec<String> = report.cases.iter().map(|c| case_block(c, &style)).collect();
        let mut peeled = 0;
        while let Some(b) = blocks.iter().find(|b| rest.starts_with(b.as_str())) {
            rest = &rest[b.len()..];
            peeled += 1;
        }
        assert_eq!(peeled, 4 * report.cases.len());
        assert_eq!(rest, summary_block(&report, &style));
    }

    #[test]
    fn plain_console_prints_nothing_when_a_case_starts() {
        let buf = Buf::default();
        let console = Console::with_writer(ConsoleOptions::default(), Box::new(buf.clone()));
        console.case_started("a.yaml", "x");
        console.note("recording cassettes/x.json\u{1b}]52;c;aGk=\u{7}");
        let out = String::from_utf8(buf.0.lock().expect("lock").clone()).expect("utf-8");
        assert_eq!(out, "recording cassettes/x.json\n");
    }
}
