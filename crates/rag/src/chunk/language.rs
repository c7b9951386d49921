//! The languages retrieval tells apart: a file's language from its name, the name the index
//! stores, and the tree-sitter grammar of those chunked by syntax.

use serde::Serialize;

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

    /// The languages with a tree-sitter grammar (chunked by syntax, with a tag query).
    pub const WITH_GRAMMAR: [Language; 11] = [
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Rust,
        Language::Go,
        Language::Java,
        Language::C,
        Language::Cpp,
        Language::CSharp,
        Language::Ruby,
    ];

    /// The tree-sitter grammar, for the languages chunked by syntax.
    pub(super) fn grammar(self) -> Option<tree_sitter::Language> {
        let grammar = match self {
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
        Some(grammar.into())
    }
}
