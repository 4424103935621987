//! `kastle zk check`: walk a live ZooKeeper tree and validate every znode whose path belongs
//! to Kafka's layout against its schema. Paths outside the layout are counted, not judged.

use std::collections::VecDeque;

use super::paths::{self, classify};
use super::schema::{self, SchemaError};
use super::store::{ZkError, ZkStore};

/// One znode that does not match its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub path: String,
    pub schema: &'static str,
    pub problems: Vec<String>,
}

/// The outcome of a walk.
#[derive(Debug, Default, Clone)]
pub struct CheckReport {
    /// Znodes validated against a schema.
    pub checked: usize,
    /// Znodes outside Kafka's layout (not judged).
    pub unknown: usize,
    pub violations: Vec<Violation>,
}

/// Why the walk itself failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Zk(#[from] ZkError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

/// Walks the tree under the store's root (breadth first), skipping ZooKeeper's own `/zookeeper`.
pub async fn check_tree<S: ZkStore>(store: &S) -> Result<CheckReport, CheckError> {
    let mut report = CheckReport::default();
    let mut queue = VecDeque::from(["/".to_string()]);
    while let Some(path) = queue.pop_front() {
        let children = match store.children(&path).await {
            Ok(c) => c,
            // Deleted while we walked (an expired ephemeral, a processed notification).
            Err(ZkError::NoNode { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        for name in children {
            let child = paths::child(&path, &name);
            if child != "/zookeeper" {
                queue.push_back(child);
            }
        }
        if path == "/" {
            continue;
        }
        let Some(kind) = classify(&path) else {
            report.unknown += 1;
            continue;
        };
        let data = match store.get_data(&path).await {
            Ok((data, _)) => data,
            Err(ZkError::NoNode { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        report.checked += 1;
        let problems = schema::validate(kind, &data)?;
        if !problems.is_empty() {
            report.violations.push(Violation {
                path,
                schema: kind.schema_name(),
                problems,
            });
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk::fake::FakeZk;
    use crate::zk::store::{create_recursive, CreateMode};

    #[tokio::test]
    async fn a_corrupted_znode_is_reported_with_its_path() {
        let zk = FakeZk::new();
        create_recursive(&zk, "/brokers/ids").await.expect("paths");
        zk.create("/controller_epoch", b"3", CreateMode::Persistent)
            .await
            .expect("epoch");
        zk.create("/brokers/ids/1", b"{not json", CreateMode::Ephemeral)
            .await
            .expect("broker");
        zk.create("/custom", b"whatever", CreateMode::Persistent)
            .await
            .expect("custom");
        let report = check_tree(&zk).await.expect("walk");
        assert_eq!(report.unknown, 1);
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
        assert_eq!(report.violations[0].path, "/brokers/ids/1");
        assert_eq!(report.violations[0].schema, "broker-registration");
    }
}
