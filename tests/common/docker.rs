//! A Docker engine and a docker-compose project for the compose integration test.
//!
//! [`Engine::ensure`] uses an engine that already answers (`DOCKER_HOST`, or the default
//! socket); otherwise it starts Debian's `dockerd` with its own socket and exec root under
//! /tmp and a data root in the cache directory (so built images survive between runs). That
//! dockerd runs under a small shell holding a pipe from this process: when the pipe closes —
//! on drop, or however the test binary ends — the shell stops dockerd (which stops its
//! containers) and removes the `docker0` link it leaves. [`Engine::cannot_run`] names why this
//! machine cannot run containers, for a skip message.
//!
//! [`Compose`] runs `docker-compose` with one project name, file list and environment, and
//! runs `down -v` on drop, so containers, networks and volumes go even when a step panics.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A Docker engine the test may use.
#[derive(Debug)]
pub struct Engine {
    /// `unix:///...` socket of the engine.
    pub host: String,
    /// Set when this test started dockerd: its wrapper shell and the pipe that keeps it alive.
    own: Option<(Child, ChildStdin)>,
    /// Where our dockerd writes its log.
    pub log: Option<PathBuf>,
}

/// `~/.cache/kastle-docker`, or `KASTLE_DOCKER_CACHE`: the debootstrap tarball and our
/// engine's data root.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KASTLE_DOCKER_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/tmp".into());
    home.join(".cache/kastle-docker")
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

fn answers(host: &str) -> bool {
    Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .env("DOCKER_HOST", host)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

impl Engine {
    /// Why containers cannot run here, or `None` when they can (an engine answers, or we may
    /// start one: root, cgroups mounted, the binaries installed).
    pub fn cannot_run() -> Option<String> {
        for program in ["docker", "docker-compose"] {
            if !on_path(program) {
                return Some(format!(
                    "`{program}` is not installed (scripts/test installs Debian's docker.io and docker-compose)"
                ));
            }
        }
        if Self::existing().is_some() {
            return None;
        }
        let uid = Command::new("id").arg("-u").output().ok();
        let root = uid.is_some_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        if !root {
            return Some("no Docker engine answers and starting dockerd needs root".into());
        }
        if !on_path("dockerd") {
            return Some("no Docker engine answers and `dockerd` is not installed (Debian: docker.io)".into());
        }
        let cgroup_v1 = Path::new("/sys/fs/cgroup/memory").is_dir() && Path::new("/sys/fs/cgroup/pids").is_dir();
        let cgroup_v2 = Path::new("/sys/fs/cgroup/cgroup.controllers").is_file();
        if !cgroup_v1 && !cgroup_v2 {
            return Some("no cgroup hierarchy is mounted under /sys/fs/cgroup, so containers cannot run".into());
        }
        None
    }

    fn existing() -> Option<String> {
        let candidates = std::env::var("DOCKER_HOST")
            .ok()
            .into_iter()
            .chain(std::iter::once("unix:///var/run/docker.sock".to_string()));
        candidates.into_iter().find(|host| answers(host))
    }

    /// An engine that answers: the machine's, or a dockerd we start (see the module docs).
    pub async fn ensure() -> Engine {
        if let Some(host) = Self::existing() {
            println!("docker: using the running engine at {host}");
            return Engine {
                host,
                own: None,
                log: None,
            };
        }
        // Unix socket paths are short (108 bytes): socket and exec root go under /tmp.
        let run = PathBuf::from(format!("/tmp/kastle-docker-{}", std::process::id()));
        std::fs::create_dir_all(&run).expect("create engine run dir");
        let data = cache_dir().join("engine");
        std::fs::create_dir_all(&data).expect("create engine data root");
        let host = format!("unix://{}/docker.sock", run.display());
        let log = run.join("dockerd.log");
        let script = r#"
            dockerd --host "$1" --data-root "$2" --exec-root "$3/exec" --pidfile "$3/dockerd.pid" >"$3/dockerd.log" 2>&1 &
            d=$!
            read _
            kill "$d" 2>/dev/null
            wait "$d"
            ip link delete docker0 2>/dev/null
            rm -rf "$3"
        "#;
        let mut shell = Command::new("sh")
            .args(["-c", script, "sh", &host])
            .arg(&data)
            .arg(&run)
            .stdin(Stdio::piped())
            .spawn()
            .expect("start dockerd");
        let lifeline = shell.stdin.take().expect("stdin");
        let engine = Engine {
            host,
            own: Some((shell, lifeline)),
            log: Some(log.clone()),
        };
        let started = Instant::now();
        super::wait_until_else(
            Duration::from_secs(60),
            "dockerd answers",
            || std::future::ready(answers(&engine.host)),
            || format!("dockerd's log:\n{}", tail(&log, 40)),
        )
        .await;
        // Our data root holds only this test's projects and images: containers left are from a
        // run that was killed before its clean-up.
        let stale = engine.run(&["ps", "-aq"]);
        if !stale.trim().is_empty() {
            let mut args = vec!["rm", "-f", "-v"];
            args.extend(stale.split_whitespace());
            engine.run(&args);
        }
        engine.run(&["volume", "prune", "-f"]);
        engine.run(&["network", "prune", "-f"]);
        // Each run tags a new broker image; the previous one would pile up untagged.
        engine.run(&["image", "prune", "-f"]);
        println!(
            "docker: started dockerd ({}, data root {}) in {:.1?}",
            engine.host,
            data.display(),
            started.elapsed()
        );
        engine
    }

    /// A `docker` command aimed at this engine.
    pub fn docker(&self) -> Command {
        let mut cmd = Command::new("docker");
        cmd.env("DOCKER_HOST", &self.host);
        cmd
    }

    /// Runs `docker args…`; panics with its stderr unless it succeeds; returns stdout.
    pub fn run(&self, args: &[&str]) -> String {
        checked(self.docker().args(args).output(), &format!("docker {}", args.join(" ")))
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some((mut shell, lifeline)) = self.own.take() {
            // Closing the pipe makes the wrapper stop dockerd (it stops its containers first).
            drop(lifeline);
            match shell.wait() {
                Ok(_) => println!("docker: stopped the dockerd this test started"),
                Err(e) => eprintln!("docker: waiting for dockerd to stop: {e}"),
            }
        }
    }
}

/// The last `lines` lines of a file (for failure messages).
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Stdout of a finished command, or a panic naming `what` with its stderr.
pub fn checked(output: std::io::Result<Output>, what: &str) -> String {
    let output = output.unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// One docker-compose project; `down -v` on drop.
#[derive(Debug)]
pub struct Compose {
    pub project: String,
    files: Vec<PathBuf>,
    env: Vec<(String, String)>,
    host: String,
}

impl Compose {
    pub fn new(engine: &Engine, project: &str, files: &[PathBuf], env: &[(&str, String)]) -> Compose {
        Compose {
            project: project.to_string(),
            files: files.to_vec(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            host: engine.host.clone(),
        }
    }

    /// A `docker-compose -p project -f … args` command.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("docker-compose");
        cmd.env("DOCKER_HOST", &self.host).arg("-p").arg(&self.project);
        for file in &self.files {
            cmd.arg("-f").arg(file);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v))).args(args);
        cmd
    }

    /// Runs a compose command; panics with its output unless it succeeds; returns stdout.
    pub fn run(&self, args: &[&str]) -> String {
        checked(
            self.command(args).output(),
            &format!("docker-compose {}", args.join(" ")),
        )
    }

    /// The container id of `service`.
    pub fn container(&self, service: &str) -> String {
        let id = self.run(&["ps", "-q", service]).trim().to_string();
        assert!(!id.is_empty(), "no container for service {service}");
        id
    }

    /// The network `service`'s container is on (the project's compose network).
    pub fn network_of(&self, engine: &Engine, service: &str) -> String {
        let container = self.container(service);
        let format = "{{range $name, $_ := .NetworkSettings.Networks}}{{$name}}{{end}}";
        engine
            .run(&["inspect", "--format", format, &container])
            .trim()
            .to_string()
    }
}

impl Drop for Compose {
    fn drop(&mut self) {
        let out = self
            .command(&["down", "-v", "--remove-orphans", "--timeout", "10"])
            .output();
        match out {
            Ok(o) if o.status.success() => println!("docker-compose down -v: containers, network and volumes removed"),
            Ok(o) => eprintln!("docker-compose down -v failed:\n{}", String::from_utf8_lossy(&o.stderr)),
            Err(e) => eprintln!("docker-compose down -v: cannot run: {e}"),
        }
    }
}
