//! `zookeeper.connect` parsing: `host:port[,host:port...][/chroot]`, as Kafka accepts it.

use std::fmt;

/// A parsed `zookeeper.connect` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    /// `host:port,...` as given.
    pub servers: String,
    /// The chroot (`/kafka`), without a trailing slash; `None` for the root.
    pub chroot: Option<String>,
}

/// Why a connect string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid zookeeper.connect {value:?}: {reason}")]
pub struct ConnectStringError {
    pub value: String,
    pub reason: &'static str,
}

impl ConnectString {
    pub fn parse(value: &str) -> Result<Self, ConnectStringError> {
        let err = |reason| ConnectStringError {
            value: value.to_string(),
            reason,
        };
        let value_trimmed = value.trim();
        let (servers, chroot) = match value_trimmed.find('/') {
            Some(i) => (&value_trimmed[..i], Some(&value_trimmed[i..])),
            None => (value_trimmed, None),
        };
        if servers.is_empty() {
            return Err(err("expected host:port[,host:port...][/chroot]"));
        }
        for server in servers.split(',') {
            let (host, port) = server
                .rsplit_once(':')
                .ok_or_else(|| err("every server needs host:port"))?;
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(err("every server needs host:port with a numeric port"));
            }
        }
        let chroot = match chroot.map(|c| c.trim_end_matches('/')) {
            None | Some("") => None,
            Some(c) if c.contains("//") || c.split('/').any(|seg| seg == "." || seg == "..") => {
                return Err(err("the chroot must be an absolute ZooKeeper path"))
            }
            Some(c) => Some(c.to_string()),
        };
        Ok(ConnectString {
            servers: servers.to_string(),
            chroot,
        })
    }
}

impl fmt::Display for ConnectString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.servers, self.chroot.as_deref().unwrap_or(""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chroot_is_split_from_the_server_list() {
        let c = ConnectString::parse("zk1:2181,zk2:2182/kafka/prod").expect("valid");
        assert_eq!(c.servers, "zk1:2181,zk2:2182");
        assert_eq!(c.chroot.as_deref(), Some("/kafka/prod"));
        assert_eq!(c.to_string(), "zk1:2181,zk2:2182/kafka/prod");
    }

    #[test]
    fn a_bare_slash_means_no_chroot() {
        assert_eq!(ConnectString::parse("127.0.0.1:2181/").expect("valid").chroot, None);
        assert_eq!(ConnectString::parse("127.0.0.1:2181").expect("valid").chroot, None);
    }

    #[test]
    fn servers_without_ports_are_refused() {
        assert!(ConnectString::parse("zk1").is_err());
        assert!(ConnectString::parse("zk1:abc").is_err());
        assert!(ConnectString::parse("/kafka").is_err());
        assert!(ConnectString::parse("zk:2181/a/../b").is_err());
    }
}
