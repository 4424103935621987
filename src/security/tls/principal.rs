//! The principal of a TLS client: the certificate subject's distinguished name in RFC 2253 form
//! (as Java's `X500Principal.getName()` writes it: most specific RDN first, `CN=alice,OU=eng`),
//! mapped through `ssl.principal.mapping.rules` the way Kafka's `SslPrincipalMapper` does:
//! `RULE:pattern/replacement/[LU]` (the first rule whose pattern matches the whole DN wins) and
//! `DEFAULT` (the DN itself). Pure; parsing the certificate uses x509-parser.

use regex::Regex;
use x509_parser::prelude::{FromDer, X509Certificate};

/// One rule of `ssl.principal.mapping.rules`.
#[derive(Debug, Clone)]
enum Rule {
    Default,
    Replace {
        pattern: Regex,
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// Kafka's `SslPrincipalMapper`.
#[derive(Debug, Clone)]
pub struct SslPrincipalMapper {
    rules: Vec<Rule>,
}

/// A DN no rule maps (Kafka fails the authentication, as kastle closes the connection).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no rule of ssl.principal.mapping.rules applies to the distinguished name {dn:?}")]
pub struct NoMatchingRule {
    pub dn: String,
}

impl SslPrincipalMapper {
    /// Parses `rules`; `Err` says which rule is malformed (for an error naming the key).
    pub fn parse(rules: &str) -> Result<Self, String> {
        let mut parsed = Vec::new();
        let mut rest = rules;
        loop {
            rest = rest.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
            if rest.is_empty() {
                break;
            }
            if let Some(after) = rest
                .strip_prefix("DEFAULT")
                .filter(|after| after.is_empty() || after.starts_with(|c: char| c == ',' || c.is_whitespace()))
            {
                parsed.push(Rule::Default);
                rest = after;
            } else if let Some(after) = rest.strip_prefix("RULE:") {
                let (pattern, after) = until_slash(after).ok_or_else(|| invalid(rest))?;
                let (replacement, after) = until_slash(after).ok_or_else(|| invalid(rest))?;
                let (case, after) = match after.chars().next() {
                    Some('L') => (Case::Lower, &after[1..]),
                    Some('U') => (Case::Upper, &after[1..]),
                    _ => (Case::Keep, after),
                };
                let pattern = Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| format!("invalid pattern in rule {:?}: {e}", rules_head(rest)))?;
                parsed.push(Rule::Replace {
                    pattern,
                    replacement: java_replacement(replacement),
                    case,
                });
                rest = after;
            } else {
                return Err(invalid(rest));
            }
            // A rule ends at a comma, white space or the end (anything else is Kafka's `.*?`).
            let end = rest.find(|c: char| c == ',' || c.is_whitespace()).unwrap_or(rest.len());
            rest = &rest[end..];
        }
        Ok(Self { rules: parsed })
    }

    /// The short name for `dn`.
    pub fn name(&self, dn: &str) -> Result<String, NoMatchingRule> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(dn.to_string()),
                Rule::Replace {
                    pattern,
                    replacement,
                    case,
                } => {
                    if pattern.is_match(dn) {
                        let name = pattern.replace_all(dn, replacement.as_str()).into_owned();
                        return Ok(match case {
                            Case::Keep => name,
                            Case::Lower => name.to_lowercase(),
                            Case::Upper => name.to_uppercase(),
                        });
                    }
                }
            }
        }
        Err(NoMatchingRule { dn: dn.to_string() })
    }
}

fn invalid(rule: &str) -> String {
    format!(
        "invalid rule {:?}: expected DEFAULT or RULE:pattern/replacement/ with an optional L or U",
        rules_head(rule)
    )
}

fn rules_head(s: &str) -> &str {
    let end = s.find(|c: char| c == ',' || c.is_whitespace()).unwrap_or(s.len());
    &s[..end.max(s.len().min(40))]
}

/// Up to the next unescaped `/` (Kafka's `(\\.|[^\\/])*`): (the text, what follows the `/`).
fn until_slash(s: &str) -> Option<(&str, &str)> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '/' => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
    }
    None
}

/// Java's `Matcher.replaceAll` replacement syntax (`$1`, `\x` for a literal x) in the regex
/// crate's (`${1}`, `$$`).
fn java_replacement(java: &str) -> String {
    let mut out = String::with_capacity(java.len() + 4);
    let mut chars = java.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => {}
            },
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    out.push_str("$$");
                } else {
                    out.push_str(&format!("${{{digits}}}"));
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The subject DN of a DER certificate in RFC 2253 form, as Java's `X500Principal.getName()`.
pub fn subject_dn(der: &[u8]) -> Result<String, String> {
    let (_, cert) = X509Certificate::from_der(der).map_err(|e| format!("unparsable client certificate: {e}"))?;
    let rdns: Vec<String> = cert
        .subject()
        .iter()
        .map(|rdn| {
            rdn.iter()
                .map(|atv| {
                    let oid = atv.attr_type().to_id_string();
                    let name = short_name(&oid).map_or(oid.clone(), str::to_string);
                    let value = match atv.as_str() {
                        Ok(text) => escape_rfc2253(text),
                        Err(_) => format!("#{}", hex(atv.attr_value().data)),
                    };
                    format!("{name}={value}")
                })
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect();
    // RFC 2253 writes the last RDN of the sequence first.
    Ok(rdns.into_iter().rev().collect::<Vec<_>>().join(","))
}

/// The keywords Java's RFC 2253 output uses; other attributes print as their OID.
fn short_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "STREET",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

fn escape_rfc2253(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(rules: &str, dn: &str) -> Result<String, NoMatchingRule> {
        SslPrincipalMapper::parse(rules).expect("rules parse").name(dn)
    }

    #[test]
    fn default_keeps_the_distinguished_name() {
        assert_eq!(
            map("DEFAULT", "CN=alice,OU=eng,O=acme").as_deref(),
            Ok("CN=alice,OU=eng,O=acme")
        );
    }

    /// The examples of Kafka's documentation and `SslPrincipalMapperTest`.
    #[test]
    fn rules_map_like_kafkas_ssl_principal_mapper() {
        let rules = "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT";
        assert_eq!(
            map(
                rules,
                "CN=kafka-server1,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"
            )
            .as_deref(),
            Ok("kafka-server1")
        );
        assert_eq!(
            map(rules, "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US").as_deref(),
            Ok("duke@javasoft")
        );
        assert_eq!(
            map(rules, "OU=JavaSoft,O=Sun,cN=Duke.Two,C=US").as_deref(),
            Ok("duke.two")
        );
        assert_eq!(map(rules, "OU=nobody").as_deref(), Ok("OU=nobody"));
        assert_eq!(map("RULE:^CN=(.*?),.*$/$1/U", "CN=alice,O=x").as_deref(), Ok("ALICE"));
        // An escaped slash belongs to the pattern.
        assert_eq!(map("RULE:^CN=(.*?)\\/x$/$1/", "CN=a/x").as_deref(), Ok("a"));
    }

    #[test]
    fn a_dn_no_rule_matches_is_refused_and_bad_rules_do_not_parse() {
        assert_eq!(
            map("RULE:^CN=(.*)$/$1/", "OU=x"),
            Err(NoMatchingRule { dn: "OU=x".into() })
        );
        for bad in ["RULE:^CN=(.*)$", "DEFAULTS", "rule:a/b/", "RULE:(/x/"] {
            assert!(SslPrincipalMapper::parse(bad).is_err(), "{bad}");
        }
        assert!(SslPrincipalMapper::parse("RULE:^CN=(.*)$/$1/L, DEFAULT").is_ok());
    }

    #[test]
    fn java_replacements_become_regex_crate_ones() {
        assert_eq!(java_replacement("$1@$2x"), "${1}@${2}x");
        assert_eq!(java_replacement("\\$1"), "$$1");
    }

    #[test]
    fn subject_dns_are_written_most_specific_first_and_escaped() {
        assert_eq!(escape_rfc2253("a,b"), "a\\,b");
        assert_eq!(escape_rfc2253(" x "), "\\ x\\ ");
    }
}
