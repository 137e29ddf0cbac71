use clap::Parser;

// Replay parses every request body into a JSON tree to key it, and a cassette is loaded as
// one: small allocations dominate. mimalloc makes that work about a third cheaper than the
// system allocator (docs/benchmarks.md, "Where the time goes").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = agentproxy::cli::Cli::parse();
    let verbosity = match &cli.command {
        agentproxy::cli::Command::Record(a) => (a.session.quiet, a.session.verbose),
        agentproxy::cli::Command::Replay(a) => (a.session.quiet, a.session.verbose),
        agentproxy::cli::Command::Test(a) => (a.quiet, a.verbose.saturating_sub(1)),
        agentproxy::cli::Command::Diff(_) | agentproxy::cli::Command::Show(_) => (false, 0),
        agentproxy::cli::Command::Doctor(_)
        | agentproxy::cli::Command::Docs(_)
        | agentproxy::cli::Command::Export(_)
        | agentproxy::cli::Command::Report(_)
        | agentproxy::cli::Command::Serve(_)
        | agentproxy::cli::Command::Mcp(_) => (false, 0),
    };
    let level = match verbosity {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AGENTPROXY_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(format!("agentproxy={level}"))
            }),
        )
        .without_time()
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            agentproxy::tell!("agentproxy: failed to start the async runtime: {e}");
            std::process::exit(agentproxy::error::EXIT_EXECUTION);
        }
    };
    let result = runtime.block_on(agentproxy::commands::run(cli));
    if let Err(e) = &result {
        agentproxy::tell!("agentproxy: {e}");
    }
    let code = agentproxy::error::exit_code(&result);
    // Connections still held by a hung program must not keep the proxy alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    std::process::exit(code);
}
