//! Requests as the socket server reads them: size-prefixed frames off the stream, then the
//! header and body decoded for the API and version the header names.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;

use crate::network::api_versions::{
    answer_api_versions, has_valid_client_software, is_supported, unsupported_version_response,
};
use crate::network::connection::read_frame;
use crate::protocol::record_batch::{validate_batches, BatchScanner};

/// `socket.request.max.bytes`' default.
const MAX_REQUEST_BYTES: usize = 100 << 20;
/// A produce batch's size limit (`message.max.bytes` default, rounded up).
const MAX_BATCH_BYTES: usize = 1 << 20;

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime for the frame reader");
}

/// A byte stream as a connection receives it: frames read with the server's reader until the
/// stream ends or a frame is refused, each decoded as [`request`] does.
pub fn request_frames(data: &[u8]) {
    RUNTIME.with(|runtime| {
        runtime.block_on(async {
            let mut stream = data;
            while let Ok(Some(frame)) = read_frame(&mut stream, MAX_REQUEST_BYTES, Duration::from_secs(60)).await {
                request_body(frame);
            }
        })
    });
}

/// One frame's contents (after the size prefix): header, then the body of a served API and
/// version; a produce request's record sets go through produce validation.
pub fn request(data: &[u8]) {
    request_body(Bytes::copy_from_slice(data));
}

fn request_body(mut frame: Bytes) {
    let [k0, k1, v0, v1, ..] = *frame else {
        return;
    };
    let Ok(api_key) = ApiKey::try_from(i16::from_be_bytes([k0, k1])) else {
        return;
    };
    let version = i16::from_be_bytes([v0, v1]);
    if RequestHeader::decode(&mut frame, api_key.request_header_version(version)).is_err() {
        return;
    }
    if api_key == ApiKey::ApiVersions {
        let request = ApiVersionsRequest::decode(&mut frame, version).ok();
        if let Some(request) = &request {
            has_valid_client_software(request, version);
        }
        answer_api_versions(version, request.as_ref());
        return;
    }
    if !is_supported(api_key, version) {
        unsupported_version_response(api_key, version);
        return;
    }
    let Ok(request) = RequestKind::decode(api_key, &mut frame, version) else {
        return;
    };
    if let RequestKind::Produce(produce) = &request {
        for topic in &produce.topic_data {
            for partition in &topic.partition_data {
                if let Some(records) = &partition.records {
                    let _ = validate_batches(records, MAX_BATCH_BYTES);
                    BatchScanner::new(records).for_each(drop);
                }
            }
        }
    }
}
