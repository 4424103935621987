//! One real ZooKeeper per test binary, private ones for tests that pause or stop theirs, and
//! secured ones (SASL DIGEST-MD5 through a JAAS `Server` section, TLS on a `secureClientPort`
//! served by Netty beside the plaintext port) for the ZooKeeper security tests.

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
    /// The TLS port (`secureClientPort`) when [`Secured::tls`] asked for one.
    pub secure_port: Option<u16>,
    /// The address it listens on (`127.0.0.1` unless started with [`ZooKeeperServer::start_private_on`]).
    pub host: String,
    pub data_dir: std::path::PathBuf,
    /// Held until the process exits; its closing stops ZooKeeper.
    _lifeline: Mutex<ChildStdin>,
    /// The wrapper shell; never waited on, since it outlives every test by design.
    _shell: Mutex<std::process::Child>,
    /// The Java process itself (for SIGSTOP/SIGCONT).
    pid: u32,
}

impl ZooKeeperServer {
    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// `127.0.0.1:<port><chroot>`.
    pub fn connect(&self, chroot: &str) -> String {
        format!("{}:{}{chroot}", self.host, self.port)
    }

    /// `127.0.0.1:<secure port><chroot>`; panics if the server has no TLS port.
    pub fn secure_connect(&self, chroot: &str) -> String {
        format!(
            "127.0.0.1:{}{chroot}",
            self.secure_port.expect("a ZooKeeper started with TLS")
        )
    }

    /// A session for assertions, rooted at `chroot` (created if missing).
    pub async fn session(&self, chroot: &str) -> ZkSession {
        let connect = ConnectString::parse(&self.connect(chroot)).expect("connect string");
        ZkSession::connect(&connect, Duration::from_secs(10), Duration::from_secs(10))
            .await
            .expect("test ZooKeeper session")
    }
}

/// How a secured ZooKeeper authenticates its clients.
#[derive(Debug, Clone, Default)]
pub struct Secured {
    /// `(user, password)` pairs the JAAS `Server` section's DigestLoginModule accepts; SASL is
    /// enabled (`authProvider.1=...SASLAuthenticationProvider`) when there is at least one.
    pub sasl_users: Vec<(String, String)>,
    /// `sessionRequireClientSASLAuth=true`: sessions that do not authenticate are closed.
    pub require_sasl: bool,
    /// TLS on a second port (`secureClientPort`, `NettyServerCnxnFactory`).
    pub tls: Option<SecuredTls>,
}

/// ZooKeeper's own TLS settings (`ssl.*` in zoo.cfg), PEM files as ZooKeeper 3.8 reads them.
#[derive(Debug, Clone)]
pub struct SecuredTls {
    /// Private key and certificate chain in one PEM file (`ssl.keyStore.location`).
    pub keystore_pem: std::path::PathBuf,
    /// The CA certificates client certificates must chain to (`ssl.trustStore.location`).
    pub truststore_pem: std::path::PathBuf,
    /// `ssl.clientAuth`: `none`, `want` or `need` (ZooKeeper's default is `need`).
    pub client_auth: &'static str,
}

impl ZooKeeperServer {
    /// A ZooKeeper of the caller's own, for a test that pauses it (SIGSTOP stops every session
    /// on the server, so the binary's shared one would disturb other tests). Stopped on drop.
    pub fn start_private() -> ZooKeeperServer {
        start()
    }

    /// A private ZooKeeper listening on `host` (e.g. a bridge address that brokers in network
    /// namespaces reach). Stopped on drop.
    pub fn start_private_on(host: &str) -> ZooKeeperServer {
        start_on(&Secured::default(), host)
    }

    /// A private ZooKeeper configured as `secured` says. Stopped on drop.
    pub fn start_secured(secured: &Secured) -> ZooKeeperServer {
        start_with(secured)
    }

    /// SIGSTOPs the server: every client sees it stop answering, as in a long GC pause or a
    /// network partition, and its session clock stops with it. Resumed by the guard's drop.
    pub fn pause(&self) -> Paused<'_> {
        signal(self.pid, "STOP");
        Paused { server: self }
    }
}

/// A paused ZooKeeper; dropping it (also while a test panics) resumes the server.
#[derive(Debug)]
pub struct Paused<'a> {
    server: &'a ZooKeeperServer,
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        signal(self.server.pid, "CONT");
    }
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} {pid} failed");
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
    start_with(&Secured::default())
}

fn start_with(secured: &Secured) -> ZooKeeperServer {
    start_on(secured, "127.0.0.1")
}

fn start_on(secured: &Secured, host: &str) -> ZooKeeperServer {
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
    let mut zoo_cfg = format!(
        "tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={port}\nclientPortAddress={host}\n\
         admin.enableServer=false\n4lw.commands.whitelist=*\nminSessionTimeout=1000\nmaxSessionTimeout=30000\n\
         maxClientCnxns=0\n",
        data_dir.display()
    );
    let secure_port = secured.tls.as_ref().map(|tls| {
        let secure_port = free_port();
        zoo_cfg.push_str(&format!(
            "secureClientPort={secure_port}\nsecureClientPortAddress=127.0.0.1\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={}\nssl.keyStore.type=PEM\n\
             ssl.trustStore.location={}\nssl.trustStore.type=PEM\nssl.clientAuth={}\n",
            tls.keystore_pem.display(),
            tls.truststore_pem.display(),
            tls.client_auth
        ));
        secure_port
    });
    let mut jvm_args = String::new();
    if !secured.sasl_users.is_empty() {
        zoo_cfg.push_str("authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n");
        if secured.require_sasl {
            zoo_cfg.push_str("sessionRequireClientSASLAuth=true\n");
        }
        let users: String = secured
            .sasl_users
            .iter()
            .map(|(user, password)| format!("\n  user_{user}=\"{password}\""))
            .collect();
        let jaas = data_dir.join("zookeeper_jaas.conf");
        std::fs::write(
            &jaas,
            format!("Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required{users};\n}};\n"),
        )
        .expect("write the server JAAS file");
        jvm_args = format!("-Djava.security.auth.login.config={} ", jaas.display());
    }
    std::fs::write(&cfg, zoo_cfg).expect("write zoo.cfg");
    let mut classpath =
        "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar".to_string();
    if secured.tls.is_some() {
        // NettyServerCnxnFactory (Debian's libnetty-java, a dependency of its zookeeper package).
        for jar in [
            "buffer",
            "codec",
            "common",
            "handler",
            "resolver",
            "transport",
            "transport-native-unix-common",
        ] {
            classpath.push_str(&format!(":/usr/share/java/netty-{jar}.jar"));
        }
    }
    // The shell waits on its stdin (our lifeline); when this process goes, it stops ZooKeeper.
    let script = format!(
        "java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 {jvm_args}-cp {classpath} \
         org.apache.zookeeper.server.quorum.QuorumPeerMain {cfg} >{log} 2>&1 &\n\
         zk=$!\necho $zk >{pid}\ncat >/dev/null\nkill -CONT $zk 2>/dev/null\nkill $zk 2>/dev/null\nwait $zk\nrm -rf {dir}\n",
        cfg = cfg.display(),
        log = data_dir.join("zookeeper.log").display(),
        pid = data_dir.join("zookeeper.pid").display(),
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
    while !is_serving(host, port) {
        assert!(
            Instant::now() < deadline,
            "ZooKeeper did not start on port {port}; log: {}",
            std::fs::read_to_string(data_dir.join("zookeeper.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    while secure_port.is_some_and(|p| TcpStream::connect(("127.0.0.1", p)).is_err()) {
        assert!(
            Instant::now() < deadline,
            "ZooKeeper did not open its TLS port {secure_port:?}; log: {}",
            std::fs::read_to_string(data_dir.join("zookeeper.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = std::fs::read_to_string(data_dir.join("zookeeper.pid"))
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .expect("ZooKeeper's pid file");
    ZooKeeperServer {
        pid,
        port,
        secure_port,
        host: host.to_string(),
        data_dir,
        _lifeline: Mutex::new(lifeline),
        _shell: Mutex::new(child),
    }
}

/// `srvr` answers with the mode once the server serves requests.
fn is_serving(host: &str, port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect((host, port)) else {
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
        // The shared server is a static and never dropped: its lifeline closes when the process
        // exits. A private one is dropped with its test: closing the lifeline stops it.
        let _ = self._lifeline.lock().map(|mut l| l.flush());
    }
}
