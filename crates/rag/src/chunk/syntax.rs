//! Syntax units: walks a tree-sitter tree and decides, per language, what each node is for
//! chunking (a definition kept whole, a container whose members become units of their own when
//! it is long, a wrapper around the real declaration, a comment leading into the next one) and
//! which tag it carries (`[Function: parse]`, `[Method: Parser.next]`, `[Class: Cart]`, …).

use tree_sitter::Node;

use super::heap;
use super::language::Language;
use super::unit::Unit;

/// What a syntax node means for chunking.
enum Role<'t> {
    /// A definition kept whole (split in windows when long).
    Definition {
        label: &'static str,
        name: String,
    },
    /// A definition whose members become their own units when it is too long.
    Container {
        label: &'static str,
        name: String,
        body: Node<'t>,
    },
    /// A node wrapping the real declaration (`export`, decorators, templates).
    Wrapper(Node<'t>),
    /// Comments and attributes attach to the next definition.
    Leading,
    Other,
}

/// The units of `text` in `language` (parsed with its `grammar`), sorted by position; `None`
/// when it cannot be parsed. A unit longer than `chunk_lines` that holds definitions is split
/// into its members.
pub(super) fn syntax_units(
    language: Language,
    grammar: tree_sitter::Language,
    text: &str,
    chunk_lines: usize,
) -> Option<Vec<Unit>> {
    heap::parse(&grammar, text, |root| {
        let mut units = Vec::new();
        let walker = UnitWalker {
            language,
            source: text.as_bytes(),
            chunk_lines,
        };
        walker.children(root, None, &mut units);
        units.sort_by_key(|u| (u.start, u.end));
        units
    })
}

struct UnitWalker<'s> {
    language: Language,
    source: &'s [u8],
    chunk_lines: usize,
}

impl<'s> UnitWalker<'s> {
    fn text(&self, node: Node) -> String {
        node.utf8_text(self.source).unwrap_or_default().to_string()
    }

    fn field_text(&self, node: Node, field: &str) -> Option<String> {
        node.child_by_field_name(field).map(|n| self.text(n))
    }

    /// Adds the units of `parent`'s named children; `owner` names the enclosing type.
    fn children(&self, parent: Node, owner: Option<&str>, out: &mut Vec<Unit>) {
        let mut cursor = parent.walk();
        let mut leading: Option<usize> = None;
        for child in parent.named_children(&mut cursor) {
            let start_row = child.start_position().row;
            match self.role(child, owner) {
                Role::Leading => {
                    leading.get_or_insert(start_row);
                    continue;
                }
                role => {
                    let start = leading.take().unwrap_or(start_row);
                    self.add(child, role, start, owner, out);
                }
            }
        }
        if let Some(start) = leading {
            out.push(Unit::plain(start, parent.end_position().row));
        }
    }

    fn add(&self, node: Node, role: Role, start: usize, owner: Option<&str>, out: &mut Vec<Unit>) {
        let end = end_row(node);
        match role {
            Role::Wrapper(inner) => {
                let inner_role = self.role(inner, owner);
                match inner_role {
                    Role::Other | Role::Leading => out.push(Unit::plain(start, end)),
                    r => {
                        let before = out.len();
                        self.add(inner, r, start, owner, out);
                        // Keep the wrapper's own lines (decorators, `export`, `template<…>`).
                        if let Some(u) = out.get_mut(before) {
                            u.start = u.start.min(start);
                        }
                        if let Some(u) = out.last_mut() {
                            u.end = u.end.max(end);
                        }
                    }
                }
            }
            Role::Definition { label, name } => {
                out.push(self.definition_unit(start, end, label, &name, owner));
            }
            Role::Container { label, name, body } => {
                let mut members = Vec::new();
                // Functions in a module are functions, not methods of the module.
                let member_owner = (label != "Module").then_some(name.as_str());
                self.children(body, member_owner, &mut members);
                let has_definitions = members.iter().any(|m| !m.tags.is_empty());
                let tag = format!("[{label}: {name}]");
                if end + 1 - start <= self.chunk_lines || !has_definitions {
                    let mut unit = Unit {
                        start,
                        end,
                        tags: vec![tag],
                        symbols: vec![name.clone()],
                    };
                    for m in members {
                        unit.absorb(m);
                    }
                    out.push(unit);
                    return;
                }
                let first = members.iter().map(|m| m.start).min().unwrap_or(end);
                let header_end = first.saturating_sub(1).max(start);
                out.push(Unit {
                    start,
                    end: header_end,
                    tags: vec![tag],
                    symbols: vec![name.clone()],
                });
                out.extend(members);
                // The closing lines (`}`, `end`) belong with the last member.
                if let Some(last) = out.last_mut() {
                    last.end = last.end.max(end);
                }
            }
            Role::Leading | Role::Other => out.push(Unit::plain(start, end)),
        }
    }

    fn definition_unit(
        &self,
        start: usize,
        end: usize,
        label: &str,
        name: &str,
        owner: Option<&str>,
    ) -> Unit {
        let (tag, symbols) = match (label, owner) {
            ("Method", Some(owner)) if !name.contains('.') => {
                (format!("[Method: {owner}.{name}]"), vec![name.to_string()])
            }
            ("Function", Some(owner)) => {
                (format!("[Method: {owner}.{name}]"), vec![name.to_string()])
            }
            ("Method", _) if name.contains('.') => {
                let short = name.rsplit('.').next().unwrap_or(name).to_string();
                (format!("[Method: {name}]"), vec![short])
            }
            ("Method", None) => (format!("[Function: {name}]"), vec![name.to_string()]),
            _ => (format!("[{label}: {name}]"), vec![name.to_string()]),
        };
        Unit {
            start,
            end,
            tags: vec![tag],
            symbols,
        }
    }

    fn role<'t>(&self, node: Node<'t>, owner: Option<&str>) -> Role<'t> {
        let kind = node.kind();
        if kind.contains("comment") || kind == "attribute_item" || kind == "decorator" {
            return Role::Leading;
        }
        let name = || self.field_text(node, "name").map(|n| clean_name(&n));
        let container = |label: &'static str, name: Option<String>| match name {
            Some(name) => Role::Container {
                label,
                name,
                body: node.child_by_field_name("body").unwrap_or(node),
            },
            None => Role::Other,
        };
        let definition = |label: &'static str, name: Option<String>| match name {
            Some(name) if !name.is_empty() => Role::Definition { label, name },
            _ => Role::Other,
        };
        match (self.language, kind) {
            // Wrappers.
            (_, "export_statement") => node
                .child_by_field_name("declaration")
                .map_or(Role::Other, Role::Wrapper),
            (_, "decorated_definition") => node
                .child_by_field_name("definition")
                .map_or(Role::Other, Role::Wrapper),
            (_, "template_declaration") => last_named(node).map_or(Role::Other, Role::Wrapper),
            (Language::TypeScript | Language::Tsx, "expression_statement") => {
                match node.named_child(0) {
                    Some(inner) if matches!(inner.kind(), "internal_module" | "module") => {
                        Role::Wrapper(inner)
                    }
                    _ => Role::Other,
                }
            }
            // Functions and methods.
            (_, "function_item" | "function_declaration" | "generator_function_declaration") => {
                definition("Function", name())
            }
            (Language::Go, "method_declaration") => {
                let receiver = node
                    .child_by_field_name("receiver")
                    .map(|r| receiver_type(&self.text(r)));
                match (receiver, name()) {
                    (Some(r), Some(n)) if !r.is_empty() => {
                        definition("Method", Some(format!("{r}.{n}")))
                    }
                    (_, n) => definition("Function", n),
                }
            }
            (
                _,
                "method_declaration"
                | "method_definition"
                | "constructor_declaration"
                | "method"
                | "singleton_method",
            ) => definition("Method", name()),
            (Language::C | Language::Cpp, "function_definition") => {
                let declared = node
                    .child_by_field_name("declarator")
                    .and_then(|d| self.declarator_name(d));
                match declared {
                    Some(n) if n.contains("::") => definition("Method", Some(n.replace("::", "."))),
                    n => definition(
                        if owner.is_some() {
                            "Method"
                        } else {
                            "Function"
                        },
                        n,
                    ),
                }
            }
            (_, "function_definition") => definition("Function", name()),
            (Language::Rust, "macro_definition") => definition("Macro", name()),
            (
                Language::JavaScript | Language::TypeScript | Language::Tsx,
                "lexical_declaration" | "variable_declaration",
            ) => {
                // `const handler = () => {…}` is a function in all but syntax.
                let mut cursor = node.walk();
                let declarator = node
                    .named_children(&mut cursor)
                    .find(|c| c.kind() == "variable_declarator");
                match declarator {
                    Some(d)
                        if d.child_by_field_name("value").is_some_and(|v| {
                            matches!(
                                v.kind(),
                                "arrow_function" | "function_expression" | "function"
                            )
                        }) =>
                    {
                        definition("Function", self.field_text(d, "name"))
                    }
                    _ => Role::Other,
                }
            }
            // Types and modules.
            (Language::Rust, "impl_item") => {
                let ty = self.field_text(node, "type").map(|t| clean_name(&t));
                container("Impl", ty)
            }
            (Language::Rust, "trait_item") => container("Trait", name()),
            (Language::Rust, "mod_item") if node.child_by_field_name("body").is_some() => {
                container("Module", name())
            }
            (Language::Rust, "struct_item" | "union_item") => definition("Struct", name()),
            (Language::Rust, "enum_item") => definition("Enum", name()),
            (
                _,
                "class_definition" | "class_declaration" | "abstract_class_declaration" | "class",
            ) => container("Class", name()),
            (Language::Java | Language::CSharp, "interface_declaration") => {
                container("Interface", name())
            }
            (_, "interface_declaration") => definition("Interface", name()),
            (_, "record_declaration") => container("Record", name()),
            (Language::CSharp, "struct_declaration") => container("Struct", name()),
            (_, "enum_declaration") => definition("Enum", name()),
            (_, "type_alias_declaration") => definition("Type", name()),
            (
                _,
                "internal_module" | "module" | "namespace_definition" | "namespace_declaration",
            ) => container("Module", name()),
            (Language::Go, "type_declaration") => {
                let mut cursor = node.walk();
                let spec = node
                    .named_children(&mut cursor)
                    .find(|c| c.kind() == "type_spec");
                match spec {
                    Some(spec) => {
                        let label = match spec.child_by_field_name("type").map(|t| t.kind()) {
                            Some("struct_type") => "Struct",
                            Some("interface_type") => "Interface",
                            _ => "Type",
                        };
                        definition(label, self.field_text(spec, "name"))
                    }
                    None => Role::Other,
                }
            }
            (Language::Cpp, "class_specifier" | "struct_specifier")
                if node.child_by_field_name("body").is_some() =>
            {
                container("Class", name())
            }
            (Language::C, "struct_specifier" | "union_specifier" | "enum_specifier")
                if node.child_by_field_name("body").is_some() =>
            {
                definition("Struct", name())
            }
            (Language::C | Language::Cpp, "declaration" | "type_definition") => {
                // `struct s {…};` and `typedef struct {…} s;` wrap the specifier.
                match node.child_by_field_name("type") {
                    Some(t)
                        if matches!(
                            t.kind(),
                            "struct_specifier"
                                | "class_specifier"
                                | "union_specifier"
                                | "enum_specifier"
                        ) && t.child_by_field_name("body").is_some() =>
                    {
                        if t.child_by_field_name("name").is_some() {
                            Role::Wrapper(t)
                        } else {
                            let alias =
                                node.child_by_field_name("declarator").map(|d| self.text(d));
                            definition("Struct", alias)
                        }
                    }
                    _ => Role::Other,
                }
            }
            _ => Role::Other,
        }
    }

    /// Name in a C/C++ declarator chain (`int *foo(int)` → `foo`, `Foo::bar` kept qualified).
    fn declarator_name(&self, node: Node) -> Option<String> {
        match node.kind() {
            "identifier"
            | "field_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name" => Some(clean_name(&self.text(node))),
            _ => node
                .child_by_field_name("declarator")
                .and_then(|d| self.declarator_name(d)),
        }
    }
}

fn last_named(node: Node) -> Option<Node> {
    let count = node.named_child_count();
    (0..count)
        .rev()
        .filter_map(|i| node.named_child(i as u32))
        .find(|c| !c.kind().contains("parameter"))
}

/// Last row a node really occupies (a node ending at column 0 ends on the previous line).
fn end_row(node: Node) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row - 1
    } else {
        end.row
    }
}

/// Type names as written without generics, whitespace or pointer marks.
fn clean_name(raw: &str) -> String {
    let head = raw.split(['<', '(', '{', '\n']).next().unwrap_or(raw);
    head.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_start_matches(['&', '*'])
        .trim()
        .to_string()
}

/// `(s *Server)` → `Server`.
fn receiver_type(raw: &str) -> String {
    let inner = raw.trim().trim_start_matches('(').trim_end_matches(')');
    let ty = inner.split_whitespace().last().unwrap_or("");
    clean_name(ty.trim_start_matches('*'))
}
