//! End-to-end tests of the socket server's limits and lifecycle: idle connections,
//! `max.connections.per.ip`, `max.connections`, and graceful shutdown.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use anyhow::bail;
use kafka_protocol::messages::{ApiKey, ResponseKind};
use tokio::net::TcpStream;

use super::socket_server::NetworkConfig;
use super::test_support::{metadata_request, start_server, wait_until, within_deadline, TestClient, SLOW_TOPIC};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

#[tokio::test]
async fn an_idle_connection_is_closed_after_connections_max_idle() -> anyhow::Result<()> {
    let idle = Duration::from_millis(300);
    let test = start_server(NetworkConfig {
        connections_max_idle: idle,
        ..NetworkConfig::default()
    })
    .await?;
    let mut client = TestClient::connect(test.addr).await?;
    // The server's idle clock starts after it answers, so after this instant.
    let last_request = Instant::now();
    client.metadata_round_trip("busy").await?;
    client.expect_closed().await?;
    assert!(
        last_request.elapsed() >= idle,
        "closed after {:?}, before the idle limit",
        last_request.elapsed()
    );
    wait_until("the server to forget the idle connection", || async {
        test.server.connection_count(LOCALHOST) == 0
    })
    .await
}

#[tokio::test]
async fn connections_over_the_per_ip_limit_are_accepted_and_closed() -> anyhow::Result<()> {
    let config = NetworkConfig {
        max_connections_per_ip: 2,
        ..NetworkConfig::default()
    };
    let test = start_server(config).await?;
    let mut first = TestClient::connect(test.addr).await?;
    let mut second = TestClient::connect(test.addr).await?;
    first.metadata_round_trip("one").await?;
    second.metadata_round_trip("two").await?;

    let mut third = TestClient::connect(test.addr).await?;
    third.expect_closed().await?;
    first.metadata_round_trip("one-still-served").await?;

    drop(second);
    wait_until("the closed connection to free its slot", || async {
        test.server.connection_count(LOCALHOST) == 1
    })
    .await?;
    let mut replacement = TestClient::connect(test.addr).await?;
    replacement.metadata_round_trip("replacement").await
}

#[tokio::test]
async fn connections_over_max_connections_are_accepted_and_closed() -> anyhow::Result<()> {
    let test = start_server(NetworkConfig {
        max_connections: 1,
        ..NetworkConfig::default()
    })
    .await?;
    let mut only = TestClient::connect(test.addr).await?;
    only.metadata_round_trip("only").await?;
    let mut extra = TestClient::connect(test.addr).await?;
    extra.expect_closed().await?;
    only.metadata_round_trip("only-still-served").await
}

#[tokio::test]
async fn graceful_shutdown_answers_the_request_in_flight_then_closes() -> anyhow::Result<()> {
    let mut test = start_server(NetworkConfig::default()).await?;
    let mut client = TestClient::connect(test.addr).await?;
    let in_flight = client.send(ApiKey::Metadata, 12, &metadata_request(SLOW_TOPIC)).await?;
    within_deadline("the slow request to reach the handler", test.started.recv()).await?;

    let handler = std::sync::Arc::clone(&test.handler);
    let addr = test.addr;
    let shutdown = tokio::spawn(test.server.shutdown());
    wait_until("the listener to stop accepting", || async {
        TcpStream::connect(addr).await.is_err()
    })
    .await?;
    assert!(!shutdown.is_finished(), "shutdown must wait for the request in flight");

    handler.release.add_permits(1);
    let (received, response) = client.receive(ApiKey::Metadata, 12).await?;
    assert_eq!(received, in_flight);
    let ResponseKind::Metadata(response) = response else {
        bail!("{response:?}")
    };
    assert_eq!(response.cluster_id.as_deref(), Some(SLOW_TOPIC));
    client.expect_closed().await?;
    within_deadline("shutdown to finish", shutdown).await??;
    Ok(())
}

#[tokio::test]
async fn shutdown_stops_a_request_that_outlives_the_grace_period() -> anyhow::Result<()> {
    let config = NetworkConfig {
        shutdown_grace: Duration::from_millis(100),
        ..NetworkConfig::default()
    };
    let mut test = start_server(config).await?;
    let mut client = TestClient::connect(test.addr).await?;
    client.send(ApiKey::Metadata, 12, &metadata_request(SLOW_TOPIC)).await?;
    within_deadline("the slow request to reach the handler", test.started.recv()).await?;
    // Never released: shutdown must still finish, closing the connection unanswered.
    within_deadline("shutdown to finish", test.server.shutdown()).await?;
    client.expect_closed().await
}

#[tokio::test]
async fn idle_connections_close_at_once_on_shutdown() -> anyhow::Result<()> {
    let test = start_server(NetworkConfig::default()).await?;
    let mut client = TestClient::connect(test.addr).await?;
    client.metadata_round_trip("idle").await?;
    within_deadline("shutdown to finish", test.server.shutdown()).await?;
    client.expect_closed().await
}
