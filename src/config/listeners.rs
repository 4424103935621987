//! Listener endpoints: `SecurityProtocol`, `EndPoint`, parsing of `listeners`,
//! `advertised.listeners` and `listener.security.protocol.map` the way Kafka's
//! `EndPoint.createEndPoint` / `CoreUtils.listenerListToEndPoints` do, and the per-list checks
//! (unique names, distinct ports, no advertised 0.0.0.0). Cross-key checks live in `validate`.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// Kafka's `SecurityProtocol` (the wire names are Kafka's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name: `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Whether kastle can serve a listener of this protocol: `PLAINTEXT`, `SSL` (rustls,
    /// `security::tls`), `SASL_PLAINTEXT` (`network::authentication`) and `SASL_SSL` (both, SASL
    /// inside the TLS session). No wildcard arm: a new protocol must be marked served (or not)
    /// here explicitly.
    pub fn is_served(self) -> bool {
        match self {
            SecurityProtocol::Plaintext
            | SecurityProtocol::Ssl
            | SecurityProtocol::SaslPlaintext
            | SecurityProtocol::SaslSsl => true,
        }
    }

    /// Whether a listener of this protocol runs TLS (`SSL`, `SASL_SSL`).
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SecurityProtocol {
    type Err = ();

    /// Case-insensitive, like Kafka's `SecurityProtocol.forName`.
    fn from_str(s: &str) -> Result<Self, ()> {
        match s.trim().to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Ok(SecurityProtocol::Plaintext),
            "SSL" => Ok(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Ok(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Ok(SecurityProtocol::SaslSsl),
            _ => Err(()),
        }
    }
}

/// One listener: where to bind (or what to advertise) and with which protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndPoint {
    /// Upper-cased, as Kafka normalises listener names.
    pub listener_name: String,
    /// Host without brackets; `""` means all interfaces (for `advertised.listeners`, Kafka
    /// advertises the machine's canonical host name instead).
    pub host: String,
    /// `0` in `listeners` means "any free port"; the bound port is advertised later.
    pub port: u16,
    pub security_protocol: SecurityProtocol,
}

impl fmt::Display for EndPoint {
    /// `NAME://host:port`, IPv6 hosts in brackets (Kafka's `Utils.formatAddress`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.listener_name, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.listener_name, self.host, self.port)
        }
    }
}

/// Why a listener string was rejected; turned into a `ConfigError` by the caller, which knows
/// the key and origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListenerProblem {
    /// The value is malformed; the string says what was expected.
    Malformed(String),
    /// A listener name has no entry in `listener.security.protocol.map`.
    Unmapped(String),
}

/// Parses `listener.security.protocol.map` (`NAME:PROTOCOL,...`, names upper-cased).
/// `Err` is the "expected ..." text.
pub(crate) fn parse_protocol_map(entries: &[String]) -> Result<BTreeMap<String, SecurityProtocol>, String> {
    let mut map = BTreeMap::new();
    for entry in entries.iter().filter(|e| !e.is_empty()) {
        let parsed = entry.split_once(':').and_then(|(name, proto)| {
            let name = name.trim().to_ascii_uppercase();
            let proto = proto.parse::<SecurityProtocol>().ok()?;
            (!name.is_empty()).then_some((name, proto))
        });
        let Some((name, proto)) = parsed else {
            return Err(format!(
                "NAME:PROTOCOL pairs with PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, \
                 SASL_SSL (bad entry \"{entry}\")"
            ));
        };
        if map.insert(name.clone(), proto).is_some() {
            return Err(format!("each listener name once (\"{name}\" appears twice)"));
        }
    }
    Ok(map)
}

/// Parses a listener list (`NAME://host:port,...`) and checks names are unique. When
/// `distinct_ports` (Kafka: `listeners`, not `advertised.listeners`), two listeners may share a
/// non-zero port only if one binds an IPv4 and the other an IPv6 address.
pub(crate) fn parse_listeners(
    items: &[String],
    protocol_map: &BTreeMap<String, SecurityProtocol>,
    distinct_ports: bool,
) -> Result<Vec<EndPoint>, ListenerProblem> {
    let mut endpoints: Vec<EndPoint> = Vec::new();
    for item in items.iter().filter(|i| !i.is_empty()) {
        let (name, host, port) = parse_one(item).ok_or_else(|| {
            ListenerProblem::Malformed(format!(
                "NAME://host:port, NAME://:port or NAME://[ipv6]:port with port 0-65535 \
                 (bad entry \"{item}\")"
            ))
        })?;
        let security_protocol = *protocol_map
            .get(&name)
            .ok_or_else(|| ListenerProblem::Unmapped(name.clone()))?;
        if endpoints.iter().any(|e| e.listener_name == name) {
            return Err(ListenerProblem::Malformed(format!(
                "each listener to have a different name (\"{name}\" appears twice)"
            )));
        }
        endpoints.push(EndPoint {
            listener_name: name,
            host,
            port,
            security_protocol,
        });
    }
    if distinct_ports {
        check_distinct_ports(&endpoints)?;
    }
    Ok(endpoints)
}

fn check_distinct_ports(endpoints: &[EndPoint]) -> Result<(), ListenerProblem> {
    let mut by_port: BTreeMap<u16, Vec<&EndPoint>> = BTreeMap::new();
    for e in endpoints.iter().filter(|e| e.port != 0) {
        by_port.entry(e.port).or_default().push(e);
    }
    for (port, eps) in by_port {
        let v4_v6_pair = match eps.as_slice() {
            [a, b] => {
                let v4 = |h: &str| h.parse::<Ipv4Addr>().is_ok();
                let v6 = |h: &str| h.parse::<Ipv6Addr>().is_ok();
                (v4(&a.host) && v6(&b.host)) || (v6(&a.host) && v4(&b.host))
            }
            _ => true,
        };
        if eps.len() > 1 && !v4_v6_pair {
            return Err(ListenerProblem::Malformed(format!(
                "each listener on a different port unless exactly one binds an IPv4 and the \
                 other an IPv6 address (port {port} is used twice)"
            )));
        }
    }
    Ok(())
}

/// `NAME://host:port` → (upper-cased name, host without brackets, port).
fn parse_one(item: &str) -> Option<(String, String, u16)> {
    let (name, authority) = item.split_once("://")?;
    let name = name.trim();
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
    if !name_ok {
        return None;
    }
    let (host, port) = parse_host_port(authority)?;
    Some((name.to_ascii_uppercase(), host, port))
}

/// `host:port`, `:port`, `[ipv6]:port` (also bare `::1:port`, as Kafka's regex allows) →
/// (host without brackets, port). Host characters are Kafka's: alphanumerics and `-%._:`.
pub(crate) fn parse_host_port(s: &str) -> Option<(String, u16)> {
    let (host, port) = s.rsplit_once(':')?;
    if port.is_empty() || !port.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let port: u16 = port.parse().ok()?;
    let host = match host.strip_prefix('[') {
        Some(inner) => inner.strip_suffix(']')?,
        None => host,
    };
    let host_ok = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '%' | '.' | '_' | ':'));
    host_ok.then(|| (host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_map() -> BTreeMap<String, SecurityProtocol> {
        let entries: Vec<String> = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
            .split(',')
            .map(String::from)
            .collect();
        parse_protocol_map(&entries).expect("default map parses")
    }

    fn list(s: &str) -> Vec<String> {
        s.split(',').map(|x| x.trim().to_string()).collect()
    }

    #[test]
    fn listener_strings_parse_like_kafka() {
        let eps = parse_listeners(
            &list("PLAINTEXT://:9092, ssl://broker1.example.com:9093,SASL_SSL://[::1]:0"),
            &default_map(),
            true,
        )
        .expect("valid");
        assert_eq!(eps[0].host, "");
        assert_eq!(eps[0].port, 9092);
        assert_eq!(eps[1].listener_name, "SSL");
        assert_eq!(eps[1].security_protocol, SecurityProtocol::Ssl);
        assert_eq!(eps[2].host, "::1");
        assert_eq!(eps[2].port, 0);
        let shown: Vec<String> = eps.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "PLAINTEXT://:9092",
                "SSL://broker1.example.com:9093",
                "SASL_SSL://[::1]:0"
            ]
        );
    }

    #[test]
    fn malformed_listeners_are_rejected() {
        for bad in [
            "PLAINTEXT:9092",
            "PLAINTEXT://host",
            "PLAINTEXT://host:99999",
            "://:9092",
            "PLAINTEXT://host:9092/x",
            "PLAINTEXT://[::1:9092",
            "PLAINTEXT://h st:1",
        ] {
            let r = parse_listeners(&list(bad), &default_map(), true);
            assert!(matches!(r, Err(ListenerProblem::Malformed(_))), "{bad}: {r:?}");
        }
    }

    #[test]
    fn a_listener_name_missing_from_the_map_is_reported_by_name() {
        let r = parse_listeners(&list("INTERNAL://:9092"), &default_map(), true);
        assert_eq!(r, Err(ListenerProblem::Unmapped("INTERNAL".into())));
    }

    #[test]
    fn listener_names_must_be_unique() {
        let r = parse_listeners(&list("PLAINTEXT://:9092,plaintext://:9093"), &default_map(), true);
        assert!(matches!(r, Err(ListenerProblem::Malformed(m)) if m.contains("different name")));
    }

    #[test]
    fn ports_must_differ_except_for_an_ipv4_ipv6_pair_or_port_zero() {
        let map = default_map();
        let clash = parse_listeners(&list("PLAINTEXT://:9092,SSL://:9092"), &map, true);
        assert!(matches!(clash, Err(ListenerProblem::Malformed(m)) if m.contains("port 9092")));
        assert!(parse_listeners(&list("PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092"), &map, true).is_ok());
        assert!(parse_listeners(&list("PLAINTEXT://:0,SSL://:0"), &map, true).is_ok());
        assert!(parse_listeners(&list("PLAINTEXT://:9092,SSL://:9092"), &map, false).is_ok());
    }

    #[test]
    fn protocol_maps_parse_case_insensitively_and_reject_bad_entries() {
        let map = parse_protocol_map(&list("internal:plaintext, EXTERNAL:SASL_SSL")).expect("valid");
        assert_eq!(map.get("INTERNAL"), Some(&SecurityProtocol::Plaintext));
        assert_eq!(map.get("EXTERNAL"), Some(&SecurityProtocol::SaslSsl));
        assert!(parse_protocol_map(&list("INTERNAL")).is_err());
        assert!(parse_protocol_map(&list("INTERNAL:TLS")).is_err());
        assert!(parse_protocol_map(&list("A:SSL,a:SSL")).is_err());
    }
}
