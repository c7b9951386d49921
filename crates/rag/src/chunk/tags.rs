//! Symbol tags: which names a piece of source defines and which it uses (calls, type uses,
//! imports), read with the tree-sitter tag queries the grammar crates ship (`queries/tags.scm`,
//! the ones GitHub's code navigation and Aider's repo map use), plus a few patterns of our own
//! where those queries name no uses (imports everywhere, type uses in Python and Rust, calls in
//! C and C++). Retrieval follows the uses of the file being edited and of its best hits to
//! the definitions elsewhere in the repository.

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock};

use tree_sitter::{Query, QueryCursor, StreamingIterator};

use super::heap;
use super::language::Language;

/// Whether a tag defines its name or uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TagRole {
    Definition,
    Reference,
}

/// One name at one place: `find_user` referenced on line 12.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolTag {
    pub name: String,
    /// 1-based line of the name.
    pub line: usize,
    pub role: TagRole,
}

// Uses the shipped tag queries leave out.
const PYTHON_EXTRA: &str = r#"
(import_from_statement name: (dotted_name (identifier) @name) @reference.import)
(import_from_statement name: (aliased_import name: (dotted_name (identifier) @name)) @reference.import)
(type (identifier) @name) @reference.type
(type (attribute attribute: (identifier) @name)) @reference.type
(class_definition superclasses: (argument_list (identifier) @name) @reference.class)
"#;
const JS_IMPORTS: &str = "(import_specifier name: (identifier) @name) @reference.import";
const RUST_EXTRA: &str = r#"
(call_expression function: (scoped_identifier name: (identifier) @name)) @reference.call
(use_declaration argument: (scoped_identifier name: (identifier) @name)) @reference.import
(use_list (identifier) @name) @reference.import
(use_list (scoped_identifier name: (identifier) @name)) @reference.import
"#;
const C_CALLS: &str = "(call_expression function: (identifier) @name) @reference.call";
const CPP_CALLS: &str = r#"
(call_expression function: (field_expression field: (field_identifier) @name)) @reference.call
(call_expression function: (qualified_identifier name: (identifier) @name)) @reference.call
"#;
/// Every named type in TypeScript, Rust, C and C++.
const TYPE_USES: &str = "(type_identifier) @name @reference.type";

/// The tag query of `language`: the grammar's own, then ours.
fn query_source(language: Language) -> Option<String> {
    let parts: &[&str] = match language {
        Language::Python => &[tree_sitter_python::TAGS_QUERY, PYTHON_EXTRA],
        Language::JavaScript => &[tree_sitter_javascript::TAGS_QUERY, JS_IMPORTS],
        // TypeScript's queries only add what JavaScript's lack.
        Language::TypeScript | Language::Tsx => &[
            tree_sitter_javascript::TAGS_QUERY,
            tree_sitter_typescript::TAGS_QUERY,
            JS_IMPORTS,
            TYPE_USES,
        ],
        Language::Rust => &[tree_sitter_rust::TAGS_QUERY, RUST_EXTRA, TYPE_USES],
        Language::Go => &[tree_sitter_go::TAGS_QUERY],
        Language::Java => &[tree_sitter_java::TAGS_QUERY],
        Language::C => &[tree_sitter_c::TAGS_QUERY, C_CALLS, TYPE_USES],
        Language::Cpp => &[tree_sitter_cpp::TAGS_QUERY, C_CALLS, CPP_CALLS, TYPE_USES],
        Language::CSharp => &[tree_sitter_c_sharp::TAGS_QUERY],
        Language::Ruby => &[tree_sitter_ruby::TAGS_QUERY],
        _ => return None,
    };
    Some(parts.join("\n"))
}

/// A compiled tag query and the roles of its captures.
struct TagQuery {
    query: Query,
    /// Capture index → role (`@definition.*`, `@reference.*`); `None` for the rest.
    roles: Vec<Option<TagRole>>,
    /// Index of the `@name` capture.
    name: u32,
}

fn compile(language: Language) -> Option<TagQuery> {
    let grammar = language.grammar()?;
    let source = query_source(language)?;
    let query = match heap::query(&grammar, &source) {
        Ok(q) => q,
        Err(e) => {
            tracing::warn!("tag query of {} does not compile: {e}", language.name());
            return None;
        }
    };
    let roles = query
        .capture_names()
        .iter()
        .map(|c| {
            if c.starts_with("definition.") {
                Some(TagRole::Definition)
            } else if c.starts_with("reference.") {
                Some(TagRole::Reference)
            } else {
                None
            }
        })
        .collect();
    let name = query.capture_index_for_name("name")?;
    Some(TagQuery { query, roles, name })
}

/// Each language's tag query, compiled on its first use, outside any parse.
static QUERIES: LazyLock<HashMap<Language, OnceLock<Option<TagQuery>>>> = LazyLock::new(|| {
    Language::WITH_GRAMMAR
        .into_iter()
        .map(|l| (l, OnceLock::new()))
        .collect()
});

fn tag_query(language: Language) -> Option<&'static TagQuery> {
    QUERIES
        .get(&language)?
        .get_or_init(|| compile(language))
        .as_ref()
}

/// The names `text` (source in `language`, its first line being line `first_line`) defines and
/// uses, in order of appearance; empty for languages without a grammar or a tag query. A
/// fragment (one chunk of a file) parses too: tree-sitter recovers around what is cut off.
pub fn symbol_tags(language: Language, text: &str, first_line: usize) -> Vec<SymbolTag> {
    let Some(tag_query) = tag_query(language) else {
        return Vec::new();
    };
    let Some(grammar) = language.grammar() else {
        return Vec::new();
    };
    let source = text.as_bytes();
    heap::parse(&grammar, text, |root| {
        let mut tags = Vec::new();
        let mut cursor = QueryCursor::new();
        let mut matches = cursor.matches(&tag_query.query, root, source);
        while let Some(m) = matches.next() {
            let role = m
                .captures()
                .iter()
                .find_map(|c| tag_query.roles[c.index as usize]);
            let name = m.captures().iter().find(|c| c.index == tag_query.name);
            if let (Some(role), Some(name)) = (role, name) {
                let Ok(text) = name.node.utf8_text(source) else {
                    continue;
                };
                tags.push(SymbolTag {
                    name: text.to_string(),
                    line: first_line + name.node.start_position().row,
                    role,
                });
            }
        }
        tags.sort_by_key(|t| t.line);
        tags.dedup();
        tags
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(language: Language, text: &str, role: TagRole) -> Vec<String> {
        symbol_tags(language, text, 1)
            .into_iter()
            .filter(|t| t.role == role)
            .map(|t| t.name)
            .collect()
    }

    #[test]
    fn every_tag_query_compiles() {
        for language in Language::WITH_GRAMMAR {
            let source = query_source(language).unwrap();
            let grammar = language.grammar().unwrap();
            if let Err(e) = heap::query(&grammar, &source) {
                panic!("{}: {e}", language.name());
            }
        }
    }

    #[test]
    fn python_calls_imports_and_type_uses() {
        let text = "from .users.store import find_user, Session as S\n\n\
                    def login(name: str, db: Database) -> Account:\n    \
                    user = find_user(db, name)\n    return user.check()\n";
        let refs = names(Language::Python, text, TagRole::Reference);
        for want in ["find_user", "Session", "Database", "Account", "check"] {
            assert!(refs.contains(&want.to_string()), "{want} in {refs:?}");
        }
        assert_eq!(
            names(Language::Python, text, TagRole::Definition),
            ["login"]
        );
        let first = symbol_tags(Language::Python, text, 10);
        assert_eq!(first[0].line, 10, "{first:?}");
    }

    #[test]
    fn rust_paths_types_and_macros() {
        let text = "use crate::store::{find_user, Session};\n\
                    fn login(db: &Db) -> Result<Account, Error> {\n    \
                    let s = store::open_session(db)?;\n    Account::from_user(find_user(&s)?)\n}\n";
        let refs = names(Language::Rust, text, TagRole::Reference);
        for want in [
            "find_user",
            "Session",
            "Db",
            "Account",
            "open_session",
            "from_user",
        ] {
            assert!(refs.contains(&want.to_string()), "{want} in {refs:?}");
        }
    }

    #[test]
    fn go_and_typescript_calls() {
        let go = "package auth\n\nfunc Login(s *Store) error {\n\treturn users.FindUser(s)\n}\n";
        assert!(names(Language::Go, go, TagRole::Reference).contains(&"FindUser".to_string()));
        assert!(names(Language::Go, go, TagRole::Reference).contains(&"Store".to_string()));
        let ts = "import { findUser } from './users/store';\n\
                  export function login(name: string): Account {\n  return findUser(name);\n}\n";
        let refs = names(Language::TypeScript, ts, TagRole::Reference);
        assert!(refs.contains(&"findUser".to_string()), "{refs:?}");
        assert!(refs.contains(&"Account".to_string()), "{refs:?}");
        assert_eq!(
            names(Language::TypeScript, ts, TagRole::Definition),
            ["login"]
        );
    }
}
