//! The ACL model, as Kafka's `org.apache.kafka.common.acl` and `resource` packages have it:
//! resource types, pattern types, operations and permissions with their wire codes and the
//! names ZooKeeper stores; [`ResourcePattern`], [`AclEntry`], [`AclBinding`]; and the znode
//! JSON of `/kafka-acl*/<ResourceType>/<name>` (`{"version":1,"acls":[...]}`). Pure data.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// The cluster resource's only name.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// The wildcard resource name and host.
pub const WILDCARD: &str = "*";
/// The wildcard principal.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

macro_rules! coded_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $code:literal, $text:literal;)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),* }

        impl $name {
            /// Every value, in code order.
            pub const ALL_VALUES: &'static [$name] = &[$($name::$variant),*];

            /// The wire code.
            pub fn code(self) -> i8 {
                match self { $($name::$variant => $code),* }
            }

            /// The value of a wire code (None for codes Kafka does not define).
            pub fn from_code(code: i8) -> Option<Self> {
                match code { $($code => Some($name::$variant),)* _ => None }
            }

            /// Kafka's name (as ZooKeeper paths and JSON store it).
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }

            /// Parses Kafka's name, ignoring case and `_` (`IDEMPOTENT_WRITE`, `IdempotentWrite`).
            pub fn parse(s: &str) -> Option<Self> {
                let norm = |t: &str| t.replace('_', "").to_ascii_lowercase();
                let want = norm(s);
                Self::ALL_VALUES.iter().copied().find(|v| norm(v.name()) == want)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

coded_enum!(
    /// Kafka's `ResourceType`.
    ResourceType {
        Unknown = 0, "Unknown";
        Any = 1, "Any";
        Topic = 2, "Topic";
        Group = 3, "Group";
        Cluster = 4, "Cluster";
        TransactionalId = 5, "TransactionalId";
        DelegationToken = 6, "DelegationToken";
        User = 7, "User";
    }
);

coded_enum!(
    /// Kafka's `PatternType`.
    PatternType {
        Unknown = 0, "Unknown";
        Any = 1, "Any";
        Match = 2, "Match";
        Literal = 3, "Literal";
        Prefixed = 4, "Prefixed";
    }
);

coded_enum!(
    /// Kafka's `AclOperation`.
    AclOperation {
        Unknown = 0, "Unknown";
        Any = 1, "Any";
        All = 2, "All";
        Read = 3, "Read";
        Write = 4, "Write";
        Create = 5, "Create";
        Delete = 6, "Delete";
        Alter = 7, "Alter";
        Describe = 8, "Describe";
        ClusterAction = 9, "ClusterAction";
        DescribeConfigs = 10, "DescribeConfigs";
        AlterConfigs = 11, "AlterConfigs";
        IdempotentWrite = 12, "IdempotentWrite";
        CreateTokens = 13, "CreateTokens";
        DescribeTokens = 14, "DescribeTokens";
    }
);

coded_enum!(
    /// Kafka's `AclPermissionType`.
    AclPermissionType {
        Unknown = 0, "Unknown";
        Any = 1, "Any";
        Deny = 2, "Deny";
        Allow = 3, "Allow";
    }
);

impl ResourceType {
    /// The types ACLs are stored for (`/kafka-acl/<type>`).
    pub const STORED: &'static [ResourceType] = &[
        ResourceType::Topic,
        ResourceType::Group,
        ResourceType::Cluster,
        ResourceType::TransactionalId,
        ResourceType::DelegationToken,
        ResourceType::User,
    ];
}

/// A concrete resource pattern: what one ACL znode holds the ACLs of.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePattern {
    pub resource_type: ResourceType,
    pub name: String,
    /// Literal or Prefixed.
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    pub fn literal(resource_type: ResourceType, name: impl Into<String>) -> Self {
        Self {
            resource_type,
            name: name.into(),
            pattern_type: PatternType::Literal,
        }
    }

    pub fn prefixed(resource_type: ResourceType, name: impl Into<String>) -> Self {
        Self {
            resource_type,
            name: name.into(),
            pattern_type: PatternType::Prefixed,
        }
    }

    /// Whether this pattern covers the resource named `name` of its type (literal equal, the
    /// literal wildcard, or a prefix).
    pub fn covers(&self, name: &str) -> bool {
        match self.pattern_type {
            PatternType::Literal => self.name == name || self.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(&self.name),
            _ => false,
        }
    }
}

impl std::fmt::Display for ResourcePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ResourcePattern(resourceType={}, name={}, patternType={})",
            self.resource_type.name().to_ascii_uppercase(),
            self.name,
            self.pattern_type.name().to_ascii_uppercase()
        )
    }
}

/// One access control entry: who, from where, may (or may not) do what.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclEntry {
    /// `<type>:<name>`, or `User:*`.
    pub principal: String,
    /// An address or `*`.
    pub host: String,
    pub operation: AclOperation,
    pub permission: AclPermissionType,
}

impl std::fmt::Display for AclEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "(principal={}, host={}, operation={}, permissionType={})",
            self.principal,
            self.host,
            upper_snake(self.operation.name()),
            self.permission.name().to_ascii_uppercase()
        )
    }
}

/// `IdempotentWrite` → `IDEMPOTENT_WRITE` (Kafka's enum names, as kafka-acls prints them).
pub fn upper_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// A pattern and one entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    pub pattern: ResourcePattern,
    pub entry: AclEntry,
}

/// One ACL in the znode JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct JsonAcl {
    principal: String,
    #[serde(rename = "permissionType")]
    permission_type: String,
    operation: String,
    host: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct JsonAcls {
    version: i32,
    acls: Vec<JsonAcl>,
}

/// Why a znode's ACLs could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed ACL znode data: {0}")]
pub struct AclJsonError(pub String);

/// Kafka's `AclAuthorizer` znode data for `acls`.
pub fn encode_acls(acls: &BTreeSet<AclEntry>) -> Vec<u8> {
    let json = JsonAcls {
        version: 1,
        acls: acls
            .iter()
            .map(|a| JsonAcl {
                principal: a.principal.clone(),
                permission_type: a.permission.name().to_string(),
                operation: a.operation.name().to_string(),
                host: a.host.clone(),
            })
            .collect(),
    };
    serde_json::to_vec(&json).unwrap_or_default()
}

/// Reads a znode's ACLs; empty data is no ACLs.
pub fn decode_acls(data: &[u8]) -> Result<BTreeSet<AclEntry>, AclJsonError> {
    if data.is_empty() {
        return Ok(BTreeSet::new());
    }
    let json: JsonAcls = serde_json::from_slice(data).map_err(|e| AclJsonError(e.to_string()))?;
    if json.version != 1 {
        return Err(AclJsonError(format!("unsupported version {}", json.version)));
    }
    json.acls
        .into_iter()
        .map(|a| {
            let operation = AclOperation::parse(&a.operation)
                .ok_or_else(|| AclJsonError(format!("unknown operation {}", a.operation)))?;
            let permission = AclPermissionType::parse(&a.permission_type)
                .ok_or_else(|| AclJsonError(format!("unknown permissionType {}", a.permission_type)))?;
            Ok(AclEntry {
                principal: a.principal,
                host: a.host,
                operation,
                permission,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn znode_json_is_kafkas_and_round_trips() {
        let acls: BTreeSet<AclEntry> = [AclEntry {
            principal: "User:alice".into(),
            host: "*".into(),
            operation: AclOperation::Read,
            permission: AclPermissionType::Allow,
        }]
        .into();
        let data = encode_acls(&acls);
        assert_eq!(
            String::from_utf8_lossy(&data),
            r#"{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}"#
        );
        assert_eq!(decode_acls(&data).expect("decodes"), acls);
        assert!(decode_acls(
            br#"{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Fly","host":"*"}]}"#
        )
        .is_err());
        assert!(decode_acls(b"").expect("empty").is_empty());
    }

    #[test]
    fn names_parse_in_kafkas_spellings() {
        assert_eq!(
            AclOperation::parse("IDEMPOTENT_WRITE"),
            Some(AclOperation::IdempotentWrite)
        );
        assert_eq!(
            AclOperation::parse("describeconfigs"),
            Some(AclOperation::DescribeConfigs)
        );
        assert_eq!(ResourceType::parse("TOPIC"), Some(ResourceType::Topic));
        assert_eq!(PatternType::from_code(4), Some(PatternType::Prefixed));
        assert_eq!(upper_snake("ClusterAction"), "CLUSTER_ACTION");
        assert!(ResourcePattern::prefixed(ResourceType::Topic, "pre").covers("prefix"));
        assert!(ResourcePattern::literal(ResourceType::Topic, "*").covers("any"));
        assert!(!ResourcePattern::literal(ResourceType::Topic, "a").covers("ab"));
    }
}
