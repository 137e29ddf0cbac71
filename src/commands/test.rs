//! `agentproxy test`: load specs, pick cases, run them (in parallel), report.

use std::sync::Arc;
use std::time::Instant;

use crate::cassette::format::Upstreams;
use crate::cli::TestArgs;
use crate::determinism;
use crate::error::{Error, Exit, Result};
use crate::report::console::{Console, ConsoleOptions};
use crate::report::otlp::{self, Trace};
use crate::report::{CaseReport, Format, RunReport, Summary};
use crate::runner::case::{self, Settings};
use crate::runner::env;
use crate::spec::{self, Verbosity};

/// Two cases of one run on one cassette path would overwrite each other's recording (or
/// replay the other's): refuse the run before anything starts.
fn check_cassette_collisions(jobs: &[Job]) -> Result<()> {
    let mut seen: std::collections::HashMap<std::path::PathBuf, String> = Default::default();
    for (sp, i, settings) in jobs {
        let case = &sp.cases[*i];
        if case.skip.is_some() {
            continue;
        }
        let path = case.cassette_path(&settings.cassette_dir);
        let key = std::path::absolute(&path)
            .map(path_clean::clean)
            .unwrap_or_else(|_| path.clone());
        let label = format!("{}::{}", sp.file.display(), case.name);
        if let Some(first) = seen.insert(key, label.clone()) {
            return Err(Error::CassetteCollision {
                path,
                first,
                second: label,
            });
        }
    }
    Ok(())
}

/// A case to run: its spec, its index there, and the settings it runs with.
type Job = (Arc<spec::Spec>, usize, Settings);

pub async fn run(args: TestArgs) -> Result<Exit> {
    let started = Instant::now();
    if args.outputs.len() > args.reports.len() {
        return Err(Error::OutputWithoutReport);
    }
    let loaded = spec::load_all(&args.specs)?;
    if !args.quiet {
        for dir in &loaded.without_specs {
            tell!(
                "agentproxy: note: skipped {}: it has no spec (*.yaml or *.yml)",
                dir.display()
            );
        }
    }
    let env = |name: &str| std::env::var(name).ok();
    let upstreams = args.upstreams.upstreams()?;
    let selected = select(&args, loaded.specs, &upstreams, &env)?;
    let spec_reports = selected.reports;
    check_cassette_collisions(&selected.jobs)?;
    let shard = match args.shard {
        Some(s) => Some(s),
        None => spec::Shard::from_env(&env).map_err(Error::ShardEnv)?,
    };
    let (jobs, outside) = in_shard(selected.jobs, shard, args.quiet);
    let may_record = jobs.iter().any(|(_, _, s)| s.mode != spec::Mode::Replay);
    if may_record && !args.quiet {
        for warning in env::overridden(&|name| std::env::var(name).ok(), &upstreams) {
            tell!("agentproxy: warning: {warning}");
        }
    }
    // A fixed listen port can serve one case at a time.
    let parallel = match args.listen.port() {
        0 => selected.parallel.unwrap_or_else(cores),
        _ => 1,
    };
    let quiet = selected.verbosity == Verbosity::Quiet;
    let console = Arc::new(Console::new(
        ConsoleOptions {
            quiet,
            verbose: match selected.verbosity {
                Verbosity::Quiet | Verbosity::Normal => 0,
                Verbosity::Verbose => 1,
                Verbosity::Debug => 2,
            },
        },
        jobs.len(),
    ));
    let ran = run_jobs(jobs, parallel, &console, args.check_determinism, quiet).await?;
    let mut ran = ran.into_iter();
    let cases: Vec<CaseReport> = (outside.into_iter())
        .map(|o| o.or_else(|| ran.next()))
        .collect::<Option<_>>()
        .unwrap_or_default();
    let run = RunReport {
        summary: Summary::of(&cases),
        cases,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        shard,
    };
    console.finish(&run);
    super::output::write_reports(&args.reports, &args.outputs, &run)?;
    if let Some(path) = &args.html {
        super::output::write_reports(&[Format::Html], std::slice::from_ref(path), &run)?;
    }
    for (spec, reports) in &spec_reports {
        write_spec_reports(&run, spec, reports)?;
    }
    if let Some(target) = &args.otlp {
        let began = std::time::SystemTime::now() - started.elapsed();
        export_traces(&run, target, began, !args.otlp_no_content).await?;
    }
    Ok(Exit::of(run.cases.iter().map(|c| c.status), None))
}

/// The cases the command line selects, in file order, and how the run goes: as parallel
/// as the most careful spec allows and as verbose as the most demanding one asks.
struct Selected {
    jobs: Vec<Job>,
    /// The smallest `parallel` a spec (or the command line, or the environment) gives;
    /// `None` where none gives one: one case per core.
    parallel: Option<usize>,
    verbosity: Verbosity,
    /// The reports each spec asks for (`execution.reports`), by spec file.
    reports: Vec<(String, Vec<(Format, std::path::PathBuf)>)>,
}

fn select(
    args: &TestArgs,
    specs: Vec<spec::Spec>,
    upstreams: &Upstreams,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Selected> {
    let filter = args
        .filter
        .as_deref()
        .map(|g| globset::Glob::new(g).map(|g| g.compile_matcher()))
        .transpose()
        .map_err(Error::Filter)?;
    let cli = spec::CliOverrides {
        mode: args.mode,
        parallel: args.parallel.map(usize::from),
        timeout: args.timeout,
        verbosity: match (args.quiet, args.verbose) {
            (true, _) => Some(Verbosity::Quiet),
            (false, 0) => None,
            (false, 1) => Some(Verbosity::Verbose),
            _ => Some(Verbosity::Debug),
        },
        cassette_dir: args.cassettes.clone(),
        max_age: args.max_age,
        realtime: args.realtime,
    };
    let mut out = Selected {
        jobs: vec![],
        parallel: None,
        verbosity: Verbosity::Quiet,
        reports: vec![],
    };
    for sp in specs {
        let resolved = spec::resolve(&cli, &sp, env)?;
        // A spec whose cases share something outside agentproxy says so with a small
        // `parallel`: the run goes no faster than it allows.
        out.parallel = match (out.parallel, resolved.parallel) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        out.verbosity = out.verbosity.max(resolved.verbosity);
        let settings = Settings {
            mode: resolved.mode,
            cassette_dir: resolved.cassette_dir.clone(),
            timeout: resolved.timeout,
            upstreams: upstreams.clone(),
            upstream_timeout: args.upstream_timeout,
            listen: args.listen,
            max_body: args.max_body_size,
            max_age: resolved.max_age,
            realtime: resolved.realtime,
            mcp: args.mcp.iter().cloned().collect(),
            a2a: args.a2a.iter().cloned().collect(),
            faults: args.fault.clone(),
            contain: args.contain,
            allow_hosts: args.allow_hosts.clone(),
            record_other_hosts: args.record_other_hosts,
        };
        super::session::check_mcp_names(settings.mcp_servers(&sp).keys())?;
        super::session::check_a2a_names(&settings.a2a_names(&sp))?;
        if !sp.execution.reports.is_empty() {
            let file = sp.file.display().to_string();
            out.reports.push((file, sp.execution.reports.clone()));
        }
        let sp = Arc::new(sp);
        for (i, c) in sp.cases.iter().enumerate() {
            let by_name = args.cases.is_empty() || args.cases.contains(&c.name);
            let by_glob = filter.as_ref().is_none_or(|g| g.is_match(&c.name));
            if by_name && by_glob {
                out.jobs.push((sp.clone(), i, settings.clone()));
            }
        }
    }
    if out.jobs.is_empty() {
        return Err(Error::NoCaseMatches);
    }
    Ok(out)
}

/// The reports a spec asks for (`execution.reports`), of its cases in `run`.
fn write_spec_reports(
    run: &RunReport,
    spec: &str,
    reports: &[(Format, std::path::PathBuf)],
) -> Result<()> {
    let cases: Vec<CaseReport> = (run.cases.iter())
        .filter(|c| c.spec == spec)
        .cloned()
        .collect();
    if cases.is_empty() {
        return Ok(()); // none of its cases was selected: an earlier report stays
    }
    let part = RunReport {
        summary: Summary::of(&cases),
        cases,
        duration_ms: run.duration_ms,
        shard: run.shard,
    };
    let (formats, files): (Vec<Format>, Vec<std::path::PathBuf>) = reports.iter().cloned().unzip();
    super::output::write_reports(&formats, &files, &part)
}

/// The jobs of this shard, and for every selected case in order the report of one outside
/// it (skipped, in its place) or `None` for one that runs here.
fn in_shard(
    jobs: Vec<Job>,
    shard: Option<spec::Shard>,
    quiet: bool,
) -> (Vec<Job>, Vec<Option<CaseReport>>) {
    let outside: Vec<Option<CaseReport>> = (jobs.iter().enumerate())
        .map(|(p, (sp, i, settings))| {
            let c = &sp.cases[*i];
            let spec_name = sp.file.display().to_string();
            let shard = shard.filter(|s| !s.contains(p, &spec_name, &c.name))?;
            let mut r = CaseReport::new(
                &sp.file,
                &c.name,
                "",
                &c.cassette_path(&settings.cassette_dir),
            );
            r.skip(&format!("not in shard {shard}"));
            Some(r)
        })
        .collect();
    let selected = jobs.len();
    let jobs: Vec<_> = (jobs.into_iter().zip(&outside))
        .filter(|(_, o)| o.is_none())
        .map(|(j, _)| j)
        .collect();
    if let Some(shard) = shard.filter(|_| !quiet) {
        tell!(
            "agentproxy: shard {shard}: {} of the {selected} selected case(s) run here{}",
            jobs.len(),
            if jobs.is_empty() {
                "; nothing to run"
            } else {
                "; the others are reported skipped"
            }
        );
    }
    (jobs, outside)
}

/// Each case that ran, as a trace of its cassette (the run's, or what it replayed),
/// delivered to `target` (`--otlp`).
async fn export_traces(
    run: &RunReport,
    target: &str,
    began: std::time::SystemTime,
    content: bool,
) -> Result<()> {
    let ran = (run.cases.iter()).filter(|c| c.status != crate::report::Status::Skipped);
    let loaded: Vec<(&CaseReport, crate::cassette::Cassette)> = ran
        .filter_map(|c| {
            Some((
                c,
                crate::cassette::store::load(std::path::Path::new(&c.cassette)).ok()?,
            ))
        })
        .collect();
    let traces: Vec<Trace<'_>> = (loaded.iter())
        .map(|(case, cassette)| Trace {
            name: &case.name,
            cassette,
            start: began,
            case: Some(case),
        })
        .collect();
    super::export::deliver(&otlp::export(&traces, content), target).await
}

/// How many cases run at once where nothing says: one per core the process may use.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Run the jobs, `parallel` at a time, starting in file order; their reports in that order.
async fn run_jobs(
    jobs: Vec<Job>,
    parallel: usize,
    console: &Arc<Console>,
    check_determinism: bool,
    quiet: bool,
) -> Result<Vec<CaseReport>> {
    // More permits than jobs change nothing (and tokio refuses a count near usize::MAX,
    // which a spec or AGENTPROXY_PARALLEL may give).
    let permits = Arc::new(tokio::sync::Semaphore::new(
        parallel.clamp(1, jobs.len().max(1)),
    ));
    let mut handles = Vec::with_capacity(jobs.len());
    for (order, (sp, i, settings)) in jobs.into_iter().enumerate() {
        // Taking the permit before spawning keeps cases starting in file order.
        let permit = permits.clone().acquire_owned().await;
        let console = console.clone();
        handles.push(tokio::spawn(async move {
            let _permit = permit;
            let c = &sp.cases[i];
            console.case_started(&sp.file.display().to_string(), &c.name);
            if check_determinism {
                return check_determinism_of(order, &sp, c, &settings, &console, quiet).await;
            }
            let report = case::run(&sp, c, &settings).await;
            console.case_finished(order, &report, None);
            report
        }));
    }
    let mut ran = Vec::with_capacity(handles.len());
    for h in handles {
        ran.push(h.await.map_err(Error::CasePanicked)?);
    }
    Ok(ran)
}

/// `--check-determinism`: run the case twice against its recording and print, after its
/// block, the spec entries that would stabilise what differed.
async fn check_determinism_of(
    order: usize,
    sp: &spec::Spec,
    c: &spec::Case,
    settings: &Settings,
    console: &Console,
    quiet: bool,
) -> CaseReport {
    let checked = determinism::check(sp, c, settings).await;
    let note = (checked.suggestion.filter(|_| !quiet))
        .map(|yaml| determinism::suggestion_note(&sp.file, &c.name, &yaml));
    console.case_finished(order, &checked.report, note.as_deref());
    checked.report
}
