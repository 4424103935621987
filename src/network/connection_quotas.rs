//! Connection counting for `max.connections` and `max.connections.per.ip` (Kafka's
//! `ConnectionQuotas`), shared by every listener of one socket server.
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

/// Live connection counts against the two limits.
#[derive(Debug)]
pub struct ConnectionQuotas {
    max_connections: usize,
    max_connections_per_ip: usize,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    /// Only addresses with at least one live connection, so the map cannot grow without bound.
    per_ip: HashMap<IpAddr, usize>,
}

impl ConnectionQuotas {
    pub fn new(max_connections: usize, max_connections_per_ip: usize) -> Arc<Self> {
        Arc::new(Self {
            max_connections,
            max_connections_per_ip,
            counts: Mutex::new(Counts::default()),
        })
    }

    /// Takes a slot for a connection from `ip`, or says which limit it would break.
    /// The per-IP limit is checked first, as Kafka does.
    pub fn try_acquire(self: &Arc<Self>, ip: IpAddr) -> Result<ConnectionPermit, ConnectionRefused> {
        let mut counts = self.lock();
        let from_ip = counts.per_ip.get(&ip).copied().unwrap_or(0);
        if from_ip >= self.max_connections_per_ip {
            return Err(ConnectionRefused::TooManyFromIp {
                ip,
                max: self.max_connections_per_ip,
            });
        }
        if counts.total >= self.max_connections {
            return Err(ConnectionRefused::TooManyTotal {
                max: self.max_connections,
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
}
