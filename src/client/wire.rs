//! Kafka framing for the client side: a request frame is `size:int32` + request header + body;
//! a response frame is `size:int32` + response header + body. Header versions come from the
//! codec (`ApiKey::request_header_version` / `response_header_version`, which already answers
//! v0 for every ApiVersions response).
//!
//! Owns bytes only; the sockets belong to the connection.

use std::io;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Offset of the correlation id in a request frame: after size, api_key and api_version. The
/// same in every request header version, so it can be patched after encoding.
const REQUEST_CORRELATION_ID_OFFSET: usize = 8;

/// Builds a request frame with correlation id 0; [`set_correlation_id`] fills it in later, so the
/// expensive encoding can happen before the connection's ordering lock is taken.
pub fn encode_request_frame(
    api: ApiKey,
    version: i16,
    client_id: &StrBytes,
    encode_body: impl FnOnce(&mut BytesMut) -> Result<(), String>,
) -> Result<BytesMut, String> {
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(0)
        .with_client_id(Some(client_id.clone()));
    let mut frame = BytesMut::with_capacity(64);
    frame.put_i32(0);
    header
        .encode(&mut frame, api.request_header_version(version))
        .map_err(|e| format!("request header: {e:#}"))?;
    encode_body(&mut frame)?;
    let size = i32::try_from(frame.len() - 4).map_err(|_| format!("request of {} bytes is too large", frame.len()))?;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    Ok(frame)
}

pub fn set_correlation_id(frame: &mut BytesMut, correlation_id: i32) {
    if let Some(slot) = frame.get_mut(REQUEST_CORRELATION_ID_OFFSET..REQUEST_CORRELATION_ID_OFFSET + 4) {
        slot.copy_from_slice(&correlation_id.to_be_bytes());
    }
}

/// The correlation id of a response frame (its first field in every response header version).
pub fn peek_correlation_id(frame: &[u8]) -> Option<i32> {
    match frame.get(..4) {
        Some(&[a, b, c, d]) => Some(i32::from_be_bytes([a, b, c, d])),
        _ => None,
    }
}

/// Strips the response header (whose version depends on the request) and returns the body.
pub fn split_response_header(mut frame: Bytes, api: ApiKey, version: i16) -> Result<Bytes, String> {
    let header_version = api.response_header_version(version);
    ResponseHeader::decode(&mut frame, header_version)
        .map_err(|e| format!("{api:?} v{version} response header v{header_version}: {e:#}"))?;
    Ok(frame)
}

/// Why no frame could be read.
#[derive(Debug)]
pub enum FrameError {
    Io(io::Error),
    /// The size prefix is negative or above the configured maximum.
    BadSize {
        size: i32,
        max: usize,
    },
    /// The peer closed the connection in the middle of a frame.
    Truncated,
}

/// Reads one size-prefixed frame (without its size). `Ok(None)` is a clean EOF between frames.
pub async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R, max_bytes: usize) -> Result<Option<Bytes>, FrameError> {
    let mut size = [0u8; 4];
    // Read the first byte alone: EOF there is a clean close, EOF after it is truncation.
    match reader.read(&mut size[..1]).await {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(e) => return Err(FrameError::Io(e)),
    }
    match reader.read_exact(&mut size[1..]).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(FrameError::Truncated),
        Err(e) => return Err(FrameError::Io(e)),
    }
    let size = i32::from_be_bytes(size);
    let len = usize::try_from(size)
        .ok()
        .filter(|len| *len <= max_bytes)
        .ok_or(FrameError::BadSize { size, max: max_bytes })?;
    let mut frame = BytesMut::zeroed(len);
    match reader.read_exact(&mut frame).await {
        Ok(_) => Ok(Some(frame.freeze())),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(FrameError::Truncated),
        Err(e) => Err(FrameError::Io(e)),
    }
}

/// Reads the request header of a frame as a broker would; used by the tests' fake broker.
#[cfg(test)]
pub fn split_request_header(mut frame: Bytes) -> Result<(ApiKey, RequestHeader, Bytes), String> {
    use bytes::Buf;
    let mut peek = frame.clone();
    if peek.remaining() < 4 {
        return Err("request shorter than its api key and version".to_owned());
    }
    let key = peek.get_i16();
    let version = peek.get_i16();
    let api = ApiKey::try_from(key).map_err(|()| format!("unknown api key {key}"))?;
    let header =
        RequestHeader::decode(&mut frame, api.request_header_version(version)).map_err(|e| format!("{e:#}"))?;
    Ok((api, header, frame))
}

#[cfg(test)]
mod tests {
    use bytes::Buf;
    use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};

    use super::*;

    fn frame_for(api: ApiKey, version: i16, body: impl Encodable) -> BytesMut {
        let client_id = StrBytes::from_static_str("test-client");
        encode_request_frame(api, version, &client_id, |buf| {
            body.encode(buf, version).map_err(|e| e.to_string())
        })
        .expect("encodes")
    }

    #[test]
    fn request_frames_use_the_header_version_the_codec_prescribes() {
        // Metadata v8 is not flexible (header v1), v9 is (header v2); ApiVersions v3 is flexible.
        let cases = [
            (ApiKey::Metadata, 8, 1),
            (ApiKey::Metadata, 9, 2),
            (ApiKey::ApiVersions, 0, 1),
            (ApiKey::ApiVersions, 3, 2),
        ];
        for (api, version, header_version) in cases {
            let mut frame = match api {
                ApiKey::ApiVersions => frame_for(api, version, ApiVersionsRequest::default()),
                _ => frame_for(api, version, MetadataRequest::default()),
            };
            assert_eq!(api.request_header_version(version), header_version);
            set_correlation_id(&mut frame, 77);
            let mut bytes = frame.freeze();
            let size = bytes.get_i32();
            assert_eq!(usize::try_from(size).ok(), Some(bytes.len()));
            let header = RequestHeader::decode(&mut bytes, header_version).expect("header decodes");
            assert_eq!(header.request_api_key, api as i16);
            assert_eq!(header.request_api_version, version);
            assert_eq!(header.correlation_id, 77);
            assert_eq!(header.client_id.as_deref(), Some("test-client"));
        }
    }

    #[tokio::test]
    async fn frames_larger_than_the_maximum_or_negative_are_rejected() {
        let mut big: &[u8] = &[0, 0, 1, 0, 1, 2, 3];
        assert!(matches!(
            read_frame(&mut big, 100).await,
            Err(FrameError::BadSize { size: 256, .. })
        ));
        let mut negative: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_frame(&mut negative, 100).await,
            Err(FrameError::BadSize { size: -1, .. })
        ));
    }

    #[tokio::test]
    async fn eof_between_frames_is_clean_and_inside_a_frame_is_truncation() {
        let mut empty: &[u8] = &[];
        assert!(matches!(read_frame(&mut empty, 100).await, Ok(None)));
        let mut cut: &[u8] = &[0, 0, 0, 5, 1, 2];
        assert!(matches!(read_frame(&mut cut, 100).await, Err(FrameError::Truncated)));
        let mut cut_size: &[u8] = &[0, 0];
        assert!(matches!(
            read_frame(&mut cut_size, 100).await,
            Err(FrameError::Truncated)
        ));
        let mut whole: &[u8] = &[0, 0, 0, 2, 1, 2, 9];
        assert_eq!(
            read_frame(&mut whole, 100).await.ok().flatten().as_deref(),
            Some(&[1u8, 2][..])
        );
    }
}
