//! End-to-end protocol tests against a real [`super::SocketServer`] on 127.0.0.1:0: ApiVersions
//! negotiation (KIP-35/KIP-511), in-order pipelining, acks=0, and malformed input closing only
//! the offending connection while others keep being served.

use anyhow::bail;
use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestKind, ResponseKind};
use kafka_protocol::protocol::{Decodable, StrBytes};

use super::api_versions::{SUPPORTED, UNSUPPORTED_VERSION};
use super::socket_server::NetworkConfig;
use super::test_support::{metadata_request, produce_request, start_server, within_deadline, TestClient, SLOW_TOPIC};

fn advertised(response: &ApiVersionsResponse) -> Vec<(i16, i16, i16)> {
    response
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect()
}

fn supported_rows() -> Vec<(i16, i16, i16)> {
    SUPPORTED
        .iter()
        .map(|&(key, min, max)| (key as i16, min, max))
        .collect()
}

/// A frame with a valid size prefix and request header but an arbitrary body.
fn raw_request(api_key: i16, version: i16, flexible_header: bool, body: &[u8]) -> BytesMut {
    let mut payload = BytesMut::new();
    payload.put_i16(api_key);
    payload.put_i16(version);
    payload.put_i32(7); // correlation id
    payload.put_i16(4);
    payload.put_slice(b"test");
    if flexible_header {
        payload.put_u8(0); // no tagged fields
    }
    payload.put_slice(body);
    let mut frame = BytesMut::new();
    frame.put_i32(i32::try_from(payload.len()).unwrap_or(i32::MAX));
    frame.put(payload);
    frame
}

#[tokio::test]
async fn api_versions_round_trips_at_every_supported_version() -> anyhow::Result<()> {
    let test = start_server(NetworkConfig::default()).await?;
    let mut client = TestClient::connect(test.addr).await?;
    for version in 0..=4 {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("kastle-test"))
            .with_client_software_version(StrBytes::from_static_str("0.1.0"));
        let sent = client
            .send(ApiKey::ApiVersions, version, &RequestKind::ApiVersions(request))
            .await?;
        let (received, response) = client.receive(ApiKey::ApiVersions, version).await?;
        let ResponseKind::ApiVersions(response) = response else {
            bail!("v{version}: {response:?}")
        };
        assert_eq!(received, sent);
        assert_eq!(response.error_code, 0, "v{version}");
        assert_eq!(advertised(&response), supported_rows(), "v{version}");
    }
    Ok(())
}

#[tokio::test]
async fn a_too_new_api_versions_request_gets_the_kip_511_v0_reply_and_the_connection_stays_open() -> anyhow::Result<()>
{
    let test = start_server(NetworkConfig::default()).await?;
    let mut client = TestClient::connect(test.addr).await?;
    for version in [5, i16::MAX, -1] {
        // A future request body we cannot know the layout of; it must not be parsed.
        let frame = raw_request(
            ApiKey::ApiVersions as i16,
            version,
            version >= 3,
            &[0xde, 0xad, 0xbe, 0xef],
        );
        client.send_raw(&frame).await?;
        // Response header v0, body v0: error, array of (key, min, max), nothing else.
        let (correlation_id, mut body) = client.receive_raw(ApiKey::ApiVersions, 0).await?;
        assert_eq!(correlation_id, 7);
        assert_eq!(
            body.len(),
            2 + 4 + 6 * SUPPORTED.len(),
            "v{version}: a v0 body, not v3+"
        );
        let response = ApiVersionsResponse::decode(&mut body, 0)?;
        assert_eq!(response.error_code, UNSUPPORTED_VERSION);
        assert_eq!(advertised(&response), supported_rows());
    }
    // The client now retries at our maximum on the same connection, as Java and librdkafka do.
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("kafka-python"))
        .with_client_software_version(StrBytes::from_static_str("3.0.12"));
    client
        .send(ApiKey::ApiVersions, 4, &RequestKind::ApiVersions(request))
        .await?;
    let (_, response) = client.receive(ApiKey::ApiVersions, 4).await?;
    assert!(matches!(response, ResponseKind::ApiVersions(r) if r.error_code == 0));
    Ok(())
}

#[tokio::test]
async fn fifty_pipelined_requests_are_answered_in_order() -> anyhow::Result<()> {
    let test = start_server(NetworkConfig::default()).await?;
    let mut client = TestClient::connect(test.addr).await?;
    let mut wire = BytesMut::new();
    let mut sent = Vec::new();
    for i in 0..50 {
        let (frame, correlation_id) = client.frame(ApiKey::Metadata, 12, &metadata_request(&format!("t{i}")))?;
        wire.put(frame);
        sent.push(correlation_id);
    }
    client.send_raw(&wire).await?;
    for (i, expected) in sent.into_iter().enumerate() {
        let (received, response) = client.receive(ApiKey::Metadata, 12).await?;
        let ResponseKind::Metadata(response) = response else {
            bail!("{response:?}")
        };
        assert_eq!(received, expected);
        assert_eq!(response.cluster_id.as_deref(), Some(format!("t{i}").as_str()));
    }
    Ok(())
}

#[tokio::test]
async fn an_acks_0_produce_gets_no_response_and_the_next_request_is_still_answered() -> anyhow::Result<()> {
    let test = start_server(NetworkConfig::default()).await?;
    let mut client = TestClient::connect(test.addr).await?;
    client.send(ApiKey::Produce, 9, &produce_request(0)).await?;
    let metadata = client
        .send(ApiKey::Metadata, 12, &metadata_request("after-acks-0"))
        .await?;
    let (received, _) = client.receive(ApiKey::Metadata, 12).await?;
    assert_eq!(received, metadata, "the acks=0 produce must not have produced a frame");
    let acked = client.send(ApiKey::Produce, 9, &produce_request(1)).await?;
    let (received, response) = client.receive(ApiKey::Produce, 9).await?;
    assert_eq!(received, acked);
    assert!(matches!(response, ResponseKind::Produce(_)));
    Ok(())
}

#[tokio::test]
async fn a_request_after_an_acks_all_produce_waiting_for_replicas_is_served_and_answered_after_it() -> anyhow::Result<()>
{
    let mut test = start_server(NetworkConfig::default()).await?;
    let mut client = TestClient::connect(test.addr).await?;
    let produce = client.send(ApiKey::Produce, 9, &produce_request(-1)).await?;
    let metadata = client.send(ApiKey::Metadata, 12, &metadata_request(SLOW_TOPIC)).await?;
    // The produce's response waits for its replicas; the connection serves the next request.
    within_deadline("the request after a waiting produce to be handled", test.started.recv()).await?;
    test.handler.release.add_permits(1);
    test.handler.replicated.add_permits(1);
    let (first, response) = client.receive(ApiKey::Produce, 9).await?;
    assert_eq!(first, produce, "the produce's response first");
    assert!(matches!(response, ResponseKind::Produce(_)));
    let (second, _) = client.receive(ApiKey::Metadata, 12).await?;
    assert_eq!(second, metadata);
    Ok(())
}

/// Sends `bytes` on a fresh connection (half-closing it if `then_half_close`), expects the
/// server to close that connection unanswered, and checks a connection opened before keeps
/// being served before and after.
async fn closes_only_that_connection(bytes: &[u8], then_half_close: bool) -> anyhow::Result<()> {
    let test = start_server(NetworkConfig {
        socket_request_max_bytes: 1024,
        ..NetworkConfig::default()
    })
    .await?;
    let mut good = TestClient::connect(test.addr).await?;
    good.metadata_round_trip("before").await?;
    let mut bad = TestClient::connect(test.addr).await?;
    bad.send_raw(bytes).await?;
    if then_half_close {
        tokio::io::AsyncWriteExt::shutdown(&mut bad.stream).await?;
    }
    bad.expect_closed().await?;
    good.metadata_round_trip("after").await?;
    Ok(())
}

#[tokio::test]
async fn a_negative_size_closes_only_that_connection() -> anyhow::Result<()> {
    closes_only_that_connection(&(-1i32).to_be_bytes(), false).await
}

#[tokio::test]
async fn a_size_over_socket_request_max_bytes_closes_only_that_connection() -> anyhow::Result<()> {
    closes_only_that_connection(&1025i32.to_be_bytes(), false).await
}

#[tokio::test]
async fn a_truncated_frame_closes_only_that_connection() -> anyhow::Result<()> {
    let mut frame = raw_request(ApiKey::Metadata as i16, 12, true, &[0; 40]);
    frame.truncate(20);
    closes_only_that_connection(&frame, true).await
}

#[tokio::test]
async fn a_truncated_size_prefix_closes_only_that_connection() -> anyhow::Result<()> {
    closes_only_that_connection(&[0, 0], true).await
}

#[tokio::test]
async fn an_unknown_api_key_closes_only_that_connection() -> anyhow::Result<()> {
    closes_only_that_connection(&raw_request(999, 0, false, &[]), false).await
}

#[tokio::test]
async fn a_frame_too_short_for_a_header_closes_only_that_connection() -> anyhow::Result<()> {
    closes_only_that_connection(&[0, 0, 0, 2, 0, 3], false).await
}

#[tokio::test]
async fn random_bytes_close_only_that_connection() -> anyhow::Result<()> {
    // Size 0x1f2e3d4c is over the limit; and a sane size with a garbage header.
    closes_only_that_connection(b"\x1f\x2e\x3d\x4c\x5b\x6a\x79\x88", false).await?;
    closes_only_that_connection(b"\x00\x00\x00\x06\x00\x03\x00\x0c\xff\xff", false).await
}

#[tokio::test]
async fn an_undecodable_body_closes_only_that_connection() -> anyhow::Result<()> {
    // Metadata v12 whose topic array is cut short.
    closes_only_that_connection(&raw_request(ApiKey::Metadata as i16, 12, true, &[0x05, 0x00]), false).await
}

#[tokio::test]
async fn a_request_claiming_two_billion_topics_closes_only_that_connection() -> anyhow::Result<()> {
    // kafka-protocol 0.15.1 as published pre-allocates the claimed count and aborts the
    // process here; the vendored, patched copy must be in use (see Cargo.toml).
    closes_only_that_connection(
        &raw_request(ApiKey::Metadata as i16, 1, false, &[0x7f, 0xff, 0xff, 0xff]),
        false,
    )
    .await
}

#[tokio::test]
async fn a_version_above_our_range_with_no_error_field_closes_only_that_connection() -> anyhow::Result<()> {
    // Metadata v13 is past our (and the codec's) max: Kafka 3.9 closes too.
    closes_only_that_connection(&raw_request(ApiKey::Metadata as i16, 13, true, &[0; 8]), false).await
}

#[tokio::test]
async fn a_fetch_below_v4_closes_only_that_connection() -> anyhow::Result<()> {
    // The codec could decode it, but a v0-3 Fetch response has no top-level error code.
    closes_only_that_connection(&raw_request(ApiKey::Fetch as i16, 3, false, &[0; 16]), false).await
}

#[tokio::test]
async fn an_api_we_do_not_serve_closes_only_that_connection() -> anyhow::Result<()> {
    // DescribeDelegationToken is a known key that kastle does not advertise.
    closes_only_that_connection(
        &raw_request(ApiKey::DescribeDelegationToken as i16, 0, false, &[0, 1, b'g']),
        false,
    )
    .await
}
