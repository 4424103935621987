//! Connection counting for `max.connections`, `max.connections.per.ip` and
//! `max.connections.per.ip.overrides` (Kafka's `ConnectionQuotas`), shared by every listener
//! of one socket server. The limits change live ([`ConnectionQuotas::update`], Kafka's
//! `updateMaxConnections` / `updateMaxConnectionsPerIp`): new connections meet the new limits,
//! connections already open stay open, as in Kafka.
//!
//! A slot is held by a [`ConnectionPermit`] and given back when the permit drops, so a
//! connection task that ends any way at all (close, error, panic, abort) frees its slot.
//! Owns counting only; accepting and closing sockets belong to the socket server.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Why a new connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionRefused {
    #[error("address {ip} already has the configured maximum of {max} connections (max.connections.per.ip)")]
    TooManyFromIp { ip: IpAddr, max: usize },
    #[error("the broker already has the configured maximum of {max} connections (max.connections)")]
    TooManyTotal { max: usize },
}

/// The limits new connections are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// `max.connections`.
    pub max_connections: usize,
    /// `max.connections.per.ip`.
    pub max_connections_per_ip: usize,
    /// `max.connections.per.ip.overrides`: a limit per address instead of the per-IP one.
    pub per_ip_overrides: HashMap<IpAddr, usize>,
}

impl ConnectionLimits {
    pub fn new(max_connections: usize, max_connections_per_ip: usize) -> Self {
        Self {
            max_connections,
            max_connections_per_ip,
            per_ip_overrides: HashMap::new(),
        }
    }

    /// The limit for `ip`: its override, else `max.connections.per.ip`.
    pub fn per_ip(&self, ip: IpAddr) -> usize {
        self.per_ip_overrides
            .get(&ip)
            .copied()
            .unwrap_or(self.max_connections_per_ip)
    }
}

/// Parses `max.connections.per.ip.overrides` (`host:count,host:count`). Kafka resolves host
/// names too; kastle takes IP addresses only and returns the entries it skipped.
pub fn parse_overrides(value: &str) -> (HashMap<IpAddr, usize>, Vec<String>) {
    let mut out = HashMap::new();
    let mut skipped = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let parsed = entry
            .rsplit_once(':')
            .and_then(|(host, n)| Some((host.trim().parse::<IpAddr>().ok()?, n.trim().parse::<usize>().ok()?)));
        match parsed {
            Some((ip, n)) => {
                out.insert(ip, n);
            }
            None => skipped.push(entry.to_string()),
        }
    }
    (out, skipped)
}

/// Live connection counts against the limits.
#[derive(Debug)]
pub struct ConnectionQuotas {
    counts: Mutex<Counts>,
}

#[derive(Debug)]
struct Counts {
    limits: ConnectionLimits,
    total: usize,
    /// Only addresses with at least one live connection, so the map cannot grow without bound.
    per_ip: HashMap<IpAddr, usize>,
}

impl ConnectionQuotas {
    pub fn new(max_connections: usize, max_connections_per_ip: usize) -> Arc<Self> {
        Self::with_limits(ConnectionLimits::new(max_connections, max_connections_per_ip))
    }

    pub fn with_limits(limits: ConnectionLimits) -> Arc<Self> {
        Arc::new(Self {
            counts: Mutex::new(Counts {
                limits,
                total: 0,
                per_ip: HashMap::new(),
            }),
        })
    }

    /// Replaces the limits; connections already open are kept.
    pub fn update(&self, limits: ConnectionLimits) {
        let mut counts = self.lock();
        if counts.limits != limits {
            tracing::info!(?limits, "connection limits updated");
            counts.limits = limits;
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> ConnectionLimits {
        self.lock().limits.clone()
    }

    /// Takes a slot for a connection from `ip`, or says which limit it would break.
    /// The per-IP limit is checked first, as Kafka does.
    pub fn try_acquire(self: &Arc<Self>, ip: IpAddr) -> Result<ConnectionPermit, ConnectionRefused> {
        let mut counts = self.lock();
        let from_ip = counts.per_ip.get(&ip).copied().unwrap_or(0);
        let per_ip = counts.limits.per_ip(ip);
        if from_ip >= per_ip {
            return Err(ConnectionRefused::TooManyFromIp { ip, max: per_ip });
        }
        if counts.total >= counts.limits.max_connections {
            return Err(ConnectionRefused::TooManyTotal {
                max: counts.limits.max_connections,
            });
        }
        counts.total += 1;
        counts.per_ip.insert(ip, from_ip + 1);
        Ok(ConnectionPermit {
            quotas: Arc::clone(self),
            ip,
        })
    }

    /// Live connections from `ip`.
    pub fn count(&self, ip: IpAddr) -> usize {
        self.lock().per_ip.get(&ip).copied().unwrap_or(0)
    }

    /// Live connections in total.
    pub fn total(&self) -> usize {
        self.lock().total
    }

    fn release(&self, ip: IpAddr) {
        let mut counts = self.lock();
        counts.total = counts.total.saturating_sub(1);
        if let Some(n) = counts.per_ip.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                counts.per_ip.remove(&ip);
            }
        }
    }

    /// The counters stay consistent even if a holder panicked: every update is a single step.
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One counted connection; dropping it frees the slot.
#[derive(Debug)]
pub struct ConnectionPermit {
    quotas: Arc<ConnectionQuotas>,
    ip: IpAddr,
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        self.quotas.release(self.ip);
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn the_per_ip_limit_refuses_only_that_address() {
        let quotas = ConnectionQuotas::new(100, 2);
        let _a1 = quotas.try_acquire(A);
        let _a2 = quotas.try_acquire(A);
        assert_eq!(
            quotas.try_acquire(A).err(),
            Some(ConnectionRefused::TooManyFromIp { ip: A, max: 2 })
        );
        assert!(quotas.try_acquire(B).is_ok());
    }

    #[test]
    fn the_total_limit_counts_every_address() {
        let quotas = ConnectionQuotas::new(2, 100);
        let _a = quotas.try_acquire(A);
        let _b = quotas.try_acquire(B);
        assert_eq!(
            quotas.try_acquire(B).err(),
            Some(ConnectionRefused::TooManyTotal { max: 2 })
        );
    }

    #[test]
    fn dropping_a_permit_frees_its_slot_and_forgets_idle_addresses() {
        let quotas = ConnectionQuotas::new(1, 1);
        let permit = quotas.try_acquire(A);
        assert!(permit.is_ok());
        assert!(quotas.try_acquire(A).is_err());
        drop(permit);
        assert_eq!((quotas.count(A), quotas.total()), (0, 0));
        assert!(quotas.lock().per_ip.is_empty());
        assert!(quotas.try_acquire(A).is_ok());
    }

    #[test]
    fn lowered_limits_refuse_new_connections_and_keep_open_ones() {
        let quotas = ConnectionQuotas::new(100, 100);
        let a1 = quotas.try_acquire(A).expect("a1");
        let _a2 = quotas.try_acquire(A).expect("a2");
        quotas.update(ConnectionLimits::new(100, 1));
        assert_eq!((quotas.count(A), quotas.total()), (2, 2), "open connections stay");
        assert_eq!(
            quotas.try_acquire(A).err(),
            Some(ConnectionRefused::TooManyFromIp { ip: A, max: 1 })
        );
        drop(a1);
        assert!(quotas.try_acquire(A).is_err(), "still one open, at the limit");
        quotas.update(ConnectionLimits::new(1, 100));
        assert_eq!(
            quotas.try_acquire(B).err(),
            Some(ConnectionRefused::TooManyTotal { max: 1 })
        );
    }

    #[test]
    fn an_override_replaces_the_per_ip_limit_for_its_address() {
        let (overrides, skipped) = parse_overrides(" 10.0.0.1:3, localhost:5,bad,::1:2");
        assert_eq!(skipped, ["localhost:5", "bad"]);
        assert_eq!(overrides.get(&A), Some(&3));
        assert_eq!(overrides.get(&"::1".parse::<IpAddr>().expect("ip")), Some(&2));
        let quotas = ConnectionQuotas::with_limits(ConnectionLimits {
            per_ip_overrides: overrides,
            ..ConnectionLimits::new(100, 1)
        });
        let held: Vec<_> = (0..3).map(|_| quotas.try_acquire(A)).collect();
        assert!(held.iter().all(Result::is_ok));
        assert_eq!(
            quotas.try_acquire(A).err(),
            Some(ConnectionRefused::TooManyFromIp { ip: A, max: 3 })
        );
        let _b = quotas.try_acquire(B).expect("b");
        assert!(quotas.try_acquire(B).is_err(), "the default for others");
    }
}
