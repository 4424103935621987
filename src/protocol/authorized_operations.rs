//! The `authorized_operations` bitfields of Metadata (KIP-430) and DescribeGroups: bit `n` set
//! means the caller may perform the ACL operation with code `n` (`AclOperation`) on the resource.
//!
//! The field carries the operations of `AclEntry.supportedOperations(type)` the caller is allowed
//! (`KafkaApis::authorized_operations` asks the authorizer for each, as Kafka's
//! `AuthHelper.authorizedOperations`); with no authorizer configured that is every one of them,
//! [`authorized_operations`]. A field the client did not ask for stays at the schema default,
//! [`NOT_REQUESTED`].

/// The schema default: "not requested" (`Int32.MinValue`).
pub const NOT_REQUESTED: i32 = i32::MIN;

/// ACL operation codes (`org.apache.kafka.common.acl.AclOperation`).
pub mod op {
    pub const READ: u8 = 3;
    pub const WRITE: u8 = 4;
    pub const CREATE: u8 = 5;
    pub const DELETE: u8 = 6;
    pub const ALTER: u8 = 7;
    pub const DESCRIBE: u8 = 8;
    pub const CLUSTER_ACTION: u8 = 9;
    pub const DESCRIBE_CONFIGS: u8 = 10;
    pub const ALTER_CONFIGS: u8 = 11;
    pub const IDEMPOTENT_WRITE: u8 = 12;
}

/// The resource types kastle answers authorized operations for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
}

/// `AclEntry.supportedOperations` for `resource` (Kafka 3.9).
pub fn supported_operations(resource: ResourceType) -> &'static [u8] {
    use op::*;
    match resource {
        ResourceType::Topic => &[
            READ,
            WRITE,
            CREATE,
            DESCRIBE,
            DELETE,
            ALTER,
            DESCRIBE_CONFIGS,
            ALTER_CONFIGS,
        ],
        ResourceType::Group => &[READ, DESCRIBE, DELETE],
        ResourceType::Cluster => &[
            CREATE,
            CLUSTER_ACTION,
            DESCRIBE_CONFIGS,
            ALTER_CONFIGS,
            IDEMPOTENT_WRITE,
            ALTER,
            DESCRIBE,
        ],
    }
}

/// The bitfield for `resource` with no authorizer: every supported operation (`Utils.to32BitField`).
pub fn authorized_operations(resource: ResourceType) -> i32 {
    supported_operations(resource)
        .iter()
        .fold(0i32, |bits, code| bits | (1i32 << code))
}

/// The field's value: the bitfield when the client asked for it, else [`NOT_REQUESTED`].
pub fn if_requested(requested: bool, resource: ResourceType) -> i32 {
    if requested {
        authorized_operations(resource)
    } else {
        NOT_REQUESTED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values a Kafka 3.9 broker without an authorizer puts on the wire (and that the Java
    /// admin client decodes back to these operation sets).
    #[test]
    fn every_supported_operation_is_authorized_without_an_authorizer() {
        // READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS: bits 3-8, 10, 11.
        assert_eq!(authorized_operations(ResourceType::Topic), 0b1101_1111_1000);
        assert_eq!(authorized_operations(ResourceType::Topic), 3576);
        // READ DESCRIBE DELETE: bits 3, 6, 8.
        assert_eq!(authorized_operations(ResourceType::Group), 0b1_0100_1000);
        // CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE: 5, 7-12.
        assert_eq!(authorized_operations(ResourceType::Cluster), 0b1_1111_1010_0000);
        assert_eq!(authorized_operations(ResourceType::Cluster), 8096);
    }

    #[test]
    fn an_unrequested_field_keeps_the_schema_default() {
        assert_eq!(if_requested(false, ResourceType::Topic), i32::MIN);
        assert_eq!(if_requested(true, ResourceType::Group), 328);
    }
}
