//! Run settings from four layers: command line > spec `execution:` (and `cassettes:`) >
//! `AGENTPROXY_*` environment > defaults.
//!
//! A pure function: the environment is read through a closure, so tests never touch the
//! process environment and `main` passes `|k| std::env::var(k).ok()`.

use std::path::PathBuf;
use std::time::Duration;

use super::error::{did_you_mean, one_of, SpecError};
use super::model::{Mode, Spec, Verbosity};

/// `AGENTPROXY_MODE`: `replay` | `record` | `auto` | `update`.
pub const ENV_MODE: &str = "AGENTPROXY_MODE";
/// `AGENTPROXY_PARALLEL`: an integer ≥ 1.
pub const ENV_PARALLEL: &str = "AGENTPROXY_PARALLEL";
/// `AGENTPROXY_TIMEOUT`: a duration such as `90s`.
pub const ENV_TIMEOUT: &str = "AGENTPROXY_TIMEOUT";
/// `AGENTPROXY_VERBOSITY`: `quiet` | `normal` | `verbose` | `debug`.
pub const ENV_VERBOSITY: &str = "AGENTPROXY_VERBOSITY";
/// `AGENTPROXY_CASSETTE_DIR`: a directory, relative to the current directory.
pub const ENV_CASSETTE_DIR: &str = "AGENTPROXY_CASSETTE_DIR";

/// The longest one case may take, all turns included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Values given on the command line; `None` where the flag was not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CliOverrides {
    /// `--mode`.
    pub mode: Option<Mode>,
    /// `--parallel` / `-j`.
    pub parallel: Option<usize>,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// From `-q` / `-v` / `-vv`.
    pub verbosity: Option<Verbosity>,
    /// `--cassette-dir`, relative to the current directory.
    pub cassette_dir: Option<PathBuf>,
    /// `--max-age`.
    pub max_age: Option<Duration>,
    /// `--realtime`.
    pub realtime: bool,
}

/// Where a resolved value came from (for `-v` output and reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Cli,
    Spec,
    /// The named environment variable.
    Env(&'static str),
    /// The `replay` default because `CI` is set.
    Ci,
    Default,
}

/// The origin of each [`Resolved`] value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origins {
    pub mode: Origin,
    pub parallel: Origin,
    pub timeout: Origin,
    pub verbosity: Origin,
    pub cassette_dir: Origin,
}

/// The settings one spec runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Default: `replay` when `CI` is set (see [`resolve`]), else `auto`.
    pub mode: Mode,
    /// How many cases run at once; `None` where nothing says: as many as the machine has
    /// cores (cases are independent, and their output is printed in case order anyway).
    pub parallel: Option<usize>,
    /// The case timeout. Default: [`DEFAULT_TIMEOUT`].
    pub timeout: Duration,
    /// Default: `normal`.
    pub verbosity: Verbosity,
    /// Where the case cassettes are. Default: `cassettes/<spec file stem>` next to the spec
    /// file (`specs/weather.yaml` → `specs/cassettes/weather/`).
    pub cassette_dir: PathBuf,
    /// Warn of a replayed cassette older than this: `--max-age`, else `execution.max_age`.
    pub max_age: Option<Duration>,
    /// Replay paced as recorded: `--realtime`, else `execution.replay_timing: recorded`.
    pub realtime: bool,
    pub origins: Origins,
}

/// Resolve the settings of `spec`: for each one, the command line if given, else the spec,
/// else the environment variable, else the default.
///
/// Environment values are trimmed and an empty one counts as unset. Every `AGENTPROXY_*`
/// variable that is set is validated, even when a higher layer overrides it, so that a
/// typo in CI configuration is found the first time, not the day the flag is removed.
/// `CI` counts as set unless it is unset, empty, `0` or `false` (any case).
pub fn resolve(
    cli: &CliOverrides,
    spec: &Spec,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, SpecError> {
    let Env {
        mode: env_mode,
        parallel: env_parallel,
        timeout: env_timeout,
        verbosity: env_verbosity,
        cassette_dir: env_cassette_dir,
        ci,
    } = Env::read(env)?;
    let ex = &spec.execution;
    let (mode, mode_origin) = pick(cli.mode, ex.mode, env_mode.map(|m| (m, ENV_MODE)), || {
        if ci {
            (Mode::Replay, Origin::Ci)
        } else {
            (Mode::Auto, Origin::Default)
        }
    });
    if ci && mode != Mode::Replay {
        let from = match mode_origin {
            Origin::Spec => Some(format!("{}'s `execution.mode`", spec.file.display())),
            Origin::Env(var) => Some(var.to_owned()),
            _ => None,
        };
        if let Some(from) = from {
            return Err(SpecError::CiRecords {
                from,
                mode: mode.as_str(),
            });
        }
    }
    let (parallel, parallel_origin) = pick(
        cli.parallel.map(Some),
        ex.parallel.map(Some),
        env_parallel.map(|v| (Some(v), ENV_PARALLEL)),
        || (None, Origin::Default),
    );
    let (timeout, timeout_origin) = pick(
        cli.timeout,
        ex.timeout,
        env_timeout.map(|v| (v, ENV_TIMEOUT)),
        || (DEFAULT_TIMEOUT, Origin::Default),
    );
    let (verbosity, verbosity_origin) = pick(
        cli.verbosity,
        ex.verbosity,
        env_verbosity.map(|v| (v, ENV_VERBOSITY)),
        || (Verbosity::Normal, Origin::Default),
    );
    let (cassette_dir, cassette_dir_origin) = pick(
        cli.cassette_dir.clone(),
        spec.cassettes.clone(),
        env_cassette_dir.map(|d| (d, ENV_CASSETTE_DIR)),
        || (default_cassette_dir(spec), Origin::Default),
    );

    Ok(Resolved {
        mode,
        parallel,
        timeout,
        verbosity,
        cassette_dir,
        max_age: cli.max_age.or(ex.max_age),
        realtime: cli.realtime || ex.replay_timing == Some(true),
        origins: Origins {
            mode: mode_origin,
            parallel: parallel_origin,
            timeout: timeout_origin,
            verbosity: verbosity_origin,
            cassette_dir: cassette_dir_origin,
        },
    })
}

/// The settings the environment gives, each checked.
struct Env {
    mode: Option<Mode>,
    parallel: Option<usize>,
    timeout: Option<Duration>,
    verbosity: Option<Verbosity>,
    cassette_dir: Option<PathBuf>,
    /// `CI` is set (and not `0` or `false`).
    ci: bool,
}

impl Env {
    fn read(env: &dyn Fn(&str) -> Option<String>) -> Result<Env, SpecError> {
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };

        let env_mode = var(ENV_MODE)
            .map(|v| parse_word(ENV_MODE, &v, &Mode::ALL.map(|m| (m.as_str(), m))))
            .transpose()?;
        let env_parallel = var(ENV_PARALLEL)
            .map(|v| match v.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(env_error(
                    ENV_PARALLEL,
                    &v,
                    "expected a whole number of at least 1",
                )),
            })
            .transpose()?;
        let env_timeout = var(ENV_TIMEOUT)
            .map(|v| match humantime::parse_duration(&v) {
                Ok(d) if !d.is_zero() => Ok(d),
                Ok(_) => Err(env_error(
                    ENV_TIMEOUT,
                    &v,
                    "expected a duration longer than zero",
                )),
                Err(e) => Err(env_error(
                    ENV_TIMEOUT,
                    &v,
                    &format!("expected a duration like 30s or 2m ({e})"),
                )),
            })
            .transpose()?;
        let env_verbosity = var(ENV_VERBOSITY)
            .map(|v| parse_word(ENV_VERBOSITY, &v, &Verbosity::ALL.map(|l| (l.as_str(), l))))
            .transpose()?;
        let env_cassette_dir = var(ENV_CASSETTE_DIR).map(PathBuf::from);
        let ci = is_ci(&var);
        Ok(Env {
            mode: env_mode,
            parallel: env_parallel,
            timeout: env_timeout,
            verbosity: env_verbosity,
            cassette_dir: env_cassette_dir,
            ci,
        })
    }
}

/// Is this a CI run? `CI` is set, and not to `0` or `false`.
pub fn is_ci(env: &dyn Fn(&str) -> Option<String>) -> bool {
    env("CI").is_some_and(|v| {
        let v = v.trim();
        !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false"))
    })
}

/// `<spec dir>/cassettes/<spec file stem>`.
fn default_cassette_dir(spec: &Spec) -> PathBuf {
    let stem = spec
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "spec".to_owned());
    spec.dir().join("cassettes").join(stem)
}

fn pick<T>(
    cli: Option<T>,
    spec: Option<T>,
    env: Option<(T, &'static str)>,
    default: impl FnOnce() -> (T, Origin),
) -> (T, Origin) {
    if let Some(v) = cli {
        (v, Origin::Cli)
    } else if let Some(v) = spec {
        (v, Origin::Spec)
    } else if let Some((v, var)) = env {
        (v, Origin::Env(var))
    } else {
        default()
    }
}

fn parse_word<T: Copy>(var: &str, value: &str, choices: &[(&str, T)]) -> Result<T, SpecError> {
    if let Some((_, v)) = choices.iter().find(|(n, _)| *n == value) {
        return Ok(*v);
    }
    let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
    let mut message = format!("expected one of {}", one_of(&names));
    if let Some(near) = did_you_mean(value, &names) {
        message.push_str(&format!(" (did you mean `{near}`?)"));
    }
    Err(env_error(var, value, &message))
}

fn env_error(var: &str, value: &str, message: &str) -> SpecError {
    SpecError::Env {
        var: var.to_owned(),
        value: value.to_owned(),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::*;
    use crate::spec::model::Execution;
    use crate::spec::parse;

    fn spec(execution: Execution, cassettes: Option<&str>) -> Spec {
        let mut s = parse(
            "app: {command: a}\ncases: [{name: a, input: b}]\n",
            Path::new("specs/weather.yaml"),
        )
        .unwrap();
        s.execution = execution;
        s.cassettes = cassettes.map(PathBuf::from);
        s
    }

    fn run(cli: &CliOverrides, spec: &Spec, env: &[(&str, &str)]) -> Result<Resolved, SpecError> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(cli, spec, &|k| env.get(k).cloned())
    }

    const ALL_ENV: &[(&str, &str)] = &[
        ("AGENTPROXY_MODE", "record"),
        ("AGENTPROXY_PARALLEL", "3"),
        ("AGENTPROXY_TIMEOUT", "90s"),
        ("AGENTPROXY_VERBOSITY", "quiet"),
        ("AGENTPROXY_CASSETTE_DIR", "env/cassettes"),
    ];

    fn full_execution() -> Execution {
        Execution {
            mode: Some(Mode::Update),
            parallel: Some(4),
            timeout: Some(Duration::from_secs(120)),
            verbosity: Some(Verbosity::Verbose),
            max_age: Some(Duration::from_secs(86_400)),
            replay_timing: Some(true),
            reports: vec![],
        }
    }

    #[test]
    fn layer_defaults() {
        let r = run(
            &CliOverrides::default(),
            &spec(Execution::default(), None),
            &[],
        )
        .unwrap();
        assert_eq!(
            (
                r.mode,
                r.parallel,
                r.timeout,
                r.verbosity,
                r.cassette_dir.as_path()
            ),
            (
                Mode::Auto,
                None,
                Duration::from_secs(60),
                Verbosity::Normal,
                Path::new("specs/cassettes/weather")
            )
        );
        assert_eq!(
            r.origins,
            Origins {
                mode: Origin::Default,
                parallel: Origin::Default,
                timeout: Origin::Default,
                verbosity: Origin::Default,
                cassette_dir: Origin::Default,
            }
        );
    }

    #[test]
    fn layer_defaults_under_ci() {
        let s = spec(Execution::default(), None);
        for (ci, mode, origin) in [
            ("true", Mode::Replay, Origin::Ci),
            ("1", Mode::Replay, Origin::Ci),
            ("woodpecker", Mode::Replay, Origin::Ci),
            ("false", Mode::Auto, Origin::Default),
            ("FALSE", Mode::Auto, Origin::Default),
            ("0", Mode::Auto, Origin::Default),
            ("", Mode::Auto, Origin::Default),
        ] {
            let r = run(&CliOverrides::default(), &s, &[("CI", ci)]).unwrap();
            assert_eq!((r.mode, r.origins.mode), (mode, origin), "CI={ci:?}");
        }
    }

    #[test]
    fn under_ci_only_the_command_line_may_record() {
        for m in [Mode::Record, Mode::Auto, Mode::Update] {
            let recording = Execution {
                mode: Some(m),
                ..Execution::default()
            };
            let err = run(
                &CliOverrides::default(),
                &spec(recording.clone(), None),
                &[("CI", "true")],
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains("execution.mode"), "{err}");
            assert!(err.contains(&format!("--mode {}", m.as_str())), "{err}");
            let env = [("CI", "true"), ("AGENTPROXY_MODE", m.as_str())];
            let err = run(
                &CliOverrides::default(),
                &spec(Execution::default(), None),
                &env,
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains("AGENTPROXY_MODE asks for mode"), "{err}");
            let cli = CliOverrides {
                mode: Some(m),
                ..CliOverrides::default()
            };
            let r = run(&cli, &spec(recording, None), &env).unwrap();
            assert_eq!((r.mode, r.origins.mode), (m, Origin::Cli));
        }
        let replaying = Execution {
            mode: Some(Mode::Replay),
            ..Execution::default()
        };
        let r = run(
            &CliOverrides::default(),
            &spec(replaying, None),
            &[("CI", "true")],
        )
        .unwrap();
        assert_eq!(r.mode, Mode::Replay);
    }

    /// (Under `CI` a recording mode from the environment is refused: see
    /// `under_ci_only_the_command_line_may_record`.)
    #[test]
    fn layer_env_beats_defaults() {
        let r = run(
            &CliOverrides::default(),
            &spec(Execution::default(), None),
            ALL_ENV,
        )
        .unwrap();
        assert_eq!(
            (
                r.mode,
                r.parallel,
                r.timeout,
                r.verbosity,
                r.cassette_dir.as_path()
            ),
            (
                Mode::Record,
                Some(3),
                Duration::from_secs(90),
                Verbosity::Quiet,
                Path::new("env/cassettes")
            )
        );
        assert_eq!(r.origins.mode, Origin::Env(ENV_MODE));
        assert_eq!(r.origins.cassette_dir, Origin::Env(ENV_CASSETTE_DIR));
    }

    #[test]
    fn layer_spec_beats_env() {
        let r = run(
            &CliOverrides::default(),
            &spec(full_execution(), Some("specs/recorded")),
            ALL_ENV,
        )
        .unwrap();
        assert_eq!(
            (
                r.mode,
                r.parallel,
                r.timeout,
                r.verbosity,
                r.cassette_dir.as_path()
            ),
            (
                Mode::Update,
                Some(4),
                Duration::from_secs(120),
                Verbosity::Verbose,
                Path::new("specs/recorded")
            )
        );
        assert_eq!(r.origins.mode, Origin::Spec);
        assert_eq!(r.origins.cassette_dir, Origin::Spec);
    }

    #[test]
    fn layer_cli_beats_spec() {
        let cli = CliOverrides {
            mode: Some(Mode::Replay),
            parallel: Some(8),
            timeout: Some(Duration::from_secs(5)),
            verbosity: Some(Verbosity::Debug),
            cassette_dir: Some("cli/cassettes".into()),
            max_age: Some(Duration::from_secs(60)),
            realtime: false,
        };
        let r = run(
            &cli,
            &spec(full_execution(), Some("specs/recorded")),
            ALL_ENV,
        )
        .unwrap();
        assert_eq!(
            (
                r.mode,
                r.parallel,
                r.timeout,
                r.verbosity,
                r.cassette_dir.as_path()
            ),
            (
                Mode::Replay,
                Some(8),
                Duration::from_secs(5),
                Verbosity::Debug,
                Path::new("cli/cassettes")
            )
        );
        assert_eq!(r.origins.mode, Origin::Cli);
        assert_eq!(r.origins.cassette_dir, Origin::Cli);
        assert_eq!(r.max_age, Some(Duration::from_secs(60)));
        // A spec that asks for recorded timing gets it; the flag only turns it on.
        assert!(r.realtime);
    }

    #[test]
    fn layers_mix_per_setting() {
        let cli = CliOverrides {
            parallel: Some(2),
            ..CliOverrides::default()
        };
        let execution = Execution {
            timeout: Some(Duration::from_secs(10)),
            ..Execution::default()
        };
        let r = run(
            &cli,
            &spec(execution, None),
            &[("AGENTPROXY_MODE", " update "), ("AGENTPROXY_PARALLEL", "")],
        )
        .unwrap();
        assert_eq!(
            r.origins,
            Origins {
                mode: Origin::Env(ENV_MODE),
                parallel: Origin::Cli,
                timeout: Origin::Spec,
                verbosity: Origin::Default,
                cassette_dir: Origin::Default,
            }
        );
        assert_eq!(
            (r.mode, r.parallel, r.timeout),
            (Mode::Update, Some(2), Duration::from_secs(10))
        );
    }

    #[test]
    fn invalid_env_values_name_the_variable_even_when_overridden() {
        let cli = CliOverrides {
            mode: Some(Mode::Replay),
            parallel: Some(1),
            timeout: Some(Duration::from_secs(1)),
            verbosity: Some(Verbosity::Quiet),
            cassette_dir: None,
            max_age: None,
            realtime: false,
        };
        let s = spec(Execution::default(), None);
        for (var, value, want) in [
            (
                "AGENTPROXY_MODE",
                "replya",
                r#"invalid AGENTPROXY_MODE="replya": expected one of replay, record, auto, update (did you mean `replay`?)"#,
            ),
            (
                "AGENTPROXY_MODE",
                "fast",
                r#"invalid AGENTPROXY_MODE="fast": expected one of replay, record, auto, update"#,
            ),
            (
                "AGENTPROXY_PARALLEL",
                "0",
                r#"invalid AGENTPROXY_PARALLEL="0": expected a whole number of at least 1"#,
            ),
            (
                "AGENTPROXY_PARALLEL",
                "four",
                r#"invalid AGENTPROXY_PARALLEL="four": expected a whole number of at least 1"#,
            ),
            (
                "AGENTPROXY_TIMEOUT",
                "0s",
                r#"invalid AGENTPROXY_TIMEOUT="0s": expected a duration longer than zero"#,
            ),
            (
                "AGENTPROXY_TIMEOUT",
                "60",
                r#"invalid AGENTPROXY_TIMEOUT="60": expected a duration like 30s or 2m (time unit needed, for example 60sec or 60ms)"#,
            ),
            (
                "AGENTPROXY_VERBOSITY",
                "loud",
                r#"invalid AGENTPROXY_VERBOSITY="loud": expected one of quiet, normal, verbose, debug"#,
            ),
        ] {
            let e = run(&cli, &s, &[(var, value)]).unwrap_err();
            assert_eq!(e.to_string(), want);
            let e: crate::error::Error = e.into();
            assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        }
    }
}
