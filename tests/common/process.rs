//! Brokers as child processes of the built `kastle` binary, for tests where a crash, kill -9,
//! SIGSTOP or the exit code is the point.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What to put in a broker's YAML config.
#[derive(Debug, Clone)]
pub struct BrokerSpec {
    pub id: i32,
    pub connect: String,
    pub session_timeout_ms: u64,
    /// `listeners`; `PLAINTEXT://127.0.0.1:0` (any free port) unless set.
    pub listeners: String,
    /// Extra `key: value` lines.
    pub extra: Vec<(String, String)>,
    /// A command the broker runs under (e.g. `ip netns exec <ns>`); none unless set.
    pub prefix: Vec<String>,
}

impl BrokerSpec {
    pub fn new(id: i32, connect: &str) -> Self {
        BrokerSpec {
            id,
            connect: connect.to_string(),
            session_timeout_ms: 6000,
            listeners: "PLAINTEXT://127.0.0.1:0".to_string(),
            extra: Vec::new(),
            prefix: Vec::new(),
        }
    }

    /// Runs the broker as `prefix... kastle broker ...`; the prefix must exec the command (as
    /// `ip netns exec` does), so that the child's pid is the broker's.
    pub fn prefix(mut self, prefix: &[&str]) -> Self {
        self.prefix = prefix.iter().map(|p| p.to_string()).collect();
        self
    }

    pub fn session_timeout_ms(mut self, ms: u64) -> Self {
        self.session_timeout_ms = ms;
        self
    }

    /// A fixed listener port (e.g. `zookeeper::free_port()`), so that a restarted broker
    /// advertises the same endpoint as before.
    pub fn port(mut self, port: u16) -> Self {
        self.listeners = format!("PLAINTEXT://127.0.0.1:{port}");
        self
    }

    pub fn with(mut self, key: &str, value: &str) -> Self {
        self.extra.push((key.to_string(), value.to_string()));
        self
    }

    /// The YAML text, with `log.dirs` pointing into `dir`.
    pub fn yaml(&self, log_dir: &Path) -> String {
        let mut y = format!(
            "broker.id: {}\nzookeeper.connect: \"{}\"\nzookeeper.session.timeout.ms: {}\n\
             controlled.shutdown.retry.backoff.ms: 200\n\
             log.dirs: \"{}\"\nlisteners: \"{}\"\n",
            self.id,
            self.connect,
            self.session_timeout_ms,
            log_dir.display(),
            self.listeners
        );
        for (k, v) in &self.extra {
            y.push_str(&format!("{k}: \"{v}\"\n"));
        }
        y
    }

    /// In-process config pairs (same settings as the YAML).
    pub fn pairs(&self, log_dir: &Path) -> Vec<(String, String)> {
        let mut p = vec![
            ("broker.id".to_string(), self.id.to_string()),
            ("zookeeper.connect".to_string(), self.connect.clone()),
            (
                "zookeeper.session.timeout.ms".to_string(),
                self.session_timeout_ms.to_string(),
            ),
            ("log.dirs".to_string(), log_dir.display().to_string()),
            ("listeners".to_string(), self.listeners.clone()),
            // Tests stop brokers often; Kafka's 5 s between controlled-shutdown retries is too slow.
            ("controlled.shutdown.retry.backoff.ms".to_string(), "200".to_string()),
        ];
        p.extend(self.extra.iter().cloned());
        p
    }
}

/// A `kastle broker` child process; killed (SIGKILL) and reaped on drop.
#[derive(Debug)]
pub struct BrokerProcess {
    child: Child,
    pub dir: tempfile::TempDir,
    pub log_dir: PathBuf,
    exit: Option<ExitStatus>,
}

impl BrokerProcess {
    /// Starts a broker with its own temp dir (config, log dir, captured stderr).
    pub fn start(spec: &BrokerSpec) -> BrokerProcess {
        let dir = tempfile::Builder::new()
            .prefix("kastle-broker-")
            .tempdir()
            .expect("tempdir");
        let log_dir = dir.path().join("logs");
        Self::start_in(spec, dir, log_dir)
    }

    /// Starts a broker whose log dir is `log_dir` (prepared by the test).
    pub fn start_in(spec: &BrokerSpec, dir: tempfile::TempDir, log_dir: PathBuf) -> BrokerProcess {
        let config = dir.path().join("broker.yaml");
        std::fs::write(&config, spec.yaml(&log_dir)).expect("write config");
        // A restart keeps the earlier incarnations' logs as stderr.1.log, stderr.2.log, ...
        // (stderr() reads the current one only).
        let current = dir.path().join("stderr.log");
        if current.exists() {
            if let Some(n) = (1..).find(|n| !dir.path().join(format!("stderr.{n}.log")).exists()) {
                let _ = std::fs::rename(&current, dir.path().join(format!("stderr.{n}.log")));
            }
        }
        let stderr = std::fs::File::create(&current).expect("stderr file");
        let kastle = env!("CARGO_BIN_EXE_kastle");
        let mut command = match spec.prefix.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(kastle);
                c
            }
            None => Command::new(kastle),
        };
        let child = command
            .arg("broker")
            .arg("--config")
            .arg(&config)
            .env("KASTLE_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn kastle");
        BrokerProcess {
            child,
            dir,
            log_dir,
            exit: None,
        }
    }

    /// Starts `kastle broker --config <config>` with `env` (e.g. `KASTLE_CFG_*` variables), for
    /// tests of a config file users get; `log_dir` is where that config puts the logs.
    pub fn start_with_config(config: &Path, env: &[(String, String)], log_dir: PathBuf) -> BrokerProcess {
        let dir = tempfile::Builder::new()
            .prefix("kastle-broker-")
            .tempdir()
            .expect("tempdir");
        let stderr = std::fs::File::create(dir.path().join("stderr.log")).expect("stderr file");
        let child = Command::new(env!("CARGO_BIN_EXE_kastle"))
            .arg("broker")
            .arg("--config")
            .arg(config)
            .env("KASTLE_LOG", "info")
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn kastle");
        BrokerProcess {
            child,
            dir,
            log_dir,
            exit: None,
        }
    }

    /// Starts the broker again on the same dirs (after it exited or was killed).
    pub fn restart(mut self, spec: &BrokerSpec) -> BrokerProcess {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.exit = Some(self.child.try_wait().ok().flatten().unwrap_or_default());
        let fresh = tempfile::Builder::new()
            .prefix("kastle-broker-")
            .tempdir()
            .expect("tempdir");
        let dir = std::mem::replace(&mut self.dir, fresh);
        let log_dir = self.log_dir.clone();
        BrokerProcess::start_in(spec, dir, log_dir)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{signal} {} failed", self.pid());
    }

    /// Sends SIGSTOP and waits until every thread of the process is stopped: `kill` returns once
    /// the signal is queued, and a thread inside a syscall (a `pwrite`) finishes it first.
    pub async fn pause(&self) {
        self.signal("STOP");
        let tasks = format!("/proc/{}/task", self.pid());
        super::wait_until(Duration::from_secs(10), "every thread stopped", || {
            let tasks = tasks.clone();
            async move {
                std::fs::read_dir(&tasks).is_ok_and(|d| {
                    d.filter_map(Result::ok).all(|t| {
                        // The state follows the parenthesised command name.
                        std::fs::read_to_string(t.path().join("stat"))
                            .ok()
                            .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('T')))
                            .unwrap_or(true)
                    })
                })
            }
        })
        .await;
    }

    /// Everything the broker logged so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// Waits for the process to exit, at most `deadline`.
    pub async fn wait_exit(&mut self, deadline: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.exit {
                return status;
            }
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                self.exit = Some(status);
                return status;
            }
            assert!(
                start.elapsed() < deadline,
                "broker did not exit within {deadline:?}; stderr:\n{}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn has_exited(&mut self) -> bool {
        self.exit.is_some() || matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        if self.exit.is_none() {
            // A stopped process still dies from SIGKILL.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
