//! A prompt folder as it was at a git commit: a [`PromptSource`] over the folder's tree in the
//! commit, listed by the same rule as the folder on disk ([`listed_category`]) and read from
//! the repository's object database, so the registry loads it with the same loader, dialects
//! and renderer as the working copy.

use std::collections::HashMap;
use std::path::Path;

use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

use crate::dialect::Dialect;
use crate::registry::source::listed_category;
use crate::registry::{PromptSource, SourceError, SourceFile};

/// The most files a folder's tree lists at one commit (a folder on disk of that size would be
/// a mistake too); the rest are left out.
pub const MAX_TREE_FILES: usize = 200_000;

/// One prompt folder at one commit.
#[derive(Debug)]
pub struct TreeSource {
    repo: gix::ThreadSafeRepository,
    /// `folder@short-commit`, for messages.
    describe: String,
    /// The folder's path in the repository (`prompts`, `` for the repository's root).
    prefix: String,
    short: String,
    dialect: Option<Dialect>,
    listed: Vec<SourceFile>,
    /// Every regular file below the folder (not only the listed ones: includes are read too),
    /// by root-relative path.
    blobs: HashMap<String, gix::ObjectId>,
}

impl TreeSource {
    /// The folder at `prefix` (repository-relative, `/`-separated, empty for the root) in the
    /// tree `tree` of commit `short`, read as a folder of `dialect` (the dialect its copy on disk
    /// has). A folder missing at the commit holds nothing.
    pub fn new(
        repo: &gix::ThreadSafeRepository,
        tree: gix::ObjectId,
        prefix: &str,
        short: &str,
        dialect: Option<Dialect>,
    ) -> Result<TreeSource, gix::Error> {
        let local = repo.to_thread_local();
        let root = local.find_tree(tree)?;
        let folder = if prefix.is_empty() {
            Some(root.id)
        } else {
            root.lookup_entry_by_path(Path::new(prefix))?
                .filter(|e| e.mode().is_tree())
                .map(|e| e.object_id())
        };
        let mut blobs = HashMap::new();
        if let Some(folder) = folder {
            let mut pending = vec![(String::new(), folder)];
            while let Some((sub, id)) = pending.pop() {
                let tree = local.find_tree(id)?;
                for entry in tree.iter() {
                    let entry = entry?;
                    let Ok(name) = entry.filename().to_str() else {
                        continue;
                    };
                    if name.starts_with('.') {
                        continue;
                    }
                    let rel = if sub.is_empty() {
                        name.to_string()
                    } else {
                        format!("{sub}/{name}")
                    };
                    match entry.mode().kind() {
                        EntryKind::Tree => pending.push((rel, entry.object_id())),
                        EntryKind::Blob | EntryKind::BlobExecutable
                            if blobs.len() < MAX_TREE_FILES =>
                        {
                            blobs.insert(rel, entry.object_id());
                        }
                        // Symbolic links and submodules are not files of the folder.
                        _ => {}
                    }
                }
            }
        }
        let describe = if prefix.is_empty() {
            format!(".@{short}")
        } else {
            format!("{prefix}@{short}")
        };
        let mut source = TreeSource {
            repo: repo.clone(),
            describe,
            prefix: prefix.to_string(),
            short: short.to_string(),
            dialect,
            listed: Vec::new(),
            blobs,
        };
        let mut listed: Vec<SourceFile> = source
            .blobs
            .keys()
            .filter_map(|rel| {
                let parts: Vec<&str> = rel.split('/').collect();
                let category = listed_category(dialect, &parts)?;
                Some(SourceFile {
                    rel_path: rel.clone(),
                    display_path: source.display_path(rel),
                    category,
                })
            })
            .collect();
        listed.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
        source.listed = listed;
        Ok(source)
    }
}

impl PromptSource for TreeSource {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn dir(&self) -> Option<&Path> {
        None
    }

    fn list(&self) -> Result<Vec<SourceFile>, SourceError> {
        Ok(self.listed.clone())
    }

    fn read(&self, rel_path: &str, max_bytes: u64) -> Result<Option<String>, SourceError> {
        crate::registry::source::check_relative(rel_path, &self.describe)?;
        let Some(id) = self.blobs.get(rel_path) else {
            return Ok(None);
        };
        let path = self.display_path(rel_path);
        let io = |e: gix::Error| SourceError::Io {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        };
        let local = self.repo.to_thread_local();
        let header = local.find_header(*id).map_err(io)?;
        if header.size() > max_bytes {
            return Err(promptd_base::limits::CappedReadError::TooLarge {
                path,
                size: header.size(),
                limit: max_bytes,
                key: promptd_base::limits::MAX_PROMPT_FILE_BYTES,
            }
            .into());
        }
        let blob = local.find_blob(*id).map_err(io)?;
        match std::str::from_utf8(&blob.data) {
            Ok(text) => Ok(Some(text.to_string())),
            Err(e) => Err(promptd_base::limits::CappedReadError::NotUtf8 {
                path,
                offset: e.valid_up_to(),
            }
            .into()),
        }
    }

    fn display_path(&self, rel_path: &str) -> String {
        if self.prefix.is_empty() {
            format!("{rel_path}@{}", self.short)
        } else {
            format!("{}/{rel_path}@{}", self.prefix, self.short)
        }
    }

    fn dialect(&self) -> Option<Dialect> {
        self.dialect
    }
}
