//! Tree-sitter grammars whose two large parse tables ship lz4-compressed in the binary
//! (`build/grammars.rs` packs them and compiles each `parser.c` with those tables empty).
//!
//! A language's tables are unpacked into the grammar's own (zero-initialized) arrays the first
//! time it is asked for, once per process; until then they cost neither binary bytes nor memory.

use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/grammars.rs"));

/// One grammar: its entry point, its two empty tables and their packed contents.
pub(super) struct Packed {
    language: unsafe extern "C" fn() -> *const (),
    parse_table: unsafe extern "C" fn() -> *mut u16,
    small_parse_table: unsafe extern "C" fn() -> *mut u16,
    parse_table_len: usize,
    small_parse_table_len: usize,
    packed_parse_table: &'static [u8],
    packed_small_parse_table: &'static [u8],
    /// Whether the tables were filled (`false`: the packed bytes did not match, never expected
    /// of a build that passed its tests).
    unpacked: OnceLock<bool>,
}

impl Packed {
    /// The grammar, its tables unpacked on first use; `None` if they could not be.
    pub(super) fn language(&'static self) -> Option<tree_sitter::Language> {
        let unpacked = *self.unpacked.get_or_init(|| {
            // SAFETY: the accessors return the grammar's two `static` arrays of exactly these
            // lengths (written by build.rs beside the packed bytes). They are written here once,
            // under the `OnceLock`, before any `Language` of this grammar exists, and only read
            // afterwards.
            let filled = unsafe {
                unpack(
                    self.packed_parse_table,
                    (self.parse_table)(),
                    self.parse_table_len,
                ) && unpack(
                    self.packed_small_parse_table,
                    (self.small_parse_table)(),
                    self.small_parse_table_len,
                )
            };
            if !filled {
                tracing::error!("a tree-sitter grammar's packed parse tables do not unpack");
            }
            filled
        });
        // SAFETY: the entry point is a tree-sitter generated `tree_sitter_<id>` (renamed), and
        // its tables are filled.
        unpacked
            .then(|| unsafe { tree_sitter_language::LanguageFn::from_raw(self.language) }.into())
    }
}

/// Decompresses `packed` into the `len` little-endian `u16`s at `table`.
///
/// # Safety
/// `table` points to `len` writable `u16`s that nothing reads or writes meanwhile.
unsafe fn unpack(packed: &[u8], table: *mut u16, len: usize) -> bool {
    // SAFETY: the caller's contract; `u16` has no invalid bit patterns.
    let bytes = unsafe { std::slice::from_raw_parts_mut(table.cast::<u8>(), len * 2) };
    if !matches!(lz4_flex::block::decompress_into(packed, bytes), Ok(n) if n == bytes.len()) {
        return false;
    }
    if cfg!(target_endian = "big") {
        // SAFETY: as above, now as `u16`s.
        let values = unsafe { std::slice::from_raw_parts_mut(table, len) };
        for v in values {
            *v = u16::from_le(*v);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::language::Language;

    /// The head of tree-sitter's `TSLanguage` (the same in ABI 14 and 15): the counts that size
    /// the two tables and the pointers to them.
    #[repr(C)]
    struct Head {
        abi_version: u32,
        symbol_count: u32,
        alias_count: u32,
        token_count: u32,
        external_token_count: u32,
        state_count: u32,
        large_state_count: u32,
        production_id_count: u32,
        field_count: u32,
        max_alias_sequence_length: u16,
        parse_table: *const u16,
        small_parse_table: *const u16,
        small_parse_table_map: *const u32,
    }

    fn head(language: &tree_sitter::Language) -> &Head {
        // SAFETY: a `Language` wraps a `const TSLanguage *` that lives as long as the program
        // (generated grammars are statics), whose first fields are `Head`'s.
        unsafe { &*language.clone().into_raw().cast::<Head>() }
    }

    #[test]
    fn unpacked_tables_equal_the_grammar_crates_own() {
        for language in Language::WITH_GRAMMAR {
            let name = language.name();
            let packed = language.packed().expect("every grammar is packed");
            let ours = packed
                .language()
                .unwrap_or_else(|| panic!("{name} does not unpack"));
            let theirs = tree_sitter::Language::new(language.crate_grammar().expect("a crate"));
            let (a, b) = (head(&ours), head(&theirs));
            assert_eq!(
                (
                    a.abi_version,
                    a.symbol_count,
                    a.state_count,
                    a.large_state_count
                ),
                (
                    b.abi_version,
                    b.symbol_count,
                    b.state_count,
                    b.large_state_count
                ),
                "{name}"
            );
            assert_ne!(a.parse_table, b.parse_table, "{name}: the same table twice");
            let large = (a.large_state_count * a.symbol_count) as usize;
            assert_eq!(large, packed.parse_table_len, "{name}");
            // SAFETY: both tables hold `large_state_count × symbol_count` entries.
            let (ta, tb) = unsafe {
                (
                    std::slice::from_raw_parts(a.parse_table, large),
                    std::slice::from_raw_parts(b.parse_table, large),
                )
            };
            assert!(ta == tb, "{name}: parse tables differ");
            let small = packed.small_parse_table_len;
            // SAFETY: ours holds `small` entries, theirs as many (read from its initializer).
            let (sa, sb) = unsafe {
                (
                    std::slice::from_raw_parts(a.small_parse_table, small),
                    std::slice::from_raw_parts(b.small_parse_table, small),
                )
            };
            assert!(sa == sb, "{name}: small parse tables differ");
            let states = (a.state_count - a.large_state_count) as usize;
            // SAFETY: the map has one offset per small state.
            let map = unsafe { std::slice::from_raw_parts(b.small_parse_table_map, states) };
            let last = *map.iter().max().unwrap_or(&0) as usize;
            assert!(last < small, "{name}: the map points past the small table");
        }
    }

    #[test]
    fn a_packed_grammar_parses_as_its_crate_does() {
        let sources = [
            (
                Language::Rust,
                "fn main() { let x: Vec<u8> = vec![1, 2]; println!(\"{x:?}\"); }\n",
            ),
            (
                Language::CSharp,
                "namespace N { class C { int F(int a) => a * 2; } }\n",
            ),
            (
                Language::Cpp,
                "template <typename T> struct S { T f() const { return T{}; } };\n",
            ),
            (
                Language::Ruby,
                "class A\n  def b(c) = c.map { |d| d * 2 }\nend\n",
            ),
            (
                Language::Tsx,
                "const A = <T,>(p: T) => <div>{String(p)}</div>;\n",
            ),
        ];
        for (language, text) in sources {
            let name = language.name();
            let parse = |language: tree_sitter::Language| {
                let mut parser = tree_sitter::Parser::new();
                parser.set_language(&language).expect("compatible grammar");
                parser
                    .parse(text, None)
                    .expect("parsed")
                    .root_node()
                    .to_sexp()
            };
            let ours = parse(language.grammar().expect("unpacks"));
            assert!(!ours.contains("ERROR"), "{name}: {ours}");
            let theirs = parse(language.crate_grammar().expect("a crate").into());
            assert_eq!(ours, theirs, "{name}");
        }
    }
}
