//! Kafka's ZooKeeper `AclAuthorizer`: the ACL cache every broker keeps (loaded at start-up,
//! refreshed by change notifications, [`store`]) and the questions handlers ask it. The
//! decision itself is [`decision::authorize`]; the model [`acl`]; DescribeAcls/DeleteAcls
//! selection [`filter`].
//!
//! | file | owns |
//! |---|---|
//! | `acl.rs` | resource/pattern/operation/permission types, bindings, the znode JSON |
//! | `decision.rs` | the pure allow/deny decision |
//! | `filter.rs` | `AclBindingFilter` matching and CreateAcls validation |
//! | `store.rs` | ZooKeeper: paths, conditional writes, notifications, the change listener |

pub mod acl;
pub mod decision;
pub mod filter;
pub mod store;

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use acl::{AclBinding, AclEntry, AclOperation, PatternType, ResourcePattern, ResourceType, WILDCARD};
use decision::{Policy, Request};
use filter::AclBindingFilter;
use store::AclMap;

use crate::config::KafkaConfig;
use crate::security::KafkaPrincipal;

/// The authorizer: its policy and the cache of every ACL.
#[derive(Debug, Default)]
pub struct AclAuthorizer {
    policy: Policy,
    cache: RwLock<AclMap>,
}

impl AclAuthorizer {
    pub fn new(policy: Policy) -> Self {
        Self {
            policy,
            cache: RwLock::new(AclMap::new()),
        }
    }

    /// The authorizer `authorizer.class.name` asks for, if any.
    pub fn from_config(config: &KafkaConfig) -> Option<Arc<Self>> {
        config.authorizer_enabled().then(|| {
            Arc::new(Self::new(Policy {
                super_users: config.super_users().to_vec(),
                allow_everyone_if_no_acl_found: config.allow_everyone_if_no_acl_found(),
            }))
        })
    }

    /// Whether `principal` connecting from `host` may do `operation` on the resource.
    pub fn authorize(
        &self,
        principal: &KafkaPrincipal,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        let request = Request {
            principal,
            host,
            operation,
        };
        if self.policy.super_users.iter().any(|s| s == principal) {
            return true;
        }
        let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
        let acls = matching(&cache, resource_type, name);
        decision::authorize(&self.policy, request, acls.iter().copied())
    }

    /// Replaces one pattern's ACLs (empty removes it).
    pub fn set_acls(&self, pattern: ResourcePattern, acls: BTreeSet<AclEntry>) {
        let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
        if acls.is_empty() {
            cache.remove(&pattern);
        } else {
            cache.insert(pattern, acls);
        }
    }

    /// Replaces the whole cache.
    pub fn replace_all(&self, acls: AclMap) {
        *self.cache.write().unwrap_or_else(|e| e.into_inner()) = acls;
    }

    /// The cached bindings `filter` selects, in pattern order.
    pub fn bindings(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
        cache
            .iter()
            .filter(|(p, _)| filter.pattern.matches(p))
            .flat_map(|(p, entries)| {
                entries.iter().map(|e| AclBinding {
                    pattern: p.clone(),
                    entry: e.clone(),
                })
            })
            .filter(|b| filter.entry.matches(&b.entry))
            .collect()
    }
}

/// Every cached ACL whose pattern covers `name`: the literal name, the literal wildcard, and
/// every prefix of `name` with a prefixed pattern.
fn matching<'a>(cache: &'a AclMap, resource_type: ResourceType, name: &str) -> Vec<&'a AclEntry> {
    let mut out = Vec::new();
    for literal in [name, WILDCARD] {
        if let Some(acls) = cache.get(&ResourcePattern::literal(resource_type, literal)) {
            out.extend(acls.iter());
        }
        if name == WILDCARD {
            break;
        }
    }
    let prefixes = name.char_indices().map(|(i, c)| &name[..i + c.len_utf8()]);
    for prefix in prefixes {
        let key = ResourcePattern {
            resource_type,
            name: prefix.to_string(),
            pattern_type: PatternType::Prefixed,
        };
        if let Some(acls) = cache.get(&key) {
            out.extend(acls.iter());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use acl::AclPermissionType;

    fn entry(principal: &str, op: AclOperation, permission: AclPermissionType) -> BTreeSet<AclEntry> {
        [AclEntry {
            principal: principal.into(),
            host: "*".into(),
            operation: op,
            permission,
        }]
        .into()
    }

    #[test]
    fn literal_wildcard_and_prefixed_patterns_all_cover_a_resource() {
        let a = AclAuthorizer::new(Policy::default());
        let alice = KafkaPrincipal::user("alice");
        let topic = |n: &str, op| a.authorize(&alice, "h", op, ResourceType::Topic, n);
        assert!(!topic("orders", AclOperation::Read));
        a.set_acls(
            ResourcePattern::prefixed(ResourceType::Topic, "ord"),
            entry("User:alice", AclOperation::Read, AclPermissionType::Allow),
        );
        assert!(topic("orders", AclOperation::Read));
        assert!(!topic("other", AclOperation::Read));
        a.set_acls(
            ResourcePattern::literal(ResourceType::Topic, "*"),
            entry("User:*", AclOperation::Write, AclPermissionType::Allow),
        );
        assert!(topic("other", AclOperation::Write));
        a.set_acls(
            ResourcePattern::literal(ResourceType::Topic, "orders"),
            entry("User:alice", AclOperation::Read, AclPermissionType::Deny),
        );
        assert!(
            !topic("orders", AclOperation::Read),
            "a literal deny beats a prefixed allow"
        );
        assert!(!a.authorize(&alice, "h", AclOperation::Read, ResourceType::Group, "orders"));
        a.set_acls(ResourcePattern::literal(ResourceType::Topic, "orders"), BTreeSet::new());
        assert!(topic("orders", AclOperation::Read));
        let all = AclBindingFilter::from_wire(1, None, 1, None, None, 1, 1).expect("filter");
        assert_eq!(a.bindings(&all).len(), 2);
    }
}
