//! InitProducerId (API 22) for idempotent producers: Kafka's `TransactionCoordinator.
//! handleInitProducerId` with a null transactional id, which hands out a fresh producer id
//! with epoch 0 from the broker's ZooKeeper-claimed block.
//!
//! - A null transactional id always gets a new id, epoch 0, even when the request carries the
//!   producer's current id and epoch (v3+): Kafka bumps the epoch server-side only for
//!   transactional producers. An idempotent producer's KIP-360 epoch bump happens in the client
//!   (`bumpIdempotentEpochAndResetIdIfNeeded`), and the partitions accept the bumped epoch at
//!   sequence 0 (see `log::producer_state`).
//! - An empty transactional id, a producer id without an epoch, or an epoch without an id, is INVALID_REQUEST, as Kafka's
//!   `KafkaApis.handleInitProducerIdRequest` answers.
//! - A transactional id is answered COORDINATOR_NOT_AVAILABLE: kastle has no transaction
//!   coordinator (no `__transaction_state`), which is what a Kafka cluster whose transaction
//!   log cannot be created answers. The client reports it as retriable and times out in
//!   `initTransactions` rather than mistaking it for an authorization problem.

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::KafkaApis;
use crate::protocol::error_codes as ec;

use crate::protocol::error_codes::{COORDINATOR_NOT_AVAILABLE, INVALID_REQUEST};

pub(super) async fn handle(apis: &KafkaApis, request: InitProducerIdRequest) -> InitProducerIdResponse {
    let response = InitProducerIdResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    match request.transactional_id.as_ref() {
        None => {}
        // Kafka: an empty transactional id is INVALID_REQUEST, not "no transactions".
        Some(id) if id.0.is_empty() => return response.with_error_code(INVALID_REQUEST),
        Some(id) => {
            tracing::warn!(transactional_id = %id.0.as_str(), "transactions are not supported: InitProducerId answered COORDINATOR_NOT_AVAILABLE");
            return response.with_error_code(COORDINATOR_NOT_AVAILABLE);
        }
    }
    if (request.producer_id.0 == -1) != (request.producer_epoch == -1) {
        return response.with_error_code(INVALID_REQUEST);
    }
    match apis.producer_ids.generate_producer_id().await {
        Ok(id) => response
            .with_error_code(ec::NONE)
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(0),
        Err(e) => {
            tracing::warn!(error = %e, "cannot allocate a producer id");
            response.with_error_code(e.error_code())
        }
    }
}
