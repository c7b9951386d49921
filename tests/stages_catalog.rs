//! The tool catalog as clients and the composer see it: the `tools/list` definitions and the
//! composer's list of the server's own tools, pinned byte for byte (pretty-printed JSON keeps
//! every key in order).

#[test]
fn tools_list_definitions_are_pinned() {
    let json = serde_json::to_string_pretty(promptd::mcp::tool_calls::definitions()).unwrap();
    insta::assert_snapshot!(json);
}

#[test]
fn the_composers_server_tools_are_pinned() {
    let json = serde_json::to_string_pretty(&promptd::catalog::server_tool_definitions()).unwrap();
    insta::assert_snapshot!(json);
}
