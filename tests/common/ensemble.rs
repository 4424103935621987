//! A three-node ZooKeeper ensemble for the ZooKeeper-fault cases (reliability.md R14): each node
//! a real `QuorumPeerMain` on its own client, quorum and election ports, stopped (SIGTERM),
//! killed (SIGKILL) and restarted on its data dir by the test; [`Ensemble::leader`] asks each
//! node's `srvr` which one leads.
//!
//! Clean-up as for the single server (`zookeeper.rs`): every node runs under a small shell that
//! holds a pipe from this process and kills the node when the pipe closes (the node's drop, or
//! the test binary ending however it ends); the data dirs go with the ensemble's temp dir.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use super::zookeeper::free_port;

/// One node: its ports and, while it runs, its wrapper shell.
#[derive(Debug)]
struct Node {
    id: usize,
    client_port: u16,
    dir: PathBuf,
    running: Option<(Child, ChildStdin)>,
}

impl Node {
    fn pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.dir.join("zookeeper.pid"))
            .ok()
            .and_then(|p| p.trim().parse().ok())
    }

    fn start(&mut self) {
        let _ = std::fs::remove_file(self.dir.join("zookeeper.pid"));
        let classpath = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar";
        let script = format!(
            "java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp {classpath} \
             org.apache.zookeeper.server.quorum.QuorumPeerMain {cfg} >>{log} 2>&1 &\n\
             zk=$!\necho $zk >{pid}\ncat >/dev/null\nkill -CONT $zk 2>/dev/null\nkill -9 $zk 2>/dev/null\nwait $zk\n",
            cfg = self.dir.join("zoo.cfg").display(),
            log = self.dir.join("zookeeper.log").display(),
            pid = self.dir.join("zookeeper.pid").display(),
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            // The shell's own "Killed" when a test SIGKILLs its node is noise; the node logs to its file.
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn a ZooKeeper node");
        let lifeline = child.stdin.take().expect("lifeline pipe");
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.pid().is_none() {
            assert!(Instant::now() < deadline, "ZooKeeper node {} wrote no pid", self.id);
            std::thread::sleep(Duration::from_millis(20));
        }
        self.running = Some((child, lifeline));
    }

    /// Ends the wrapper shell (which kills the node if it still runs) and reaps it.
    fn stop_shell(&mut self) {
        if let Some((mut child, lifeline)) = self.running.take() {
            drop(lifeline);
            let _ = child.wait();
        }
    }

    fn alive(&self) -> bool {
        self.pid().is_some_and(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')))
                .unwrap_or(false)
        })
    }
}

/// The running ensemble.
#[derive(Debug)]
pub struct Ensemble {
    nodes: Vec<Node>,
    _root: tempfile::TempDir,
}

/// What `srvr` says the node at `port` is (`leader`, `follower`), `None` while it does not serve.
pub fn mode(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(b"srvr").ok()?;
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map(|m| m.trim().to_string())
}

impl Ensemble {
    /// Three nodes (ids 1..=3) started and serving with one leader.
    pub async fn start() -> Ensemble {
        let root = tempfile::Builder::new()
            .prefix("kastle-ensemble-")
            .tempdir()
            .expect("tempdir");
        let ports: Vec<(u16, u16, u16)> = (0..3).map(|_| (free_port(), free_port(), free_port())).collect();
        let servers: String = ports
            .iter()
            .enumerate()
            .map(|(i, (_, quorum, election))| format!("server.{}=127.0.0.1:{quorum}:{election}\n", i + 1))
            .collect();
        let mut nodes = Vec::new();
        for (i, (client, _, _)) in ports.iter().enumerate() {
            let dir = root.path().join(format!("n{}", i + 1));
            std::fs::create_dir_all(dir.join("data")).expect("node dir");
            std::fs::write(dir.join("data/myid"), format!("{}\n", i + 1)).expect("myid");
            std::fs::write(
                dir.join("zoo.cfg"),
                format!(
                    "tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={client}\n\
                     clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n\
                     minSessionTimeout=1000\nmaxSessionTimeout=30000\nmaxClientCnxns=0\n{servers}",
                    dir.join("data").display()
                ),
            )
            .expect("zoo.cfg");
            nodes.push(Node {
                id: i + 1,
                client_port: *client,
                dir,
                running: None,
            });
        }
        for n in &mut nodes {
            n.start();
        }
        let ensemble = Ensemble { nodes, _root: root };
        ensemble.wait_serving(Duration::from_secs(90)).await;
        ensemble
    }

    /// `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3<chroot>`.
    pub fn connect(&self, chroot: &str) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.client_port))
            .collect();
        format!("{}{chroot}", hosts.join(","))
    }

    /// Waits until every running node serves, one of them as the leader.
    pub async fn wait_serving(&self, deadline: Duration) {
        let ports: Vec<u16> = self
            .nodes
            .iter()
            .filter(|n| n.running.is_some())
            .map(|n| n.client_port)
            .collect();
        super::wait_until_else(
            deadline,
            "the ensemble serving with a leader",
            || {
                let ports = ports.clone();
                async move {
                    let modes: Vec<Option<String>> =
                        tokio::task::spawn_blocking(move || ports.iter().map(|p| mode(*p)).collect())
                            .await
                            .unwrap_or_default();
                    modes.iter().all(Option::is_some)
                        && modes.iter().filter(|m| m.as_deref() == Some("leader")).count() == 1
                }
            },
            || self.logs(),
        )
        .await;
    }

    /// The id of the node that leads, if one does.
    pub async fn leader(&self) -> Option<usize> {
        let ports: Vec<(usize, u16)> = self.nodes.iter().map(|n| (n.id, n.client_port)).collect();
        tokio::task::spawn_blocking(move || {
            ports
                .iter()
                .find(|(_, p)| mode(*p).as_deref() == Some("leader"))
                .map(|(id, _)| *id)
        })
        .await
        .ok()
        .flatten()
    }

    fn node(&mut self, id: usize) -> &mut Node {
        &mut self.nodes[id - 1]
    }

    /// Sends `signal` (`TERM`, `KILL`) to node `id` and waits until it is gone.
    pub async fn stop(&mut self, id: usize, signal: &str) {
        let node = self.node(id);
        let pid = node.pid().expect("a running node");
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{signal} {pid}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.node(id).alive() {
            assert!(
                Instant::now() < deadline,
                "ZooKeeper node {id} did not exit after SIG{signal}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.node(id).stop_shell();
    }

    /// Starts node `id` again on its data dir.
    pub fn restart(&mut self, id: usize) {
        let node = self.node(id);
        node.stop_shell();
        node.start();
    }

    /// The tail of every node's log.
    pub fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|n| {
                let log = std::fs::read_to_string(n.dir.join("zookeeper.log")).unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                format!("node {}:\n{}", n.id, lines[lines.len().saturating_sub(15)..].join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            n.stop_shell();
        }
    }
}
