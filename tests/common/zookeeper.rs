//! One real ZooKeeper per test binary.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use kastle::zk::{ConnectString, ZkSession};

/// The running server.
#[derive(Debug)]
pub struct ZooKeeperServer {
    pub port: u16,
    pub data_dir: std::path::PathBuf,
    /// Held until the process exits; its closing stops ZooKeeper.
    _lifeline: Mutex<ChildStdin>,
    /// The wrapper shell; never waited on, since it outlives every test by design.
    _shell: Mutex<std::process::Child>,
}

impl ZooKeeperServer {
    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:<port><chroot>`.
    pub fn connect(&self, chroot: &str) -> String {
        format!("127.0.0.1:{}{chroot}", self.port)
    }

    /// A session for assertions, rooted at `chroot` (created if missing).
    pub async fn session(&self, chroot: &str) -> ZkSession {
        let connect = ConnectString::parse(&self.connect(chroot)).expect("connect string");
        ZkSession::connect(&connect, Duration::from_secs(10), Duration::from_secs(10))
            .await
            .expect("test ZooKeeper session")
    }
}

/// The ZooKeeper of this test binary, started on first use.
pub fn zookeeper() -> &'static ZooKeeperServer {
    static SERVER: OnceLock<ZooKeeperServer> = OnceLock::new();
    SERVER.get_or_init(start)
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn start() -> ZooKeeperServer {
    let jar = "/usr/share/java/zookeeper.jar";
    assert!(
        std::path::Path::new(jar).exists(),
        "{jar} is missing: install Debian's zookeeper package (scripts/test does)"
    );
    let data_dir = tempfile::Builder::new()
        .prefix("kastle-zk-")
        .tempdir()
        .expect("tempdir")
        .keep();
    let port = free_port();
    let cfg = data_dir.join("zoo.cfg");
    std::fs::write(
        &cfg,
        format!(
            "tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n4lw.commands.whitelist=*\nminSessionTimeout=1000\nmaxSessionTimeout=30000\n\
             maxClientCnxns=0\n",
            data_dir.display()
        ),
    )
    .expect("write zoo.cfg");
    let classpath = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar";
    // The shell waits on its stdin (our lifeline); when this process goes, it stops ZooKeeper.
    let script = format!(
        "java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp {classpath} \
         org.apache.zookeeper.server.quorum.QuorumPeerMain {cfg} >{log} 2>&1 &\n\
         zk=$!\ncat >/dev/null\nkill $zk 2>/dev/null\nwait $zk\nrm -rf {dir}\n",
        cfg = cfg.display(),
        log = data_dir.join("zookeeper.log").display(),
        dir = data_dir.display(),
    );
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn ZooKeeper");
    let lifeline = child.stdin.take().expect("lifeline pipe");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !is_serving(port) {
        assert!(
            Instant::now() < deadline,
            "ZooKeeper did not start on port {port}; log: {}",
            std::fs::read_to_string(data_dir.join("zookeeper.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    ZooKeeperServer {
        port,
        data_dir,
        _lifeline: Mutex::new(lifeline),
        _shell: Mutex::new(child),
    }
}

/// `srvr` answers with the mode once the server serves requests.
fn is_serving(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"srvr").is_err() {
        return false;
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.contains("Mode: standalone")
}

impl Drop for ZooKeeperServer {
    fn drop(&mut self) {
        // Statics are not dropped; the lifeline does the work when the process exits.
        let _ = self._lifeline.lock().map(|mut l| l.flush());
    }
}
