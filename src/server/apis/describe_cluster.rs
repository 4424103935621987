//! DescribeCluster (KIP-700): the brokers alive in the metadata cache (their endpoint on the
//! listener the request came in on, and rack), the cluster id, the controller and the cluster's
//! authorized operations — what Metadata answers, without the topics. A ZooKeeper-mode broker
//! is a `BROKER` endpoint (v1's `endpoint_type` 1); asked for controllers it answers
//! MISMATCHED_ENDPOINT_TYPE, for a type no Kafka knows UNSUPPORTED_ENDPOINT_TYPE (both
//! INVALID_REQUEST at v0), as Kafka 3.9's `AuthHelper.computeDescribeClusterResponse`.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId as KpBrokerId, DescribeClusterRequest, DescribeClusterResponse};

use super::metadata::WARM_UP_WAIT;
use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;
use crate::protocol::authorized_operations::{if_requested, ResourceType};
use crate::protocol::error_codes as ec;
use crate::security::authorizer::acl::CLUSTER_NAME;
use crate::server::metadata_cache::LiveBroker;

/// Kafka's `EndpointType`: 1 brokers, 2 controllers; anything else is unknown.
const BROKER_ENDPOINT: i8 = 1;
const CONTROLLER_ENDPOINT: i8 = 2;

pub(super) async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let cache = &apis.metadata_cache;
    // As Metadata: a broker that has not heard from the controller yet would list nobody.
    cache.wait_initialized(WARM_UP_WAIT).await;
    let live = cache.live_brokers();
    let mut response = describe(
        ctx.api_version,
        &request,
        &apis.cluster_id,
        &live,
        &ctx.listener,
        cache.controller_id().map_or(-1, |c| c.0),
    );
    if response.error_code == 0 {
        response.cluster_authorized_operations = apis.authorized_operations(
            ctx,
            request.include_cluster_authorized_operations,
            ResourceType::Cluster,
            CLUSTER_NAME,
        );
    }
    response
}

/// The answer, from the live brokers and the controller id (pure).
pub(crate) fn describe(
    version: i16,
    request: &DescribeClusterRequest,
    cluster_id: &str,
    live: &[LiveBroker],
    listener: &str,
    controller_id: i32,
) -> DescribeClusterResponse {
    // v0 carries no endpoint type: the schema default (brokers).
    let wanted = if version >= 1 {
        request.endpoint_type
    } else {
        BROKER_ENDPOINT
    };
    if wanted != BROKER_ENDPOINT {
        let (code, message) = if wanted == CONTROLLER_ENDPOINT {
            (
                ec::MISMATCHED_ENDPOINT_TYPE,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
                    .to_string(),
            )
        } else {
            (
                ec::UNSUPPORTED_ENDPOINT_TYPE,
                format!("Unsupported endpoint type {wanted}"),
            )
        };
        let code = if version == 0 { ec::INVALID_REQUEST } else { code };
        return DescribeClusterResponse::default()
            .with_error_code(code)
            .with_error_message(Some(str_bytes(&message)));
    }
    let brokers: Vec<DescribeClusterBroker> = live
        .iter()
        .filter_map(|b| {
            let ep = b.endpoints.iter().find(|e| e.listener == listener)?;
            Some(
                DescribeClusterBroker::default()
                    .with_broker_id(KpBrokerId(b.id.0))
                    .with_host(str_bytes(&ep.host))
                    .with_port(ep.port)
                    .with_rack(b.rack.as_deref().map(str_bytes)),
            )
        })
        .collect();
    // A controller the list does not name is reported as none, so clients are not confused.
    let controller = if brokers.iter().any(|b| b.broker_id.0 == controller_id) {
        controller_id
    } else {
        -1
    };
    DescribeClusterResponse::default()
        .with_endpoint_type(BROKER_ENDPOINT)
        .with_cluster_id(str_bytes(cluster_id))
        .with_controller_id(KpBrokerId(controller))
        .with_cluster_authorized_operations(if_requested(
            request.include_cluster_authorized_operations,
            ResourceType::Cluster,
        ))
        .with_brokers(brokers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::authorized_operations::{authorized_operations, NOT_REQUESTED};
    use crate::server::metadata_cache::BrokerEndpoint;
    use crate::types::BrokerId;

    fn broker(id: i32, listener: &str, rack: Option<&str>) -> LiveBroker {
        LiveBroker {
            id: BrokerId(id),
            endpoints: vec![BrokerEndpoint {
                listener: listener.to_string(),
                host: format!("host{id}"),
                port: 9090 + id,
            }],
            rack: rack.map(str::to_string),
        }
    }

    #[test]
    fn lists_the_live_brokers_on_the_request_listener_with_racks_and_the_controller() {
        let live = [
            broker(1, "PLAINTEXT", Some("r1")),
            broker(2, "PLAINTEXT", None),
            broker(3, "INTERNAL", None),
        ];
        let request = DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
        let r = describe(1, &request, "cid", &live, "PLAINTEXT", 2);
        assert_eq!(r.error_code, ec::NONE);
        assert_eq!(r.endpoint_type, BROKER_ENDPOINT);
        assert_eq!(r.cluster_id.as_str(), "cid");
        assert_eq!(r.controller_id.0, 2);
        let listed: Vec<(i32, &str, i32, Option<&str>)> = r
            .brokers
            .iter()
            .map(|b| (b.broker_id.0, b.host.as_str(), b.port, b.rack.as_deref()))
            .collect();
        assert_eq!(listed, vec![(1, "host1", 9091, Some("r1")), (2, "host2", 9092, None)]);
        assert_eq!(
            r.cluster_authorized_operations,
            authorized_operations(ResourceType::Cluster)
        );
        let plain = describe(0, &DescribeClusterRequest::default(), "cid", &live, "PLAINTEXT", 1);
        assert_eq!(plain.cluster_authorized_operations, NOT_REQUESTED);
    }

    #[test]
    fn a_controller_missing_from_the_list_is_reported_as_none() {
        let live = [broker(1, "PLAINTEXT", None), broker(3, "INTERNAL", None)];
        let r = describe(0, &DescribeClusterRequest::default(), "cid", &live, "PLAINTEXT", 3);
        assert_eq!(r.controller_id.0, -1);
        let r = describe(0, &DescribeClusterRequest::default(), "cid", &live, "PLAINTEXT", -1);
        assert_eq!(r.controller_id.0, -1);
    }

    #[test]
    fn other_endpoint_types_are_refused_as_kafka_refuses_them() {
        let live = [broker(1, "PLAINTEXT", None)];
        let ask = |t: i8| DescribeClusterRequest::default().with_endpoint_type(t);
        let r = describe(1, &ask(2), "cid", &live, "PLAINTEXT", 1);
        assert_eq!(r.error_code, ec::MISMATCHED_ENDPOINT_TYPE);
        assert!(r.brokers.is_empty());
        let r = describe(1, &ask(7), "cid", &live, "PLAINTEXT", 1);
        assert_eq!(r.error_code, ec::UNSUPPORTED_ENDPOINT_TYPE);
        assert_eq!(r.error_message.as_deref(), Some("Unsupported endpoint type 7"));
        // v0 has no endpoint type on the wire: always brokers.
        assert_eq!(describe(0, &ask(2), "cid", &live, "PLAINTEXT", 1).error_code, ec::NONE);
    }
}
