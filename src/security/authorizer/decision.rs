//! The authorization decision, as Kafka's `AclAuthorizer.authorize`: super users are always
//! allowed; a resource no ACL matches is allowed only if `allow.everyone.if.no.acl.found`;
//! otherwise a matching DENY wins over any ALLOW, and an ALLOW of an implying operation
//! (READ/WRITE/DELETE/ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS, ALL implies
//! everything) allows. Principals match exactly or through `User:*`, hosts exactly or through
//! `*`. Pure: the caller hands over the ACLs of every pattern covering the resource.

use super::acl::{AclEntry, AclOperation, AclPermissionType, WILDCARD, WILDCARD_PRINCIPAL};
use crate::security::KafkaPrincipal;

/// Who asks, from where, to do what (the resource is implied by the ACLs handed over).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub principal: &'a KafkaPrincipal,
    pub host: &'a str,
    pub operation: AclOperation,
}

/// The authorizer's settings.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub super_users: Vec<KafkaPrincipal>,
    pub allow_everyone_if_no_acl_found: bool,
}

/// The operations whose ALLOW grants `op`.
fn allowing_ops(op: AclOperation) -> &'static [AclOperation] {
    use AclOperation::*;
    match op {
        Describe => &[Describe, Read, Write, Delete, Alter],
        DescribeConfigs => &[DescribeConfigs, AlterConfigs],
        Read => &[Read],
        Write => &[Write],
        Create => &[Create],
        Delete => &[Delete],
        Alter => &[Alter],
        ClusterAction => &[ClusterAction],
        AlterConfigs => &[AlterConfigs],
        IdempotentWrite => &[IdempotentWrite],
        CreateTokens => &[CreateTokens],
        DescribeTokens => &[DescribeTokens],
        All => &[All],
        Any | Unknown => &[],
    }
}

fn principal_matches(entry: &AclEntry, principal: &str) -> bool {
    entry.principal == principal || entry.principal == WILDCARD_PRINCIPAL
}

fn host_matches(entry: &AclEntry, host: &str) -> bool {
    entry.host == host || entry.host == WILDCARD
}

/// Whether `request` is allowed, given every ACL (of any principal) whose pattern covers the
/// resource.
pub fn authorize<'a>(
    policy: &Policy,
    request: Request<'_>,
    acls: impl IntoIterator<Item = &'a AclEntry> + Clone,
) -> bool {
    if policy.super_users.iter().any(|s| s == request.principal) {
        return true;
    }
    if acls.clone().into_iter().next().is_none() {
        return policy.allow_everyone_if_no_acl_found;
    }
    let principal = request.principal.to_string();
    let applies = |e: &&AclEntry| principal_matches(e, &principal) && host_matches(e, request.host);
    let denied = acls.clone().into_iter().filter(applies).any(|e| {
        e.permission == AclPermissionType::Deny
            && (e.operation == request.operation || e.operation == AclOperation::All)
    });
    if denied {
        return false;
    }
    let allowing = allowing_ops(request.operation);
    acls.into_iter().filter(applies).any(|e| {
        e.permission == AclPermissionType::Allow
            && (e.operation == AclOperation::All || allowing.contains(&e.operation))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use AclOperation::*;
    use AclPermissionType::{Allow, Deny};

    fn acl(principal: &str, host: &str, operation: AclOperation, permission: AclPermissionType) -> AclEntry {
        AclEntry {
            principal: principal.into(),
            host: host.into(),
            operation,
            permission,
        }
    }

    fn allowed(policy: &Policy, who: &str, host: &str, op: AclOperation, acls: &[AclEntry]) -> bool {
        let principal: KafkaPrincipal = who.parse().expect("principal");
        authorize(
            policy,
            Request {
                principal: &principal,
                host,
                operation: op,
            },
            acls.iter(),
        )
    }

    #[test]
    fn deny_wins_over_allow() {
        let p = Policy::default();
        let acls = [acl("User:alice", "*", Read, Allow), acl("User:alice", "*", Read, Deny)];
        assert!(!allowed(&p, "User:alice", "10.0.0.1", Read, &acls));
        let acls = [acl("User:alice", "*", Read, Allow), acl("User:*", "*", All, Deny)];
        assert!(!allowed(&p, "User:alice", "10.0.0.1", Read, &acls));
        let acls = [acl("User:alice", "*", All, Allow), acl("User:alice", "*", Write, Deny)];
        assert!(allowed(&p, "User:alice", "h", Read, &acls));
        assert!(!allowed(&p, "User:alice", "h", Write, &acls));
    }

    #[test]
    fn super_users_are_always_allowed() {
        let p = Policy {
            super_users: vec![KafkaPrincipal::user("admin")],
            allow_everyone_if_no_acl_found: false,
        };
        let acls = [acl("User:*", "*", All, Deny)];
        assert!(allowed(&p, "User:admin", "h", Write, &acls));
        assert!(allowed(&p, "User:admin", "h", Write, &[]));
        assert!(!allowed(&p, "User:bob", "h", Write, &[]));
    }

    #[test]
    fn allow_everyone_applies_only_when_no_acl_matches_the_resource() {
        let open = Policy {
            super_users: vec![],
            allow_everyone_if_no_acl_found: true,
        };
        assert!(allowed(&open, "User:bob", "h", Write, &[]));
        // Some ACL exists on the resource (for someone else): no longer open.
        let acls = [acl("User:alice", "*", Read, Allow)];
        assert!(!allowed(&open, "User:bob", "h", Read, &acls));
        assert!(!allowed(&Policy::default(), "User:bob", "h", Read, &[]));
    }

    #[test]
    fn implied_operations() {
        let p = Policy::default();
        for op in [Read, Write, Delete, Alter] {
            assert!(
                allowed(&p, "User:a", "h", Describe, &[acl("User:a", "*", op, Allow)]),
                "{op}"
            );
        }
        assert!(!allowed(
            &p,
            "User:a",
            "h",
            Describe,
            &[acl("User:a", "*", Create, Allow)]
        ));
        assert!(allowed(
            &p,
            "User:a",
            "h",
            DescribeConfigs,
            &[acl("User:a", "*", AlterConfigs, Allow)]
        ));
        assert!(!allowed(
            &p,
            "User:a",
            "h",
            AlterConfigs,
            &[acl("User:a", "*", DescribeConfigs, Allow)]
        ));
        assert!(!allowed(&p, "User:a", "h", Write, &[acl("User:a", "*", Read, Allow)]));
        for op in [Read, Write, Create, ClusterAction, IdempotentWrite, AlterConfigs] {
            assert!(
                allowed(&p, "User:a", "h", op, &[acl("User:a", "*", All, Allow)]),
                "{op}"
            );
        }
        // A DENY of READ does not deny DESCRIBE (Kafka denies only the exact operation or ALL).
        let acls = [acl("User:a", "*", Read, Deny), acl("User:a", "*", Describe, Allow)];
        assert!(allowed(&p, "User:a", "h", Describe, &acls));
    }

    #[test]
    fn wildcard_principal_and_host_matching() {
        let p = Policy::default();
        let acls = [acl("User:*", "10.0.0.1", Read, Allow)];
        assert!(allowed(&p, "User:anyone", "10.0.0.1", Read, &acls));
        assert!(!allowed(&p, "User:anyone", "10.0.0.2", Read, &acls));
        let acls = [acl("User:alice", "*", Read, Allow)];
        assert!(!allowed(&p, "User:bob", "10.0.0.1", Read, &acls));
        assert!(allowed(&p, "User:alice", "::1", Read, &acls));
    }
}
