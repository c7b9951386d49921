//! Chunking: cuts a file into retrievable pieces along the boundaries a reader would use.
//! Source code is parsed with tree-sitter (Rust, TypeScript/TSX, JavaScript, Python, Go, Java,
//! C, C++, C#, Ruby) so chunks align to functions, methods, classes, impls, interfaces and
//! modules; a unit longer than `chunk_lines` is split into windows overlapping by `overlap`
//! lines, and small neighbours merge up to the limit. Markdown splits at headings, other text by
//! lines. Every chunk carries its line range, language, symbol names and metadata tags such as
//! `[Function: parse]` or `[Method: Parser.next]`.
//!
//! Files that say in their first lines that they are generated (`@generated`, `DO NOT EDIT`,
//! "automatically generated", as rustfmt and Go tooling read them) are chunked by lines: they
//! stay searchable, but parsing bindings and tables was a sixth of all parse time on real trees
//! and their definitions are not what a user edits.

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use tree_sitter::{Node, Parser};

/// Files larger than this are chunked by lines without parsing: they are nearly always
/// generated (bindings, tables) and parsing them dominated indexing time on real trees.
pub const MAX_PARSED_BYTES: usize = 256 * 1024;
/// Longest chunk text kept; longer windows (minified or data files) are cut so one chunk cannot
/// swallow the token budget.
const MAX_CHUNK_BYTES: usize = 12 * 1024;

/// Languages retrieval distinguishes; the tree-sitter ones get structural chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Rust,
    TypeScript,
    Tsx,
    JavaScript,
    Python,
    Go,
    Java,
    C,
    Cpp,
    CSharp,
    Ruby,
    Markdown,
    Yaml,
    Toml,
    Json,
    Text,
}

impl Language {
    /// Language of a file from its name.
    pub fn from_path(path: &str) -> Language {
        let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
        let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        match ext {
            "rs" => Language::Rust,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "py" | "pyi" => Language::Python,
            "go" => Language::Go,
            "java" => Language::Java,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp" => Language::Cpp,
            "cs" => Language::CSharp,
            "rb" | "rake" | "gemspec" => Language::Ruby,
            "md" | "markdown" | "mdx" => Language::Markdown,
            "yaml" | "yml" => Language::Yaml,
            "toml" => Language::Toml,
            "json" | "jsonc" => Language::Json,
            _ if name == "rakefile" || name == "gemfile" => Language::Ruby,
            _ => Language::Text,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::JavaScript => "javascript",
            Language::Python => "python",
            Language::Go => "go",
            Language::Java => "java",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::CSharp => "csharp",
            Language::Ruby => "ruby",
            Language::Markdown => "markdown",
            Language::Yaml => "yaml",
            Language::Toml => "toml",
            Language::Json => "json",
            Language::Text => "text",
        }
    }

    fn grammar(self) -> Option<tree_sitter::Language> {
        let f = match self {
            Language::Rust => tree_sitter_rust::LANGUAGE,
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX,
            Language::JavaScript => tree_sitter_javascript::LANGUAGE,
            Language::Python => tree_sitter_python::LANGUAGE,
            Language::Go => tree_sitter_go::LANGUAGE,
            Language::Java => tree_sitter_java::LANGUAGE,
            Language::C => tree_sitter_c::LANGUAGE,
            Language::Cpp => tree_sitter_cpp::LANGUAGE,
            Language::CSharp => tree_sitter_c_sharp::LANGUAGE,
            Language::Ruby => tree_sitter_ruby::LANGUAGE,
            _ => return None,
        };
        Some(f.into())
    }
}

/// A retrievable piece of a file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chunk {
    /// First line, 1-based.
    pub start_line: usize,
    /// Last line, inclusive.
    pub end_line: usize,
    pub language: Language,
    pub tags: Vec<String>,
    pub symbols: Vec<String>,
    /// The source lines.
    pub text: String,
}

impl Chunk {
    /// Tags line followed by the source: what is embedded and what the metadata-first chunk
    /// format promises.
    pub fn tagged_text(&self) -> String {
        tagged_text(&self.tags, &self.text)
    }
}

/// `tags` joined on one line, then `text`.
pub fn tagged_text(tags: &[String], text: &str) -> String {
    if tags.is_empty() {
        text.to_string()
    } else {
        format!("{}\n{}", tags.join(" "), text)
    }
}

/// Chunk sizes.
#[derive(Debug, Clone, Copy)]
pub struct ChunkOptions {
    pub chunk_lines: usize,
    pub overlap: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        Self {
            chunk_lines: 48,
            overlap: 8,
        }
    }
}

/// A run of lines with the definitions it holds (0-based rows, inclusive).
#[derive(Debug, Clone)]
struct Unit {
    start: usize,
    end: usize,
    tags: Vec<String>,
    symbols: Vec<String>,
}

/// How many leading lines may carry a generated-code marker (rustfmt reads five for `@generated`).
const GENERATED_MARKER_LINES: usize = 5;

/// Whether `text` declares itself generated in its first [`GENERATED_MARKER_LINES`] lines.
/// Only explicit markers count: "code generated by the macro" in a doc comment does not.
fn is_generated(text: &str) -> bool {
    static MARKER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)@generated|do not edit|automatically generated|auto-?generated")
            .expect("valid marker pattern")
    });
    text.lines()
        .take(GENERATED_MARKER_LINES)
        .any(|line| MARKER.is_match(line))
}

thread_local! {
    /// The mimalloc heap of the parse running on this thread (null outside a parse): every
    /// tree-sitter allocation of that parse goes there.
    static PARSE_HEAP: Cell<*mut libmimalloc_sys::mi_heap_t> =
        const { Cell::new(std::ptr::null_mut()) };
}

/// One parse's memory. Dropping it frees the parser, the syntax tree and its cursors at once
/// (`mi_heap_destroy`) instead of a `free` per node: deleting trees node by node, and the
/// allocator work around it, was about a tenth of full-index time.
///
/// Everything tree-sitter allocates while the heap is entered must be created inside it and
/// never used after it is dropped: the parser and tree are `ManuallyDrop` so their destructors
/// never run on freed memory (see [`syntax_units`]).
struct ParseHeap(*mut libmimalloc_sys::mi_heap_t);

impl ParseHeap {
    fn enter() -> ParseHeap {
        debug_assert!(PARSE_HEAP.get().is_null(), "parses do not nest");
        // SAFETY: creating a heap has no preconditions.
        let heap = non_null(unsafe { libmimalloc_sys::mi_heap_new() }.cast()).cast();
        PARSE_HEAP.set(heap);
        ParseHeap(heap)
    }
}

impl Drop for ParseHeap {
    fn drop(&mut self) {
        PARSE_HEAP.set(std::ptr::null_mut());
        // SAFETY: the heap came from `mi_heap_new` and is destroyed once; no block in it is
        // used afterwards (the type's contract).
        unsafe { libmimalloc_sys::mi_heap_destroy(self.0) }
    }
}

/// Routes tree-sitter's C allocations (one per syntax node) to mimalloc, into the current
/// [`ParseHeap`]: with glibc's malloc they were a sixth of full-index time on large trees. Runs
/// once, before the first parser exists; this module is the crate's only tree-sitter user, so no
/// tree-sitter object allocated by another allocator can reach these functions.
fn install_parser_allocator() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: the four functions are one allocator family (mimalloc) with malloc's
        // alignment; they never return null (allocation failure aborts, as tree-sitter's
        // default does); `call_once` runs before any tree-sitter call of this process (every
        // parser is created after it) and never again.
        unsafe {
            tree_sitter::set_allocator(Some(tree_sitter::Allocator {
                malloc: ts_malloc,
                calloc: ts_calloc,
                realloc: ts_realloc,
                free: ts_free,
            }))
        }
    });
}

fn non_null(p: *mut std::ffi::c_void) -> *mut std::ffi::c_void {
    if p.is_null() {
        std::process::abort();
    }
    p
}

// Outside a parse (no heap entered) the functions fall back to mimalloc's default heap.

unsafe extern "C" fn ts_malloc(size: usize) -> *mut std::ffi::c_void {
    let heap = PARSE_HEAP.get();
    // SAFETY: plain allocation (a zero size still yields a unique pointer); `heap` is live
    // while it is entered.
    non_null(unsafe {
        if heap.is_null() {
            libmimalloc_sys::mi_malloc(size)
        } else {
            libmimalloc_sys::mi_heap_malloc(heap, size)
        }
    })
}

unsafe extern "C" fn ts_calloc(count: usize, size: usize) -> *mut std::ffi::c_void {
    let heap = PARSE_HEAP.get();
    // SAFETY: as above.
    non_null(unsafe {
        if heap.is_null() {
            libmimalloc_sys::mi_calloc(count, size)
        } else {
            libmimalloc_sys::mi_heap_calloc(heap, count, size)
        }
    })
}

unsafe extern "C" fn ts_realloc(ptr: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void {
    let heap = PARSE_HEAP.get();
    // SAFETY: `ptr` is null or came from this family (see `install_parser_allocator`); inside a
    // parse it belongs to the parse's heap, where the moved block stays.
    non_null(unsafe {
        if heap.is_null() {
            libmimalloc_sys::mi_realloc(ptr, size)
        } else {
            libmimalloc_sys::mi_heap_realloc(heap, ptr, size)
        }
    })
}

unsafe extern "C" fn ts_free(ptr: *mut std::ffi::c_void) {
    // SAFETY: `ptr` is null or came from this family; `mi_free` finds the block's heap.
    unsafe { libmimalloc_sys::mi_free(ptr) }
}

/// Cuts `text` (the content of `path`) into chunks.
pub fn chunk_file(path: &str, text: &str, options: ChunkOptions) -> Vec<Chunk> {
    let options = ChunkOptions {
        chunk_lines: options.chunk_lines.max(4),
        overlap: options.overlap.min(options.chunk_lines.max(4) / 2),
    };
    let language = Language::from_path(path);
    let lines: Vec<&str> = text.lines().collect();
    if lines.iter().all(|l| l.trim().is_empty()) {
        return Vec::new();
    }
    let units = match language {
        Language::Markdown => markdown_units(&lines),
        lang => match lang
            .grammar()
            .filter(|_| text.len() <= MAX_PARSED_BYTES && !is_generated(text))
        {
            Some(grammar) => syntax_units(lang, grammar, text, options.chunk_lines)
                .unwrap_or_else(|| whole_file_unit(&lines)),
            None => whole_file_unit(&lines),
        },
    };
    assemble(units, &lines, language, options)
}

fn whole_file_unit(lines: &[&str]) -> Vec<Unit> {
    vec![Unit {
        start: 0,
        end: lines.len().saturating_sub(1),
        tags: Vec::new(),
        symbols: Vec::new(),
    }]
}

/// Merges small neighbours, splits long units into overlapping windows, and renders text.
fn assemble(
    units: Vec<Unit>,
    lines: &[&str],
    language: Language,
    options: ChunkOptions,
) -> Vec<Chunk> {
    let limit = options.chunk_lines;
    let step = limit - options.overlap;
    let mut groups: Vec<Unit> = Vec::new();
    let mut current: Option<Unit> = None;
    for unit in units {
        let len = unit.end + 1 - unit.start;
        if len > limit {
            if let Some(c) = current.take() {
                groups.push(c);
            }
            let mut start = unit.start;
            loop {
                let end = (start + limit - 1).min(unit.end);
                groups.push(Unit {
                    start,
                    end,
                    tags: unit.tags.clone(),
                    symbols: unit.symbols.clone(),
                });
                if end >= unit.end {
                    break;
                }
                start += step;
            }
            continue;
        }
        match current.as_mut() {
            Some(c) if unit.end + 1 - c.start <= limit => {
                c.end = c.end.max(unit.end);
                for t in unit.tags {
                    if !c.tags.contains(&t) {
                        c.tags.push(t);
                    }
                }
                for s in unit.symbols {
                    if !c.symbols.contains(&s) {
                        c.symbols.push(s);
                    }
                }
            }
            _ => {
                if let Some(c) = current.replace(unit) {
                    groups.push(c);
                }
            }
        }
    }
    groups.extend(current);
    groups
        .into_iter()
        .filter_map(|g| {
            let end = g.end.min(lines.len().saturating_sub(1));
            // Trim blank lines at both ends so ranges point at content.
            let mut start = g.start;
            let mut last = end;
            while start < last && lines[start].trim().is_empty() {
                start += 1;
            }
            while last > start && lines[last].trim().is_empty() {
                last -= 1;
            }
            let mut text = lines[start..=last].join("\n");
            if text.trim().is_empty() {
                return None;
            }
            if text.len() > MAX_CHUNK_BYTES {
                let mut cut = MAX_CHUNK_BYTES;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            Some(Chunk {
                start_line: start + 1,
                end_line: last + 1,
                language,
                tags: g.tags,
                symbols: g.symbols,
                text,
            })
        })
        .collect()
}

fn markdown_units(lines: &[&str]) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    let mut in_fence = false;
    for (row, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let heading = !in_fence
            && trimmed.starts_with('#')
            && trimmed.trim_start_matches('#').starts_with(' ');
        if heading || units.is_empty() {
            let title = trimmed.trim_start_matches('#').trim();
            let (tags, symbols) = if heading && !title.is_empty() {
                (vec![format!("[Section: {title}]")], vec![title.to_string()])
            } else {
                (Vec::new(), Vec::new())
            };
            units.push(Unit {
                start: row,
                end: row,
                tags,
                symbols,
            });
        } else if let Some(u) = units.last_mut() {
            u.end = row;
        }
    }
    units
}

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

fn syntax_units(
    language: Language,
    grammar: tree_sitter::Language,
    text: &str,
    chunk_lines: usize,
) -> Option<Vec<Unit>> {
    install_parser_allocator();
    // Declared first, dropped last: the parser, the tree and every cursor of the walk live in
    // this heap and are freed with it. A parser per file costs far less than the parse.
    let _heap = ParseHeap::enter();
    let mut parser = ManuallyDrop::new(Parser::new());
    parser.set_language(&grammar).ok()?;
    let tree = ManuallyDrop::new(parser.parse(text, None)?);
    let mut units = Vec::new();
    let walker = UnitWalker {
        language,
        source: text.as_bytes(),
        chunk_lines,
    };
    walker.children(tree.root_node(), None, &mut units);
    units.sort_by_key(|u| (u.start, u.end));
    Some(units)
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
            out.push(plain(start, parent.end_position().row));
        }
    }

    fn add(&self, node: Node, role: Role, start: usize, owner: Option<&str>, out: &mut Vec<Unit>) {
        let end = end_row(node);
        match role {
            Role::Wrapper(inner) => {
                let inner_role = self.role(inner, owner);
                match inner_role {
                    Role::Other | Role::Leading => out.push(plain(start, end)),
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
                        for t in m.tags {
                            if !unit.tags.contains(&t) {
                                unit.tags.push(t);
                            }
                        }
                        for s in m.symbols {
                            if !unit.symbols.contains(&s) {
                                unit.symbols.push(s);
                            }
                        }
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
            Role::Leading | Role::Other => out.push(plain(start, end)),
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

fn plain(start: usize, end: usize) -> Unit {
    Unit {
        start,
        end: end.max(start),
        tags: Vec::new(),
        symbols: Vec::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_markers_in_the_first_five_lines() {
        for head in [
            "// @generated by tools/codegen",
            "/* automatically generated by rust-bindgen 0.72.1 */",
            "//! DO NOT EDIT! This file is generated by `xtask`.",
            "// Code generated by protoc-gen-go. DO NOT EDIT.",
            "// <auto-generated />",
            "# This file is autogenerated",
        ] {
            let text = format!("\n\n\n\n{head}\nfn f() {{}}\n");
            assert!(is_generated(&text), "{head}");
        }
        for text in [
            "//! Types for the code generated by the `builder!` macro.\nfn f() {}\n",
            "fn edit() {}\n",
            // A marker after the first five lines is content, not a declaration.
            "\n\n\n\n\n// @generated\nfn f() {}\n",
        ] {
            assert!(!is_generated(text), "{text}");
        }
    }

    #[test]
    fn generated_files_are_chunked_by_lines() {
        let code = "pub fn encode() {\n    todo!()\n}\n";
        let parsed = chunk_file("a.rs", code, ChunkOptions::default());
        assert_eq!(parsed[0].tags, ["[Function: encode]"]);
        let generated = format!("// @generated\n{code}");
        let lines = chunk_file("a.rs", &generated, ChunkOptions::default());
        assert_eq!(lines.len(), 1);
        assert!(lines[0].tags.is_empty() && lines[0].symbols.is_empty());
        assert_eq!((lines[0].start_line, lines[0].end_line), (1, 4));
    }

    #[test]
    fn parses_on_many_threads_share_nothing() {
        // Every parse has its own heap, destroyed when the parse ends: parsing the same files
        // concurrently on several threads, many times, gives the same chunks every time.
        let files: Vec<(String, String)> = (0..8)
            .map(|i| {
                let body: String = (0..60).map(|j| format!("    let v{j} = {j};\n")).collect();
                (
                    format!("f{i}.rs"),
                    format!("impl T{i} {{\n    fn m{i}(&self) {{\n{body}    }}\n}}\n"),
                )
            })
            .collect();
        let boundaries = |path: &str, text: &str| -> Vec<(usize, usize, Vec<String>)> {
            chunk_file(path, text, ChunkOptions::default())
                .into_iter()
                .map(|c| (c.start_line, c.end_line, c.tags))
                .collect()
        };
        let expected: Vec<_> = files.iter().map(|(p, t)| boundaries(p, t)).collect();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..25 {
                        for ((p, t), want) in files.iter().zip(&expected) {
                            assert_eq!(&boundaries(p, t), want);
                        }
                    }
                });
            }
        });
        for (i, chunks) in expected.iter().enumerate() {
            assert_eq!(chunks[1].2, [format!("[Method: T{i}.m{i}]")]);
        }
    }

    #[test]
    fn long_function_splits_into_overlapping_windows() {
        let body: String = (0..100).map(|i| format!("    let x{i} = {i};\n")).collect();
        let text = format!("fn big() {{\n{body}}}\n");
        let chunks = chunk_file("a.rs", &text, ChunkOptions::default());
        let ranges: Vec<_> = chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
        assert_eq!(ranges, [(1, 48), (41, 88), (81, 102)]);
        assert!(chunks.iter().all(|c| c.tags == ["[Function: big]"]));
    }
}
