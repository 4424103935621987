//! Kafka's JAAS configuration syntax, parsed once for every user of it: the inline
//! `sasl.jaas.config` value (`listener.name.<l>.<mechanism>.sasl.jaas.config`, one or more login
//! modules, no section) and a JAAS file with named sections (`KafkaServer { ... };`,
//! `Client { ... };` for ZooKeeper), as `java.security.auth.login.config` points at.
//!
//! The grammar is Java's `ConfigFile` as Kafka's `JaasConfig` accepts it:
//! `<class> <flag> [<key>=<value>]* ;` where a value is a double-quoted string (with `\"` and
//! `\\` escapes) or a bare word, `<flag>` is required/requisite/sufficient/optional, and `//` and
//! `/* */` comments are skipped. Option values are secrets (passwords, `user_<name>` entries), so
//! `Debug` prints option names only.

use std::collections::BTreeMap;
use std::fmt;

/// A login module's control flag (Java's `LoginModuleControlFlag`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlFlag {
    Required,
    Requisite,
    Sufficient,
    Optional,
}

/// One `<class> <flag> key=value ... ;` entry.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginModule {
    /// The login module's class, e.g. `org.apache.kafka.common.security.plain.PlainLoginModule`.
    pub class: String,
    pub flag: ControlFlag,
    /// Options in the order-independent form Java gives them (later duplicates win).
    pub options: BTreeMap<String, String>,
}

impl LoginModule {
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }

    /// The class's last dotted component (`PlainLoginModule`), for messages and matching.
    pub fn simple_name(&self) -> &str {
        self.class.rsplit('.').next().unwrap_or(&self.class)
    }
}

impl fmt::Debug for LoginModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoginModule")
            .field("class", &self.class)
            .field("flag", &self.flag)
            .field("options", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Why a JAAS text did not parse; the position is 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JAAS configuration at line {line}, column {column}: {reason}")]
pub struct JaasError {
    pub line: usize,
    pub column: usize,
    pub reason: String,
}

/// An inline `sasl.jaas.config` value: one or more login modules, each ending in `;`.
pub fn parse_modules(text: &str) -> Result<Vec<LoginModule>, JaasError> {
    let mut p = Parser::new(text);
    let modules = p.modules(None)?;
    if modules.is_empty() {
        return Err(p.error("expected a login module: <class> <flag> [key=value]* ;"));
    }
    Ok(modules)
}

/// A JAAS file: `Name { modules };` sections, keyed by section name.
pub fn parse_file(text: &str) -> Result<BTreeMap<String, Vec<LoginModule>>, JaasError> {
    let mut p = Parser::new(text);
    let mut sections = BTreeMap::new();
    loop {
        p.skip_space()?;
        if p.at_end() {
            return Ok(sections);
        }
        let name = p.word("a section name")?;
        p.expect('{')?;
        let modules = p.modules(Some('}'))?;
        p.expect('}')?;
        p.expect(';')?;
        sections.insert(name, modules);
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn new(text: &str) -> Self {
        Self {
            chars: text.chars().collect(),
            pos: 0,
        }
    }

    fn error(&self, reason: impl Into<String>) -> JaasError {
        let before: String = self.chars[..self.pos.min(self.chars.len())].iter().collect();
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        JaasError {
            line,
            column,
            reason: reason.into(),
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.chars.len()
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    /// Skips whitespace and both comment styles.
    fn skip_space(&mut self) -> Result<(), JaasError> {
        loop {
            match (self.peek(), self.chars.get(self.pos + 1).copied()) {
                (Some(c), _) if c.is_whitespace() => self.pos += 1,
                (Some('/'), Some('/')) => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                (Some('/'), Some('*')) => {
                    self.pos += 2;
                    loop {
                        match (self.peek(), self.chars.get(self.pos + 1).copied()) {
                            (Some('*'), Some('/')) => {
                                self.pos += 2;
                                break;
                            }
                            (Some(_), _) => self.pos += 1,
                            (None, _) => return Err(self.error("unterminated /* comment")),
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn expect(&mut self, c: char) -> Result<(), JaasError> {
        self.skip_space()?;
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(format!("expected '{c}'")))
        }
    }

    /// A bare word: anything up to whitespace or one of `{};="`.
    fn word(&mut self, what: &str) -> Result<String, JaasError> {
        self.skip_space()?;
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| !c.is_whitespace() && !matches!(c, '{' | '}' | ';' | '=' | '"'))
        {
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.error(format!("expected {what}")));
        }
        Ok(self.chars[start..self.pos].iter().collect())
    }

    fn value(&mut self) -> Result<String, JaasError> {
        self.skip_space()?;
        if self.peek() != Some('"') {
            return self.word("a value");
        }
        self.pos += 1;
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated quoted value")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(c) => {
                            out.push(c);
                            self.pos += 1;
                        }
                        None => return Err(self.error("unterminated quoted value")),
                    }
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// Login modules until the end of the text or `close` (not consumed).
    fn modules(&mut self, close: Option<char>) -> Result<Vec<LoginModule>, JaasError> {
        let mut modules = Vec::new();
        loop {
            self.skip_space()?;
            if self.at_end() || (close.is_some() && self.peek() == close) {
                return Ok(modules);
            }
            let class = self.word("a login module class")?;
            let flag = match self.word("a control flag")?.to_ascii_lowercase().as_str() {
                "required" => ControlFlag::Required,
                "requisite" => ControlFlag::Requisite,
                "sufficient" => ControlFlag::Sufficient,
                "optional" => ControlFlag::Optional,
                other => {
                    return Err(self.error(format!(
                        "control flag {other:?} is not one of required, requisite, sufficient, optional"
                    )))
                }
            };
            let mut options = BTreeMap::new();
            loop {
                self.skip_space()?;
                if self.peek() == Some(';') {
                    self.pos += 1;
                    break;
                }
                if self.at_end() {
                    return Err(self.error(format!("login module {class} is not terminated by ';'")));
                }
                let key = self.word("an option name or ';'")?;
                self.expect('=')?;
                let value = self.value()?;
                options.insert(key, value);
            }
            modules.push(LoginModule { class, flag, options });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_plain_config_parses_with_quoted_and_bare_values() {
        let m = parse_modules(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required
               username="admin" password="a\"dm;in" user_admin=secret user_alice="alice-secret";"#,
        )
        .expect("parses");
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].simple_name(), "PlainLoginModule");
        assert_eq!(m[0].flag, ControlFlag::Required);
        assert_eq!(m[0].option("password"), Some("a\"dm;in"));
        assert_eq!(m[0].option("user_admin"), Some("secret"));
        assert_eq!(m[0].option("user_alice"), Some("alice-secret"));
    }

    #[test]
    fn a_file_with_sections_and_comments_parses() {
        let f = parse_file(
            "// brokers\nKafkaServer {\n  org.apache.kafka.common.security.scram.ScramLoginModule required\n  username=\"kafka\" password=\"pw\";\n};\n/* ZooKeeper */\nClient {\n org.apache.zookeeper.server.auth.DigestLoginModule required username=\"zk\" password=\"zpw\";\n};\n",
        )
        .expect("parses");
        assert_eq!(f.keys().collect::<Vec<_>>(), ["Client", "KafkaServer"]);
        assert_eq!(f["Client"][0].option("username"), Some("zk"));
        assert_eq!(f["KafkaServer"][0].simple_name(), "ScramLoginModule");
    }

    #[test]
    fn errors_name_the_position_and_the_problem() {
        let e = parse_modules("x.PlainLoginModule mandatory a=b;").expect_err("bad flag");
        assert!(e.reason.contains("mandatory"), "{e}");
        let e = parse_modules("x.PlainLoginModule required a=\"b").expect_err("unterminated");
        assert!(e.reason.contains("unterminated"), "{e}");
        let e = parse_modules("x.PlainLoginModule required a=b").expect_err("no ;");
        assert!(e.reason.contains("';'"), "{e}");
        let e = parse_file("Client {\n x.M required a=b;\n").expect_err("no close");
        assert_eq!(e.line, 3, "{e}");
        assert!(parse_modules("  ").is_err());
    }

    #[test]
    fn debug_does_not_print_secrets() {
        let m = parse_modules("x.PlainLoginModule required password=\"hunter2\";").expect("parses");
        let shown = format!("{m:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("password"), "{shown}");
    }
}
