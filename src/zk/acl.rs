//! Which ACL a znode kastle creates gets: Kafka's `ZkData.defaultAcls`. Without
//! `zookeeper.set.acl` every znode is open (world ALL); with it, CREATOR_ALL (the session's
//! authenticated identity) plus world READ, except the sensitive roots (`/config/users`,
//! `/config/brokers`, `/delegation_token` and everything below, matched as Kafka does by string
//! prefix), which get CREATOR_ALL only, and the old consumer path `/consumers`, which stays open.
//! Pure: paths in, a decision out; [`super::session`] maps it onto the client's ACL type.

/// Kafka's `ZkData.SensitiveRootPaths`.
pub const SENSITIVE_ROOT_PATHS: [&str; 3] = ["/config/users", "/config/brokers", "/delegation_token"];

/// Kafka's `ConsumerPathZNode.path`, kept open for old consumers even when secure.
pub const CONSUMER_PATH: &str = "/consumers";

/// The ACL for one new znode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZnodeAcl {
    /// `OPEN_ACL_UNSAFE`: world ALL.
    Open,
    /// `CREATOR_ALL_ACL` + `READ_ACL_UNSAFE`.
    CreatorAllWorldRead,
    /// `CREATOR_ALL_ACL` only.
    CreatorAll,
}

/// Kafka's `ZkData.sensitivePath`: `path` starts with a sensitive root (a string prefix, as
/// Kafka's `startsWith`). `path` is relative to the chroot, as Kafka's paths are.
pub fn is_sensitive_path(path: &str) -> bool {
    SENSITIVE_ROOT_PATHS.iter().any(|root| path.starts_with(root))
}

/// Kafka's `ZkData.defaultAcls(isSecure, path)`.
pub fn default_acl(set_acl: bool, path: &str) -> ZnodeAcl {
    if !set_acl || path == CONSUMER_PATH {
        ZnodeAcl::Open
    } else if is_sensitive_path(path) {
        ZnodeAcl::CreatorAll
    } else {
        ZnodeAcl::CreatorAllWorldRead
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_set_acl_everything_is_open() {
        for path in ["/brokers/ids/1", "/config/users/alice", "/controller", "/consumers"] {
            assert_eq!(default_acl(false, path), ZnodeAcl::Open, "{path}");
        }
    }

    #[test]
    fn secure_znodes_are_creator_all_and_world_read() {
        for path in [
            "/brokers/ids/1",
            "/brokers/topics/t",
            "/controller",
            "/config/topics/t",
            "/config/changes",
        ] {
            assert_eq!(default_acl(true, path), ZnodeAcl::CreatorAllWorldRead, "{path}");
        }
    }

    #[test]
    fn sensitive_paths_and_their_children_are_creator_only() {
        for path in [
            "/config/users",
            "/config/users/alice",
            "/config/brokers",
            "/config/brokers/<default>",
            "/delegation_token",
            "/delegation_token/tokens/t1",
        ] {
            assert_eq!(default_acl(true, path), ZnodeAcl::CreatorAll, "{path}");
        }
        // Kafka matches by string prefix, not by path segment.
        assert!(is_sensitive_path("/config/usersX"));
        assert!(!is_sensitive_path("/config"));
        assert!(!is_sensitive_path("/config/topics/users"));
    }

    #[test]
    fn the_old_consumer_path_stays_open_but_not_its_children() {
        assert_eq!(default_acl(true, "/consumers"), ZnodeAcl::Open);
        assert_eq!(default_acl(true, "/consumers/g"), ZnodeAcl::CreatorAllWorldRead);
    }
}
