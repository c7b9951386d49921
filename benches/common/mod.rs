//! What several bench binaries share: the machine's load, a process's resident memory, and the
//! generated prompts of the large-registry benches. Each bench uses a part of it.
#![allow(dead_code)]

/// The machine's load averages (1, 5, 15 minutes): a timing on a shared machine means little
/// without them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Resident memory (VmRSS) of process `pid`, or of this process, in bytes; 0 when unknown.
pub fn rss_bytes(pid: Option<u32>) -> usize {
    let status = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".into(),
    };
    std::fs::read_to_string(status)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A prompt of about 1 KB: frontmatter with two arguments and a Jinja body; `revision` makes
/// an edit.
pub fn generated_prompt(i: usize, revision: usize) -> String {
    let mut body = format!(
        "---\ntitle: Generated prompt {i}\ndescription: Prompt number {i} of a large registry, revision {revision}.\narguments:\n  target: {{ type: string, required: true, description: What to work on }}\n  depth: {{ type: integer, default: 2 }}\n---\nWork on {{{{ target }}}} at depth {{{{ depth }}}}.\n"
    );
    while body.len() < 1000 {
        body.push_str(
            "Explain each step, name the files you change and why, and keep the diff small.\n",
        );
    }
    body
}
