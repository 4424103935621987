//! The `kastle` command: `kastle broker` runs a broker; the other subcommands are operator tools.
//! Exit codes: 0 success, 1 failure (start-up, or violations found), 2 bad usage or bad config;
//! the Kafka-shaped tools (`topics`, `configs`, `consumer-groups`, `delete-records`,
//! `leader-election`) exit 1 on bad usage too, as Kafka's tools do.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use kastle::config::{self, ConfigSources, KafkaConfig};
use kastle::server::Broker;
use kastle::zk::{check, ConnectString, ZkSession};

#[derive(Debug, Parser)]
#[command(
    name = "kastle",
    version,
    about = "A Kafka-protocol broker coordinated through ZooKeeper, the classic way"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one broker.
    Broker(ConfigArgs),
    /// Inspect a config file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// ZooKeeper tools.
    #[command(subcommand)]
    Zk(ZkCommand),
    /// Benchmarks: the log against this machine's own limits, and producer/consumer load.
    #[command(subcommand)]
    Perf(PerfCommand),
    /// Ask a broker for metadata and exit 0 if it is healthy (a container healthcheck).
    Health(HealthArgs),
    /// Create, delete, describe, or change a topic (kafka-topics.sh).
    Topics(kastle::admin::cli::topics::TopicsArgs),
    /// Describe or alter topic and broker configs (kafka-configs.sh).
    Configs(kastle::admin::cli::configs::ConfigsArgs),
    /// List, describe, reset or delete consumer groups (kafka-consumer-groups.sh).
    ConsumerGroups(kastle::admin::cli::consumer_groups::ConsumerGroupsArgs),
    /// Delete records below an offset (kafka-delete-records.sh).
    DeleteRecords(kastle::admin::cli::delete_records::DeleteRecordsArgs),
    /// Add, remove or list ACLs (kafka-acls.sh).
    Acls(kastle::admin::cli::acls::AclsArgs),
    /// Elect preferred or unclean leaders (kafka-leader-election.sh).
    LeaderElection(kastle::admin::cli::leader_election::LeaderElectionArgs),
    /// Move partitions between brokers, change their replication factor (kafka-reassign-partitions.sh).
    ReassignPartitions(kastle::admin::cli::reassign_partitions::ReassignPartitionsArgs),
    /// Print the batches of segment files (.log), check index files (.index, .timeindex) and
    /// print producer snapshots (.snapshot), like kafka-dump-log.
    DumpLog {
        /// Segment, offset-index, time-index or producer-snapshot files.
        #[arg(long = "files", value_name = "FILE", num_args = 1.., required = true, value_delimiter = ',')]
        files: Vec<PathBuf>,
        /// Also decode each record (key, value, headers).
        #[arg(long)]
        print_data_log: bool,
    },
}

#[derive(Debug, Args)]
struct ConfigArgs {
    /// YAML file with Kafka's property names, or a Java server.properties.
    #[arg(long, short = 'c', value_name = "FILE")]
    config: PathBuf,
    /// Override one property (highest precedence); repeatable, as kafka-server-start's --override.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

/// `kastle health`: by default the broker's own config (file and `KASTLE_CFG_*`) names the
/// listener to probe (the first one, on loopback when bound to all interfaces) and the broker id
/// that must be live.
#[derive(Debug, Args)]
struct HealthArgs {
    /// The broker's config file (YAML or server.properties), read as `kastle broker` reads it.
    #[arg(long, short = 'c', value_name = "FILE", required_unless_present = "bootstrap")]
    config: Option<PathBuf>,
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Probe this address instead of the config's first listener.
    #[arg(long, value_name = "HOST:PORT")]
    bootstrap: Option<String>,
    /// The broker id that must be among the live brokers (default: the config's broker.id, if set).
    #[arg(long)]
    broker_id: Option<i32>,
    /// Give up after this long.
    #[arg(long, default_value_t = 5_000)]
    timeout_ms: u64,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the effective config with the source of each value (default, file, env, --override).
    Check {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        #[arg(long = "override", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum PerfCommand {
    /// Log append/read/recovery throughput and memory per partition (prints a Markdown table).
    Log {
        /// Directory to work in (on the disk to measure); a temp dir under it is removed after.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Bytes to append, read back and recover.
        #[arg(long, default_value_t = 1 << 30)]
        bytes: u64,
        /// Partitions for the memory measurement.
        #[arg(long, default_value_t = 1000)]
        partitions: usize,
    },
    /// Log cleaner throughput vs the disk's write+fsync rate (prints a Markdown table).
    Cleaner {
        /// Directory to work in (on the disk to measure); a temp dir under it is removed after.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Bytes of compacted log to build and clean.
        #[arg(long, default_value_t = 256 << 20)]
        bytes: u64,
        /// Distinct keys the updates cycle over.
        #[arg(long, default_value_t = 1000)]
        keys: u64,
    },
    /// Produce load to one partition, like kafka-producer-perf-test.
    Produce(PerfProduceArgs),
    /// Fetch load from one partition, like kafka-consumer-perf-test.
    Consume(PerfConsumeArgs),
    /// Group coordinator: loading groups from __consumer_offsets (offline), or rebalances and
    /// offset commits against a running cluster (with --bootstrap).
    Groups(PerfGroupsArgs),
}

#[derive(Debug, Args)]
struct PerfGroupsArgs {
    /// A broker of a running cluster: run the live benchmark (rebalances, commits).
    #[arg(long, value_name = "HOST:PORT")]
    bootstrap: Option<String>,
    /// Offline load benchmark: directory to write the offsets log in (a temp dir under it).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    #[arg(long, default_value_t = 1000)]
    groups: usize,
    #[arg(long, default_value_t = 100_000)]
    offsets: usize,
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Live: group name, members, topic to commit offsets of, commits and partitions per commit.
    #[arg(long, default_value = "perf-groups")]
    group: String,
    #[arg(long, default_value_t = 10)]
    members: usize,
    #[arg(long, default_value = "perf-groups")]
    topic: String,
    #[arg(long, default_value_t = 2000)]
    commits: usize,
    #[arg(long, default_value_t = 100)]
    partitions_per_commit: i32,
}

/// The partition a perf tool works on.
#[derive(Debug, Args)]
struct PerfTarget {
    /// A broker to ask for the partition's leader.
    #[arg(long, value_name = "HOST:PORT")]
    bootstrap: String,
    #[arg(long)]
    topic: String,
    #[arg(long, default_value_t = 0)]
    partition: i32,
}

#[derive(Debug, Args)]
struct PerfProduceArgs {
    #[command(flatten)]
    target: PerfTarget,
    /// Records to send.
    #[arg(long)]
    records: u64,
    /// Bytes per record value.
    #[arg(long, value_name = "BYTES")]
    record_size: usize,
    /// Records per second to pace to; -1 for as fast as possible.
    #[arg(long, value_name = "RECORDS_PER_SEC", default_value_t = -1.0, allow_negative_numbers = true)]
    throughput: f64,
    /// -1 (all in-sync replicas), 0 (no response) or 1 (the leader).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    acks: i16,
    /// Uncompressed bytes of records per batch (the producer's batch.size).
    #[arg(long, value_name = "BYTES", default_value_t = 16_384)]
    batch_size: usize,
    /// none, gzip, snappy, lz4 or zstd.
    #[arg(long, default_value = "none")]
    compression: kastle::admin::perf_produce::PerfCompression,
    /// Produce requests awaiting a response at a time.
    #[arg(long, default_value_t = 5)]
    max_in_flight: usize,
    /// Produce as an idempotent producer (InitProducerId, sequence numbers).
    #[arg(long)]
    idempotent: bool,
}

#[derive(Debug, Args)]
struct PerfConsumeArgs {
    #[command(flatten)]
    target: PerfTarget,
    /// Records to read.
    #[arg(long)]
    records: u64,
    /// Fetch max_bytes and partition_max_bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1_048_576)]
    fetch_max_bytes: i32,
    #[arg(long, default_value_t = 0)]
    from_offset: i64,
    /// Give up after this long without a record.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
}

#[derive(Debug, Subcommand)]
enum ZkCommand {
    /// Walk a live ZooKeeper tree and validate every znode of Kafka's layout against zk-schema.
    Check {
        /// HOST:PORT[,HOST:PORT...][/chroot]
        #[arg(long, value_name = "CONNECT")]
        zookeeper: String,
        /// Session timeout used for the walk, in milliseconds.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
        /// A JAAS file whose login section authenticates with SASL DIGEST-MD5 (the broker's
        /// zookeeper.sasl.jaas.config.file); needed when the znodes have secure ACLs.
        #[arg(long, value_name = "FILE")]
        sasl_jaas_config_file: Option<std::path::PathBuf>,
        /// The JAAS section to log in with (zookeeper.sasl.clientconfig).
        #[arg(long, value_name = "SECTION", default_value = "Client")]
        sasl_clientconfig: String,
        /// A properties (or YAML) file with the `zookeeper.ssl.*` keys, as Kafka's tools take
        /// it: connect over TLS as the brokers do (`zookeeper.ssl.client.enable=true`).
        #[arg(long, value_name = "FILE")]
        zk_tls_config_file: Option<PathBuf>,
    },
}

/// The operator tools shaped like Kafka's: they exit 1 on bad usage, as Kafka's tools do.
const KAFKA_TOOLS: &[&str] = &[
    "topics",
    "configs",
    "consumer-groups",
    "delete-records",
    "leader-election",
    "acls",
];

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let tool = std::env::args()
                .nth(1)
                .is_some_and(|a| KAFKA_TOOLS.contains(&a.as_str()));
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => ExitCode::SUCCESS,
                _ if tool => ExitCode::FAILURE,
                _ => ExitCode::from(2),
            };
        }
    };
    init_logging();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kastle: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        match cli.command {
            Command::Broker(args) => match load_config(Some(args.config), args.overrides) {
                Ok(config) => report(run_broker(config).await),
                Err(code) => code,
            },
            Command::Config(ConfigCommand::Check { file, overrides }) => match load_config(Some(file), overrides) {
                Ok(config) => {
                    print!("{}", config.render_effective());
                    if let Some(warning) = config.unused_warning() {
                        eprintln!("kastle: {warning}");
                    }
                    ExitCode::SUCCESS
                }
                Err(code) => code,
            },
            Command::Zk(ZkCommand::Check {
                zookeeper,
                timeout_ms,
                sasl_jaas_config_file,
                sasl_clientconfig,
                zk_tls_config_file,
            }) => {
                let tls = match zk_tls_config_file
                    .map(|file| zk_tls_settings(file, &zookeeper))
                    .transpose()
                {
                    Ok(tls) => tls.flatten(),
                    Err(e) => {
                        eprintln!("kastle: {e:#}");
                        return ExitCode::from(2);
                    }
                };
                let security = kastle::config::ZkClientSecurity {
                    sasl: sasl_jaas_config_file.map(|jaas_file| kastle::config::ZkSaslClient {
                        jaas_file,
                        section: sasl_clientconfig,
                    }),
                    tls,
                    set_acl: false,
                };
                zk_check(&zookeeper, timeout_ms, &security).await
            }
            Command::Health(args) => health(args).await,
            Command::Topics(args) => tool(kastle::admin::cli::topics::run(&args).await),
            Command::Configs(args) => {
                let line: Vec<String> = std::env::args().skip(2).collect();
                tool(kastle::admin::cli::configs::run(&args, &line.join(" ")).await)
            }
            Command::ConsumerGroups(args) => tool(kastle::admin::cli::consumer_groups::run(&args).await),
            Command::DeleteRecords(args) => tool(kastle::admin::cli::delete_records::run(&args).await),
            Command::Acls(args) => tool(kastle::admin::cli::acls::run(&args).await),
            Command::LeaderElection(args) => tool(kastle::admin::cli::leader_election::run(&args).await),
            Command::ReassignPartitions(args) => tool(kastle::admin::cli::reassign_partitions::run(&args).await),
            Command::DumpLog { files, print_data_log } => dump_log(&files, print_data_log),
            Command::Perf(PerfCommand::Log { dir, bytes, partitions }) => report(perf_log(&dir, bytes, partitions)),
            Command::Perf(PerfCommand::Cleaner { dir, bytes, keys }) => report(perf_cleaner(&dir, bytes, keys)),
            Command::Perf(PerfCommand::Produce(args)) => report(perf_produce(args).await),
            Command::Perf(PerfCommand::Consume(args)) => report(perf_consume(args).await),
            Command::Perf(PerfCommand::Groups(args)) => report(perf_groups(args).await),
        }
    })
}

fn init_logging() {
    use std::io::IsTerminal;
    // The ZooKeeper client logs every connection step at info; kastle reports what matters.
    let filter = tracing_subscriber::EnvFilter::try_from_env("KASTLE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,zookeeper_client=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Loads the config; a bad one is reported and maps to exit code 2.
fn load_config(file: Option<PathBuf>, overrides: Vec<String>) -> Result<KafkaConfig, ExitCode> {
    // Variables that are not valid UTF-8 cannot name a config key; skip them rather than panic.
    let env = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let sources = ConfigSources { file, env, overrides };
    config::load(&sources).map_err(|e| {
        eprintln!("kastle: config error: {e}");
        ExitCode::from(2)
    })
}

/// A Kafka-shaped tool's result: its message (if any) on stderr and exit 1 on failure.
fn tool(result: kastle::admin::cli::CliResult<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let message = e.to_string();
            if !message.is_empty() {
                eprintln!("{message}");
            }
            ExitCode::FAILURE
        }
    }
}

fn report(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kastle: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run_broker(config: KafkaConfig) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    tracing::info!("KafkaConfig values:\n{}", config.render_effective());
    if let Some(warning) = config.unused_warning() {
        tracing::warn!("{warning}");
    }
    // Handlers go in before start-up: a SIGTERM that arrives while the broker starts (it may
    // already be registered) must lead to a clean shutdown, not the default kill.
    let mut sigterm = signal(SignalKind::terminate()).context("cannot install the SIGTERM handler")?;
    let mut sigint = signal(SignalKind::interrupt()).context("cannot install the SIGINT handler")?;
    if let Some(listener) = config.metrics_listener() {
        start_metrics(listener)?;
    }
    let mut broker = Broker::start(&config).await.context("broker start-up failed")?;
    tokio::select! {
        _ = sigterm.recv() => tracing::info!("SIGTERM received"),
        _ = sigint.recv() => tracing::info!("SIGINT received"),
        e = broker.fatal_error() => return Err(anyhow::Error::new(e).context("the broker had to stop")),
    }
    broker.shutdown().await.context("shutdown failed")
}

/// Serves Prometheus metrics (names as the stock JMX exporter produces for Kafka) on
/// `metrics.listener` (`host:port`).
fn start_metrics(listener: &str) -> anyhow::Result<()> {
    let addr: std::net::SocketAddr = listener
        .parse()
        .with_context(|| format!("metrics.listener {listener:?} is not host:port"))?;
    // Timers get the percentiles Kafka's Yammer histograms expose to JMX (50th … 999th).
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_quantiles(&[0.5, 0.75, 0.95, 0.98, 0.99, 0.999])
        .context("metrics quantiles")?
        .with_http_listener(addr)
        .install()
        .with_context(|| format!("cannot serve metrics on {addr}"))?;
    tracing::info!(%addr, "Prometheus metrics on http://{addr}/metrics");
    Ok(())
}

/// The `zookeeper.ssl.*` settings of a `--zk-tls-config-file`, checked as the broker checks them.
fn zk_tls_settings(file: PathBuf, zookeeper: &str) -> anyhow::Result<Option<kastle::security::tls::TlsSettings>> {
    let sources = ConfigSources {
        file: Some(file.clone()),
        env: Vec::new(),
        overrides: vec![format!("zookeeper.connect={zookeeper}")],
    };
    let config = config::load(&sources).with_context(|| format!("--zk-tls-config-file {}", file.display()))?;
    Ok(config.zookeeper_security().tls.clone())
}

async fn zk_check(connect: &str, timeout_ms: u64, security: &kastle::config::ZkClientSecurity) -> ExitCode {
    let result: anyhow::Result<check::CheckReport> = async {
        let connect = ConnectString::parse(connect)?;
        let timeout = Duration::from_millis(timeout_ms);
        let security = kastle::zk::ZkSecurity::load(security)?;
        let session = ZkSession::connect_secured(&connect, timeout, timeout, &security).await?;
        let report = check::check_tree(&session).await;
        session.close().await;
        Ok(report?)
    }
    .await;
    match result {
        Ok(report) => {
            for v in &report.violations {
                println!("VIOLATION {} (schema {}):", v.path, v.schema);
                for p in &v.problems {
                    println!("    {p}");
                }
            }
            println!(
                "checked {} znodes against zk-schema: {} violation(s); {} znode(s) outside Kafka's layout not checked",
                report.checked,
                report.violations.len(),
                report.unknown
            );
            if report.violations.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("kastle zk check: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn health(args: HealthArgs) -> ExitCode {
    use kastle::admin::health;
    let (addr, expected) = match &args.config {
        Some(file) => {
            let config = match load_config(Some(file.clone()), args.overrides) {
                Ok(config) => config,
                Err(code) => return code,
            };
            let Some(addr) = args.bootstrap.or_else(|| health::local_address(config.listeners())) else {
                eprintln!("kastle health: the config has no listener to probe");
                return ExitCode::from(2);
            };
            let configured = (config.broker_id() >= 0).then_some(config.broker_id());
            (addr, args.broker_id.or(configured))
        }
        None => (args.bootstrap.unwrap_or_default(), args.broker_id),
    };
    match health::probe(&addr, expected, Duration::from_millis(args.timeout_ms)).await {
        Ok(healthy) => {
            println!("healthy: {addr}: {healthy}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("unhealthy: {addr}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn dump_log(files: &[PathBuf], print_data_log: bool) -> ExitCode {
    let options = kastle::log::dump::DumpOptions { print_data_log };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut clean = true;
    for file in files {
        match kastle::log::dump::dump_file(file, &options, &mut out) {
            Ok(summary) => clean &= summary.invalid.is_none() && summary.index_mismatches == 0,
            Err(e) => {
                eprintln!("kastle dump-log: {}: {e}", file.display());
                return ExitCode::from(2);
            }
        }
    }
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn perf_groups(a: PerfGroupsArgs) -> anyhow::Result<()> {
    use kastle::admin::perf_groups;
    let out = match a.bootstrap {
        Some(bootstrap) => perf_groups::live(&perf_groups::LiveOptions {
            bootstrap,
            group: a.group,
            topic: a.topic,
            members: a.members,
            commits: a.commits,
            partitions_per_commit: a.partitions_per_commit,
        })
        .await
        .context("perf groups")?,
        None => {
            let work = a.dir.join(format!("kastle-perf-groups-{}", std::process::id()));
            let result = perf_groups::load(&work, a.groups, a.offsets, a.rounds);
            let _ = std::fs::remove_dir_all(&work);
            result.context("perf groups load")?
        }
    };
    print!("{out}");
    Ok(())
}

fn perf_log(dir: &std::path::Path, bytes: u64, partitions: usize) -> anyhow::Result<()> {
    let work = tempfile_dir(dir)?;
    let result = kastle::admin::perf_log::run(&work, &kastle::admin::perf_log::PerfLogOptions { bytes, partitions });
    let _ = std::fs::remove_dir_all(&work);
    print!("{}", result.context("perf log")?);
    Ok(())
}

fn perf_cleaner(dir: &std::path::Path, bytes: u64, keys: u64) -> anyhow::Result<()> {
    use kastle::admin::perf_cleaner::{run, PerfCleanerOptions};
    let work = tempfile_dir(dir)?;
    let result = run(&work, &PerfCleanerOptions { bytes, keys });
    let _ = std::fs::remove_dir_all(&work);
    print!("{}", result.context("perf cleaner")?);
    Ok(())
}

/// A fresh directory under `dir` for a benchmark run.
fn tempfile_dir(dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    let work = dir.join(format!("kastle-perf-{}", std::process::id()));
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    Ok(work)
}

async fn perf_produce(args: PerfProduceArgs) -> anyhow::Result<()> {
    use kastle::admin::perf_produce::{run, PerfProduceOptions};
    let options = PerfProduceOptions {
        partition: args.target.partition,
        throughput: (args.throughput > 0.0).then_some(args.throughput),
        acks: args.acks,
        batch_size: args.batch_size,
        compression: args.compression,
        max_in_flight: args.max_in_flight,
        idempotent: args.idempotent,
        ..PerfProduceOptions::new(args.target.bootstrap, args.target.topic, args.records, args.record_size)
    };
    let report = run(&options).await.context("perf produce")?;
    println!("{report}");
    anyhow::ensure!(report.failed_records == 0, "{} records failed", report.failed_records);
    Ok(())
}

async fn perf_consume(args: PerfConsumeArgs) -> anyhow::Result<()> {
    use kastle::admin::perf_consume::{run, PerfConsumeOptions};
    let options = PerfConsumeOptions {
        partition: args.target.partition,
        fetch_max_bytes: args.fetch_max_bytes,
        from_offset: args.from_offset,
        timeout: Duration::from_millis(args.timeout_ms),
        ..PerfConsumeOptions::new(args.target.bootstrap, args.target.topic, args.records)
    };
    let report = run(&options).await.context("perf consume")?;
    if report.timed_out {
        eprintln!(
            "WARNING: Exiting before consuming the expected number of records: timeout ({} ms) exceeded.",
            args.timeout_ms
        );
    }
    println!("{report}");
    Ok(())
}
