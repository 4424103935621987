//! `BrokerConnection` against the fake broker: the handshake, pipelining, response matching,
//! timeouts, closes and requests without a response.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, LeaderAndIsrRequest, MetadataRequest, ProduceRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::fake_broker::{Event, FakeBroker, Script, DEADLINE};
use super::{BrokerConnection, ClientError, ConnectionConfig};

fn metadata(topics: &[&str]) -> MetadataRequest {
    let topics = topics
        .iter()
        .map(|t| MetadataRequestTopic::default().with_name(Some(StrBytes::from_string((*t).to_owned()).into())))
        .collect();
    MetadataRequest::default().with_topics(Some(topics))
}

fn topic_names(response: &kafka_protocol::messages::MetadataResponse) -> Vec<String> {
    response
        .topics
        .iter()
        .filter_map(|t| t.name.as_deref())
        .map(|n| n.as_str().to_owned())
        .collect()
}

async fn connect(fake: &FakeBroker, request_timeout: Duration) -> BrokerConnection {
    let config = ConnectionConfig {
        connect_timeout: DEADLINE,
        request_timeout,
        ..ConnectionConfig::default()
    };
    BrokerConnection::connect_with(fake.addr, "test-client", &config)
        .await
        .expect("connects to the fake broker")
}

/// The ApiVersions versions the fake was asked at, in order, among the events so far.
fn api_versions_asked(events: &[Event]) -> Vec<i16> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Request {
                api: ApiKey::ApiVersions,
                version,
                ..
            } => Some(*version),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn connect_sends_api_versions_v3_and_keeps_the_broker_ranges() {
    let mut fake = FakeBroker::start(Script::default()).await;
    let conn = BrokerConnection::connect(fake.addr, "test-client", DEADLINE)
        .await
        .expect("connects");
    let events = fake.drain_events();
    assert_eq!(api_versions_asked(&events), vec![3]);
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Request { client_id: Some(id), .. } if id == "test-client")));
    assert_eq!(conn.api_versions().range(ApiKey::Metadata), Some((0, 12)));
    assert_eq!(conn.version_for(ApiKey::Metadata, (0, 9)), Some(9));
    assert_eq!(conn.version_for(ApiKey::LeaderAndIsr, (0, 7)), None);
}

#[tokio::test]
async fn an_error_35_reply_makes_the_client_retry_at_the_broker_max_per_kip_511() {
    let mut fake = FakeBroker::start(Script {
        api_versions_max: 2,
        ..Script::default()
    })
    .await;
    let conn = connect(&fake, DEADLINE).await;
    assert_eq!(api_versions_asked(&fake.drain_events()), vec![3, 2]);
    assert_eq!(conn.api_versions().range(ApiKey::ApiVersions), Some((0, 2)));
    let response = conn
        .send(metadata(&["a"]), 12)
        .await
        .expect("metadata after the fallback");
    assert_eq!(topic_names(&response), vec!["a"]);
}

#[tokio::test]
async fn an_error_35_reply_without_api_keys_makes_the_client_retry_at_v0() {
    let mut fake = FakeBroker::start(Script {
        api_versions_max: 0,
        keys_in_error_reply: false,
        ..Script::default()
    })
    .await;
    let conn = connect(&fake, DEADLINE).await;
    assert_eq!(api_versions_asked(&fake.drain_events()), vec![3, 0]);
    assert_eq!(conn.version_for(ApiKey::Metadata, (0, 12)), Some(12));
}

#[tokio::test]
async fn a_hundred_concurrent_requests_are_pipelined_and_each_gets_its_own_response() {
    let mut fake = FakeBroker::start(Script::default()).await;
    let conn = Arc::new(connect(&fake, DEADLINE).await);
    let mut requests = JoinSet::new();
    for i in 0..100 {
        let conn = Arc::clone(&conn);
        // The fake answers none of these until all 100 are in flight, so a client that
        // serialised requests would time out here instead of passing.
        requests.spawn(async move {
            let topic = format!("gather-100-{i}");
            let response = conn.send(metadata(&[&topic]), 12).await;
            (topic, response)
        });
    }
    let mut answered = 0;
    while let Some(joined) = requests.join_next().await {
        let (topic, response) = joined.expect("request task ran");
        assert_eq!(topic_names(&response.expect("answered")), vec![topic]);
        answered += 1;
    }
    assert_eq!(answered, 100);
    let ids: Vec<i32> = fake
        .drain_events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Request {
                api: ApiKey::Metadata,
                correlation_id,
                ..
            } => Some(correlation_id),
            _ => None,
        })
        .collect();
    let mut distinct = ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 100, "correlation ids are fresh per request: {ids:?}");
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_response_with_an_unknown_correlation_id_is_a_protocol_error_that_closes_the_connection() {
    let fake = FakeBroker::start(Script::default()).await;
    let conn = connect(&fake, DEADLINE).await;
    let err = conn.send(metadata(&["wrong-id"]), 12).await.expect_err("mismatched id");
    assert!(
        matches!(&err, ClientError::Protocol { reason, .. } if reason.contains("unknown correlation id")),
        "{err}"
    );
    tokio::time::timeout(DEADLINE, conn.closed())
        .await
        .expect("connection closes");
    let again = conn.send(metadata(&["a"]), 12).await;
    assert!(matches!(again, Err(ClientError::Protocol { .. })), "{again:?}");
}

#[tokio::test]
async fn a_response_out_of_order_is_a_protocol_error_for_every_request_in_flight() {
    let mut fake = FakeBroker::start(Script::default()).await;
    let conn = Arc::new(connect(&fake, DEADLINE).await);
    let first = tokio::spawn({
        let conn = Arc::clone(&conn);
        async move { conn.send(metadata(&["hold"]), 12).await }
    });
    fake.next_matching(|e| matches!(e, Event::Request { topic: Some(t), .. } if t == "hold").then_some(()))
        .await;
    let second = conn.send(metadata(&["after-hold"]), 12).await;
    assert!(
        matches!(&second, Err(ClientError::Protocol { reason, .. }) if reason.contains("out of order")),
        "{second:?}"
    );
    let first = first.await.expect("first request task ran");
    assert!(matches!(first, Err(ClientError::Protocol { .. })), "{first:?}");
    assert!(conn.is_closed());
}

#[tokio::test]
async fn a_request_without_a_response_times_out_and_closes_the_connection() {
    let fake = FakeBroker::start(Script::default()).await;
    let timeout = Duration::from_millis(200);
    let conn = connect(&fake, timeout).await;
    let started = Instant::now();
    let err = conn.send(metadata(&["ignore"]), 12).await.expect_err("no response");
    assert!(started.elapsed() >= timeout, "gave up after {:?}", started.elapsed());
    assert!(
        matches!(err, ClientError::Timeout { api: ApiKey::Metadata, after, .. } if after == timeout),
        "{err}"
    );
    assert!(conn.is_closed());
    assert!(matches!(
        conn.send(metadata(&["a"]), 12).await,
        Err(ClientError::Closed { .. })
    ));
}

#[tokio::test]
async fn the_broker_closing_the_connection_fails_the_request_in_flight_with_closed() {
    let fake = FakeBroker::start(Script::default()).await;
    let conn = connect(&fake, DEADLINE).await;
    let err = conn.send(metadata(&["close"]), 12).await.expect_err("broker closed");
    assert!(matches!(err, ClientError::Closed { .. }), "{err}");
    tokio::time::timeout(DEADLINE, conn.closed())
        .await
        .expect("connection reports closed");
    assert!(conn.closed_at().is_some());
}

#[tokio::test]
async fn send_no_response_writes_a_produce_with_acks_0_without_waiting_for_a_reply() {
    let mut fake = FakeBroker::start(Script::default()).await;
    let conn = connect(&fake, DEADLINE).await;
    let produce = ProduceRequest::default().with_acks(0).with_timeout_ms(1000);
    conn.send_no_response(produce, 9).await.expect("written");
    let acks = fake
        .next_matching(|e| {
            if let Event::Produce { acks } = e {
                Some(acks)
            } else {
                None
            }
        })
        .await;
    assert_eq!(acks, 0);
    // Nothing was queued for a response, so the next response matches the next request.
    let response = conn
        .send(metadata(&["after-produce"]), 12)
        .await
        .expect("metadata after produce");
    assert_eq!(topic_names(&response), vec!["after-produce"]);
}

#[tokio::test]
async fn send_kind_round_trips_a_request_built_at_run_time() {
    let fake = FakeBroker::start(Script::default()).await;
    let conn = connect(&fake, DEADLINE).await;
    let response = conn
        .send_kind(RequestKind::Metadata(metadata(&["dynamic"])), ApiKey::Metadata, 8)
        .await
        .expect("answered");
    let ResponseKind::Metadata(response) = response else {
        panic!("expected a Metadata response, got {response:?}")
    };
    assert_eq!(topic_names(&response), vec!["dynamic"]);
}

#[tokio::test]
async fn versions_the_broker_or_codec_do_not_support_are_rejected_before_sending() {
    let mut fake = FakeBroker::start(Script::default()).await;
    let conn = connect(&fake, DEADLINE).await;
    fake.drain_events();
    let not_advertised = conn.send(LeaderAndIsrRequest::default(), 7).await;
    assert!(matches!(
        not_advertised,
        Err(ClientError::UnsupportedVersion {
            api: ApiKey::LeaderAndIsr,
            version: 7
        })
    ));
    let too_new = conn.send(metadata(&["a"]), 13).await;
    assert!(matches!(
        too_new,
        Err(ClientError::UnsupportedVersion {
            api: ApiKey::Metadata,
            version: 13
        })
    ));
    // The broker answers in order, so once this probe is answered it has seen all we sent.
    conn.send(metadata(&["probe"]), 12)
        .await
        .expect("the connection is still usable");
    let seen: Vec<Option<String>> = fake
        .drain_events()
        .into_iter()
        .filter_map(|e| {
            if let Event::Request { topic, .. } = e {
                Some(topic)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        seen,
        vec![Some("probe".to_owned())],
        "only the probe reached the broker"
    );
}

#[tokio::test]
async fn connecting_to_a_port_without_a_listener_is_a_connect_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    let err = BrokerConnection::connect(addr, "test-client", DEADLINE)
        .await
        .expect_err("nothing listens");
    assert!(
        matches!(&err, ClientError::Connect { addr: a, .. } if *a == addr.to_string()),
        "{err}"
    );
}
