//! `KafkaClient` against the fake broker: reuse, reconnect after a lost connection, and the
//! reconnect backoff (Kafka's `reconnect.backoff.ms` doubling; exact values are unit-tested in
//! `backoff`, these tests check the pool really waits).

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::MetadataRequest;
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;

use super::fake_broker::{Event, FakeBroker, Script, DEADLINE};
use super::{ClientConfig, ClientError, ConnectionConfig, KafkaClient};

fn metadata(topic: &str) -> MetadataRequest {
    let topic = MetadataRequestTopic::default().with_name(Some(StrBytes::from_string(topic.to_owned()).into()));
    MetadataRequest::default().with_topics(Some(vec![topic]))
}

fn client(backoff: Duration, backoff_max: Duration) -> KafkaClient {
    let config = ClientConfig {
        connection: ConnectionConfig {
            connect_timeout: DEADLINE,
            request_timeout: DEADLINE,
            ..ConnectionConfig::default()
        },
        reconnect_backoff: backoff,
        reconnect_backoff_max: backoff_max,
        // No jitter, so the waits have exact lower bounds.
        reconnect_backoff_jitter: 0.0,
    };
    KafkaClient::new("pool-test", config)
}

fn accepted_at(event: Event) -> Option<Instant> {
    if let Event::Accepted(at) = event {
        Some(at)
    } else {
        None
    }
}

#[tokio::test]
async fn the_pool_reuses_a_live_connection_and_resolves_broker_ids() {
    let mut fake = FakeBroker::start(Script::default()).await;
    let client = client(Duration::from_millis(50), Duration::from_secs(1));
    client.set_broker_address(1, fake.addr.to_string());
    let by_addr = client.connection(fake.addr).await.expect("connects");
    let by_id = client.connection(1).await.expect("resolves id 1");
    assert!(Arc::ptr_eq(&by_addr, &by_id));
    // The pool's futures are Send, so the controller and fetchers can spawn them.
    let client = Arc::new(client);
    let sent = tokio::spawn({
        let client = Arc::clone(&client);
        async move { client.send(1, metadata("a"), 12).await }
    });
    sent.await.expect("send task ran").expect("answered");
    let accepts = fake.drain_events().into_iter().filter_map(accepted_at).count();
    assert_eq!(accepts, 1);
    assert!(matches!(
        client.connection(2).await,
        Err(ClientError::UnknownBroker { broker_id: 2 })
    ));
}

#[tokio::test]
async fn the_pool_reconnects_after_the_broker_closes_the_connection() {
    let mut fake = FakeBroker::start(Script::default()).await;
    let client = client(Duration::from_millis(50), Duration::from_secs(1));
    let first = client.connection(fake.addr).await.expect("connects");
    let err = client
        .send(fake.addr, metadata("close"), 12)
        .await
        .expect_err("broker closed");
    assert!(matches!(err, ClientError::Closed { .. }), "{err}");
    tokio::time::timeout(DEADLINE, first.closed())
        .await
        .expect("first connection closes");

    let response = client
        .send(fake.addr, metadata("after-close"), 12)
        .await
        .expect("reconnected");
    assert_eq!(response.topics.len(), 1);
    let second = client.connection(fake.addr).await.expect("still connected");
    assert!(!Arc::ptr_eq(&first, &second));
    // The lost connection counts as one failure: the reconnect waited reconnect.backoff.ms.
    let closed_at = first.closed_at().expect("closed");
    let accepts: Vec<Instant> = fake.drain_events().into_iter().filter_map(accepted_at).collect();
    assert_eq!(accepts.len(), 2);
    assert!(
        accepts[1] >= closed_at + Duration::from_millis(50),
        "reconnected too early"
    );
}

#[tokio::test]
async fn failed_connects_back_off_exponentially_before_the_next_attempt() {
    let mut fake = FakeBroker::start(Script {
        refuse: true,
        ..Script::default()
    })
    .await;
    let backoff = Duration::from_millis(100);
    let client = client(backoff, Duration::from_secs(2));
    for _ in 0..3 {
        assert!(client.connection(fake.addr).await.is_err(), "the fake refuses");
    }
    let mut accepts = Vec::new();
    while accepts.len() < 3 {
        accepts.push(fake.next_matching(accepted_at).await);
    }
    let gaps = [accepts[1] - accepts[0], accepts[2] - accepts[1]];
    assert!(
        gaps[0] >= backoff,
        "second attempt after {:?}, before the {backoff:?} backoff",
        gaps[0]
    );
    assert!(
        gaps[1] >= 2 * backoff,
        "third attempt after {:?}, before the doubled backoff",
        gaps[1]
    );
    // Still well under the max: the backoff grows from the initial value, not from the cap.
    assert!(gaps[0] < Duration::from_secs(2), "second attempt waited {:?}", gaps[0]);

    // A successful connect resets the backoff, so the broker's recovery is picked up at once
    // after the pending wait.
    fake.set_script(Script::default());
    client.connection(fake.addr).await.expect("the broker is back");
    assert!(client.connection(fake.addr).await.is_ok());
}

#[tokio::test]
async fn a_broker_with_no_listener_is_retried_only_after_the_backoff() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    let backoff = Duration::from_millis(100);
    let client = client(backoff, Duration::from_secs(1));
    let first = client.connection(addr).await.expect_err("nothing listens");
    assert!(matches!(first, ClientError::Connect { .. }), "{first}");
    let started = Instant::now();
    let second = client.connection(addr).await.expect_err("still nothing listens");
    assert!(matches!(second, ClientError::Connect { .. }), "{second}");
    assert!(
        started.elapsed() >= backoff - Duration::from_millis(5),
        "retried after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn removing_a_broker_closes_its_connection_and_forgets_its_address() {
    let fake = FakeBroker::start(Script::default()).await;
    let client = client(Duration::from_millis(50), Duration::from_secs(1));
    client.set_broker_address(7, fake.addr.to_string());
    let conn = client.connection(7).await.expect("connects");
    client.remove_broker(7);
    assert!(conn.is_closed());
    assert!(matches!(
        client.connection(7).await,
        Err(ClientError::UnknownBroker { broker_id: 7 })
    ));
}
