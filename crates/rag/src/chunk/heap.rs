//! The memory of tree-sitter parses.
//!
//! tree-sitter allocates one C block per syntax node. [`install_parser_allocator`] routes those
//! allocations to mimalloc (glibc's malloc made them a large share of indexing time on large
//! trees), and [`parse`] gives every parse a mimalloc heap of its own, destroyed in one step when
//! the parse ends instead of a `free` per node (deleting trees node by node showed in indexing
//! profiles).
//!
//! [`parse`] is the one way the crate parses: it makes the parser and the tree inside a fresh
//! heap, lends the root node to a walk, then destroys the heap. The parser and the tree are
//! never dropped (their memory goes with the heap), so a walk must not keep a tree-sitter object
//! past its return: it gets borrowed nodes and returns plain data. [`query`] compiles the
//! tag queries, outside any parse, so they can live for the whole process.

use std::cell::Cell;
use std::ffi::c_void;
use std::mem::ManuallyDrop;

use libmimalloc_sys as mi;
use tree_sitter::{Node, Parser};

/// Parses `text` with `grammar` in a heap of its own and returns what `walk` makes of the root
/// node (`None` when the grammar cannot be loaded or the parse gives up). `walk` must return
/// plain data, no tree-sitter object: everything the parse allocated is freed when this returns.
pub(super) fn parse<R>(
    grammar: &tree_sitter::Language,
    text: &str,
    walk: impl FnOnce(Node<'_>) -> R,
) -> Option<R> {
    install_parser_allocator();
    // Declared first, dropped last: the parser, the tree and every cursor of the walk live in
    // this heap and are freed with it. A parser per file costs far less than the parse.
    let _heap = ParseHeap::enter();
    let mut parser = ManuallyDrop::new(Parser::new());
    parser.set_language(grammar).ok()?;
    let tree = ManuallyDrop::new(parser.parse(text, None)?);
    Some(walk(tree.root_node()))
}

/// Compiles a tree-sitter query for `grammar` outside any parse: its memory comes from the
/// allocator [`parse`] installs but from no parse's heap, so the query may live for the whole
/// process (and must not be compiled inside a walk).
pub(super) fn query(
    grammar: &tree_sitter::Language,
    source: &str,
) -> Result<tree_sitter::Query, tree_sitter::QueryError> {
    install_parser_allocator();
    assert!(
        PARSE_HEAP.get().is_null(),
        "a query outlives the parse it would be compiled in"
    );
    tree_sitter::Query::new(grammar, source)
}

thread_local! {
    /// The mimalloc heap of the parse running on this thread (null outside a parse): every
    /// tree-sitter allocation of that parse goes there.
    static PARSE_HEAP: Cell<*mut mi::mi_heap_t> =
        const { Cell::new(std::ptr::null_mut()) };
}

/// One parse's memory. Dropping it frees the parser, the syntax tree and its cursors at once
/// (`mi_heap_destroy`) instead of a `free` per node: deleting trees node by node, and the
/// allocator work around it, showed in indexing profiles.
///
/// Everything tree-sitter allocates while the heap is entered must be created inside it and
/// never used after it is dropped: [`parse`] keeps the parser and tree in `ManuallyDrop` so
/// their destructors never run on freed memory.
struct ParseHeap(*mut mi::mi_heap_t);

impl ParseHeap {
    fn enter() -> ParseHeap {
        debug_assert!(PARSE_HEAP.get().is_null(), "parses do not nest");
        // SAFETY: creating a heap has no preconditions.
        let heap = non_null(unsafe { mi::mi_heap_new() }.cast()).cast();
        PARSE_HEAP.set(heap);
        ParseHeap(heap)
    }
}

impl Drop for ParseHeap {
    fn drop(&mut self) {
        PARSE_HEAP.set(std::ptr::null_mut());
        // SAFETY: the heap came from `mi_heap_new` and is destroyed once; no block in it is
        // used afterwards (the type's contract).
        unsafe { mi::mi_heap_destroy(self.0) }
    }
}

/// Routes tree-sitter's C allocations (one per syntax node) to mimalloc, into the current
/// [`ParseHeap`]: glibc's malloc made them a large share of indexing time on large trees. Runs
/// once, before the first parser exists; every parser of the crate is made by [`parse`], so no
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

fn non_null(p: *mut c_void) -> *mut c_void {
    if p.is_null() {
        std::process::abort();
    }
    p
}

// Outside a parse (no heap entered) the functions fall back to mimalloc's default heap.

unsafe extern "C" fn ts_malloc(size: usize) -> *mut c_void {
    let heap = PARSE_HEAP.get();
    // SAFETY: plain allocation (a zero size still yields a unique pointer); `heap` is live
    // while it is entered.
    non_null(unsafe {
        if heap.is_null() {
            mi::mi_malloc(size)
        } else {
            mi::mi_heap_malloc(heap, size)
        }
    })
}

unsafe extern "C" fn ts_calloc(count: usize, size: usize) -> *mut c_void {
    let heap = PARSE_HEAP.get();
    // SAFETY: as above.
    non_null(unsafe {
        if heap.is_null() {
            mi::mi_calloc(count, size)
        } else {
            mi::mi_heap_calloc(heap, count, size)
        }
    })
}

unsafe extern "C" fn ts_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    let heap = PARSE_HEAP.get();
    // SAFETY: `ptr` is null or came from this family (see `install_parser_allocator`); inside a
    // parse it belongs to the parse's heap, where the moved block stays.
    non_null(unsafe {
        if heap.is_null() {
            mi::mi_realloc(ptr, size)
        } else {
            mi::mi_heap_realloc(heap, ptr, size)
        }
    })
}

unsafe extern "C" fn ts_free(ptr: *mut c_void) {
    // SAFETY: `ptr` is null or came from this family; `mi_free` finds the block's heap.
    unsafe { mi::mi_free(ptr) }
}
