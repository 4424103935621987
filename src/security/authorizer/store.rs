//! The ZooKeeper side of the ACL authorizer, as Kafka's `ZkAclStore`s and `AclAuthorizer`
//! keep it: literal ACLs in `/kafka-acl/<ResourceType>/<name>`, prefixed ones in
//! `/kafka-acl-extended/prefixed/<ResourceType>/<name>`, each written conditionally on its
//! zkVersion (retried on a conflict) and announced by a sequential notification
//! (`/kafka-acl-changes/acl_changes_<seq>` holding `TOPIC:a`, or
//! `/kafka-acl-extended-changes/acl_changes_<seq>` holding
//! `{"version":1,"resourceType":"TOPIC","name":"a","patternType":"PREFIXED"}`). [`run`] is the
//! `ZkNodeChangeNotificationListener` every broker runs: it re-reads each changed resource into
//! the cache and deletes notifications older than 15 minutes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::acl::{decode_acls, encode_acls, upper_snake, AclEntry, PatternType, ResourcePattern, ResourceType};
use super::AclAuthorizer;
use crate::server::dynamic_config::{to_purge, CHANGE_EXPIRATION_MS};
use crate::zk::store::{create_recursive, CreateMode, WatchEvent, WatchMode, ZkError, ZkStore};

pub const LITERAL_ROOT: &str = "/kafka-acl";
pub const PREFIXED_ROOT: &str = "/kafka-acl-extended/prefixed";
pub const LITERAL_CHANGES: &str = "/kafka-acl-changes";
pub const EXTENDED_CHANGES: &str = "/kafka-acl-extended-changes";
/// Prefix of both change paths' children (sequential).
pub const CHANGE_PREFIX: &str = "acl_changes_";

/// How often a conditional write is retried after losing a race.
const MAX_WRITE_ATTEMPTS: usize = 20;

/// Every ACL in the store, by pattern.
pub type AclMap = BTreeMap<ResourcePattern, BTreeSet<AclEntry>>;

fn root(pattern_type: PatternType) -> &'static str {
    if pattern_type == PatternType::Prefixed {
        PREFIXED_ROOT
    } else {
        LITERAL_ROOT
    }
}

/// The znode of a pattern's ACLs.
pub fn acl_path(p: &ResourcePattern) -> String {
    format!("{}/{}/{}", root(p.pattern_type), p.resource_type.name(), p.name)
}

#[derive(Debug, Serialize, Deserialize)]
struct ExtendedChange {
    version: i32,
    #[serde(rename = "resourceType")]
    resource_type: String,
    name: String,
    #[serde(rename = "patternType")]
    pattern_type: String,
}

/// The notification announcing a change of `p`: (parent, data).
pub fn change_notification(p: &ResourcePattern) -> (&'static str, Vec<u8>) {
    let type_name = upper_snake(p.resource_type.name());
    if p.pattern_type == PatternType::Prefixed {
        let json = ExtendedChange {
            version: 1,
            resource_type: type_name,
            name: p.name.clone(),
            pattern_type: "PREFIXED".into(),
        };
        (EXTENDED_CHANGES, serde_json::to_vec(&json).unwrap_or_default())
    } else {
        (LITERAL_CHANGES, format!("{type_name}:{}", p.name).into_bytes())
    }
}

/// Reads a notification of either kind (type names in either spelling).
pub fn parse_notification(parent: &str, data: &[u8]) -> Option<ResourcePattern> {
    if parent == EXTENDED_CHANGES {
        let c: ExtendedChange = serde_json::from_slice(data).ok()?;
        let pattern_type = PatternType::parse(&c.pattern_type)?;
        Some(ResourcePattern {
            resource_type: ResourceType::parse(&c.resource_type)?,
            name: c.name,
            pattern_type,
        })
    } else {
        let text = std::str::from_utf8(data).ok()?;
        let (t, name) = text.split_once(':')?;
        Some(ResourcePattern::literal(ResourceType::parse(t)?, name))
    }
}

/// The sequence number of an `acl_changes_<seq>` child.
pub fn sequence_of(child: &str) -> Option<u64> {
    child.strip_prefix(CHANGE_PREFIX)?.parse().ok()
}

/// The notifications after `last`, in order (all when `last` is None); if every one is older
/// than `last`, the counter restarted and all are new.
pub fn to_process(children: &[String], last: Option<u64>) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = children
        .iter()
        .filter_map(|c| sequence_of(c).map(|s| (s, c.clone())))
        .collect();
    out.sort();
    let restarted = out.last().is_some_and(|(max, _)| last.is_some_and(|l| *max < l));
    if !restarted {
        out.retain(|(s, _)| last.is_none_or(|l| *s > l));
    }
    out
}

/// The paths every authorizer makes sure exist (Kafka's `ZkAclStore` paths).
pub async fn ensure_paths<S: ZkStore>(store: &S) -> Result<(), ZkError> {
    for t in ResourceType::STORED {
        create_recursive(store, &format!("{LITERAL_ROOT}/{}", t.name())).await?;
        create_recursive(store, &format!("{PREFIXED_ROOT}/{}", t.name())).await?;
    }
    create_recursive(store, LITERAL_CHANGES).await?;
    create_recursive(store, EXTENDED_CHANGES).await
}

/// A pattern's ACLs and the znode's version (None: no znode).
pub async fn read<S: ZkStore>(store: &S, p: &ResourcePattern) -> Result<(BTreeSet<AclEntry>, Option<i32>), ZkError> {
    match store.get_data(&acl_path(p)).await {
        Ok((data, stat)) => {
            let acls = decode_acls(&data).unwrap_or_else(|e| {
                tracing::error!(path = %acl_path(p), error = %e, "ignoring unreadable ACLs");
                BTreeSet::new()
            });
            Ok((acls, Some(stat.version.0)))
        }
        Err(ZkError::NoNode { .. }) => Ok((BTreeSet::new(), None)),
        Err(e) => Err(e),
    }
}

/// Every ACL in ZooKeeper (the start-up load).
pub async fn load_all<S: ZkStore>(store: &S) -> Result<AclMap, ZkError> {
    let mut out = AclMap::new();
    for (root, pattern_type) in [
        (LITERAL_ROOT, PatternType::Literal),
        (PREFIXED_ROOT, PatternType::Prefixed),
    ] {
        for t in ResourceType::STORED {
            let names = match store.children(&format!("{root}/{}", t.name())).await {
                Ok(n) => n,
                Err(ZkError::NoNode { .. }) => continue,
                Err(e) => return Err(e),
            };
            for name in names {
                let p = ResourcePattern {
                    resource_type: *t,
                    name,
                    pattern_type,
                };
                let (acls, _) = read(store, &p).await?;
                if !acls.is_empty() {
                    out.insert(p, acls);
                }
            }
        }
    }
    Ok(out)
}

/// Replaces `p`'s ACLs by `change(current)`, conditionally on the znode's version and retried
/// when another writer got there first; announces the change. Returns the ACLs written.
pub async fn update<S: ZkStore>(
    store: &S,
    p: &ResourcePattern,
    change: impl Fn(&BTreeSet<AclEntry>) -> BTreeSet<AclEntry>,
) -> Result<BTreeSet<AclEntry>, ZkError> {
    let path = acl_path(p);
    for _ in 0..MAX_WRITE_ATTEMPTS {
        let (current, version) = read(store, p).await?;
        let wanted = change(&current);
        if wanted == current {
            return Ok(current);
        }
        let written = match version {
            Some(v) if wanted.is_empty() => store.delete(&path, Some(crate::types::ZkVersion(v))).await,
            Some(v) => store
                .set_data(&path, &encode_acls(&wanted), Some(crate::types::ZkVersion(v)))
                .await
                .map(|_| ()),
            None => {
                let (parent, _) = crate::zk::store::split_parent(&path);
                create_recursive(store, parent).await?;
                store
                    .create(&path, &encode_acls(&wanted), CreateMode::Persistent)
                    .await
                    .map(|_| ())
            }
        };
        match written {
            Ok(()) => {
                notify(store, p).await?;
                return Ok(wanted);
            }
            Err(ZkError::BadVersion { .. } | ZkError::NodeExists { .. } | ZkError::NoNode { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(ZkError::Other {
        path,
        reason: format!("gave up after {MAX_WRITE_ATTEMPTS} conflicting writes"),
    })
}

async fn notify<S: ZkStore>(store: &S, p: &ResourcePattern) -> Result<(), ZkError> {
    let (parent, data) = change_notification(p);
    let path = format!("{parent}/{CHANGE_PREFIX}");
    match store.create(&path, &data, CreateMode::PersistentSequential).await {
        Ok(_) => Ok(()),
        Err(ZkError::NoNode { .. }) => {
            create_recursive(store, parent).await?;
            store
                .create(&path, &data, CreateMode::PersistentSequential)
                .await
                .map(|_| ())
        }
        Err(e) => Err(e),
    }
}

/// Processes one change path's notifications after `last`; returns the last processed.
async fn process<S: ZkStore>(
    store: &S,
    authorizer: &AclAuthorizer,
    parent: &str,
    last: Option<u64>,
    now_ms: i64,
) -> Result<Option<u64>, ZkError> {
    let children = store.children(parent).await?;
    let mut last = last;
    let mut seen = Vec::new();
    for (seq, child) in to_process(&children, last) {
        let path = format!("{parent}/{child}");
        match store.get_data(&path).await {
            Ok((data, stat)) => {
                seen.push((child.clone(), stat.ctime));
                match parse_notification(parent, &data) {
                    Some(p) => {
                        let (acls, _) = read(store, &p).await?;
                        tracing::debug!(pattern = %p, count = acls.len(), "ACL change");
                        authorizer.set_acls(p, acls);
                    }
                    None => tracing::error!(%path, "ignoring a malformed ACL change notification"),
                }
            }
            Err(ZkError::NoNode { .. }) => {}
            Err(e) => return Err(e),
        }
        last = Some(seq);
    }
    // Older notifications were seen on earlier passes; purge by their creation time.
    let unread: Vec<&String> = children
        .iter()
        .filter(|c| sequence_of(c).is_some() && !seen.iter().any(|(s, _)| s == *c))
        .collect();
    for child in unread {
        if let Ok(Some(stat)) = store.exists(&format!("{parent}/{child}")).await {
            seen.push((child.clone(), stat.ctime));
        }
    }
    for child in to_purge(&seen, now_ms, CHANGE_EXPIRATION_MS) {
        let _ = store.delete(&format!("{parent}/{child}"), None).await;
    }
    Ok(last)
}

/// Loads every ACL into the cache (the start-up load, before serving).
pub async fn load_cache<S: ZkStore>(store: &S, authorizer: &AclAuthorizer) -> Result<(), ZkError> {
    ensure_paths(store).await?;
    authorizer.replace_all(load_all(store).await?);
    Ok(())
}

/// Runs until `stop`: applies each change notification to the cache as the watches report it;
/// after a session change (changes may have been missed) reloads everything.
pub async fn run<S: ZkStore>(store: S, authorizer: Arc<AclAuthorizer>, mut stop: watch::Receiver<bool>) {
    let watch_both = async {
        let a = store.watch(LITERAL_CHANGES, WatchMode::Persistent).await?;
        let b = store.watch(EXTENDED_CHANGES, WatchMode::Persistent).await?;
        Ok::<_, ZkError>((a, b))
    };
    let (mut literal, mut extended) = match watch_both.await {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch the ACL change notifications; ACL changes from other brokers will not be seen");
            return;
        }
    };
    let mut last: [Option<u64>; 2] = [None, None];
    let mut pending = [true, true];
    let mut reload = false;
    loop {
        if reload {
            match load_cache(&store, &authorizer).await {
                Ok(()) => reload = false,
                Err(e) => tracing::warn!(error = %e, "ACL reload failed; retrying"),
            }
        }
        for (i, parent) in [LITERAL_CHANGES, EXTENDED_CHANGES].into_iter().enumerate() {
            if pending[i] {
                match process(&store, &authorizer, parent, last[i], crate::clock::now_ms()).await {
                    Ok(l) => {
                        last[i] = l;
                        pending[i] = false;
                    }
                    Err(e) => tracing::warn!(error = %e, %parent, "ACL change processing failed; retrying"),
                }
            }
        }
        let retry = reload || pending.iter().any(|p| *p);
        tokio::select! {
            e = literal.recv() => match e {
                None => return,
                Some(WatchEvent::Rearmed) => { reload = true; pending = [true, true]; }
                Some(_) => pending[0] = true,
            },
            e = extended.recv() => match e {
                None => return,
                Some(WatchEvent::Rearmed) => { reload = true; pending = [true, true]; }
                Some(_) => pending[1] = true,
            },
            _ = tokio::time::sleep(Duration::from_secs(1)), if retry => {}
            _ = stop.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_notifications_are_kafkas() {
        let lit = ResourcePattern::literal(ResourceType::Topic, "a");
        let pre = ResourcePattern::prefixed(ResourceType::TransactionalId, "tx-");
        assert_eq!(acl_path(&lit), "/kafka-acl/Topic/a");
        assert_eq!(acl_path(&pre), "/kafka-acl-extended/prefixed/TransactionalId/tx-");
        let (parent, data) = change_notification(&lit);
        assert_eq!((parent, data.as_slice()), (LITERAL_CHANGES, b"TOPIC:a".as_slice()));
        assert_eq!(parse_notification(parent, &data), Some(lit.clone()));
        assert_eq!(parse_notification(LITERAL_CHANGES, b"Topic:a"), Some(lit));
        let (parent, data) = change_notification(&pre);
        assert_eq!(
            String::from_utf8_lossy(&data),
            r#"{"version":1,"resourceType":"TRANSACTIONAL_ID","name":"tx-","patternType":"PREFIXED"}"#
        );
        assert_eq!(parse_notification(parent, &data), Some(pre));
        assert_eq!(parse_notification(LITERAL_CHANGES, b"nonsense"), None);
    }

    #[test]
    fn notifications_are_processed_in_order_after_the_last() {
        let c: Vec<String> = ["acl_changes_0000000003", "acl_changes_0000000001", "x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let seqs = |v: Vec<(u64, String)>| v.into_iter().map(|(s, _)| s).collect::<Vec<_>>();
        assert_eq!(seqs(to_process(&c, None)), [1, 3]);
        assert_eq!(seqs(to_process(&c, Some(1))), [3]);
        assert_eq!(seqs(to_process(&c, Some(9))), [1, 3]);
    }
}
