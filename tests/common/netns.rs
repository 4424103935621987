//! A network lab for partition tests: every broker in its own network namespace, joined by veth
//! pairs to a bridge in a hub namespace the lab creates; the test's own namespace (where
//! ZooKeeper and the clients run) joins the bridge too, at `.254`. Links are cut with blackhole
//! routes inside the lab's namespaces only (a blackhole route drops both directions of a TCP
//! connection: the replies have nowhere to go), so the host's own networking is never touched.
//!
//! Needs root and working `ip netns`; [`Lab::unavailable`] says why not, and tests skip with
//! that reason printed. Everything is removed on drop, also while a test panics (declare the
//! lab before the brokers, so the brokers die first).

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The lab's namespaces and links.
#[derive(Debug)]
pub struct Lab {
    id: String,
    /// The third octet of the lab's 10.213.x.0/24.
    subnet: u8,
    hub: String,
    brokers: Vec<String>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn must(args: &[&str]) {
    if let Err(e) = ip(args) {
        panic!("{e}");
    }
}

impl Lab {
    /// Why a lab cannot be built here, or `None` when it can.
    pub fn unavailable() -> Option<String> {
        let uid = Command::new("id").arg("-u").output().ok()?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return Some("network namespaces need root".to_string());
        }
        let probe = format!("ktp{}", std::process::id());
        if let Err(e) = ip(&["netns", "add", &probe]) {
            return Some(format!("`ip netns add` does not work here: {e}"));
        }
        let _ = ip(&["netns", "del", &probe]);
        None
    }

    /// A lab with brokers `1..=n` (namespaces and addresses `10.213.x.1..n`).
    pub fn new(n: usize) -> Lab {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let seq = COUNTER.fetch_add(1, Ordering::Relaxed);
        let id = format!(
            "{:04x}",
            (std::process::id().wrapping_mul(31).wrapping_add(seq)) & 0xffff
        );
        let used = Command::new("ip")
            .args(["-o", "-4", "addr"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let start = (std::process::id() + seq) % 200;
        let subnet = (0..200)
            .map(|k| ((start + k) % 200 + 20) as u8)
            .find(|x| !used.contains(&format!("10.213.{x}.")))
            .expect("a free 10.213.x.0/24");
        let mut lab = Lab {
            hub: format!("kth{id}"),
            id,
            subnet,
            brokers: Vec::new(),
        };
        let (hub, id) = (lab.hub.clone(), lab.id.clone());
        must(&["netns", "add", &hub]);
        must(&["-n", &hub, "link", "set", "lo", "up"]);
        must(&["-n", &hub, "link", "add", "br0", "type", "bridge"]);
        must(&["-n", &hub, "link", "set", "br0", "up"]);
        let (root, root_peer) = (format!("kr{id}"), format!("krh{id}"));
        must(&["link", "add", &root, "type", "veth", "peer", "name", &root_peer]);
        must(&["link", "set", &root_peer, "netns", &hub]);
        must(&["-n", &hub, "link", "set", &root_peer, "master", "br0", "up"]);
        must(&["addr", "add", &format!("{}/24", lab.host_ip()), "dev", &root]);
        must(&["link", "set", &root, "up"]);
        for i in 1..=n {
            let ns = format!("ktb{id}{i}");
            let (inner, outer) = (format!("kb{id}{i}"), format!("kbh{id}{i}"));
            must(&["netns", "add", &ns]);
            lab.brokers.push(ns.clone());
            must(&["-n", &ns, "link", "set", "lo", "up"]);
            must(&["link", "add", &inner, "type", "veth", "peer", "name", &outer]);
            must(&["link", "set", &outer, "netns", &hub]);
            must(&["-n", &hub, "link", "set", &outer, "master", "br0", "up"]);
            must(&["link", "set", &inner, "netns", &ns]);
            must(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", lab.broker_ip(i)),
                "dev",
                &inner,
            ]);
            must(&["-n", &ns, "link", "set", &inner, "up"]);
        }
        lab
    }

    /// The hub's and the brokers' namespace names.
    pub fn namespaces(&self) -> Vec<String> {
        std::iter::once(self.hub.clone())
            .chain(self.brokers.iter().cloned())
            .collect()
    }

    /// The test's (ZooKeeper's and the clients') address on the bridge.
    pub fn host_ip(&self) -> String {
        format!("10.213.{}.254", self.subnet)
    }

    /// Broker `i`'s address (1-based).
    pub fn broker_ip(&self, i: usize) -> String {
        format!("10.213.{}.{i}", self.subnet)
    }

    /// The command prefix that runs a program in broker `i`'s namespace.
    pub fn prefix(&self, i: usize) -> [&str; 4] {
        ["ip", "netns", "exec", &self.brokers[i - 1]]
    }

    fn blackhole(&self, i: usize, to: &str) {
        must(&[
            "-n",
            &self.brokers[i - 1],
            "route",
            "add",
            "blackhole",
            &format!("{to}/32"),
        ]);
    }

    /// Cuts every packet between brokers `a` and `b` (both directions).
    pub fn cut(&self, a: usize, b: usize) {
        self.blackhole(a, &self.broker_ip(b));
        self.blackhole(b, &self.broker_ip(a));
    }

    /// Cuts broker `i` from the test's namespace: ZooKeeper and the clients.
    pub fn cut_from_host(&self, i: usize) {
        self.blackhole(i, &self.host_ip());
    }

    /// Removes every cut.
    pub fn heal(&self) {
        for ns in &self.brokers {
            must(&["-n", ns, "route", "flush", "type", "blackhole"]);
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in &self.brokers {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["netns", "del", &self.hub]);
        let _ = ip(&["link", "del", &format!("kr{}", self.id)]);
    }
}
