//! The one table of what kastle speaks on the wire, and the answers derived from it: the
//! ApiVersions response (KIP-35/KIP-511) and the UNSUPPORTED_VERSION reply for other APIs.
//!
//! Everything the network layer decides about versions reads [`SUPPORTED`]; to serve a new API,
//! add its row here and teach the handler to answer it. Pure functions, no I/O.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, ControlledShutdownResponse, FetchResponse, LeaderAndIsrResponse,
    ResponseKind, StopReplicaResponse, UpdateMetadataResponse,
};

/// `(api, min version, max version)`, in api-key order (the order Kafka lists them in).
///
/// Ranges are what a Kafka 3.9 ZooKeeper-mode broker advertises, clipped to what the
/// `kafka-protocol` 0.15 codec can encode, with one deliberate difference: Fetch starts at v4.
/// Fetch v0–3 responses must carry magic 0/1 message sets (Kafka down-converts); kastle
/// stores magic-2 batches only, and every client that still ships (librdkafka ≥ v4 for
/// MsgVer2, Java, kafka-python 2.0 which uses v4) fetches at v4 or later.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 0, 11),
    (ApiKey::Fetch, 4, 17),
    (ApiKey::ListOffsets, 0, 9),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::LeaderAndIsr, 0, 7),
    (ApiKey::StopReplica, 0, 4),
    (ApiKey::UpdateMetadata, 0, 8),
    (ApiKey::ControlledShutdown, 0, 3),
    (ApiKey::OffsetCommit, 0, 9),
    (ApiKey::OffsetFetch, 0, 9),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 5),
    // Answered by the connection (`network::authentication`), on every listener as Kafka does.
    (ApiKey::SaslHandshake, 0, 1),
    // Kafka 3.9 has ApiVersions 0-4, which is also the codec's maximum.
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 0, 7),
    (ApiKey::DeleteTopics, 0, 6),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::OffsetForLeaderEpoch, 0, 4),
    (ApiKey::DescribeAcls, 0, 3),
    (ApiKey::CreateAcls, 0, 3),
    (ApiKey::DeleteAcls, 0, 3),
    (ApiKey::DescribeConfigs, 0, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::AlterPartitionReassignments, 0, 0),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeCluster, 0, 1),
];

/// The request's version is outside the range we advertise; INVALID_REQUEST: well-formed but
/// invalid (KIP-511 client software fields).
pub use crate::protocol::error_codes::{INVALID_REQUEST, UNSUPPORTED_VERSION};

/// The `(min, max)` versions kastle serves for `api_key`, or `None` if it does not serve it.
pub fn supported(api_key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|&(_, min, max)| (min, max))
}

/// Whether kastle serves `api_key` at `version`.
pub fn is_supported(api_key: ApiKey, version: i16) -> bool {
    supported(api_key).is_some_and(|(min, max)| (min..=max).contains(&version))
}

/// The ApiVersions response body for a request sent at `version`.
///
/// At a supported version: the full table, error 0. At any other version (a newer client, or
/// garbage): KIP-511's downgrade reply, error 35 and the table, which the caller must encode
/// as **v0** (see [`api_versions_response_version`]) because the client cannot know any other
/// layout yet. Kafka lists only the ApiVersions row in that reply; we list every row, which
/// clients that read only the ApiVersions row (Java, librdkafka, kafka-python) handle the same.
///
/// Only default-valued tagged fields: no features, `zk_migration_ready = false`,
/// `finalized_features_epoch = -1`; the codec then writes none of them, which old librdkafka
/// (< 2.2, mis-skips tagged fields) needs.
pub fn api_versions_response(version: i16) -> ApiVersionsResponse {
    let error_code = if is_supported(ApiKey::ApiVersions, version) {
        0
    } else {
        UNSUPPORTED_VERSION
    };
    ApiVersionsResponse::default()
        .with_error_code(error_code)
        .with_api_keys(api_keys())
}

/// The version to encode an ApiVersions response at: the request's, or v0 when unsupported (KIP-511).
/// ApiVersions responses always use response header v0, whatever this returns.
pub fn api_versions_response_version(request_version: i16) -> i16 {
    if is_supported(ApiKey::ApiVersions, request_version) {
        request_version
    } else {
        0
    }
}

/// The answer to an ApiVersions request sent at `version`, and the version to encode it at.
///
/// `request` is the decoded body; pass `None` when `version` is unsupported, whose body must
/// not be parsed (its layout is unknown, KIP-511). Mirrors `KafkaApis.handleApiVersionsRequest`:
/// unsupported version ⇒ error 35 at v0; invalid client software fields ⇒ error 42 with no list.
pub fn answer_api_versions(version: i16, request: Option<&ApiVersionsRequest>) -> (ApiVersionsResponse, i16) {
    let encode_at = api_versions_response_version(version);
    match request {
        Some(request) if encode_at == version && !has_valid_client_software(request, version) => {
            (ApiVersionsResponse::default().with_error_code(INVALID_REQUEST), version)
        }
        _ => (api_versions_response(version), encode_at),
    }
}

/// KIP-511: from v3 the client names its software; Kafka answers INVALID_REQUEST unless both
/// fields match `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
pub fn has_valid_client_software(request: &ApiVersionsRequest, version: i16) -> bool {
    version < 3
        || (is_software_token(&request.client_software_name) && is_software_token(&request.client_software_version))
}

fn is_software_token(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
        }
        _ => false,
    }
}

/// An UNSUPPORTED_VERSION answer for a non-ApiVersions request at a version we do not serve,
/// when one can be written: the codec must know `version`, and the response must have a
/// top-level error code at that version. `None` means the caller closes the connection, which
/// is what Kafka 3.9 does for every such request (`SocketServer.parseRequestHeader`).
///
/// With today's [`SUPPORTED`] table every served range equals the codec's, except Fetch v0–3
/// whose response has no top-level error code, so in practice this answers only for APIs whose
/// range is later narrowed below the codec's.
pub fn unsupported_version_response(api_key: ApiKey, version: i16) -> Option<ResponseKind> {
    let codec = api_key.valid_versions();
    if version < codec.min || version > codec.max {
        return None;
    }
    let error = UNSUPPORTED_VERSION;
    let response = match api_key {
        ApiKey::Fetch if version >= 7 => ResponseKind::Fetch(FetchResponse::default().with_error_code(error)),
        ApiKey::LeaderAndIsr => ResponseKind::LeaderAndIsr(LeaderAndIsrResponse::default().with_error_code(error)),
        ApiKey::StopReplica => ResponseKind::StopReplica(StopReplicaResponse::default().with_error_code(error)),
        ApiKey::UpdateMetadata => {
            ResponseKind::UpdateMetadata(UpdateMetadataResponse::default().with_error_code(error))
        }
        ApiKey::ControlledShutdown => {
            ResponseKind::ControlledShutdown(ControlledShutdownResponse::default().with_error_code(error))
        }
        _ => return None,
    };
    Some(response)
}

/// Kafka's ErrorsPerSec `error` label for the codes the network layer itself writes.
pub fn error_name(code: i16) -> String {
    crate::protocol::error_codes::name(code)
}

fn api_keys() -> Vec<ApiVersion> {
    SUPPORTED
        .iter()
        .map(|&(key, min, max)| {
            ApiVersion::default()
                .with_api_key(key as i16)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    use super::*;

    #[test]
    fn every_supported_range_is_within_what_the_codec_can_encode() {
        for &(key, min, max) in SUPPORTED {
            let codec = key.valid_versions();
            assert!(
                codec.min <= min && min <= max && max <= codec.max,
                "{key:?} {min}-{max} vs codec {codec:?}"
            );
        }
    }

    #[test]
    fn the_table_is_in_api_key_order_without_duplicates() {
        let keys: Vec<i16> = SUPPORTED.iter().map(|(key, _, _)| *key as i16).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(keys, sorted);
    }

    #[test]
    fn supported_versions_match_kafka_3_9_except_fetch_below_v4() {
        assert_eq!(supported(ApiKey::Produce), Some((0, 11)));
        assert_eq!(supported(ApiKey::Fetch), Some((4, 17)));
        assert_eq!(supported(ApiKey::Metadata), Some((0, 12)));
        assert_eq!(supported(ApiKey::ApiVersions), Some((0, 4)));
        assert_eq!(supported(ApiKey::FindCoordinator), Some((0, 6)));
        assert_eq!(supported(ApiKey::JoinGroup), Some((0, 9)));
        assert_eq!(supported(ApiKey::OffsetCommit), Some((0, 9)));
        assert_eq!(supported(ApiKey::OffsetFetch), Some((0, 9)));
        assert_eq!(supported(ApiKey::DescribeAcls), Some((0, 3)));
        assert_eq!(supported(ApiKey::DescribeDelegationToken), None);
        assert!(!is_supported(ApiKey::Fetch, 3));
        assert!(is_supported(ApiKey::Fetch, 4));
    }

    #[test]
    fn an_unsupported_api_versions_request_gets_error_35_encoded_at_v0() {
        for version in [-1, 5, 100] {
            let response = api_versions_response(version);
            assert_eq!(response.error_code, UNSUPPORTED_VERSION);
            assert_eq!(response.api_keys.len(), SUPPORTED.len());
            assert_eq!(api_versions_response_version(version), 0);
        }
        assert_eq!(api_versions_response(3).error_code, 0);
        assert_eq!(api_versions_response_version(3), 3);
    }

    #[test]
    fn flexible_api_versions_responses_write_no_tagged_fields() -> anyhow::Result<()> {
        for version in 3..=4 {
            let response = api_versions_response(version);
            let mut buf = BytesMut::new();
            response.encode(&mut buf, version)?;
            // ... throttle_time_ms (4 bytes), then the tagged-field count: zero.
            assert_eq!(
                buf.last(),
                Some(&0),
                "v{version} ends with an empty tagged-field section"
            );
            let entry_bytes = 2 + 2 + 2 + 1; // key, min, max, empty tags
            assert_eq!(buf.len(), 2 + 1 + SUPPORTED.len() * entry_bytes + 4 + 1);
            let decoded = ApiVersionsResponse::decode(&mut buf.freeze(), version)?;
            assert_eq!(decoded, response);
        }
        Ok(())
    }

    #[test]
    fn client_software_fields_are_checked_from_v3_as_kip_511_says() {
        let named = |name: &'static str, version: &'static str| {
            ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str(name))
                .with_client_software_version(StrBytes::from_static_str(version))
        };
        assert!(has_valid_client_software(&named("apache-kafka-java", "3.9.0"), 3));
        assert!(has_valid_client_software(&named("librdkafka", "2.0.2"), 4));
        assert!(has_valid_client_software(&named("k", "1"), 3));
        assert!(!has_valid_client_software(&named("", "1.0"), 3));
        assert!(!has_valid_client_software(&named("kafka python", "1.0"), 3));
        assert!(!has_valid_client_software(&named("-lead", "1.0"), 3));
        assert!(!has_valid_client_software(&named("trail.", "1.0"), 3));
        assert!(
            has_valid_client_software(&named("", ""), 2),
            "v0-2 carry no such fields"
        );
    }

    #[test]
    fn invalid_client_software_is_answered_with_invalid_request_at_the_request_version() {
        let anonymous = ApiVersionsRequest::default();
        let (response, version) = answer_api_versions(3, Some(&anonymous));
        assert_eq!(
            (response.error_code, response.api_keys.len(), version),
            (INVALID_REQUEST, 0, 3)
        );
        let (response, version) = answer_api_versions(2, Some(&anonymous));
        assert_eq!(
            (response.error_code, response.api_keys.len(), version),
            (0, SUPPORTED.len(), 2)
        );
        let (response, version) = answer_api_versions(9, None);
        assert_eq!((response.error_code, version), (UNSUPPORTED_VERSION, 0));
    }

    #[test]
    fn unsupported_versions_get_an_error_body_only_where_a_top_level_error_code_exists() -> anyhow::Result<()> {
        assert!(
            unsupported_version_response(ApiKey::Fetch, 3).is_none(),
            "Fetch < v7 has no top-level error"
        );
        assert!(
            unsupported_version_response(ApiKey::Fetch, 18).is_none(),
            "the codec cannot write v18"
        );
        assert!(
            unsupported_version_response(ApiKey::Metadata, 5).is_none(),
            "Metadata has no top-level error"
        );
        assert!(unsupported_version_response(ApiKey::Produce, 5).is_none());
        for (key, version) in [
            (ApiKey::Fetch, 7),
            (ApiKey::LeaderAndIsr, 7),
            (ApiKey::ControlledShutdown, 0),
        ] {
            let Some(response) = unsupported_version_response(key, version) else {
                anyhow::bail!("{key:?} v{version} should be answerable");
            };
            let mut buf = BytesMut::new();
            response.encode(&mut buf, version)?;
            let decoded = ResponseKind::decode(key, &mut buf.freeze(), version)?;
            assert_eq!(decoded, response);
        }
        Ok(())
    }

    #[test]
    fn error_labels_use_kafka_error_names() {
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(UNSUPPORTED_VERSION), "UNSUPPORTED_VERSION");
        assert_eq!(error_name(INVALID_REQUEST), "INVALID_REQUEST");
    }
}
