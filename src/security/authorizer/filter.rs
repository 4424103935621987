//! `AclBindingFilter`: what DescribeAcls and DeleteAcls select, with Kafka's matching rules
//! (`ResourcePatternFilter.matches`, `AccessControlEntryFilter.matches`) and validation (a
//! filter with an UNKNOWN element is INVALID_REQUEST), plus the checks CreateAcls applies to a
//! new binding. Pure.

use super::acl::{
    AclBinding, AclEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType, CLUSTER_NAME,
    WILDCARD,
};

/// Selects resource patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePatternFilter {
    /// `Any` matches every type.
    pub resource_type: ResourceType,
    /// `None` matches every name.
    pub name: Option<String>,
    /// `Any`, `Match` (every pattern that covers `name`), `Literal` or `Prefixed`.
    pub pattern_type: PatternType,
}

/// Selects entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessControlEntryFilter {
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: AclOperation,
    pub permission: AclPermissionType,
}

/// Selects ACL bindings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclBindingFilter {
    pub pattern: ResourcePatternFilter,
    pub entry: AccessControlEntryFilter,
}

impl AclBindingFilter {
    /// Builds a filter from wire codes; `Err` names what is invalid.
    #[allow(clippy::too_many_arguments)]
    pub fn from_wire(
        resource_type: i8,
        name: Option<&str>,
        pattern_type: i8,
        principal: Option<&str>,
        host: Option<&str>,
        operation: i8,
        permission: i8,
    ) -> Result<Self, String> {
        let resource_type = ResourceType::from_code(resource_type)
            .filter(|t| *t != ResourceType::Unknown)
            .ok_or("unknown resource type")?;
        let pattern_type = PatternType::from_code(pattern_type)
            .filter(|t| *t != PatternType::Unknown)
            .ok_or("unknown pattern type")?;
        let operation = AclOperation::from_code(operation)
            .filter(|t| *t != AclOperation::Unknown)
            .ok_or("unknown operation")?;
        let permission = AclPermissionType::from_code(permission)
            .filter(|t| *t != AclPermissionType::Unknown)
            .ok_or("unknown permission type")?;
        Ok(Self {
            pattern: ResourcePatternFilter {
                resource_type,
                name: name.map(str::to_string),
                pattern_type,
            },
            entry: AccessControlEntryFilter {
                principal: principal.map(str::to_string),
                host: host.map(str::to_string),
                operation,
                permission,
            },
        })
    }

    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern.matches(&binding.pattern) && self.entry.matches(&binding.entry)
    }
}

impl ResourcePatternFilter {
    pub fn matches(&self, p: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != p.resource_type {
            return false;
        }
        match self.pattern_type {
            PatternType::Any => self.name.as_ref().is_none_or(|n| *n == p.name),
            PatternType::Match => match &self.name {
                None => true,
                Some(n) => match p.pattern_type {
                    PatternType::Literal => p.name == *n || p.name == WILDCARD,
                    PatternType::Prefixed => n.starts_with(&p.name),
                    _ => false,
                },
            },
            want => want == p.pattern_type && self.name.as_ref().is_none_or(|n| *n == p.name),
        }
    }
}

impl AccessControlEntryFilter {
    pub fn matches(&self, e: &AclEntry) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == e.principal)
            && self.host.as_ref().is_none_or(|h| *h == e.host)
            && (self.operation == AclOperation::Any || self.operation == e.operation)
            && (self.permission == AclPermissionType::Any || self.permission == e.permission)
    }
}

/// Checks a CreateAcls binding as Kafka does; `Err` is the INVALID_REQUEST message.
pub fn validate_new_binding(b: &AclBinding) -> Result<(), String> {
    let p = &b.pattern;
    if matches!(p.resource_type, ResourceType::Any | ResourceType::Unknown) {
        return Err("the resource type must be a concrete type".into());
    }
    if !matches!(p.pattern_type, PatternType::Literal | PatternType::Prefixed) {
        return Err("the pattern type must be LITERAL or PREFIXED".into());
    }
    if p.name.is_empty() {
        return Err("the resource name must not be empty".into());
    }
    if p.resource_type == ResourceType::Cluster && p.name != CLUSTER_NAME {
        return Err(format!("the cluster resource is named {CLUSTER_NAME}"));
    }
    if matches!(b.entry.operation, AclOperation::Any | AclOperation::Unknown) {
        return Err("the operation must be a concrete operation".into());
    }
    if matches!(b.entry.permission, AclPermissionType::Any | AclPermissionType::Unknown) {
        return Err("the permission type must be ALLOW or DENY".into());
    }
    if b.entry.principal.parse::<crate::security::KafkaPrincipal>().is_err() {
        return Err(format!("invalid principal {}", b.entry.principal));
    }
    if b.entry.host.is_empty() {
        return Err("the host must not be empty (use * for any host)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(pattern: ResourcePattern, principal: &str, op: AclOperation) -> AclBinding {
        AclBinding {
            pattern,
            entry: AclEntry {
                principal: principal.into(),
                host: "*".into(),
                operation: op,
                permission: AclPermissionType::Allow,
            },
        }
    }

    fn filter(t: ResourceType, name: Option<&str>, pt: PatternType) -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: t,
                name: name.map(str::to_string),
                pattern_type: pt,
            },
            entry: AccessControlEntryFilter {
                principal: None,
                host: None,
                operation: AclOperation::Any,
                permission: AclPermissionType::Any,
            },
        }
    }

    #[test]
    fn pattern_filters_match_as_kafkas() {
        use ResourceType::Topic;
        let lit = binding(ResourcePattern::literal(Topic, "abc"), "User:a", AclOperation::Read);
        let star = binding(ResourcePattern::literal(Topic, "*"), "User:a", AclOperation::Read);
        let pre = binding(ResourcePattern::prefixed(Topic, "ab"), "User:a", AclOperation::Read);
        let any = filter(ResourceType::Any, None, PatternType::Any);
        assert!(any.matches(&lit) && any.matches(&star) && any.matches(&pre));
        let m = filter(Topic, Some("abc"), PatternType::Match);
        assert!(m.matches(&lit) && m.matches(&star) && m.matches(&pre));
        let l = filter(Topic, Some("abc"), PatternType::Literal);
        assert!(l.matches(&lit) && !l.matches(&star) && !l.matches(&pre));
        let p = filter(Topic, Some("ab"), PatternType::Prefixed);
        assert!(p.matches(&pre) && !p.matches(&lit));
        let g = filter(ResourceType::Group, None, PatternType::Any);
        assert!(!g.matches(&lit));
    }

    #[test]
    fn entry_filters_and_validation() {
        let b = binding(
            ResourcePattern::literal(ResourceType::Topic, "t"),
            "User:a",
            AclOperation::Read,
        );
        let mut f = filter(ResourceType::Any, None, PatternType::Any);
        f.entry.principal = Some("User:b".into());
        assert!(!f.matches(&b));
        f.entry.principal = Some("User:a".into());
        f.entry.operation = AclOperation::Write;
        assert!(!f.matches(&b));
        f.entry.operation = AclOperation::Read;
        assert!(f.matches(&b));
        assert!(AclBindingFilter::from_wire(0, None, 1, None, None, 1, 1).is_err());
        assert!(AclBindingFilter::from_wire(1, None, 1, None, None, 1, 1).is_ok());
        assert!(validate_new_binding(&b).is_ok());
        let cluster = binding(
            ResourcePattern::literal(ResourceType::Cluster, "x"),
            "User:a",
            AclOperation::Alter,
        );
        assert!(validate_new_binding(&cluster).is_err());
        let bad = binding(
            ResourcePattern::literal(ResourceType::Topic, "t"),
            "alice",
            AclOperation::Read,
        );
        assert!(validate_new_binding(&bad).is_err());
    }
}
