//! `kastle health`: a container healthcheck that asks the broker for metadata instead of only
//! probing its port. A broker is healthy when it answers a Metadata request (no topics) on its
//! listener, knows a live controller, and — when the expected broker id is known — lists itself
//! among the live brokers (it is registered in ZooKeeper and the controller has sent it
//! metadata). The address and id come from `--bootstrap`/`--broker-id` or from the broker's own
//! config (file plus `KASTLE_CFG_*`), so a Dockerfile `HEALTHCHECK` needs no per-broker flags.
//!
//! The verdict on a response is [`judge`], a pure function; [`probe`] does the I/O.

use std::fmt;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, MetadataRequest, MetadataResponse};

use crate::client::{BrokerConnection, ClientError};
use crate::config::EndPoint;

/// Client id the health probe sends (visible in broker request logs).
pub const CLIENT_ID: &str = "kastle-health";

/// What a healthy broker reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Healthy {
    pub controller: i32,
    pub live_brokers: Vec<i32>,
}

impl fmt::Display for Healthy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "controller {}, live brokers {:?}",
            self.controller, self.live_brokers
        )
    }
}

/// Why a probe failed.
#[derive(Debug, thiserror::Error)]
pub enum Unhealthy {
    #[error("cannot reach the broker: {0}")]
    Unreachable(#[from] ClientError),
    #[error("the broker does not speak Metadata v1..v12")]
    NoMetadata,
    #[error("the broker knows no controller yet (live brokers {live_brokers:?})")]
    NoController { live_brokers: Vec<i32> },
    #[error("broker {expected} is not among the live brokers {live_brokers:?} (not registered, or no metadata from the controller yet)")]
    NotLive { expected: i32, live_brokers: Vec<i32> },
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
}

/// The verdict on a Metadata response: a known controller, and `expected` (if any) among the
/// live brokers.
pub fn judge(response: &MetadataResponse, expected: Option<i32>) -> Result<Healthy, Unhealthy> {
    let mut live_brokers: Vec<i32> = response.brokers.iter().map(|b| b.node_id.0).collect();
    live_brokers.sort_unstable();
    if response.controller_id.0 < 0 {
        return Err(Unhealthy::NoController { live_brokers });
    }
    if let Some(id) = expected {
        if !live_brokers.contains(&id) {
            return Err(Unhealthy::NotLive {
                expected: id,
                live_brokers,
            });
        }
    }
    Ok(Healthy {
        controller: response.controller_id.0,
        live_brokers,
    })
}

/// The address to probe for a broker listening on `listeners`: the first one, with a wildcard
/// or empty host replaced by the loopback address (the probe runs next to the broker).
pub fn local_address(listeners: &[EndPoint]) -> Option<String> {
    let first = listeners.first()?;
    let host = match first.host.as_str() {
        "" | "0.0.0.0" => "127.0.0.1",
        "::" => "::1",
        other => other,
    };
    Some(if host.contains(':') {
        format!("[{host}]:{}", first.port)
    } else {
        format!("{host}:{}", first.port)
    })
}

/// Connects to `addr`, sends Metadata for no topics and judges the answer, all within `timeout`.
pub async fn probe(addr: &str, expected: Option<i32>, timeout: Duration) -> Result<Healthy, Unhealthy> {
    let ask = async {
        let conn = BrokerConnection::connect(addr, CLIENT_ID, timeout).await?;
        let version = conn
            .version_for(ApiKey::Metadata, (1, 12))
            .ok_or(Unhealthy::NoMetadata)?;
        // v1+: an empty topic list asks for brokers and the controller only.
        let request = MetadataRequest::default()
            .with_topics(Some(Vec::new()))
            .with_allow_auto_topic_creation(false);
        let response = conn.send(request, version).await?;
        conn.close();
        judge(&response, expected)
    };
    tokio::time::timeout(timeout, ask)
        .await
        .unwrap_or(Err(Unhealthy::TimedOut(timeout)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SecurityProtocol;
    use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
    use kafka_protocol::messages::BrokerId;

    fn response(controller: i32, brokers: &[i32]) -> MetadataResponse {
        MetadataResponse::default()
            .with_controller_id(BrokerId(controller))
            .with_brokers(
                brokers
                    .iter()
                    .map(|&id| MetadataResponseBroker::default().with_node_id(BrokerId(id)))
                    .collect(),
            )
    }

    fn endpoint(host: &str, port: u16) -> EndPoint {
        EndPoint {
            listener_name: "INTERNAL".into(),
            host: host.into(),
            port,
            security_protocol: SecurityProtocol::Plaintext,
        }
    }

    #[test]
    fn healthy_with_a_controller_and_itself_live() {
        let healthy = judge(&response(2, &[3, 1, 2]), Some(1)).expect("healthy");
        assert_eq!(healthy.controller, 2);
        assert_eq!(healthy.live_brokers, vec![1, 2, 3]);
        assert_eq!(healthy.to_string(), "controller 2, live brokers [1, 2, 3]");
    }

    #[test]
    fn without_an_expected_id_only_the_controller_matters() {
        assert!(judge(&response(1, &[1]), None).is_ok());
        assert!(matches!(
            judge(&response(-1, &[1]), None),
            Err(Unhealthy::NoController { .. })
        ));
    }

    #[test]
    fn unhealthy_when_not_among_the_live_brokers() {
        let err = judge(&response(2, &[2, 3]), Some(1)).expect_err("not live");
        assert!(matches!(err, Unhealthy::NotLive { expected: 1, .. }));
        assert!(err
            .to_string()
            .contains("broker 1 is not among the live brokers [2, 3]"));
    }

    #[test]
    fn probes_the_first_listener_on_loopback_when_bound_to_all_interfaces() {
        assert_eq!(
            local_address(&[endpoint("0.0.0.0", 9092), endpoint("", 19092)]).as_deref(),
            Some("127.0.0.1:9092")
        );
        assert_eq!(local_address(&[endpoint("", 9093)]).as_deref(), Some("127.0.0.1:9093"));
        assert_eq!(local_address(&[endpoint("::", 9094)]).as_deref(), Some("[::1]:9094"));
        assert_eq!(
            local_address(&[endpoint("kafka1", 9092)]).as_deref(),
            Some("kafka1:9092")
        );
        assert_eq!(local_address(&[]), None);
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        drop(listener);
        let err = probe(&addr, None, Duration::from_secs(2)).await.expect_err("closed");
        assert!(
            matches!(err, Unhealthy::Unreachable(_) | Unhealthy::TimedOut(_)),
            "{err}"
        );
    }
}
