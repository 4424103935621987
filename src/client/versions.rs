//! Version negotiation: the API version ranges a broker advertised in its ApiVersions reply, the
//! choice of a version both sides speak, and the KIP-511 reading of an ApiVersions reply.
//!
//! Pure logic; the connection sends the requests.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};
use kafka_protocol::protocol::Decodable;

/// The ApiVersions version a connection opens with (the first flexible one, which carries the
/// client software name and version).
pub const API_VERSIONS_FIRST_VERSION: i16 = 3;

use crate::protocol::error_codes::ResponseError;
pub use crate::protocol::error_codes::UNSUPPORTED_VERSION;

/// The `(min, max)` version range per API key that a broker advertised.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiVersionRanges {
    /// Keyed by raw API key so keys this codec does not know are kept (and shown in logs).
    ranges: BTreeMap<i16, (i16, i16)>,
}

impl ApiVersionRanges {
    pub fn from_response(response: &ApiVersionsResponse) -> Self {
        let ranges = response
            .api_keys
            .iter()
            .map(|v| (v.api_key, (v.min_version, v.max_version)))
            .collect();
        ApiVersionRanges { ranges }
    }

    /// The range the broker advertised for `api`, if any.
    pub fn range(&self, api: ApiKey) -> Option<(i16, i16)> {
        self.ranges.get(&(api as i16)).copied()
    }

    /// The highest version in the broker's range, `ours`, and what the codec can encode; `None`
    /// when they do not overlap or the broker does not list `api`.
    pub fn version_for(&self, api: ApiKey, ours: (i16, i16)) -> Option<i16> {
        let (broker_min, broker_max) = self.range(api)?;
        let codec = api.valid_versions();
        let min = broker_min.max(ours.0).max(codec.min);
        let max = broker_max.min(ours.1).min(codec.max);
        (min <= max).then_some(max)
    }

    /// Whether both the broker and the codec accept `api` at `version`.
    pub fn supports(&self, api: ApiKey, version: i16) -> bool {
        self.version_for(api, (version, version)).is_some()
    }
}

/// What an ApiVersions reply means for the handshake.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiVersionsReply {
    /// The broker answered at our version: these are its ranges.
    Accepted(ApiVersionRanges),
    /// KIP-511: the broker does not speak our ApiVersions version; ask again at this one.
    RetryAt(i16),
    /// Any other error: the broker refuses the connection (Kafka disconnects).
    Failed { error: ResponseError },
}

/// Reads the body of an ApiVersions reply to a request sent at `sent_version`.
///
/// A broker that does not support `sent_version` answers with a **v0** body carrying error 35
/// and, since Kafka 2.4, its full api_keys list (KIP-511). Both v0 and later bodies begin with
/// the int16 error code, so the code picks the schema; the client then retries at the broker's
/// ApiVersions max, or v0 when it lists none (Kafka's `NetworkClient.handleApiVersionsResponse`).
/// Like Kafka's `ApiVersionsResponse.parse`, a body that fails to decode at `sent_version` is
/// tried once more as v0.
pub fn read_api_versions_reply(body: Bytes, sent_version: i16) -> Result<ApiVersionsReply, String> {
    let error_code = match body.get(..2) {
        Some(&[hi, lo]) => i16::from_be_bytes([hi, lo]),
        _ => return Err(format!("ApiVersions body of {} bytes has no error code", body.len())),
    };
    let response = if error_code == UNSUPPORTED_VERSION && sent_version > 0 {
        decode(body, 0)?
    } else {
        match decode(body.clone(), sent_version) {
            Ok(response) => response,
            Err(first) if sent_version > 0 => decode(body, 0).map_err(|_| first)?,
            Err(first) => return Err(first),
        }
    };
    Ok(match response.error_code {
        0 => ApiVersionsReply::Accepted(ApiVersionRanges::from_response(&response)),
        UNSUPPORTED_VERSION if sent_version > 0 => {
            let broker_max = ApiVersionRanges::from_response(&response)
                .range(ApiKey::ApiVersions)
                .map_or(0, |(_, max)| max);
            // Never retry at a version we already tried, so the handshake terminates.
            ApiVersionsReply::RetryAt(broker_max.clamp(0, sent_version - 1))
        }
        code => ApiVersionsReply::Failed {
            error: ResponseError::try_from_code(code).unwrap_or(ResponseError::Unknown(code)),
        },
    })
}

fn decode(mut body: Bytes, version: i16) -> Result<ApiVersionsResponse, String> {
    ApiVersionsResponse::decode(&mut body, version).map_err(|e| format!("ApiVersions v{version} body: {e:#}"))
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::protocol::Encodable;

    use super::*;

    fn response(error_code: i16, keys: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
        ApiVersionsResponse::default()
            .with_error_code(error_code)
            .with_api_keys(
                keys.iter()
                    .map(|&(k, min, max)| {
                        ApiVersion::default()
                            .with_api_key(k as i16)
                            .with_min_version(min)
                            .with_max_version(max)
                    })
                    .collect(),
            )
    }

    fn encoded(r: &ApiVersionsResponse, version: i16) -> Bytes {
        let mut buf = BytesMut::new();
        r.encode(&mut buf, version).expect("test response encodes");
        buf.freeze()
    }

    #[test]
    fn version_for_picks_the_highest_version_both_sides_and_the_codec_speak() {
        let broker = ApiVersionRanges::from_response(&response(
            0,
            &[
                (ApiKey::Metadata, 0, 12),
                (ApiKey::Fetch, 4, 13),
                (ApiKey::Produce, 3, 99),
            ],
        ));
        let table = [
            (ApiKey::Metadata, (0, 9), Some(9)),
            (ApiKey::Metadata, (10, 20), Some(12)),
            (ApiKey::Fetch, (0, 3), None),
            (ApiKey::Fetch, (13, 17), Some(13)),
            // The broker claims 99 but the codec stops at 11.
            (ApiKey::Produce, (3, 99), Some(11)),
            // Not advertised at all.
            (ApiKey::LeaderAndIsr, (0, 7), None),
        ];
        for (api, ours, expected) in table {
            assert_eq!(broker.version_for(api, ours), expected, "{api:?} {ours:?}");
        }
        assert!(broker.supports(ApiKey::Fetch, 4));
        assert!(!broker.supports(ApiKey::Fetch, 14));
    }

    #[test]
    fn a_v3_reply_is_accepted_with_the_broker_ranges() {
        let body = encoded(
            &response(0, &[(ApiKey::ApiVersions, 0, 4), (ApiKey::Metadata, 0, 12)]),
            3,
        );
        let ApiVersionsReply::Accepted(ranges) = read_api_versions_reply(body, 3).expect("decodes") else {
            panic!("expected Accepted");
        };
        assert_eq!(ranges.range(ApiKey::Metadata), Some((0, 12)));
    }

    #[test]
    fn an_error_35_v0_body_asks_for_a_retry_at_the_broker_max_per_kip_511() {
        let body = encoded(
            &response(35, &[(ApiKey::ApiVersions, 0, 2), (ApiKey::Metadata, 0, 8)]),
            0,
        );
        assert_eq!(read_api_versions_reply(body, 3), Ok(ApiVersionsReply::RetryAt(2)));
    }

    #[test]
    fn an_error_35_without_an_api_versions_entry_retries_at_v0() {
        let body = encoded(&response(UNSUPPORTED_VERSION, &[]), 0);
        assert_eq!(read_api_versions_reply(body, 3), Ok(ApiVersionsReply::RetryAt(0)));
    }

    #[test]
    fn a_broker_max_not_below_the_sent_version_still_lowers_the_retry_version() {
        let body = encoded(&response(UNSUPPORTED_VERSION, &[(ApiKey::ApiVersions, 0, 4)]), 0);
        assert_eq!(read_api_versions_reply(body, 3), Ok(ApiVersionsReply::RetryAt(2)));
    }

    #[test]
    fn error_35_at_v0_and_other_errors_fail_the_handshake() {
        let body = encoded(&response(UNSUPPORTED_VERSION, &[]), 0);
        assert_eq!(
            read_api_versions_reply(body, 0),
            Ok(ApiVersionsReply::Failed {
                error: ResponseError::UnsupportedVersion
            })
        );
        let refused = ResponseError::ClusterAuthorizationFailed;
        let body = encoded(&response(refused.code(), &[]), 3);
        assert_eq!(
            read_api_versions_reply(body, 3),
            Ok(ApiVersionsReply::Failed { error: refused })
        );
    }

    #[test]
    fn a_truncated_body_is_a_decode_error() {
        assert!(read_api_versions_reply(Bytes::from_static(&[0]), 3).is_err());
        assert!(read_api_versions_reply(Bytes::from_static(&[0, 0, 0, 0, 0, 9]), 0).is_err());
    }
}
