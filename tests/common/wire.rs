//! A minimal Kafka-protocol requester for tests: one TCP connection, one request at a time,
//! encoded and decoded with the `kafka-protocol` crate. Tests use it to act as the controller
//! (LeaderAndIsr, UpdateMetadata) until the controller exists, and to poke the broker directly.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::leader_and_isr_request::{LeaderAndIsrPartitionState, LeaderAndIsrTopicState};
use kafka_protocol::messages::update_metadata_request::{
    UpdateMetadataBroker, UpdateMetadataEndpoint, UpdateMetadataPartitionState, UpdateMetadataTopicState,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, LeaderAndIsrRequest, LeaderAndIsrResponse, RequestHeader, ResponseHeader, TopicName,
    UpdateMetadataRequest, UpdateMetadataResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One connection to a broker.
pub struct Wire {
    stream: TcpStream,
    correlation: i32,
}

impl Wire {
    pub async fn connect(addr: &str) -> Wire {
        Wire {
            stream: TcpStream::connect(addr).await.expect("connect to broker"),
            correlation: 0,
        }
    }

    /// The size-prefixed frame of `request` at `version` under the next correlation id.
    fn frame<R: Request + Encodable>(&mut self, request: &R, version: i16) -> BytesMut {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("kastle-test")));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, R::header_version(version))
            .expect("encode header");
        request.encode(&mut body, version).expect("encode request");
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(body.len() as i32);
        frame.extend_from_slice(&body);
        frame
    }

    /// Connects, or `None` (a broker that is down or paused).
    pub async fn try_connect(addr: &str, timeout: std::time::Duration) -> Option<Wire> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .ok()?
            .ok()?;
        Some(Wire { stream, correlation: 0 })
    }

    /// [`Wire::send`] for brokers that may die or stall: `None` instead of a panic when the
    /// connection fails or no answer comes within `timeout`.
    pub async fn try_send<R: Request + Encodable>(
        &mut self,
        request: &R,
        version: i16,
        timeout: std::time::Duration,
    ) -> Option<R::Response>
    where
        R::Response: Decodable + HeaderVersion,
    {
        let frame = self.frame(request, version);
        let exchange = async {
            self.stream.write_all(&frame).await.ok()?;
            let size = self.stream.read_i32().await.ok()?;
            let mut buf = vec![0u8; usize::try_from(size).ok()?];
            self.stream.read_exact(&mut buf).await.ok()?;
            Some(buf)
        };
        let mut bytes = Bytes::from(tokio::time::timeout(timeout, exchange).await.ok()??);
        let api_key = ApiKey::try_from(R::KEY).ok()?;
        let header = ResponseHeader::decode(&mut bytes, api_key.response_header_version(version)).ok()?;
        if header.correlation_id != self.correlation {
            return None;
        }
        R::Response::decode(&mut bytes, version).ok()
    }

    /// Sends `request` at `version` and decodes the response.
    pub async fn send<R: Request + Encodable>(&mut self, request: &R, version: i16) -> R::Response
    where
        R::Response: Decodable + HeaderVersion,
    {
        let correlation = self.write(request, version).await;
        self.read::<R>(version, correlation).await
    }

    /// Sends `request` without waiting for its response (pipelining); returns its
    /// correlation id for [`Wire::read`].
    pub async fn write<R: Request + Encodable>(&mut self, request: &R, version: i16) -> i32 {
        let frame = self.frame(request, version);
        self.stream.write_all(&frame).await.expect("write request");
        self.correlation
    }

    /// Reads the next response, which must be the one to the request sent as `correlation`.
    pub async fn read<R: Request>(&mut self, version: i16, correlation: i32) -> R::Response
    where
        R::Response: Decodable + HeaderVersion,
    {
        let size = self.stream.read_i32().await.expect("response size");
        let mut buf = vec![0u8; size as usize];
        self.stream.read_exact(&mut buf).await.expect("response body");
        let mut bytes = Bytes::from(buf);
        let api_key = ApiKey::try_from(R::KEY).expect("known api");
        let header = ResponseHeader::decode(&mut bytes, api_key.response_header_version(version)).expect("header");
        assert_eq!(header.correlation_id, correlation, "responses come back in order");
        let response = R::Response::decode(&mut bytes, version).expect("decode response");
        assert!(!bytes.has_remaining(), "response fully consumed");
        response
    }
}

/// The controller epoch the test controller uses: far above what the brokers' own controller
/// reaches in a test, so brokers refuse the real controller's (stale) requests and the test's
/// view of the cluster stands.
pub const TEST_CONTROLLER_EPOCH: i32 = 1_000;

/// A topic the test controller tells brokers about.
pub struct TestTopic {
    pub name: String,
    pub id: uuid::Uuid,
    /// Partition → (leader, replicas).
    pub partitions: Vec<(i32, i32, Vec<i32>)>,
}

/// Acts as the controller through kastle's internal client (the seam the controller and the
/// replication tests use): UpdateMetadata (brokers + partitions), then LeaderAndIsr.
pub async fn act_as_controller(
    addr: &str,
    broker_epoch: i64,
    brokers: &[(i32, String, i32)],
    topics: &[TestTopic],
    leader_epoch: i32,
) {
    send_update_metadata(addr, broker_epoch, brokers, topics, leader_epoch).await;
    send_leader_and_isr(addr, broker_epoch, brokers[0].0, topics, leader_epoch).await;
}

async fn test_controller_client(addr: &str) -> kastle::client::BrokerConnection {
    kastle::client::BrokerConnection::connect(addr, "test-controller", std::time::Duration::from_secs(10))
        .await
        .expect("internal client connects")
}

/// The test controller's UpdateMetadata alone: what the broker's metadata cache (and so every
/// client) learns, whether or not its replicas have been told (LeaderAndIsr) yet.
pub async fn send_update_metadata(
    addr: &str,
    broker_epoch: i64,
    brokers: &[(i32, String, i32)],
    topics: &[TestTopic],
    leader_epoch: i32,
) {
    let client = test_controller_client(addr).await;
    let live = brokers
        .iter()
        .map(|(id, host, port)| {
            UpdateMetadataBroker::default()
                .with_id(BrokerId(*id))
                .with_endpoints(vec![UpdateMetadataEndpoint::default()
                    .with_host(StrBytes::from_string(host.clone()))
                    .with_port(*port)
                    .with_listener(StrBytes::from_static_str("PLAINTEXT"))
                    .with_security_protocol(0)])
        })
        .collect();
    let topic_states = topics
        .iter()
        .map(|t| {
            UpdateMetadataTopicState::default()
                .with_topic_name(TopicName(StrBytes::from_string(t.name.clone())))
                .with_topic_id(t.id)
                .with_partition_states(
                    t.partitions
                        .iter()
                        .map(|(p, leader, replicas)| {
                            UpdateMetadataPartitionState::default()
                                .with_topic_name(TopicName(StrBytes::from_string(t.name.clone())))
                                .with_partition_index(*p)
                                .with_controller_epoch(TEST_CONTROLLER_EPOCH)
                                .with_leader(BrokerId(*leader))
                                .with_leader_epoch(leader_epoch)
                                .with_isr(replicas.iter().map(|r| BrokerId(*r)).collect())
                                .with_replicas(replicas.iter().map(|r| BrokerId(*r)).collect())
                        })
                        .collect(),
                )
        })
        .collect();
    let update = UpdateMetadataRequest::default()
        .with_controller_id(BrokerId(brokers[0].0))
        .with_controller_epoch(TEST_CONTROLLER_EPOCH)
        .with_broker_epoch(broker_epoch)
        .with_live_brokers(live)
        .with_topic_states(topic_states);
    let response: UpdateMetadataResponse = client.send(update, 8).await.expect("UpdateMetadata");
    assert_eq!(response.error_code, 0, "UpdateMetadata accepted");
}

/// The test controller's LeaderAndIsr alone: makes `leader_epoch` the replicas' epoch.
pub async fn send_leader_and_isr(
    addr: &str,
    broker_epoch: i64,
    controller_id: i32,
    topics: &[TestTopic],
    leader_epoch: i32,
) {
    let client = test_controller_client(addr).await;
    let states = topics
        .iter()
        .map(|t| {
            LeaderAndIsrTopicState::default()
                .with_topic_name(TopicName(StrBytes::from_string(t.name.clone())))
                .with_topic_id(t.id)
                .with_partition_states(
                    t.partitions
                        .iter()
                        .map(|(p, leader, replicas)| {
                            LeaderAndIsrPartitionState::default()
                                .with_topic_name(TopicName(StrBytes::from_string(t.name.clone())))
                                .with_partition_index(*p)
                                .with_controller_epoch(TEST_CONTROLLER_EPOCH)
                                .with_leader(BrokerId(*leader))
                                .with_leader_epoch(leader_epoch)
                                .with_isr(replicas.iter().map(|r| BrokerId(*r)).collect())
                                .with_replicas(replicas.iter().map(|r| BrokerId(*r)).collect())
                                .with_is_new(true)
                        })
                        .collect(),
                )
        })
        .collect();
    let leader_and_isr = LeaderAndIsrRequest::default()
        .with_controller_id(BrokerId(controller_id))
        .with_controller_epoch(TEST_CONTROLLER_EPOCH)
        .with_broker_epoch(broker_epoch)
        .with_topic_states(states);
    let response: LeaderAndIsrResponse = client.send(leader_and_isr, 7).await.expect("LeaderAndIsr");
    assert_eq!(response.error_code, 0, "LeaderAndIsr accepted");
    for t in &response.topics {
        for p in &t.partition_errors {
            assert_eq!(p.error_code, 0, "partition {} accepted", p.partition_index);
        }
    }
}
