//! Producer id allocation for InitProducerId: Kafka's `ZkProducerIdManager`. Brokers claim
//! blocks of [`BLOCK_SIZE`] ids in `/latest_producer_id_block`
//! (`{"version":1,"broker":N,"block_start":"…","block_end":"…"}`) with a read and a setData
//! conditional on the znode's version, retrying when another broker won the race; ids are then
//! handed out from the claimed block without touching ZooKeeper.
//!
//! Kafka 3.x brokers with IBP ≥ 3.0-IV0 ask the controller instead (AllocateProducerIds, which
//! writes the same znode the same way); kastle keeps the broker-side allocation of the
//! ZooKeeper era. Ids are unique across the cluster and never reused: a block claimed by a
//! broker that then dies is simply skipped.

use tokio::sync::Mutex;

use crate::types::BrokerId;
use crate::zk::models::{ProducerIdBlock, ZNodePayload};
use crate::zk::paths::LATEST_PRODUCER_ID_BLOCK;
use crate::zk::{KafkaZkClient, ZkError, ZkStore};

/// Ids per block (Kafka's `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`).
pub const BLOCK_SIZE: i64 = 1000;

/// Why no producer id could be handed out.
#[derive(Debug, thiserror::Error)]
pub enum ProducerIdError {
    #[error("all producer ids have been allocated (last block ends at {last})")]
    Exhausted { last: i64 },
    #[error("cannot read or write {LATEST_PRODUCER_ID_BLOCK}: {0}")]
    Zk(#[from] ZkError),
    #[error("{LATEST_PRODUCER_ID_BLOCK} holds an unreadable block: {0}")]
    Corrupt(String),
}

impl ProducerIdError {
    /// The InitProducerId error code. No block to hand out yet (ZooKeeper unreachable) is
    /// COORDINATOR_LOAD_IN_PROGRESS, what Kafka 3.9's `RPCProducerIdManager` answers while it
    /// waits for a block: clients retry it. A broken znode or the end of the id space is
    /// UNKNOWN_SERVER_ERROR, as `Errors.forException` maps Kafka's `KafkaException`.
    pub fn error_code(&self) -> i16 {
        match self {
            ProducerIdError::Zk(_) => crate::protocol::error_codes::COORDINATOR_LOAD_IN_PROGRESS,
            ProducerIdError::Exhausted { .. } | ProducerIdError::Corrupt(_) => {
                crate::protocol::error_codes::UNKNOWN_SERVER_ERROR
            }
        }
    }
}

/// The block a broker claims after `current` (the znode's content; `None` when never written).
pub fn next_block(current: Option<&ProducerIdBlock>, broker: BrokerId) -> Result<ProducerIdBlock, ProducerIdError> {
    let start = match current {
        None => 0,
        Some(block) if block.block_end > i64::MAX - BLOCK_SIZE => {
            return Err(ProducerIdError::Exhausted { last: block.block_end })
        }
        Some(block) => block.block_end + 1,
    };
    Ok(ProducerIdBlock {
        version: 1,
        broker,
        block_start: start,
        block_end: start + BLOCK_SIZE - 1,
    })
}

/// The ids left in this broker's current block.
#[derive(Debug, Default)]
struct Remaining {
    next: i64,
    /// Inclusive; `next > end` means empty.
    end: i64,
}

/// Hands out producer ids from ZooKeeper-claimed blocks.
#[derive(Debug)]
pub struct ProducerIdManager<S> {
    zk: KafkaZkClient<S>,
    broker: BrokerId,
    /// One allocation at a time: a second caller waits for the block the first one claims.
    block: Mutex<Option<Remaining>>,
}

impl<S: ZkStore> ProducerIdManager<S> {
    pub fn new(zk: KafkaZkClient<S>, broker: BrokerId) -> Self {
        ProducerIdManager {
            zk,
            broker,
            block: Mutex::new(None),
        }
    }

    /// A producer id no other producer of the cluster has had.
    pub async fn generate_producer_id(&self) -> Result<i64, ProducerIdError> {
        let mut block = self.block.lock().await;
        if let Some(r) = block.as_mut().filter(|r| r.next <= r.end) {
            r.next += 1;
            return Ok(r.next - 1);
        }
        let claimed = self.claim_block().await?;
        *block = Some(Remaining {
            next: claimed.block_start + 1,
            end: claimed.block_end,
        });
        Ok(claimed.block_start)
    }

    /// Kafka's `getNewProducerIdBlock`: read, compute the next block, write it conditionally
    /// on the version read, and start over if another broker wrote in between.
    async fn claim_block(&self) -> Result<ProducerIdBlock, ProducerIdError> {
        let store = self.zk.store();
        loop {
            let (data, version) = match store.get_data(LATEST_PRODUCER_ID_BLOCK).await {
                Ok((data, stat)) => (data, Some(stat.version)),
                Err(ZkError::NoNode { .. }) => (Vec::new(), None),
                Err(e) => return Err(e.into()),
            };
            let current = if data.is_empty() || data == b"null" {
                None
            } else {
                Some(ProducerIdBlock::decode(&data).map_err(|e| ProducerIdError::Corrupt(e.to_string()))?)
            };
            let next = next_block(current.as_ref(), self.broker)?;
            let written = match version {
                Some(v) => store
                    .set_data(LATEST_PRODUCER_ID_BLOCK, &next.encode(), Some(v))
                    .await
                    .map(|_| ()),
                None => store
                    .create(
                        LATEST_PRODUCER_ID_BLOCK,
                        &next.encode(),
                        crate::zk::CreateMode::Persistent,
                    )
                    .await
                    .map(|_| ()),
            };
            match written {
                Ok(()) => {
                    tracing::info!(
                        broker = self.broker.0,
                        start = next.block_start,
                        end = next.block_end,
                        "claimed a producer id block"
                    );
                    return Ok(next);
                }
                Err(ZkError::BadVersion { .. } | ZkError::NodeExists { .. } | ZkError::NoNode { .. }) => {
                    tracing::debug!("another broker claimed a producer id block first; retrying");
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk::fake::FakeZk;

    #[test]
    fn blocks_follow_each_other_and_end_before_overflow() {
        let first = next_block(None, BrokerId(1)).expect("first");
        assert_eq!(
            (first.block_start, first.block_end, first.broker),
            (0, 999, BrokerId(1))
        );
        let second = next_block(Some(&first), BrokerId(2)).expect("second");
        assert_eq!((second.block_start, second.block_end), (1000, 1999));
        let last = ProducerIdBlock {
            block_end: i64::MAX - 10,
            ..first
        };
        assert!(matches!(
            next_block(Some(&last), BrokerId(1)),
            Err(ProducerIdError::Exhausted { .. })
        ));
    }

    #[tokio::test]
    async fn brokers_hand_out_disjoint_ids_from_their_blocks() {
        let zk = FakeZk::new();
        let client = KafkaZkClient::new(zk.clone());
        client.ensure_persistent_paths().await.expect("paths");
        let a = ProducerIdManager::new(KafkaZkClient::new(zk.clone()), BrokerId(1));
        let b = ProducerIdManager::new(KafkaZkClient::new(zk.clone()), BrokerId(2));
        let mut ids = Vec::new();
        for _ in 0..1500 {
            ids.push(a.generate_producer_id().await.expect("a"));
        }
        ids.push(b.generate_producer_id().await.expect("b"));
        assert_eq!(&ids[..3], &[0, 1, 2]);
        assert_eq!(ids[1000], 1000, "a's second block follows its first");
        assert_eq!(ids[1500], 2000, "b's block follows a's second");
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "no id twice");
        let (data, _) = zk.get_data(LATEST_PRODUCER_ID_BLOCK).await.expect("znode");
        let text = String::from_utf8(data).expect("utf8");
        assert_eq!(
            text,
            r#"{"version":1,"broker":2,"block_start":"2000","block_end":"2999"}"#
        );
    }

    #[tokio::test]
    async fn a_missing_znode_is_created_with_the_first_block() {
        let zk = FakeZk::new();
        let m = ProducerIdManager::new(KafkaZkClient::new(zk.clone()), BrokerId(3));
        assert_eq!(m.generate_producer_id().await.expect("id"), 0);
        assert!(zk.get_data(LATEST_PRODUCER_ID_BLOCK).await.is_ok());
    }

    #[tokio::test]
    async fn concurrent_claims_never_share_a_block() {
        let zk = FakeZk::new();
        KafkaZkClient::new(zk.clone())
            .ensure_persistent_paths()
            .await
            .expect("paths");
        let m: Vec<_> = (0..4)
            .map(|i| ProducerIdManager::new(KafkaZkClient::new(zk.clone()), BrokerId(i)))
            .collect();
        let (a, b, c, d) = tokio::join!(
            m[0].generate_producer_id(),
            m[1].generate_producer_id(),
            m[2].generate_producer_id(),
            m[3].generate_producer_id()
        );
        let mut starts: Vec<i64> = [a, b, c, d].into_iter().map(|r| r.expect("id")).collect();
        starts.sort_unstable();
        assert_eq!(starts, vec![0, 1000, 2000, 3000]);
    }
}
